"""`cdk8s synth` through the pinned cdk8s CLI keeps every guarantee of `make synth`.

The CLI empties its `output` before it runs the app (cdk8s-cli 2.207.60 lib/cli/cmds/synth.js), so
cdk8s.yaml points `output` at a scratch folder and the app writes dist/ itself. Each test runs the
real CLI on a copy of the repository's entry point with the test's own spec.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import MINIMAL_SPEC, REPO, running_venv
from .spec_builder import variant

CLI = REPO / "node_modules" / ".bin" / "cdk8s"
SPEC = MINIMAL_SPEC + "versions: {slurmImageTag: 26.05.1-ubuntu26.04}\n"


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _fork(root: Path) -> Path:
    """A repository with the project's entry point, cdk8s.yaml and one cluster spec of the test's."""
    if not CLI.exists():
        why = f"{CLI} is not installed: run `npm ci` (`make test` does)"
        if os.environ.get("SLURMGEN_REQUIRE_TOOLS") == "1":
            pytest.fail(f"{why}; SLURMGEN_REQUIRE_TOOLS=1 forbids skipping")
        pytest.skip(why)
    repo = root / "repo"
    repo.mkdir()
    for name in ("main.py", "cdk8s.yaml"):
        shutil.copy(REPO / name, repo / name)
    for package in ("slurmgen", "charts", "apps"):
        shutil.copytree(REPO / package, repo / package, ignore=shutil.ignore_patterns("__pycache__"))
    (repo / ".venv").symlink_to(running_venv(), target_is_directory=True)  # CI runs in place with another .venv
    (repo / "clusters").mkdir()
    (repo / "clusters" / "t.yaml").write_text(SPEC)
    return repo


@pytest.fixture(scope="module")
def first_synth(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """A fork and what its first `cdk8s synth` did (once for the module: each test copies the fork)."""
    repo = _fork(tmp_path_factory.mktemp("fork"))
    return repo, cdk8s_synth(repo)


@pytest.fixture()
def fork(first_synth, tmp_path: Path) -> Path:
    """A rendered fork of the test's own (a copy of the module's, links kept as links)."""
    repo, done = first_synth
    assert done.returncode == 0, done.stdout + done.stderr
    copy = tmp_path / "repo"
    shutil.copytree(repo, copy, symlinks=True)
    return copy


def cdk8s_synth(repo: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{running_venv() / 'bin'}:{os.environ['PATH']}", "CDK8S_CHECK_UPGRADE": "false"}
    return subprocess.run([str(CLI), "synth"], cwd=repo, env=env, capture_output=True, text=True, timeout=300)


def test_cdk8s_synth_renders_dist_quietly(first_synth):
    # WHEN `cdk8s synth` runs in a fork
    repo, done = first_synth
    # THEN dist/<cluster>/ holds the tree, and the CLI lists only its scratch folder's pointer
    assert done.returncode == 0, done.stdout + done.stderr
    assert (repo / "dist" / "t" / "bootstrap" / "application-t-root.yaml").is_file()
    assert [line for line in done.stdout.splitlines() if line.startswith("  - ")] == [
        "  - build/cdk8s/rendered-into-dist.yaml"]


@pytest.mark.parametrize(("change", "says"), [
    pytest.param({"nodeSets": []}, "t.yaml:", id="typo"),
    pytest.param({"controller": {"persistence": {"size": "2Gi"}}}, "pass --allow-destroy t:Controller/slurm",
                 id="unapproved-destroy"),
])
def test_a_refused_cdk8s_synth_leaves_dist_byte_identical(fork, change, says):
    # GIVEN a rendered fork, and a file of the team's own beside the cluster folders
    (fork / "dist" / "NOTES.md").write_text("ours\n")
    before = _tree(fork / "dist")
    # WHEN a spec with a typo, or with a change that would destroy data, goes through `cdk8s synth`
    spec = fork / "clusters" / "t.yaml"
    spec.write_text(variant(spec.read_text(), **change))
    done = cdk8s_synth(fork)
    # THEN it fails, our one line first (then the CLI's own report), no Python traceback,
    assert done.returncode != 0
    assert says in done.stderr.splitlines()[0] and "Traceback" not in done.stderr
    # AND dist/ (marker, files and the team's file) is byte-identical
    assert _tree(fork / "dist") == before
