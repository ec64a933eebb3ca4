"""Fault injection on the output folder: nothing outside it is touched, no traceback on any state.

Each test puts the output folder (or the process) in a hostile state -- a foreign folder in the
way, a symlink, a broken file, a full or read-only disk, a kill in the middle of a write -- and
checks the promise of README 'Guarantees': exit 2 with one line per problem and nothing changed,
or a clean report from --check, and never a leftover the next run does not see.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from slurmgen import cli
from slurmgen.write import output
from slurmgen.cli import main
from slurmgen.write.output import MARKER, read_tree
from tests.conftest import REPO
from tests.spec_builder import nodeset_named, spec_text


def spec(tmp_path: Path, name: str = "t", nodeset: str = "gpu") -> Path:
    path = tmp_path / "specs" / f"{name}.yaml"
    path.parent.mkdir(exist_ok=True)
    # each cluster on an EKS cluster of its own: one spec per Kubernetes cluster (collisions.TABLE)
    path.write_text(spec_text(name=name, aws={"eksClusterName": f"eks-{name}"}, **nodeset_named(nodeset)))
    return path


def snapshot(root: Path) -> dict[str, str]:
    """Every entry under root (dot files and folders too), without following links."""
    return read_tree(root)


def run_cli(capsys, *argv: str) -> tuple[int, list[str], list[str]]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out.splitlines(), err.splitlines()


@pytest.fixture
def rendered_out(tmp_path, capsys):
    """A fresh render of spec `t` in tmp_path/dist."""
    out = tmp_path / "dist"
    assert main(["--spec", str(spec(tmp_path)), "--out", str(out)]) == 0
    capsys.readouterr()
    return out


def make_stale(out: Path) -> None:
    """Edit the rendered tree by hand, so the next synth has something to write (a folder that
    already holds exactly the render is left alone, and no write would happen to fail)."""
    root = out / "t" / "bootstrap" / "application-t-root.yaml"
    root.write_text(root.read_text() + "# edited by hand\n")


# --- what the writer refuses ------------------------------------------------------------------


def test_a_cluster_named_like_a_repo_folder_cannot_replace_it_with_out_dot(tmp_path, monkeypatch, capsys):
    # GIVEN a repository with clusters/ holding a spec named `clusters`
    repo = tmp_path / "repo"
    (repo / "clusters").mkdir(parents=True)
    spec_file = repo / "clusters" / "clusters.yaml"
    spec_file.write_text(spec_text(name="clusters"))
    monkeypatch.setattr(cli, "REPO", repo)
    monkeypatch.chdir(repo)
    before = snapshot(repo)
    # WHEN it is rendered with --out . (the repository root), or above it
    for out in (".", str(repo.parent)):
        rc, _, err = run_cli(capsys, "--out", out)
        # THEN exit 2, one line naming the refusal, and the repository is unchanged
        assert rc == 2
        assert err == [f"{out}: refusing to use it as the output folder: it is the repository {repo.resolve()} (or a "
                       "folder above it), where clusters/, slurmgen/ and .git/ live; pass --out with a folder of its "
                       "own (default dist/)"]
    assert snapshot(repo) == before


@pytest.mark.parametrize("where", ["/", "home"])
def test_the_filesystem_root_and_home_are_refused(where, tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    out = "/" if where == "/" else str(home)
    rc, _, err = run_cli(capsys, "--spec", str(spec(tmp_path)), "--out", out)
    assert rc == 2 and len(err) == 1
    assert ("it is the filesystem root" if where == "/" else "it is the home folder") in err[0]
    assert list(home.iterdir()) == []


def test_a_non_empty_foreign_folder_is_refused_and_an_empty_one_gets_the_marker(tmp_path, capsys):
    # GIVEN a folder holding someone's notes, and an empty folder
    foreign, empty = tmp_path / "notes", tmp_path / "empty"
    foreign.mkdir()
    (foreign / "todo.txt").write_text("mine\n")
    empty.mkdir()
    # WHEN synth writes into each
    rc, _, err = run_cli(capsys, "--spec", str(spec(tmp_path)), "--out", str(foreign))
    # THEN the foreign one is refused, one line, untouched
    assert rc == 2 and len(err) == 1 and "not a slurmgen output folder" in err[0] and "todo.txt" in err[0]
    assert snapshot(foreign) == {"todo.txt": "mine\n"}
    # AND the empty one is written, with the marker that makes it ours
    assert main(["--spec", str(spec(tmp_path)), "--out", str(empty)]) == 0
    assert (empty / MARKER).read_text() == output.MARKER_TEXT
    assert (empty / "t" / "bootstrap" / "application-t-root.yaml").is_file()


def test_an_output_folder_that_is_a_file_is_one_line(tmp_path, capsys):
    out = tmp_path / "dist"
    out.write_text("not a folder\n")
    rc, _, err = run_cli(capsys, "--spec", str(spec(tmp_path)), "--out", str(out))
    assert rc == 2 and err == [f"{out}: exists and is not a folder; move it away, or pass --out with a new or empty folder"]
    assert out.read_text() == "not a folder\n"


def test_a_foreign_cluster_folder_in_our_output_is_refused(rendered_out, tmp_path, capsys):
    # GIVEN our output folder, where someone replaced t/ with their own files
    for path in sorted((rendered_out / "t").rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    (rendered_out / "t" / "data.csv").write_text("precious\n")
    before = snapshot(rendered_out)
    rc, _, err = run_cli(capsys, "--spec", str(spec(tmp_path)), "--out", str(rendered_out))
    assert rc == 2 and len(err) == 1 and "not a cluster tree slurmgen rendered" in err[0]
    assert snapshot(rendered_out) == before


def test_an_unmarked_output_of_only_our_cluster_trees_is_adopted(rendered_out, tmp_path, capsys):
    # GIVEN an output folder written before the marker existed
    (rendered_out / MARKER).unlink()
    # WHEN --check runs, THEN it reports the missing marker; synth writes it
    rc, out, _ = run_cli(capsys, "--spec", str(spec(tmp_path)), "--out", str(rendered_out), "--check")
    assert rc == 1 and out == [f"added:   {rendered_out / MARKER} (synth writes the marker that makes {rendered_out} slurmgen's)"]
    assert main(["--spec", str(spec(tmp_path)), "--out", str(rendered_out)]) == 0
    assert (rendered_out / MARKER).is_file()


# --- symlinks and broken files ----------------------------------------------------------------


def test_check_never_follows_a_symlink_out_of_the_tree(rendered_out, tmp_path, capsys):
    # GIVEN a rendered file replaced by a link to a secret outside the repository
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-VALUE\n")
    link = rendered_out / "t" / "slurm" / "controller-slurm.yaml"
    link.unlink()
    link.symlink_to(secret)
    # WHEN --check runs
    rc, out, err = run_cli(capsys, "--spec", str(spec(tmp_path)), "--out", str(rendered_out), "--check")
    # THEN drift (exit 1) naming the link, never its target's content nor its path
    assert rc == 1
    assert any(str(link) in line and "symbolic link" in line for line in out), out
    assert "TOP-SECRET" not in "\n".join(out + err) and str(secret) not in "\n".join(out + err)
    # AND synth refuses to write over a tree it did not write (exit 2), leaving the link and its target
    rc, _, err = run_cli(capsys, "--spec", str(spec(tmp_path)), "--out", str(rendered_out))
    assert rc == 2 and len(err) == 1 and "symbolic link" in err[0]
    assert link.is_symlink() and secret.read_text() == "TOP-SECRET-VALUE\n"


def test_a_broken_file_in_the_output_is_one_line_in_synth_and_drift_in_check(rendered_out, tmp_path, capsys):
    broken = rendered_out / "t" / "slurm" / "controller-slurm.yaml"
    broken.write_bytes(b"kind: [unclosed\n\xff\xfe")
    before = snapshot(rendered_out)
    rc, _, err = run_cli(capsys, "--spec", str(spec(tmp_path)), "--out", str(rendered_out))
    assert rc == 2 and len(err) == 1 and err[0].startswith(f"{broken}: cannot read the previous render")
    assert snapshot(rendered_out) == before
    rc, out, err = run_cli(capsys, "--spec", str(spec(tmp_path)), "--out", str(rendered_out), "--check")
    assert rc == 1 and len(out) == 1 and out[0].startswith(f"{broken}: cannot read")
    assert "Traceback" not in "\n".join(out + err)


def test_a_fifo_in_the_output_is_never_opened(rendered_out, tmp_path, capsys):
    # GIVEN a named pipe where a rendered file was (opening it would block forever)
    fifo = rendered_out / "t" / "slurm" / "controller-slurm.yaml"
    fifo.unlink()
    os.mkfifo(fifo)
    # WHEN --check and synth run, THEN both answer in the same one line, without opening it
    line = (f"{rendered_out / 't'}: not a tree slurmgen writes: {fifo} is not a regular file; "
            "move it away, or pass --out with a new or empty folder")
    rc, out, _ = run_cli(capsys, "--spec", str(spec(tmp_path)), "--out", str(rendered_out), "--check")
    assert rc == 1 and out == [line]
    rc, _, err = run_cli(capsys, "--spec", str(spec(tmp_path)), "--out", str(rendered_out))
    assert rc == 2 and err == [line]


def test_check_of_a_foreign_folder_is_drift_and_reads_nothing_in_it(tmp_path, capsys):
    foreign = tmp_path / "notes"
    (foreign / "t").mkdir(parents=True)
    (foreign / "t" / "todo.yaml").write_text("kind: [broken\n")
    rc, out, _ = run_cli(capsys, "--spec", str(spec(tmp_path)), "--out", str(foreign), "--check")
    assert rc == 1 and len(out) == 1 and "not a slurmgen output folder" in out[0]


def test_an_output_folder_below_a_file_is_one_line(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x\n")
    rc, _, err = run_cli(capsys, "--spec", str(spec(tmp_path)), "--out", str(blocker / "dist"))
    assert rc == 2 and len(err) == 1 and err[0].startswith(f"{blocker / 'dist'}: cannot write: Not a directory")
    assert blocker.read_text() == "x\n"


# --- failing file systems ---------------------------------------------------------------------


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS, errno.EACCES])
def test_a_full_or_read_only_output_is_one_line_and_changes_nothing(code, rendered_out, tmp_path, monkeypatch, capsys):
    # GIVEN a previous render (edited, so synth rewrites it), and a file system that fails the 5th file
    # written (full disk, read-only, no permission: injected, since the tests run as root and chmod
    # would not stop them)
    make_stale(rendered_out)
    before = snapshot(rendered_out)
    real, calls = output._write_file, {"n": 0}

    def failing(path, text):
        calls["n"] += 1
        if calls["n"] == 5:
            raise OSError(code, os.strerror(code), path)
        return real(path, text)

    monkeypatch.setattr(output, "_write_file", failing)
    # WHEN synth writes
    rc, _, err = run_cli(capsys, "--spec", str(spec(tmp_path)), "--out", str(rendered_out))
    # THEN exit 2, one line with the system's reason, the old tree intact, no temporary folder
    assert rc == 2 and len(err) == 1
    assert err[0].startswith(f"{rendered_out}: cannot write: {os.strerror(code)}") and "no cluster folder was changed" in err[0]
    assert snapshot(rendered_out) == before


@pytest.mark.parametrize("failing", ["a", "b"])  # a: the first tree staged, b: the second
def test_a_failed_write_of_one_of_several_clusters_changes_none_and_leaves_no_temporary_folder(
        failing, tmp_path, monkeypatch, capsys):
    # GIVEN two clusters rendered once, then both made stale (so both are staged)
    out = tmp_path / "dist"
    specs = [str(spec(tmp_path, "a")), str(spec(tmp_path, "b"))]
    assert main(["--spec", specs[0], "--spec", specs[1], "--out", str(out)]) == 0
    for name in ("a", "b"):
        (out / name / "compute" / "old.yaml").write_text("kind: ConfigMap\n")
    before = snapshot(out)
    real = output._write_file

    def failing_write(path, text):
        if f"/.{failing}.new-" in path and path.endswith(".yaml"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
        return real(path, text)

    monkeypatch.setattr(output, "_write_file", failing_write)
    capsys.readouterr()
    # WHEN synth writes both and the staging of one fails
    rc, _, err = run_cli(capsys, "--spec", specs[0], "--spec", specs[1], "--out", str(out))
    # THEN exit 2, one line, both old trees intact and no temporary folder left
    assert rc == 2 and len(err) == 1 and os.strerror(errno.ENOSPC) in err[0]
    assert snapshot(out) == before
    assert sorted(p.name for p in out.iterdir()) == sorted([MARKER, "a", "b"])


def test_every_tree_is_written_exactly_by_this_thread(tmp_path, monkeypatch):
    # GIVEN five trees
    trees = {f"c{i}": {f"unit/configmap-{j}.yaml": f"n: {i}-{j}\n" for j in range(30)} for i in range(5)}
    import threading

    real, writers = output._write_file, set()

    def noting_writer(path, text):
        writers.add(threading.current_thread().name)
        return real(path, text)

    monkeypatch.setattr(output, "_write_file", noting_writer)
    # WHEN written / THEN this thread alone wrote (no writer threads), each folder holds exactly its
    # files, nothing else is left
    output.write_all(tmp_path / "out", trees)
    assert writers == {threading.current_thread().name}
    assert {name: read_tree(tmp_path / "out" / name) for name in trees} == trees
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted([MARKER, *trees])


def test_a_failure_while_swapping_several_clusters_puts_every_old_tree_back(tmp_path, monkeypatch, capsys):
    # GIVEN two clusters rendered once
    out = tmp_path / "dist"
    specs = [str(spec(tmp_path, "a")), str(spec(tmp_path, "b"))]
    assert main(["--spec", specs[0], "--spec", specs[1], "--out", str(out)]) == 0
    for name in ("a", "b"):  # mark each old tree
        (out / name / "compute" / "old.yaml").write_text("kind: ConfigMap\n")
    before = snapshot(out)
    # WHEN the second swap fails (after the first succeeded)
    real, calls = output._swap, {"n": 0}

    def failing_swap(staging, target):
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(errno.EIO, os.strerror(errno.EIO), str(target))
        return real(staging, target)

    monkeypatch.setattr(output, "_swap", failing_swap)
    capsys.readouterr()
    rc, _, err = run_cli(capsys, "--spec", specs[0], "--spec", specs[1], "--out", str(out))
    # THEN exit 2 and both clusters keep their old tree: all or nothing
    assert rc == 2 and len(err) == 1 and os.strerror(errno.EIO) in err[0]
    assert snapshot(out) == before


# --- interrupted runs -------------------------------------------------------------------------

_SLOW_WRITER = """
import sys, time
from pathlib import Path
from slurmgen import cli
from slurmgen.write import output
real = output.write_tree
def slow(root, files):
    real(root, files)
    Path(sys.argv[1]).write_text("staged")  # the new tree is written, not yet swapped in
    time.sleep(60)
