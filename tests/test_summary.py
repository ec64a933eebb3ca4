"""The PR summary, with golden Markdown for representative changes.

Each case edits an example spec, renders it, and summarizes it against the committed dist/.
Regenerate the golden files after an intended change with SLURMGEN_UPDATE_GOLDEN=1.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from slurmgen.cli import main
from tests.conftest import SPECS, assert_golden

GOLDEN = Path(__file__).parent / "golden" / "summary"

CASES = {
    "scale_up_training": ("training.yaml", [("    replicas: 16\n", "    replicas: 32\n")]),
    "widen_login": ("example.yaml", [("    scheme: internal\n    sourceRanges: [10.0.0.0/16, 192.168.100.0/24]",
                                      "    scheme: internet-facing\n    sourceRanges: [10.0.0.0/16, 203.0.113.7/32]")]),
    "bump_versions": ("example.yaml", [("certManager: v1.21.1", "certManager: v1.22.0"),
                                       ("slurmImageTag: 26.05.1-ubuntu26.04", "slurmImageTag: 26.05.3-ubuntu26.04"),
                                       ("  nodeRole: karpenterNode-slurm-on-eks\n",
                                        "  nodeRole: karpenterNode-slurm-on-eks\n  amiVersion: v20261101\n")]),
    "remove_fsx_and_a_user": ("example.yaml", [("    enabled: true\n    mode: static", "    enabled: false\n    mode: static"),
                                               ("    - {name: carol, defaultAccount: ops, adminLevel: Operator}\n", "")]),
    "new_nodeset_in_new_partition": ("prod.yaml", [
        ("  - name: h100\n", "  - name: l40s\n    instanceType: g6e.12xlarge\n    replicas: 2\n    features: [l40s]\n  - name: h100\n"),
        ("  - name: gpu\n", "  - name: inference\n    nodesets: [l40s]\n  - name: gpu\n")]),
    # effective slurm.conf: one partition, one nodeset, the scheduling weights
    "partition_max_time": ("prod.yaml", [("    maxTime: 7-00:00:00\n    priorityTier: 10\n",
                                          "    maxTime: 14-00:00:00\n    priorityTier: 20\n")]),
    "nodeset_weight_and_features": ("example.yaml", [("    features: [a10g, spot]\n    extraSlurmdConf: {Weight: 100}\n",
                                                      "    features: [a10g, spot, cheap]\n    extraSlurmdConf: {Weight: 50}\n")]),
    "scheduling_weights": ("training.yaml", [
        ("    decayHalfLife: 14-0\n    weights: {fairshare: 100000, age: 1000, jobSize: 1000, partition: 10000}\n",
         "    decayHalfLife: 7-0\n    weights: {fairshare: 50000, age: 5000, jobSize: 1000, partition: 10000, qos: 2000}\n")]),
}


def render_summary(tmp_path: Path, spec_name: str, edits, capsys, base_dir: Path) -> str:
    text = (SPECS / spec_name).read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    spec = tmp_path / spec_name
    for base in (SPECS).glob("_*.yaml"):
        (tmp_path / base.name).write_text(base.read_text())
    spec.write_text(text)
    capsys.readouterr()
    assert main(["--spec", str(spec), "--summary", "--base-dir", str(base_dir)]) == 0
    return capsys.readouterr().out


@pytest.fixture(autouse=True)
def no_chart_source(monkeypatch, tmp_path):
    """The chart section's 'not previewed' line is the same on every machine: no chart folder, cache or pull."""
    monkeypatch.delenv("SLURMGEN_CHART_DIR", raising=False)
    monkeypatch.setenv("SLURMGEN_CHART_PULL", "0")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


@pytest.mark.parametrize("case", sorted(CASES))
def test_summary_matches_golden(case, tmp_path, capsys, dist_tree):
    spec_name, edits = CASES[case]
    summary = render_summary(tmp_path, spec_name, edits, capsys, dist_tree)
    assert_golden(summary, GOLDEN / f"{case}.md")


def test_summary_headlines(tmp_path, capsys, dist_tree):
    summary = render_summary(tmp_path, *CASES["scale_up_training"], capsys, dist_tree)
    assert "- adds 16 p5.48xlarge node(s) (128 H100) to `train`\n- changes nothing stateful\n" in summary
    risky = render_summary(tmp_path, *CASES["remove_fsx_and_a_user"], capsys, dist_tree)
    assert "- **touches stateful objects** (see below)" in risky
    assert "- stateful: removes PersistentVolumeClaim slurm/fsx" in risky
    assert "- policy: User 'carol' left the spec; the accounts Job deletes its associations" in risky
    exposed = render_summary(tmp_path, *CASES["widen_login"], capsys, dist_tree)
    assert "login exposure widened: Service slurm/slurm-login-ssh becomes internet-facing" in exposed


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                   check=True, capture_output=True)


def test_no_change_and_default_base_is_head(tmp_path, capsys, dist_tree):
    # GIVEN a repository whose HEAD holds the example's committed tree
    repo = tmp_path / "repo"
    shutil.copytree(dist_tree / "example", repo / "dist" / "example")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "dist")
    spec = str(SPECS / "example.yaml")
    out = str(repo / "dist")
    # WHEN the example is summarized with no base named
    capsys.readouterr()
    assert main(["--spec", spec, "--out", out, "--summary"]) == 0
    # THEN nothing changed against HEAD
    assert capsys.readouterr().out == "## slurmgen: what this change deploys\n\nNo change to the rendered tree.\n"
    # AND the base is HEAD, not the folder on disk: editing the working tree changes nothing
    nodeset = repo / "dist" / "example" / "slurm" / "nodeset-slurm-worker-slinky.yaml"
    nodeset.write_text(nodeset.read_text().replace("replicas: 4", "replicas: 40"))
    assert main(["--spec", spec, "--out", out, "--summary"]) == 0
    assert "No change to the rendered tree." in capsys.readouterr().out
    # AND once that edit is committed, HEAD differs from the render and the summary says so
    git(repo, "commit", "-qam", "edit")
    assert main(["--spec", spec, "--out", out, "--summary"]) == 0
    summary = capsys.readouterr().out
    assert "No change to the rendered tree." not in summary
    assert "NodeSet slurm/slurm-worker-slinky" in summary and "spec.replicas" in summary


def test_summary_shows_the_effective_slurm_conf_per_entity_and_key(tmp_path, capsys, dist_tree):
    # GIVEN a partition's MaxTime and PriorityTier change WHEN summarized
    part = render_summary(tmp_path, *CASES["partition_max_time"], capsys, dist_tree)
    # THEN one line names the partition and each parameter, before → after
    assert "- `PartitionName=gpu` MaxTime 7-00:00:00 → 14-00:00:00; PriorityTier 10 → 20\n" in part
    node = render_summary(tmp_path, *CASES["nodeset_weight_and_features"], capsys, dist_tree)
    assert "- `NodeSet=spot` nodes (slurmd -Z --conf): Features spot,a10g → spot,a10g,cheap; Weight 100 → 50\n" in node
    weights = render_summary(tmp_path, *CASES["scheduling_weights"], capsys, dist_tree)
    assert "- scheduling: `PriorityWeightQOS` 0 → 2000\n" in weights
    assert "**Effective slurm.conf**" not in render_summary(tmp_path, *CASES["widen_login"], capsys, dist_tree)

