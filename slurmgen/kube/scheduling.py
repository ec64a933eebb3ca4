"""What the Kubernetes scheduler decides about one pod and one node: node selection and taints.

One home for these rules, used by the synth-time placement proof (slurmgen/verify/consistency.py),
`--preview` (slurmgen/review/preview/) and the tests. Each follows the upstream function it names:

- `selects`: nodeSelector, then nodeSelectorTerms (terms OR-ed, expressions AND-ed);
  k8s.io/component-helpers scheduling/corev1/nodeaffinity/nodeaffinity.go.
- `tolerates`: k8s.io/api v0.34.0 core/v1/toleration.go `ToleratesTaint`. Go has no missing string,
  so an absent key, value or effect is "" there: a toleration without a value is one with value "".
- `node_labels`: the labels Karpenter (v1.14.1) gives every node of a NodePool.
"""

from __future__ import annotations

from typing import Any, Mapping

from .vocabulary import NODEPOOL_LABEL

__all__ = ["node_labels", "selects", "toleration_tolerates", "tolerates"]

Obj = dict[str, Any]


def toleration_tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Kubernetes' ToleratesTaint: an empty effect or key matches any; "" (or no) operator is Equal,
    which compares values with a missing value read as ""; Exists matches any value. Lt and Gt
    (later, behind a feature gate that is off by default) and any other operator tolerate nothing."""
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    if toleration.get("key") and toleration["key"] != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return operator == "Exists"


def tolerates(tolerations: list[Obj] | None, taint: Mapping[str, Any]) -> bool:
    """True when one of the tolerations tolerates the taint."""
    return any(toleration_tolerates(tol, taint) for tol in tolerations or [])


def _expression(expr: Obj, labels: Mapping[str, str]) -> bool:
    """One matchExpression against the node's labels (Gt and Lt compare integers, as Kubernetes does)."""
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


def node_labels(nodepool: Obj) -> dict[str, str]:
    """Labels every node of a Karpenter NodePool carries (those a pod can rely on)."""
    template = nodepool["spec"]["template"]
    labels = dict((template.get("metadata") or {}).get("labels") or {})
    for req in template["spec"].get("requirements") or []:
        if req["operator"] == "In" and len(req["values"]) == 1:
            labels[req["key"]] = req["values"][0]
    labels[NODEPOOL_LABEL] = nodepool["metadata"]["name"]
    return labels
