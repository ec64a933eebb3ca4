"""Queue-driven autoscaling alone: the KEDA ScaledObject of charts/autoscaling.py, in the Slurm cluster chart."""

from __future__ import annotations

from charts.slurm_cluster import SlurmClusterChart
from tests.charts import unit

AUTOSCALE = {"autoscale": {"min": 0, "max": 8, "cooldownSeconds": 600}}
PROMETHEUS = {"prometheusAddress": "http://kube-prometheus-stack-prometheus.kube-prometheus-stack.svc:9090"}


def test_an_autoscaled_nodeset_scales_with_the_queue_down_to_zero():
    # GIVEN the nodeset gpu with autoscale {min: 0, max: 8}, and a Prometheus with the Slurm metrics
    # WHEN the Slurm cluster chart is built alone
    objects = unit(SlurmClusterChart, nodeset=AUTOSCALE, autoscaling=PROMETHEUS)
    scaled = objects["ScaledObject/slurm-worker-gpu"]["spec"]
    # THEN a ScaledObject targets its NodeSet between 0 and 8 replicas
    assert scaled["scaleTargetRef"] == {"apiVersion": "slinky.slurm.net/v1beta1", "kind": "NodeSet",
                                        "name": "slurm-worker-gpu"}
    assert (scaled["minReplicaCount"], scaled["maxReplicaCount"]) == (0, 8) and "idleReplicaCount" not in scaled
    # AND one prometheus trigger sizes it in nodes wanted, with a fallback that never scales in
    [trigger] = scaled["triggers"]
    assert trigger["type"] == "prometheus" and trigger["metricType"] == "AverageValue"
    assert trigger["metadata"]["threshold"] == "1"
    assert scaled["fallback"]["behavior"] == "currentReplicasIfHigher"
    # AND the query counts the nodeset's busy nodes and its own partition's pending jobs
    query = trigger["metadata"]["query"]
    assert 'count(slurm_node_cpus_alloc{namespace="slurm",node=~"gpu-[0-9]+"} > 0) or vector(0)' in query
    assert 'sum(slurm_partition_jobs_pending{namespace="slurm",partition=~"gpu"})' in query
    # AND the NodeSet starts at zero replicas
    assert objects["NodeSet/slurm-worker-gpu"]["spec"]["replicas"] == 0


def test_a_fixed_nodeset_has_no_scaled_object():
    assert not [name for name in unit(SlurmClusterChart) if name.startswith("ScaledObject/")]


def test_the_query_reads_the_nodesets_own_partition_not_a_shared_one():
    # GIVEN the Spot nodeset alone in `backfill`, and also in `all` with the always-on nodeset
    from charts.autoscaling import partitions_of
    from tests.charts import model
    from tests.charts.test_slurm_cluster import TWO_NODESETS
    shared = {**TWO_NODESETS, "partitions": [*TWO_NODESETS["partitions"][:2],
                                             {"name": "all", "nodesets": ["slinky", "spot"], "default": True}]}
    spec = model(**shared)
    query = unit(SlurmClusterChart, **shared)["ScaledObject/slurm-worker-spot"]["spec"]["triggers"][0][
        "metadata"]["query"]
    # THEN its busy nodes (spot-0, spot-1, ...) keep replicas up while jobs run, and only backfill's non-held
    # pending jobs buy nodes (`all` also holds jobs waiting for the static nodes), at least the widest job
    assert partitions_of(spec, "spot") == ["backfill"]
    assert 'count(slurm_node_cpus_alloc{namespace="slurm",node=~"spot-[0-9]+"} > 0) or vector(0)' in query
    assert 'sum(slurm_partition_jobs_pending{namespace="slurm",partition=~"backfill"})' in query
    assert 'sum(slurm_partition_jobs_hold{namespace="slurm",partition=~"backfill"})' in query
    assert ('scalar(max(slurm_partition_jobs_max_job_nodes_nohold{namespace="slurm",partition=~"backfill"}) '
            'or vector(0))') in query
    # AND never the upstream example's pending-only signal
    assert not query.strip().startswith("slurm_partition_jobs_pending")
    assert query.count("(") == query.count(")")
