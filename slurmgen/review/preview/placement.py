"""Where a pod may be scheduled on the nodes of the NodePools a cluster renders.

Used by `--preview` (on pods the charts really render) and the tests (on chart defaults merged
with our values). The Kubernetes rules themselves (`selects`, `tolerates`, `node_labels`) are in
slurmgen/kube/scheduling.py, shared with the synth-time proof (verify/consistency.py); here
`node_variants` the nodes a pool may launch (one label set per combination of its multi-valued `In`
requirements: a node of a pool allowing several instance types carries one) and `lands_on`.
"""

from __future__ import annotations

from itertools import product
from typing import Any, Mapping

from ...kube.scheduling import node_labels, selects, tolerates
from ...spec.loader import merge

__all__ = ["helm_merge", "lands_on", "node_labels", "node_variants", "selects", "tolerates"]

Obj = dict[str, Any]


# Helm's coalesce of values is the spec layer's `extends` merge: maps merge key by key, anything
# else (lists too) is replaced.
helm_merge = merge


def node_variants(nodepool: Obj) -> list[dict[str, str]]:
    """The label sets of the nodes a NodePool may launch, in a stable order.

    A requirement `In [a, b]` means each node carries exactly one of the values (Karpenter labels a
    node with the instance type, zone, capacity type it chose), so a pool allowing two instance types
    launches two kinds of node: a pod selecting one type lands on one kind only, a pod with no such
    selector on both. `node_labels` alone would leave the label out and hide the difference.
    """
    base = node_labels(nodepool)
    allowed: dict[str, set[str]] = {}
    for req in nodepool["spec"]["template"]["spec"].get("requirements") or []:
        if req["operator"] == "In" and len(req["values"]) > 1:  # two requirements on one key: both hold
            allowed[req["key"]] = allowed.get(req["key"], set(req["values"])) & set(req["values"])
    keys = sorted(allowed)
    return [{**base, **dict(zip(keys, combo, strict=True))} for combo in product(*(sorted(allowed[k]) for k in keys))]


def lands_on(pod: Obj, labels: Mapping[str, str], taints: list[Obj]) -> bool:
    """A pod spec (nodeSelector, affinity, tolerations) may run on a node with these labels and taints."""
    return (selects(pod.get("affinity"), pod.get("nodeSelector"), labels)
            and all(tolerates(pod.get("tolerations"), t) for t in taints
                    if t.get("effect") in ("NoSchedule", "NoExecute")))
