"""The Python code passes ruff and the package type-checks with mypy (both pinned; settings in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from ruff.__main__ import find_ruff_bin

from tests.conftest import REPO

PYTHON_TREES = ["main.py", "slurmgen", "charts", "apps", "tests", "bench"]


def ruff(*args: str, cwd=REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([find_ruff_bin(), *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_the_code_passes_ruff():
    # GIVEN the project's rules, WHEN ruff checks every Python tree, THEN nothing is found
    run = ruff("check", "--no-cache", "--output-format", "concise", *PYTHON_TREES)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_rules_catch_what_they_are_for(tmp_path):
    # GIVEN a file with an unused import, an undefined name and a zip that may drop items
    (tmp_path / "pyproject.toml").write_text((REPO / "pyproject.toml").read_text())
    (tmp_path / "bad.py").write_text(textwrap.dedent("""\
        import os


        def f(a, b):
            return list(zip(a, b)) + undefined_name
        """))
    # WHEN ruff checks it with the project's rules
    run = ruff("check", "--no-cache", "--output-format", "concise", "bad.py", cwd=tmp_path)
    # THEN each one is reported
    assert run.returncode == 1
    for code in ("F401", "F821", "B905"):
        assert code in run.stdout, run.stdout


def mypy(*args: str, cwd=REPO, cache=None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(cache), *args],
                          capture_output=True, text=True, cwd=cwd, timeout=300)


def test_the_package_type_checks(tmp_path):
    # GIVEN the project's mypy settings, WHEN it checks the package and the entry point
    run = mypy("slurmgen", "charts", "apps", "main.py", cache=tmp_path / "cache")  # never a .mypy_cache in the repository
    # THEN no issue
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith("Success: no issues found")


def test_the_type_check_catches_a_mistyped_call(tmp_path):
    # GIVEN a typed function called with the wrong type and an Optional used unchecked
    (tmp_path / "pyproject.toml").write_text((REPO / "pyproject.toml").read_text())
    (tmp_path / "bad.py").write_text(textwrap.dedent("""\
        def size(name: str) -> int:
            return len(name)


        def first(values: dict[str, str]) -> int:
            return size(values.get("a")) + size(3)
        """))
    # WHEN mypy checks it with the project's settings, THEN both calls are reported
    run = mypy("bad.py", cwd=tmp_path, cache=tmp_path / "cache")
    assert run.returncode == 1
    assert 'Argument 1 to "size" has incompatible type "str | None"' in run.stdout
    assert 'Argument 1 to "size" has incompatible type "int"' in run.stdout