output.write_tree = slow
sys.exit(cli.main(sys.argv[2:]))
"""


def _interrupted(tmp_path: Path, out: Path, sig: int) -> subprocess.CompletedProcess:
    flag = tmp_path / "staged.flag"
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_WRITER, str(flag), "--spec", str(spec(tmp_path)),
                             "--out", str(out)], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not flag.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the writer never staged"
        time.sleep(0.05)
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def test_sigkill_mid_write_leaves_the_old_tree_and_the_next_runs_see_the_leftover(rendered_out, tmp_path, capsys):
    # GIVEN a render, and a synth killed with SIGKILL while its new tree is staged
    (rendered_out / "t" / "compute" / "old.yaml").write_text("kind: ConfigMap\n")
    before = snapshot(rendered_out / "t")
    done = _interrupted(tmp_path, rendered_out, signal.SIGKILL)
    assert done.returncode == -signal.SIGKILL
    leftovers = sorted(p.name for p in rendered_out.iterdir() if p.name.startswith(".t.new-"))
    # THEN the old tree is intact, a temporary folder is left ...
    assert snapshot(rendered_out / "t") == before and len(leftovers) == 1
    # ... which --check reports (exit 1) ...
    rc, out, _ = run_cli(capsys, "--spec", str(spec(tmp_path)), "--out", str(rendered_out), "--check")
    assert rc == 1 and out[0] == output.leftover_line(rendered_out / leftovers[0])
    # ... and the next synth removes
    assert main(["--spec", str(spec(tmp_path)), "--out", str(rendered_out)]) == 0
    assert sorted(p.name for p in rendered_out.iterdir()) == [MARKER, "t"]
    assert main(["--spec", str(spec(tmp_path)), "--out", str(rendered_out), "--check"]) == 0


def test_sigterm_mid_write_cleans_up_before_exiting(rendered_out, tmp_path):
    make_stale(rendered_out)
    before = snapshot(rendered_out)
    done = _interrupted(tmp_path, rendered_out, signal.SIGTERM)
    assert done.returncode == 128 + signal.SIGTERM and "Traceback" not in done.stderr
    assert snapshot(rendered_out) == before
    assert sorted(p.name for p in rendered_out.iterdir()) == [MARKER, "t"]


_KILLED_BETWEEN_SWAPS = """
import sys, time
from pathlib import Path
from slurmgen import cli
from slurmgen.write import output
real, calls = output._swap, []
def slow(staging, target):
    old = real(staging, target)
    calls.append(target)
    if len(calls) == 1:
        Path(sys.argv[1]).write_text("one swapped")
        time.sleep(60)
    return old
