"""How synth finds the programs it starts (issue 23 E): the shell by absolute path (an `sh` planted
in a PATH folder never runs), and a missing Node.js is one line, exit 2, not a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

from slurmgen.cli import main
from tests.conftest import MINIMAL_SPEC, REPO


def test_a_missing_node_is_one_line(tmp_path, monkeypatch, capsys):
    spec = tmp_path / "t.yaml"
    spec.write_text(MINIMAL_SPEC)
    monkeypatch.setenv("JSII_NODE", str(tmp_path / "no-node-here"))
    assert main(["--spec", str(spec), "--out", str(tmp_path / "dist"), "--no-cache"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"Node.js not found (JSII_NODE={str(tmp_path / 'no-node-here')!r}): cdk8s runs on it; install Node.js "
        "or set JSII_NODE to its path"]


def test_an_sh_on_path_is_never_run(tmp_path):
    # GIVEN a folder first on PATH holding an `sh` that leaves a mark, then runs the real shell
    fake = tmp_path / "bin"
    fake.mkdir()
    mark = tmp_path / "ran"
    (fake / "sh").write_text(f"#!/bin/sh\ntouch {mark}\nexec /bin/sh \"$@\"\n")
    (fake / "sh").chmod(0o755)
    spec = tmp_path / "t.yaml"
    spec.write_text(MINIMAL_SPEC)
    env = {**os.environ, "PATH": f"{fake}{os.pathsep}{os.environ.get('PATH', '')}"}
    # WHEN synth renders (in a child: the kernel starts once per process)
    run = subprocess.run([sys.executable, "-O", str(REPO / "main.py"), "--spec", str(spec), "--out",
                          str(tmp_path / "dist"), "--no-cache", "--workers", "1"],
                         env=env, capture_output=True, text=True, timeout=300)
    # THEN it rendered, and the planted shell never ran
    assert run.returncode == 0, run.stderr
    assert not mark.exists()
