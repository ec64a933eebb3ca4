"""The command line as a user runs it: exit codes, --check, CDK8S_OUTDIR, determinism."""

from __future__ import annotations

import shutil
import subprocess
import sys

from slurmgen.cli import main
from slurmgen.output import read_tree
from tests.conftest import EXAMPLES, REPO


def test_render_twice_gives_identical_bytes_whatever_the_spec_order(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert main([*sum((["--spec", str(p)] for p in EXAMPLES), []), "--out", str(a)]) == 0
    assert main([*sum((["--spec", str(p)] for p in reversed(EXAMPLES)), []), "--out", str(b)]) == 0
    assert read_tree(a) == read_tree(b)
    assert read_tree(a) == read_tree(REPO / "dist")


def test_check_is_clean_on_a_fresh_render_and_reports_drift(tmp_path, capsys):
    out = tmp_path / "dist"
    spec = str(REPO / "clusters" / "example.yaml")
    assert main(["--spec", spec, "--out", str(out)]) == 0
    assert main(["--spec", spec, "--out", str(out), "--check"]) == 0
    # WHEN someone edits a rendered file and leaves a stray one
    nodeset = out / "example" / "slurm" / "nodeset-slurm-worker-slinky.yaml"
    nodeset.write_text(nodeset.read_text().replace("replicas: 4", "replicas: 40"))
    (out / "example" / "slurm" / "stray.yaml").write_text("kind: ConfigMap\n")
    capsys.readouterr()
    # THEN --check exits 1 and names both
    assert main(["--spec", spec, "--out", str(out), "--check"]) == 1
    report = capsys.readouterr().out
    assert "changed: " in report and "nodeset-slurm-worker-slinky.yaml" in report
    assert "-  replicas: 40" in report and "+  replicas: 4" in report
    assert "removed: " in report and "stray.yaml" in report


def test_cdk8s_outdir_is_honoured_and_no_traceback_on_bad_input(tmp_path):
    # GIVEN a copy of the repo's entry point run as a subprocess, as `cdk8s synth` does
    env = {"PATH": "/usr/bin:/bin", "CDK8S_OUTDIR": str(tmp_path / "out")}
    run = subprocess.run([sys.executable, str(REPO / "main.py"), "--spec", str(REPO / "clusters" / "example.yaml")],
                         capture_output=True, text=True, env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "out" / "example" / "bootstrap" / "application-example-root.yaml").is_file()
    assert run.stderr == ""  # no jsii/node banners
    bad = tmp_path / "bad.yaml"
    bad.write_text("schemaVersion: 1\nname: [\n")
    run = subprocess.run([sys.executable, str(REPO / "main.py"), "--spec", str(bad)],
                         capture_output=True, text=True, env=env, cwd=tmp_path)
    assert run.returncode == 2
    assert "Traceback" not in run.stderr and run.stderr.count("\n") == 1


def test_no_spec_files_is_an_input_error(tmp_path, capsys):
    assert main(["--spec", str(tmp_path / "missing.yaml"), "--out", str(tmp_path)]) == 2
    assert "cannot read file" in capsys.readouterr().err
    shutil.rmtree(tmp_path, ignore_errors=True)
