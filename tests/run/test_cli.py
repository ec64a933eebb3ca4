"""The command line as a user runs it: exit codes, --check, CDK8S_OUTDIR, determinism."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from slurmgen import cli
from slurmgen.cli import main
from slurmgen.write.output import read_tree
from tests.conftest import EXAMPLES, REPO, SPECS


def test_render_twice_gives_identical_bytes_whatever_the_spec_order(tmp_path):
    # GIVEN the examples rendered here, and in reverse order by another process with another hash seed
    a, b = tmp_path / "a", tmp_path / "b"
    assert main([*sum((["--spec", str(p)] for p in EXAMPLES), []), "--out", str(a)]) == 0
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    run = subprocess.run([sys.executable, "-O", str(REPO / "main.py"),
                          *sum((["--spec", str(p)] for p in reversed(EXAMPLES)), []), "--out", str(b)],
                         capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    # THEN both trees are the same bytes
    assert read_tree(a) == read_tree(b)


def test_check_is_clean_on_a_fresh_render_and_reports_drift(tmp_path, capsys):
    out = tmp_path / "dist"
    spec = str(SPECS / "example.yaml")
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
    run = subprocess.run([sys.executable, str(REPO / "main.py"), "--spec", str(SPECS / "example.yaml")],
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


def test_a_missing_spec_file_is_an_input_error(tmp_path, capsys):
    assert main(["--spec", str(tmp_path / "missing.yaml"), "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"{tmp_path / 'missing.yaml'}: cannot read file: No such file or directory\n"


def fake_repo(tmp_path: Path, monkeypatch, *specs: str) -> Path:
    """A repository whose clusters/ holds only the named examples (and the shared `_` files)."""
    (tmp_path / "clusters").mkdir()
    for name in specs:
        shutil.copy(SPECS / name, tmp_path / "clusters" / name)
    monkeypatch.setattr(cli, "REPO", tmp_path)
    return tmp_path


def test_an_empty_clusters_folder_is_exit_2_and_leaves_dist_alone(tmp_path, monkeypatch, capsys):
    # GIVEN a clusters/ folder with only a shared-defaults file, and a dist/ from an earlier render
    repo = fake_repo(tmp_path, monkeypatch, "_research-fleet.yaml")
    (repo / "dist" / "old" / "slurm").mkdir(parents=True)
    (repo / "dist" / "old" / "slurm" / "keep.yaml").write_text("kind: ConfigMap\n")
    before = read_tree(repo / "dist")
    for flags in ([], ["--check"]):
        # WHEN synth or --check runs with no cluster spec
        rc = main(flags)
        # THEN exit 2, one line naming the folder and what to do, and dist/ untouched
        assert rc == 2
        assert capsys.readouterr().err.splitlines() == [
            f"{repo / 'clusters'}: no cluster spec (a *.yaml whose name does not start with '_'): "
            "add clusters/<name>.yaml or pass --spec FILE"]
        assert read_tree(repo / "dist") == before


def test_an_orphaned_cluster_folder_is_reported_with_advice_synth_cannot_follow(tmp_path, monkeypatch, capsys):
    # GIVEN a fresh render of the only spec, and dist/gone/ left by a spec that was deleted
    repo = fake_repo(tmp_path, monkeypatch, "example.yaml")
    assert main([]) == 0
    (repo / "dist" / "gone" / "storage").mkdir(parents=True)
    (repo / "dist" / "gone" / "storage" / "persistentvolumeclaim-fsx.yaml").write_text("kind: PersistentVolumeClaim\n")
    capsys.readouterr()
    # WHEN --check runs
    assert main(["--check"]) == 1
    out, err = capsys.readouterr()
    # THEN it names the folder and says to delete it by hand, never to run `make synth` (which keeps it)
    advice = (f"orphaned: {repo / 'dist' / 'gone'}: no spec renders it (no clusters/gone.yaml); delete the folder "
              "by hand once its Argo CD root Application is gone (it may hold stateful objects; see docs/guarantees.md)")
    assert out.splitlines() == [advice]
    assert "make synth" not in err and "delete each by hand" in err
    # AND synth keeps the folder, warns with the same advice and succeeds
    assert main([]) == 0
    assert f"warning: {advice}" in capsys.readouterr().err.splitlines()
    assert (repo / "dist" / "gone" / "storage" / "persistentvolumeclaim-fsx.yaml").is_file()
    assert main(["--check"]) == 1


def test_error_lines_name_files_relative_to_the_current_directory(tmp_path, monkeypatch, capsys):
    """Issue 21 item 7: specs found in clusters/ are absolute paths; the lines read `clusters/dev.yaml: ...`."""
    from tests.spec_builder import spec_text
    # GIVEN a bad spec under the current directory, named by its absolute path (as clusters/ specs are)
    (tmp_path / "clusters").mkdir()
    spec = tmp_path / "clusters" / "dev.yaml"
    spec.write_text(spec_text(nodeset={"instanceType": "g5.nope"}))
    monkeypatch.chdir(tmp_path)
    # WHEN it is rendered THEN the line names it relative to here
    assert main(["--spec", str(spec), "--out", str(tmp_path / "dist")]) == 2
    assert capsys.readouterr().err.startswith("clusters/dev.yaml:10: nodesets[gpu].instanceType: unknown instance type")
    # AND from elsewhere, the path stays absolute
    monkeypatch.chdir(tmp_path / "clusters")
    assert cli.shown(f"{spec}: x", cwd=str(tmp_path / "dist")) == f"{spec}: x"
    assert cli.shown(f"{spec}: cannot read {tmp_path}/clusters/_shared.yaml", cwd=str(tmp_path)) == (
        "clusters/dev.yaml: cannot read clusters/_shared.yaml")
    assert cli.shown(f"{tmp_path}-other/x.yaml: y", cwd=str(tmp_path)) == f"{tmp_path}-other/x.yaml: y"


def test_a_finaliser_failing_after_a_stop_signal_prints_no_traceback(tmp_path):
    # GIVEN a process that renders under cli's signal handling, holding an object whose finaliser fails
    #       when the signal caught it half built (jsii's kernel process object, signalled while it starts Node)
    script = tmp_path / "stop.py"
    script.write_text(
        "import os, signal, sys\n"
        f"sys.path.insert(0, {str(REPO)!r})\n"
        "from slurmgen import cli\n"
        "class HalfBuilt:\n"
        "    def __del__(self):\n"
        "        self._process.stdin.close()\n"
        "try:\n"
        "    with cli._signals_unwind():\n"
        "        half = HalfBuilt()\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "        signal.pause()\n"
        "except SystemExit as stop:\n"
        "    del half\n"
        "    sys.exit(stop.code)\n")
    # WHEN the signal arrives and the object is collected
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    # THEN the process ends with 128 + SIGTERM and prints nothing
    assert (done.returncode, done.stderr) == (128 + 15, "")
