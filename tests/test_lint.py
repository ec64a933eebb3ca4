"""The Python code passes ruff (pinned in requirements.txt; the rules live in pyproject.toml)."""

from __future__ import annotations

import subprocess
import textwrap

from ruff.__main__ import find_ruff_bin

from tests.conftest import REPO

PYTHON_TREES = ["main.py", "slurmgen", "tests", "bench"]


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
