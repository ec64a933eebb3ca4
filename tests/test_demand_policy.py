"""Autoscaling with the queue (KEDA) and accounts/QoS/fair share as code, on the example cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from charts.autoscaling import partitions_of
from charts.policy import flat_file
from slurmgen.spec import parse_text
from tests.spec_builder import spec_text

GOLDEN = Path(__file__).parent / "golden"


def test_query_counts_busy_nodes_plus_pending_demand_of_the_nodesets_partitions(example):
    query = example["slurm/scaledobject-slurm-worker-spot.yaml"]["spec"]["triggers"][0]["metadata"]["query"]
    # busy: nodes of this nodeset (spot-0, spot-1, ...) running anything: keeps replicas up while jobs run
    assert 'count(slurm_node_cpus_alloc{namespace="slurm",node=~"spot-[0-9]+"} > 0) or vector(0)' in query
    # pending: non-held pending jobs of the nodeset's own partition (`all` also holds jobs waiting for
    # the static nodes, which must not buy Spot nodes), at least the widest job
    assert 'sum(slurm_partition_jobs_pending{namespace="slurm",partition=~"backfill"})' in query
    assert 'sum(slurm_partition_jobs_hold{namespace="slurm",partition=~"backfill"})' in query
    assert 'scalar(max(slurm_partition_jobs_max_job_nodes_nohold{namespace="slurm",partition=~"backfill"}) or vector(0))' in query
    # never the upstream example's pending-only signal
    assert not query.strip().startswith("slurm_partition_jobs_pending")
    assert query.count("(") == query.count(")")


def test_argo_cd_ignores_replicas_of_autoscaled_nodesets_only(example):
    app = example["apps/application-example-slurm.yaml"]["spec"]
    assert app["ignoreDifferences"] == [{"group": "slinky.slurm.net", "kind": "NodeSet", "name": "slurm-worker-spot",
                                         "namespace": "slurm", "jsonPointers": ["/spec/replicas"]}]
    assert "RespectIgnoreDifferences=true" in app["syncPolicy"]["syncOptions"]
    assert example["slurm/nodeset-slurm-worker-slinky.yaml"]["spec"]["replicas"] == 4  # still Argo CD's


def test_karpenter_limits_follow_the_autoscale_max(example):
    pool = example["compute/nodepool-example-spot.yaml"]["spec"]
    assert pool["limits"]["nodes"] == "8" and pool["disruption"]["consolidationPolicy"] == "WhenEmpty"


def test_keda_is_a_pinned_server_side_applied_child_before_the_slurm_crs(example):
    app = example["apps/application-example-keda.yaml"]
    assert app["spec"]["source"]["chart"] == "keda" and app["spec"]["source"]["targetRevision"] == "2.20.2"
    assert "ServerSideApply=true" in app["spec"]["syncPolicy"]["syncOptions"]
    slurm = example["apps/application-example-slurm.yaml"]
    wave = "argocd.argoproj.io/sync-wave"
    assert int(app["metadata"]["annotations"][wave]) < int(slurm["metadata"]["annotations"][wave])
    assert app["spec"]["source"]["helm"]["valuesObject"]["rbac"]["scaledRefKinds"] == [
        {"apiGroup": "slinky.slurm.net", "kind": "nodesets"}]


def test_flat_file_matches_golden(rendered):
    spec = rendered["example"].spec
    assert flat_file(spec) == (GOLDEN / "example-accounts.cfg").read_text(), "tests/golden/example-accounts.cfg"


def test_flat_file_orders_qos_before_cluster_and_parents_before_children(rendered):
    lines = flat_file(rendered["example"].spec).splitlines()[1:]
    cluster = next(i for i, line in enumerate(lines) if line.startswith("Cluster - "))
    assert all(line.startswith("QOS - ") for line in lines[:cluster])
    defined = {"root"}
    for line in lines[cluster + 1:]:
        if line.startswith("Parent - "):
            assert line.split("'")[1] in defined, line
        if line.startswith("Account - "):
            defined.add(line.split("'")[1])


def test_slurm_conf_follows_the_policy(example):
    conf = example["slurm/controller-slurm.yaml"]["spec"]["extraConf"].splitlines()
    for line in ("AccountingStorageEnforce=associations,limits,qos", "AccountingStorageTRES=gres/gpu",
                 "PriorityWeightFairshare=10000", "PriorityWeightQOS=2000",
                 "PreemptType=preempt/qos", "PreemptMode=REQUEUE"):
        assert line in conf
    assert "PreemptType=preempt/partition_prio" not in conf


@pytest.mark.parametrize("autoscale,idle", [({"min": 2, "max": 4}, 0), ({"min": 2, "max": 4, "idleToZero": False}, None)])
def test_idle_replica_count(autoscale, idle):
    from charts.autoscaling import scaled_object_spec

    text = spec_text(nodeset={"autoscale": autoscale}, autoscaling={"prometheusAddress": "http://prom:9090"})
    spec = parse_text("t.yaml", text)
    assert scaled_object_spec(spec, spec.nodesets[0]).get("idleReplicaCount") == idle


def test_autoscaling_counts_own_partitions_when_there_are_some(rendered):
    spec = rendered["example"].spec
    assert partitions_of(spec, "spot") == ["backfill"]
    shared_only = parse_text("t.yaml", spec_text(
        nodesets=[{"name": "gpu", "instanceType": "g5.xlarge"}, {"name": "cpu", "instanceType": "m7i.xlarge"}],
        partitions=[{"name": "all", "nodesets": ["gpu", "cpu"]}]))
    assert partitions_of(shared_only, "gpu") == ["all"]