output._swap = slow
sys.exit(cli.main(sys.argv[2:]))
"""

_KILLED_BETWEEN_RENAMES = """
import os, sys, time
from pathlib import Path
from slurmgen import cli
from slurmgen.write import output
real = os.rename
def slow(src, dst):
    real(src, dst)
    if ".old-" in str(dst):  # the old tree is aside, the new one not yet in
        Path(sys.argv[1]).write_text("old aside")
        time.sleep(60)
output.os.rename = slow
sys.exit(cli.main(sys.argv[2:]))
"""


def _killed(tmp_path: Path, code: str, args: list[str]) -> None:
    """Run synth with `code` patched in and SIGKILL it once it wrote its flag."""
    flag = tmp_path / "killed.flag"
    proc = subprocess.Popen([sys.executable, "-c", code, str(flag), *args], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not flag.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    proc.kill()
    proc.communicate(timeout=60)


def test_sigkill_between_two_clusters_is_named_by_check_and_repaired_by_synth(tmp_path, capsys):
    # GIVEN two clusters rendered, then a synth of both killed after the first was replaced, before the second
    out = tmp_path / "dist"
    args = ["--spec", str(spec(tmp_path, "a")), "--spec", str(spec(tmp_path, "b")), "--out", str(out)]
    assert main(args) == 0
    (out / "a" / "compute" / "old.yaml").write_text("kind: ConfigMap\n")
    (out / "b" / "compute" / "old.yaml").write_text("kind: ConfigMap\n")
    _killed(tmp_path, _KILLED_BETWEEN_SWAPS, args)
    # THEN a is new and b old (each whole), and --check names a's old tree left aside and b's drift
    assert not (out / "a" / "compute" / "old.yaml").exists() and (out / "b" / "compute" / "old.yaml").exists()
    olds = sorted(p for p in out.iterdir() if p.name.startswith(".a.old-"))
    assert len(olds) == 1
    capsys.readouterr()
    rc, lines, _ = run_cli(capsys, *args, "--check")
    assert rc == 1 and output.leftover_line(olds[0]) in lines
    assert f"removed: {out / 'b' / 'compute' / 'old.yaml'}" in lines
    # AND the next synth writes b, removes the leftovers; --check is clean again
    assert main(args) == 0
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "a", "b"]
    assert main([*args, "--check"]) == 0


def test_sigkill_between_the_two_renames_of_a_cluster_keeps_its_old_tree_and_synth_puts_it_back(
        rendered_out, tmp_path, capsys):
    # GIVEN a render, then a synth killed after it renamed the old tree aside, before the new one is in
    (rendered_out / "t" / "compute" / "old.yaml").write_text("kind: ConfigMap\n")
    before = snapshot(rendered_out / "t")
    args = ["--spec", str(spec(tmp_path)), "--out", str(rendered_out)]
    _killed(tmp_path, _KILLED_BETWEEN_RENAMES, args)
    # THEN the old tree is whole, under its temporary name
    olds = sorted(p for p in rendered_out.iterdir() if p.name.startswith(".t.old-"))
    assert not (rendered_out / "t").exists() and len(olds) == 1 and snapshot(olds[0]) == before
    # AND --check says so (exit 1), changing nothing
    rc, lines, _ = run_cli(capsys, *args, "--check")
    assert rc == 1 and output.interrupted_line(rendered_out, "t", olds[0]) in lines
    assert not (rendered_out / "t").exists()
    # AND the survey of the next synth puts the old tree back first (what the guards then judge)
    found = output.survey(rendered_out, ["t"])
    output.restore(found)
    assert snapshot(rendered_out / "t") == before and not olds[0].exists()
    # AND a synth from that state ends clean
    (rendered_out / "t").rename(olds[0])
    assert main(args) == 0
    assert sorted(p.name for p in rendered_out.iterdir()) == [MARKER, "t"]
    assert main([*args, "--check"]) == 0


# --- summary base -----------------------------------------------------------------------------


def test_summary_base_is_never_an_option_to_git(tmp_path, capsys):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    rc, _, err = run_cli(capsys, "--spec", str(spec(tmp_path)), "--summary", f"--base=--output={victim}")
    assert rc == 2 and err == [f"--base '--output={victim}': not a git revision (a branch, tag, commit or HEAD~N)"]
    assert victim.read_text() == "keep me\n"


def test_summary_base_dir_that_does_not_exist_is_an_error_not_an_empty_base(tmp_path, capsys):
    rc, out, err = run_cli(capsys, "--spec", str(spec(tmp_path)), "--summary", "--base-dir", str(tmp_path / "nope"))
    assert rc == 2 and out == [] and err == [f"{tmp_path / 'nope'}: --base-dir: not a folder (does it exist?)"]


def test_a_cluster_left_aside_by_a_killed_run_is_still_judged_by_the_guards(rendered_out, tmp_path, capsys):
    # GIVEN a tree holding a stateful object the render no longer has, renamed aside by a killed synth
    pvc = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: slurm}\n"
    (rendered_out / "t" / "compute" / "pvc.yaml").write_text(pvc)
    (rendered_out / "t").rename(rendered_out / ".t.old-abc_123")
    # WHEN synth runs
    rc, _, err = run_cli(capsys, "--spec", str(spec(tmp_path)), "--out", str(rendered_out))
    # THEN the removal is refused as if the run had never been killed, and the old tree is back in place
    assert rc == 2 and any("PersistentVolumeClaim" in line for line in err), err
    assert (rendered_out / "t" / "compute" / "pvc.yaml").read_text() == pvc
    assert not (rendered_out / ".t.old-abc_123").exists()
