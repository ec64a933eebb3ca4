"""Output-folder states as data (tests/cases/output/*.yaml, format in its README.md).

Each case builds a state of the output folder, runs synth (or --check) of the minimal spec `t`,
and expects an exit status and exact lines; what the case built must be left as it was.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

from slurmgen.cli import main
from slurmgen.write.output import read_tree
from tests.conftest import MINIMAL_SPEC, TESTS

CASES = sorted((TESTS / "cases" / "output").glob("*.yaml"))


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """One fresh render of `t`, copied into each case that asks for it."""
    root = tmp_path_factory.mktemp("template")
    spec = root / "t.yaml"
    spec.write_text(MINIMAL_SPEC)
    assert main(["--spec", str(spec), "--out", str(root / "dist")]) == 0
    return root


def _apply(out: Path, step: dict) -> None:
    if "file" in step:
        (out / step["file"]).parent.mkdir(parents=True, exist_ok=True)
        (out / step["file"]).write_text(step["text"])
    elif "dir" in step:
        (out / step["dir"]).mkdir(parents=True, exist_ok=True)
    elif "symlink" in step:
        (out / step["symlink"]).symlink_to(step["to"])
    elif "fifo" in step:
        os.mkfifo(out / step["fifo"])
    elif "move" in step:
        os.rename(out / step["move"], out / step["to"])
    elif "remove" in step:
        path = out / step["remove"]
        shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
    else:
        raise AssertionError(f"unknown setup step {step}")


def test_there_are_output_cases():
    assert len(CASES) >= 10


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_output_state(case, template, tmp_path, capsys):
    data = yaml.safe_load(case.read_text())
    # GIVEN the state the case describes
    out = tmp_path / "work" / "dist"
    out.parent.mkdir()
    if data.get("render"):
        shutil.copytree(template / "dist", out, symlinks=True)
    else:
        out.mkdir()
    for step in data["setup"]:
        _apply(out, step)
    before = read_tree(tmp_path)
    capsys.readouterr()
    # WHEN synth (or --check) runs on it
    rc = main(["--spec", str(template / "t.yaml"), "--out", str(out), *data.get("args", [])])
    stdout, stderr = capsys.readouterr()
    # THEN the exit status and exact lines, no traceback, and nothing it built changed
    lines = (stdout if "--check" in data.get("args", []) else stderr).splitlines()
    expected = [line.replace("OUT", str(out)).replace("TMP", str(tmp_path)) for line in data["expect"]]
    assert rc == data["exit"]
    assert lines == expected
    assert "Traceback" not in stdout + stderr
    assert read_tree(tmp_path) == before
