"""Where a pod may be scheduled: node labels of a NodePool, node affinity and taints, literally.

Shared by `--preview` (on pods the charts really render) and the tests (on chart defaults merged
with our values). Small on purpose: `selects` is the Kubernetes nodeSelectorTerms rule (terms
OR-ed, expressions AND-ed; k8s.io/component-helpers scheduling/corev1/nodeaffinity), `tolerates`
the taint/toleration rule (k8s.io/api core/v1 toleration.go ToleratesTaint), `node_labels` what
Karpenter puts on a node of a NodePool (its template labels, the single-valued `In` requirements,
`karpenter.sh/nodepool`), `node_variants` the nodes it may launch (one label set per combination of
its multi-valued `In` requirements: a node of a pool allowing several instance types carries one).
"""

from __future__ import annotations

from itertools import product
from typing import Any, Mapping

from ...spec.loader import merge

Obj = dict[str, Any]


# Helm's coalesce of values is the spec layer's `extends` merge: maps merge key by key, anything
# else (lists too) is replaced.
helm_merge = merge


def node_labels(nodepool: Obj) -> dict[str, str]:
    """Labels every node of a Karpenter NodePool carries (those a pod can rely on)."""
    template = nodepool["spec"]["template"]
    labels = dict((template.get("metadata") or {}).get("labels") or {})
    for req in template["spec"].get("requirements") or []:
        if req["operator"] == "In" and len(req["values"]) == 1:
            labels[req["key"]] = req["values"][0]
    labels["karpenter.sh/nodepool"] = nodepool["metadata"]["name"]
    return labels


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


def _expression(expr: Obj, labels: Mapping[str, str]) -> bool:
    key, op, values = expr["key"], expr["operator"], expr.get("values") or []
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt"):
        if key not in labels:
            return False
        try:
            have, want = int(labels[key]), int(values[0])
        except (ValueError, IndexError):
            return False
        return have > want if op == "Gt" else have < want
    raise ValueError(f"node selector operator {op!r} not modelled")


def selects(affinity: Obj | None, node_selector: Mapping[str, str] | None, labels: Mapping[str, str]) -> bool:
    """True when a pod with this nodeSelector and affinity may be scheduled on a node with these labels."""
    if any(labels.get(k) != v for k, v in (node_selector or {}).items()):
        return False
    required = ((affinity or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    if not required:
        return True
    return any(all(_expression(e, labels) for e in term.get("matchExpressions") or [])
               for term in required.get("nodeSelectorTerms") or [])


def tolerates(tolerations: list[Obj] | None, taint: Obj) -> bool:
    """True when one of the tolerations tolerates the taint."""
    for tol in tolerations or []:
        if tol.get("effect") and tol["effect"] != taint["effect"]:
            continue
        if tol.get("operator", "Equal") == "Exists":
            if not tol.get("key") or tol["key"] == taint["key"]:
                return True
        elif tol.get("key") == taint["key"] and (tol.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def lands_on(pod: Obj, labels: Mapping[str, str], taints: list[Obj]) -> bool:
    """A pod spec (nodeSelector, affinity, tolerations) may run on a node with these labels and taints."""
    return (selects(pod.get("affinity"), pod.get("nodeSelector"), labels)
            and all(tolerates(pod.get("tolerations"), t) for t in taints
                    if t.get("effect") in ("NoSchedule", "NoExecute")))
