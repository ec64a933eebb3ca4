"""Shared fixtures: the repository, the upstream CRDs in ../shared/crds, and renders of the examples."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
# The pinned upstream CRDs and chart defaults: ../shared in this project's CI, or wherever the
# environment says (a repository of specs fetches the CRDs: python -m slurmgen.validate.sources fetch).
CRDS = Path(os.environ.get("SLURMGEN_CRD_DIR") or SHARED / "crds")
CHARTS = Path(os.environ.get("SLURMGEN_CHARTS_DIR") or SHARED / "charts")
EXAMPLES = sorted(p for p in (REPO / "clusters").glob("*.yaml") if not p.name.startswith("_"))

# The smallest valid spec: tests add to it what they exercise.
MINIMAL_SPEC = """\
schemaVersion: 1
name: t
aws: {region: us-west-2, eksClusterName: eks}
gitops: {repoURL: "https://github.com/o/r.git"}
nodesets: [{name: gpu, instanceType: g5.xlarge}]
partitions: [{name: gpu, nodesets: [gpu]}]
"""

# Tests validate against the pinned CRDs the project ships with; never a user's cache.
os.environ.setdefault("SLURMGEN_CRD_DIR", str(CRDS))


def pytest_configure(config: pytest.Config) -> None:
    if not CRDS.is_dir():
        raise pytest.UsageError(f"upstream CRDs not found at {CRDS}; the tests validate against them")


@pytest.fixture(scope="session")
def rendered():
    """Every example cluster, rendered and verified once per test session: {cluster name: RenderedCluster}."""
    from slurmgen.pipeline import run

    result = run(EXAMPLES, crd_dir=CRDS)
    return {c.spec.name: c for c in result.clusters}


@pytest.fixture(scope="session")
def example(rendered):
    """The embedded default cluster's files: {relative path: object}."""
    return rendered["example"].files
