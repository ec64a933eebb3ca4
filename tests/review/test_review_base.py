"""The summary's base as git stores it (issue 32, class 7) and within bounds (class 6): a committed
`.gitattributes` cannot hide base files, a large committed file is never read whole, and a summary
to a standard output that refuses writes is one line, not a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from slurmgen.cli import main
from slurmgen.review.base import BaseUnavailable, trees_from_dir, trees_from_git
from tests.conftest import MINIMAL_SPEC, REPO


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                   check=True, capture_output=True)


@pytest.fixture
def committed(tmp_path) -> tuple[Path, Path]:
    """A repository whose HEAD holds the minimal spec's rendered tree in dist/: (repo, spec)."""
    repo = tmp_path / "repo"
    spec = repo / "clusters" / "t.yaml"
    spec.parent.mkdir(parents=True)
    spec.write_text(MINIMAL_SPEC)
    assert main(["--no-cache", "--spec", str(spec), "--out", str(repo / "dist")]) == 0
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "dist")
    return repo, spec


@pytest.mark.parametrize("attributes", [
    "* export-ignore\n",
    "t/storage/** export-ignore\nt/slurm/*.yaml export-ignore\n",
    "*.yaml filter=hide export-subst\n",
])
def test_gitattributes_cannot_hide_base_files(committed, attributes):
    # GIVEN a committed dist/.gitattributes that hides files from `git archive`
    repo, _spec = committed
    (repo / "dist" / ".gitattributes").write_text(attributes)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "hide")
    # WHEN the base is read at HEAD THEN it holds every object of the committed tree
    assert trees_from_git("HEAD", repo / "dist") == trees_from_dir(repo / "dist")


def test_gitattributes_cannot_blind_the_summary(committed, capsys):
    # GIVEN the committed tree, then a commit that hides every file from `git archive`
    repo, spec = committed
    (repo / "dist" / ".gitattributes").write_text("* export-ignore\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "hide")
    capsys.readouterr()
    # WHEN the unchanged spec is summarized against HEAD THEN nothing changed (not "everything added")
    assert main(["--no-cache", "--spec", str(spec), "--out", str(repo / "dist"), "--summary"]) == 0
    assert capsys.readouterr().out == "## slurmgen: what this change deploys\n\nNo change to the rendered tree.\n"


def test_a_large_committed_file_is_refused_by_its_size_unread(committed):
    # GIVEN a committed rendered file of 5 MiB (no rendered object is past 4 MiB), and a large non-YAML file
    repo, _spec = committed
    (repo / "dist" / "t" / "slurm" / "big.yaml").write_text("k: " + "x" * (5 * 1024 * 1024) + "\n")
    (repo / "dist" / "t" / "blob.bin").write_bytes(b"\0" * (5 * 1024 * 1024))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "big")
    # WHEN the base is read THEN one line naming the file and the bound
    with pytest.raises(BaseUnavailable) as err:
        trees_from_git("HEAD", repo / "dist")
    assert err.value.lines == [f"dist/t/slurm/big.yaml at HEAD: {5 * 1024 * 1024 + 4} bytes, larger than 4096 KiB; "
                               "no rendered object is that large (restore the file, or compare with --base-dir)"]
    # AND without it, the large non-YAML file is skipped (never read)
    git(repo, "rm", "-q", "dist/t/slurm/big.yaml")
    git(repo, "commit", "-qm", "small")
    assert trees_from_git("HEAD", repo / "dist") == trees_from_dir(repo / "dist")


def test_a_summary_to_a_full_standard_output_is_one_line(committed):
    # GIVEN a summary printed to a device that refuses every write
    repo, spec = committed
    next((repo / "dist" / "t" / "slurm").glob("nodeset-*.yaml")).unlink()  # a change: the summary has lines
    with open("/dev/full", "w") as full:
        run = subprocess.run([sys.executable, "-O", "main.py", "--no-cache", "--spec", str(spec), "--summary",
                              "--base-dir", str(repo / "dist")], stdout=full, stderr=subprocess.PIPE, text=True,
                             cwd=REPO, timeout=120)
    # THEN exit 2, one line, no traceback
    assert run.returncode == 2
    assert run.stderr.splitlines() == ["standard output: cannot write: No space left on device; nothing more was "
                                       "printed"]
