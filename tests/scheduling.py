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


# Keys of subcharts whose values.yaml is not in the pinned copies (kube-prometheus-stack 88.5.3 depends
# on grafana 12.11.1 and kube-state-metrics 8.4.0, not vendored in ../shared/charts): only the keys we
# set, each a top-level key of that subchart's own values.yaml (nodeSelector: {}, tolerations: []).
SUBCHART_KEYS: dict[str, dict[str, Any]] = {
    "kube-prometheus-stack": {"grafana": {"nodeSelector": {}, "tolerations": []},
                              "kube-state-metrics": {"nodeSelector": {}, "tolerations": []}},
}

# Charts with no copy in ../shared/charts yet: the defaults of the keys we set or rely on, as read
# from the chart's values.yaml at the pinned version (cited), until the copy is added there.
UNVENDORED: dict[tuple[str, str], dict[str, Any]] = {
    # aws-neuron/neuron-helm-charts charts/neuron-helm-chart/values.yaml @ b77a6f9 (release 1.9.0)
    ("neuron-helm-chart", "1.9.0"): {
        "devicePlugin": {
            "enabled": True, "nodeSelector": {},
            "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"},
                            {"key": "aws.amazon.com/neuron", "operator": "Exists", "effect": "NoSchedule"},
                            {"key": "sagemaker.amazonaws.com/node-health-status", "operator": "Equal",
                             "value": "Unschedulable", "effect": "NoSchedule"}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [
                    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["trn2.48xlarge"]},
                    {"key": "eks.amazonaws.com/compute-type", "operator": "NotIn",
                     "values": ["fargate", "hybrid", "auto"]}]}]}}}},
        "draDriver": {"enabled": False, "nodeSelector": {}, "tolerations": []},
        "npd": {"enabled": True, "nodeSelector": {},
                "tolerations": [{"effect": "NoSchedule", "operator": "Exists"}, {"effect": "NoExecute", "operator": "Exists"}]},
        "scheduler": {"enabled": False, "nodeSelector": {}, "tolerations": [],
                      "customScheduler": {"nodeSelector": {}, "tolerations": []},
                      "defaultScheduler": {"nodeSelector": {}, "tolerations": []}},
        "ultraserverOperator": {"enabled": False, "nodeSelector": {}, "tolerations": []},
    },
}


def pinned_defaults(charts: Path, source: dict[str, Any]) -> dict[str, Any] | None:
    """A chart's default values at the pinned version (with SUBCHART_KEYS), or None when we have no copy."""
    key = (source["chart"], source["targetRevision"])
    values_file = charts / key[0] / key[1] / "values.yaml"
    if values_file.is_file():
        return merge(SUBCHART_KEYS.get(key[0], {}), yaml.safe_load(values_file.read_text()) or {})
    return UNVENDORED.get(key)


def helm_values(charts: Path, source: dict[str, Any]) -> dict[str, Any]:
    """The values a chart's templates see: the pinned defaults overlaid with the Application's valuesObject."""
    defaults = pinned_defaults(charts, source)
    assert defaults is not None, f"no pinned defaults of {source['chart']} {source['targetRevision']}"
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
