"""The PR summary, with golden Markdown for representative changes.

Each case edits an example spec, renders it, and summarizes it against the committed dist/.
Regenerate the golden files after an intended change with SLURMGEN_UPDATE_GOLDEN=1.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from slurmgen.cli import main
from tests.conftest import REPO

GOLDEN = Path(__file__).parent / "golden" / "summary"

CASES = {
    "scale_up_training": ("training.yaml", [("    replicas: 16\n", "    replicas: 32\n")]),
    "widen_login": ("example.yaml", [("    scheme: internal\n    sourceRanges: [10.0.0.0/16, 192.168.100.0/24]",
                                      "    scheme: internet-facing\n    sourceRanges: [10.0.0.0/16, 203.0.113.7/32]")]),
    "bump_versions": ("example.yaml", [("certManager: v1.21.1", "certManager: v1.22.0"),
                                       ("slurmImageTag: 26.05-ubuntu26.04", "slurmImageTag: 26.05.1-ubuntu26.04"),
                                       ("  nodeRole: karpenterNode-slurm-on-eks\n",
                                        "  nodeRole: karpenterNode-slurm-on-eks\n  amiVersion: v20261101\n")]),
    "remove_fsx_and_a_user": ("example.yaml", [("    enabled: true\n    mode: static", "    enabled: false\n    mode: static"),
                                               ("    - {name: carol, defaultAccount: ops, adminLevel: Operator}\n", "")]),
    "new_nodeset_in_new_partition": ("prod.yaml", [
        ("  - name: h100\n", "  - name: l40s\n    instanceType: g6e.12xlarge\n    replicas: 2\n    features: [l40s]\n  - name: h100\n"),
        ("  - name: gpu\n", "  - name: inference\n    nodesets: [l40s]\n  - name: gpu\n")]),
}


def render_summary(tmp_path: Path, spec_name: str, edits, capsys) -> str:
    text = (REPO / "clusters" / spec_name).read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    spec = tmp_path / spec_name
    for base in (REPO / "clusters").glob("_*.yaml"):
        (tmp_path / base.name).write_text(base.read_text())
    spec.write_text(text)
    capsys.readouterr()
    assert main(["--spec", str(spec), "--summary", "--base-dir", str(REPO / "dist")]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("case", sorted(CASES))
def test_summary_matches_golden(case, tmp_path, capsys):
    spec_name, edits = CASES[case]
    summary = render_summary(tmp_path, spec_name, edits, capsys)
    golden = GOLDEN / f"{case}.md"
    if os.environ.get("SLURMGEN_UPDATE_GOLDEN"):
        golden.write_text(summary)
    assert summary == golden.read_text()


def test_summary_headlines(tmp_path, capsys):
    summary = render_summary(tmp_path, *CASES["scale_up_training"], capsys)
    assert "- adds 16 p5.48xlarge node(s) (128 H100) to `train`\n- changes nothing stateful\n" in summary
    risky = render_summary(tmp_path, *CASES["remove_fsx_and_a_user"], capsys)
    assert "- **touches stateful objects** (see below)" in risky
    assert "- stateful: removes PersistentVolumeClaim slurm/fsx" in risky
    assert "- policy: User 'carol' left the spec; the accounts Job deletes its associations" in risky
    exposed = render_summary(tmp_path, *CASES["widen_login"], capsys)
    assert "login exposure widened: Service slurm/slurm-login-ssh becomes internet-facing" in exposed


def test_no_change_and_default_base_is_head(capsys):
    # the committed dist/ at HEAD equals a fresh render in a clean checkout
    inside_git = subprocess.run(["git", "-C", str(REPO), "rev-parse"], capture_output=True).returncode == 0
    if not inside_git:
        pytest.fail("the tests run from a git checkout")
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "dist", "clusters"],
                           capture_output=True, text=True).stdout
    assert main(["--summary"]) == 0
    out = capsys.readouterr().out
    if not dirty:
        assert out == "## slurmgen: what this change deploys\n\nNo change to the rendered tree.\n"
    else:
        assert out.startswith("## slurmgen: what this change deploys\n")
