"""What the scheduler would decide, for tests: chart values as Helm merges them, node affinity and taints.

Small and literal on purpose: `helm_values` is Helm's coalesce (maps merge key by key, anything else
replaces, lists whole), `selects` is the Kubernetes nodeSelectorTerms rule (terms OR-ed, expressions
AND-ed), `tolerates` the taint/toleration rule, and `node_labels` what Karpenter puts on a node of a
NodePool (its template labels, the single-valued `In` requirements, `karpenter.sh/nodepool`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from slurmgen.spec.loader import merge


def helm_values(charts: Path, source: dict[str, Any]) -> dict[str, Any]:
    """The values a chart's templates see: the pinned defaults overlaid with the Application's valuesObject."""
    defaults = yaml.safe_load((charts / source["chart"] / source["targetRevision"] / "values.yaml").read_text()) or {}
    return merge(defaults, source["helm"].get("valuesObject", {}))


def node_labels(nodepool: dict[str, Any]) -> dict[str, str]:
    template = nodepool["spec"]["template"]
    labels = dict(template["metadata"].get("labels", {}))
    for req in template["spec"]["requirements"]:
        if req["operator"] == "In" and len(req["values"]) == 1:
            labels[req["key"]] = req["values"][0]
    labels["karpenter.sh/nodepool"] = nodepool["metadata"]["name"]
    return labels


def _expression(expr: dict[str, Any], labels: dict[str, str]) -> bool:
    key, op, values = expr["key"], expr["operator"], expr.get("values", [])
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    raise ValueError(f"operator {op} not modelled")


def selects(affinity: dict[str, Any] | None, node_selector: dict[str, str] | None, labels: dict[str, str]) -> bool:
    """True when a pod with this nodeSelector and affinity may be scheduled on a node with these labels."""
    if any(labels.get(k) != v for k, v in (node_selector or {}).items()):
        return False
    required = ((affinity or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    if not required:
        return True
    return any(all(_expression(e, labels) for e in term.get("matchExpressions", []))
               for term in required["nodeSelectorTerms"])


def tolerates(tolerations: list[dict[str, Any]] | None, taint: dict[str, Any]) -> bool:
    for tol in tolerations or []:
        if tol.get("effect") and tol["effect"] != taint["effect"]:
            continue
        if tol.get("operator", "Equal") == "Exists":
            if not tol.get("key") or tol["key"] == taint["key"]:
                return True
        elif tol.get("key") == taint["key"] and tol.get("value") == taint.get("value"):
            return True
    return False
