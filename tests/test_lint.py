"""The Python code passes ruff and the package type-checks with mypy (both pinned; settings in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys

from ruff.__main__ import find_ruff_bin

from tests.conftest import REPO

PYTHON_TREES = ["main.py", "slurmgen", "charts", "apps", "tests", "bench"]


def ruff(*args: str, cwd=REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([find_ruff_bin(), *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_the_code_passes_ruff():
    # GIVEN the project's rules, WHEN ruff checks every Python tree, THEN nothing is found
    run = ruff("check", "--no-cache", "--output-format", "concise", *PYTHON_TREES)
    assert run.returncode == 0, run.stdout + run.stderr


def mypy(*args: str, cwd=REPO, cache=None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(cache), *args],
                          capture_output=True, text=True, cwd=cwd, timeout=300)


def test_the_package_type_checks(tmp_path):
    # GIVEN the project's mypy settings, WHEN it checks the package and the entry point
    run = mypy("slurmgen", "charts", "apps", "main.py", cache=tmp_path / "cache")  # never a .mypy_cache in the repository
    # THEN no issue
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith("Success: no issues found")
