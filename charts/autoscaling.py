"""KEDA ScaledObjects that size autoscaled NodeSets to the Slurm queue.

The upstream example scales on pending jobs alone with `metricType: Value`: once its jobs start
running nothing is pending, the HPA heads for the minimum, and the operator drains busy nodes. Ours
asks for the number of Slurm nodes *wanted*: nodes of this NodeSet that are running jobs, plus the
pending demand of its partitions (at least one node per pending, non-held job, and at least the
widest pending job). With `AverageValue` and a threshold of 1, KEDA sets replicas to exactly that
(capped by `max`). The query never drops while jobs run, so scale-in only follows finished work,
and the operator drains a node through slurmrestd before it deletes its pod.
"""

from __future__ import annotations

from typing import Any

from slurmgen.kube import naming
from slurmgen.plan.identity import uses_amp
from slurmgen.spec import ClusterSpec, NodeSetSpec
from slurmgen.spec.arn import amp_workspace

API = "keda.sh/v1alpha1"
AWS_AUTH = "keda-aws-identity"  # TriggerAuthentication: sign Amazon Managed Prometheus queries as the operator


def trigger_authentication_spec(spec: ClusterSpec) -> dict[str, Any] | None:
    """With Amazon Managed Prometheus: the operator's own AWS identity (no roleArn: its service account's)."""
    return {"podIdentity": {"provider": "aws"}} if uses_amp(spec) else None


def partitions_of(spec: ClusterSpec, nodeset: str) -> list[str]:
    """Partitions whose pending demand scales this nodeset: its own partitions (no other nodeset) when
    it has any, since jobs queued in a shared partition may be waiting for another nodeset's nodes;
    else every partition it belongs to."""
    own = [p.name for p in spec.sole_partitions(nodeset)]
    return own or [p.name for p in spec.partitions if nodeset in p.nodesets]


def demand_query(spec: ClusterSpec, ns: NodeSetSpec) -> str:
    """PromQL: Slurm nodes wanted for one nodeset = busy nodes + pending demand of its partitions.

    Every term is guarded with `or vector(0)`, so a partition with no series yields 0, not nothing.
    The `namespace` matcher keeps clusters that share one Prometheus apart.
    """
    ns_match = f'namespace="{spec.namespace}"'
    parts = "|".join(partitions_of(spec, ns.name))
    p_match = f'{ns_match},partition=~"{parts}"'
    busy = f'count(slurm_node_cpus_alloc{{{ns_match},node=~"{ns.name}-[0-9]+"}} > 0) or vector(0)'
    pending = (f"clamp_min(sum(slurm_partition_jobs_pending{{{p_match}}}) "
               f"- sum(slurm_partition_jobs_hold{{{p_match}}}), 0) or vector(0)")
    widest = f"max(slurm_partition_jobs_max_job_nodes_nohold{{{p_match}}}) or vector(0)"
    return f"({busy})\n+ clamp_min(({pending}), scalar({widest}))\n"


def scaled_object_spec(spec: ClusterSpec, ns: NodeSetSpec) -> dict[str, Any]:
    auto = ns.autoscale
    if auto is None or spec.prometheus_address is None:
        raise ValueError(f"nodeset {ns.name} has no autoscale block or no Prometheus address")
    body: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": "slinky.slurm.net/v1beta1", "kind": "NodeSet", "name": naming.nodeset_cr(ns.name)},
        "minReplicaCount": auto.min,
        "maxReplicaCount": auto.max,
        "pollingInterval": auto.polling_seconds,
        "cooldownPeriod": auto.cooldown_seconds,
        "advanced": {"horizontalPodAutoscalerConfig": {"behavior": {
            "scaleDown": {"stabilizationWindowSeconds": auto.cooldown_seconds}}}},
        # Prometheus unreachable: keep what runs (never scale in blind); go to min if that is higher.
        "fallback": {"failureThreshold": 3, "replicas": auto.min, "behavior": "currentReplicasIfHigher"},
        "triggers": [{
            "type": "prometheus",
            "metricType": "AverageValue",
            "metadata": {
                "serverAddress": spec.prometheus_address,
                "query": demand_query(spec, ns),
                "threshold": "1",
                "activationThreshold": "0",
                "ignoreNullValues": "true",
            },
        }],
    }
    amp = amp_workspace(spec.prometheus_address)
    if amp:  # SigV4 (KEDA v2.20.2 prometheus_scaler.go: awsRegion + an aws podIdentity authentication)
        body["triggers"][0]["metadata"]["awsRegion"] = amp[0]
        body["triggers"][0]["authenticationRef"] = {"name": AWS_AUTH, "kind": "TriggerAuthentication"}
    if auto.idle_to_zero and auto.min > 0:
        body["idleReplicaCount"] = 0
    return body


def ignore_replicas(spec: ClusterSpec) -> tuple[dict[str, object], ...]:
    """Argo CD ignoreDifferences for the autoscaled NodeSets only: KEDA owns their replicas."""
    return tuple({"group": "slinky.slurm.net", "kind": "NodeSet", "name": naming.nodeset_cr(ns.name),
                  "namespace": spec.namespace, "jsonPointers": ["/spec/replicas"]}
                 for ns in spec.nodesets if ns.autoscale)
