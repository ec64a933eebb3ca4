"""`python main.py …` as the README writes it, from a Python that has none of the pinned packages.

main.py hands over to `.venv/bin/python` (slurmgen/_venv.py): same arguments, same interpreter
flags, same stdin/stdout, same exit status; without a `.venv` it prints one line and exits 2.

The tests never rely on the repository having a `.venv` of its own (CI runs them in place with the
venv of a fresh clone, `make VENV=…`): they lay out a checkout (main.py, slurmgen/) in a temporary
folder whose `.venv` links to the environment running the tests.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.conftest import REPO, SPECS, running_venv

CLEAN_PATH = "/usr/local/bin:/usr/bin:/bin"


def bare_python() -> str:
    """A python3 on the plain system PATH that cannot import cdk8s (the newcomer's situation)."""
    for candidate in (shutil.which("python3", path=CLEAN_PATH), "/usr/bin/python3"):
        if not candidate:
            continue
        probe = subprocess.run([candidate, "-c", "import importlib.util as u, sys; "
                                "sys.exit(0 if sys.version_info >= (3, 11) and u.find_spec('cdk8s') is None else 1)"],
                               env={"PATH": CLEAN_PATH}, capture_output=True)
        if probe.returncode == 0:
            return candidate
    pytest.skip("no python3 >= 3.11 without cdk8s on the system PATH to play the newcomer")


def clean_env(**extra: str) -> dict[str, str]:
    # No PYTHONPATH, no VIRTUAL_ENV, no SLURMGEN_VENV_HANDOFF: a fresh shell. The render cache stays
    # the test session's own folder (conftest), never the user's.
    return {"PATH": CLEAN_PATH, "HOME": os.environ.get("HOME", "/tmp"),
            "SLURMGEN_CACHE_DIR": os.environ["SLURMGEN_CACHE_DIR"], **extra}


def checkout(tmp_path: Path) -> Path:
    """A newcomer's checkout: main.py and the package, with `.venv` where `make install` puts it."""
    root = tmp_path / "slurmgen-checkout"
    root.mkdir()
    shutil.copy2(REPO / "main.py", root / "main.py")
    for package in ("slurmgen", "charts", "apps"):
        shutil.copytree(REPO / package, root / package, ignore=shutil.ignore_patterns("__pycache__"))
    (root / ".venv").symlink_to(running_venv(), target_is_directory=True)
    return root


def probe_script(tmp_path: Path, venv: Path) -> Path:
    """A stand-in entry point: hands over like main.py, then reports what the new process sees."""
    script = tmp_path / "probe.py"
    script.write_text(textwrap.dedent(f"""\
        import sys
        sys.path.insert(0, {str(REPO)!r})
        from pathlib import Path
        from slurmgen._venv import handoff
        handoff(venv=Path({str(venv)!r}))
        print(sys.flags.optimize, Path(sys.prefix).resolve(), sys.argv[1:], sys.stdin.read())
        sys.exit(7)
        """))
    return script


def test_main_py_from_a_bare_python_renders_like_make_synth(tmp_path, dist_tree):
    # GIVEN a system python3 without cdk8s and no venv activated
    python = bare_python()
    root, out = checkout(tmp_path), tmp_path / "out"
    # WHEN the README's command is typed with it
    run = subprocess.run([python, str(root / "main.py"), "--spec", str(SPECS / "example.yaml"),
                          "--out", str(out)], capture_output=True, text=True, env=clean_env(), cwd=tmp_path)
    # THEN it renders (through .venv/bin/python) exactly what the venv renders
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("wrote ") and run.stderr == ""
    committed = dist_tree / "example" / "slurm" / "controller-slurm.yaml"
    assert (out / "example" / "slurm" / "controller-slurm.yaml").read_bytes() == committed.read_bytes()


def test_main_py_from_a_bare_python_keeps_the_exit_status(tmp_path):
    # GIVEN an empty output folder, WHEN --check runs from a bare python3, THEN drift is exit 1 as in the venv
    root = checkout(tmp_path)
    run = subprocess.run([bare_python(), str(root / "main.py"), "--spec", str(SPECS / "example.yaml"),
                          "--out", str(tmp_path / "out"), "--check"], capture_output=True, text=True, env=clean_env())
    assert run.returncode == 1
    assert "added:   " in run.stdout


def test_handoff_keeps_flags_arguments_stdin_and_exit_status(tmp_path):
    # GIVEN the project's venv and a bare python3 started with -O
    venv = running_venv()
    script = probe_script(tmp_path, venv)
    # WHEN the entry point hands over
    run = subprocess.run([bare_python(), "-O", str(script), "a b", "--x"], input="from stdin",
                         capture_output=True, text=True, env=clean_env())
    # THEN the venv's Python runs it with -O, the same arguments and stdin, and its exit status is ours
    assert run.returncode == 7, run.stderr
    assert run.stdout == f"1 {venv.resolve()} ['a b', '--x'] from stdin\n"


def test_without_a_venv_one_line_says_what_to_run(tmp_path):
    # GIVEN no venv where the entry point looks for one
    script = probe_script(tmp_path, tmp_path / "no-venv")
    # WHEN a bare python3 runs it
    run = subprocess.run([bare_python(), str(script)], capture_output=True, text=True, env=clean_env())
    # THEN exit 2 with one line naming the command to run, and no traceback
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and "run 'make install' in " in run.stderr
    assert "Traceback" not in run.stderr


def test_a_venv_without_the_packages_does_not_hand_over_again(tmp_path):
    # GIVEN a venv whose python lacks cdk8s (here: the bare python itself, linked in)
    fake = tmp_path / "venv"
    (fake / "bin").mkdir(parents=True)
    (fake / "bin" / "python").symlink_to(bare_python())
    script = probe_script(tmp_path, fake)
    # WHEN the entry point hands over to it, THEN the second process gives the advice instead of looping
    run = subprocess.run([bare_python(), str(script)], capture_output=True, text=True, env=clean_env(), timeout=60)
    assert run.returncode == 2
    assert f"{fake / 'bin' / 'python'} lacks them" in run.stderr


def test_the_pytest_interpreter_needs_no_handoff():
    from slurmgen._venv import dependencies_present

    assert dependencies_present()
