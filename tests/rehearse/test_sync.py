"""The sync stage on the real components: Argo CD syncs every tests/specs cluster from a local git
repository until each Application is Synced and Healthy in wave order, then a second rendering
(a nodeset removed, a partition changed) converges, prunes, and keeps what is marked Prune=false.

Helm Applications need their charts: ../shared/chart-sources (or SLURMGEN_CHART_DIR). Without them
the tests skip, saying so; SLURMGEN_REQUIRE_REHEARSAL=1 (CI, which has ../shared) forbids that."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, REPO
from tests.rehearse.conftest import REQUIRE_REHEARSAL


def say(message: str) -> None:
    print(f"rehearse: {message}", file=sys.stderr, flush=True)


@pytest.fixture(scope="module")
def locator():
    from slurmgen.review.preview.charts import ChartLocator

    folder = Path(os.environ.get("SLURMGEN_CHART_DIR") or REPO.parent / "shared" / "chart-sources")
    if not folder.is_dir():
        reason = f"the sync stage needs the pinned charts unpacked: no {folder} (set SLURMGEN_CHART_DIR)"
        if REQUIRE_REHEARSAL:
            pytest.fail(f"{reason}; SLURMGEN_REQUIRE_REHEARSAL=1 forbids skipping it")
        pytest.skip(reason)
    return ChartLocator(chart_dir=folder, pull=False)


@pytest.mark.parametrize("name", [p.stem for p in EXAMPLES])
def test_argo_cd_syncs_every_spec_cluster_in_wave_order_then_converges_and_prunes_a_second_rendering(
        name, dist_tree, bin_dir, locator, tmp_path):
    from rehearse import change, sync

    # GIVEN the cluster's committed tree, and a second rendering of its spec with a nodeset removed
    second, said = change.second_rendering(dist_tree / name, tmp_path)
    # WHEN Argo CD syncs the first from a local repository, then the second committed over it
    outcome = sync.rehearse_cluster(bin_dir, dist_tree / name, locator, say, second)
    # THEN every Application of the tree converged (rehearse_cluster raises SyncFailed, naming what
    # did not), the root last of all, with the checks made: waves in order, the PostSync Job after
    # the Sync hooks, the second rendering converged with its prunes
    names = {app.name for app in outcome.apps}
    assert f"{name}-root" in names and f"{name}-slurm" in names
    assert outcome.checks[0].startswith("waves in order")
    assert any(c.startswith("second rendering converged") for c in outcome.checks), outcome.checks
    if said[0].startswith("nodeset"):  # a nodeset was removed: its NodeSet, NodePool... were pruned
        pruned = [c for c in outcome.checks if c.startswith("second rendering")][0]
        assert not pruned.startswith("second rendering converged: 0 objects pruned"), pruned
    # AND a chart was left out only when the chart folder lacks it, saying so (training's neuron chart
    # is not among ../shared's sources), and every fake is one the docs list
    for line in outcome.rewrites.left_out:
        assert "not found" in line and "not in" in line, line
    from rehearse.fakes import FAKED

    assert set(outcome.faked) <= {f.kind for f in FAKED} | {"PersistentVolume (provisioned)"}
