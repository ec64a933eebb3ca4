"""Chart values as Helm merges them, for tests: the pinned defaults (vendored) overlaid with our valuesObject.

The scheduling rules themselves (`node_labels`, `selects`, `tolerates`) live in
`slurmgen/kube/scheduling.py`, which `--preview` and the synth-time placement proof apply too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from slurmgen.review.preview.placement import helm_merge as merge
from slurmgen.kube.scheduling import node_labels, selects, tolerates  # noqa: F401  (re-exported for tests)


# Keys of subcharts whose values.yaml is not in the pinned copies (kube-prometheus-stack 88.5.3 depends
# on grafana 12.11.1, kube-state-metrics 8.4.0 and prometheus-node-exporter 4.56.1, not vendored in tests/data/charts): only the keys we
# set, each a top-level key of that subchart's own values.yaml (nodeSelector: {}, tolerations: []).
SUBCHART_KEYS: dict[str, dict[str, Any]] = {
    "kube-prometheus-stack": {"grafana": {"nodeSelector": {}, "tolerations": []},
                              "kube-state-metrics": {"nodeSelector": {}, "tolerations": []},
                              # prometheus-node-exporter-4.56.1 values.yaml `tolerations`
                              "prometheus-node-exporter": {"tolerations": [{"effect": "NoSchedule", "operator": "Exists"}]}},
}

# Charts with no vendored copy in tests/data/charts: the defaults of the keys we set or rely on, as read
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


def bridged(nodeset: dict[str, Any]) -> bool:
    """A rendered NodeSet whose nodes slurm-bridge may lend to Kubernetes pods: it tolerates the bridge's taint."""
    from slurmgen.plan.nodesets import BRIDGE_TAINT

    tolerations = nodeset["spec"].get("template", {}).get("spec", {}).get("tolerations", [])
    return BRIDGE_TAINT.toleration().as_dict() in tolerations
