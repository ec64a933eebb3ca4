"""The shared Kubernetes scheduling rules (slurmgen/kube/scheduling.py), against upstream's own cases.

`tolerates` follows k8s.io/api v0.34.0 core/v1/toleration.go ToleratesTaint, where a missing string is
"": the synth-time placement proof once compared a missing toleration value with "" as different.
"""

from __future__ import annotations

import pytest

from slurmgen.catalog.catalog import load_catalog
from slurmgen.catalog.sizing import DaemonSetReserve
from slurmgen.kube.scheduling import node_labels, selects, tolerates
from slurmgen.verify.consistency import check_placement

TAINT = {"key": "nvidia.com/gpu", "effect": "NoSchedule"}  # Karpenter's GPU taint: no value


@pytest.mark.parametrize(("toleration", "taint", "tolerated"), [
    # Equal with no value tolerates a taint with no value, or with "": Go reads both as ""
    ({"key": "nvidia.com/gpu", "operator": "Equal", "effect": "NoSchedule"}, TAINT, True),
    ({"key": "nvidia.com/gpu", "operator": "Equal", "value": ""}, TAINT, True),
    ({"key": "nvidia.com/gpu"}, {**TAINT, "value": ""}, True),  # no operator is Equal
    ({"key": "nvidia.com/gpu", "value": "true"}, TAINT, False),
    ({"key": "nvidia.com/gpu", "operator": "Exists"}, {**TAINT, "value": "x"}, True),
    ({"operator": "Exists"}, TAINT, True),  # no key, Exists: every taint
    ({"operator": "Equal", "value": ""}, TAINT, True),  # no key matches any key (the API refuses this one)
    ({"operator": "Exists", "effect": "NoExecute"}, TAINT, False),  # another effect
    ({"key": "other", "operator": "Exists"}, TAINT, False),
    ({"key": "nvidia.com/gpu", "operator": "Gt", "value": "1"}, {**TAINT, "value": "2"}, False),  # gated: off
    ({"key": "nvidia.com/gpu", "operator": "Bogus"}, TAINT, False),  # an unknown operator tolerates nothing
])
def test_tolerates_is_kubernetes_toleratestaint(toleration, taint, tolerated):
    # GIVEN one toleration and one taint / WHEN matched / THEN as Kubernetes' ToleratesTaint decides
    assert tolerates([toleration], taint) is tolerated


def test_no_tolerations_tolerate_nothing():
    assert tolerates(None, TAINT) is False and tolerates([], TAINT) is False


def test_selects_a_node_by_selector_and_required_affinity():
    # GIVEN a node's labels
    labels = {"karpenter.sh/nodepool": "gpu", "node.kubernetes.io/instance-type": "g5.xlarge"}
    # WHEN a pod selects it by label, and by an affinity term OR-ed with one that fails
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "Exists"}]},
        {"matchExpressions": [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                               "values": ["g5.xlarge", "g5.2xlarge"]}]}]}}}
    # THEN it may land there; a selector on another pool or an unmet term may not
    assert selects(affinity, {"karpenter.sh/nodepool": "gpu"}, labels)
    assert not selects(None, {"karpenter.sh/nodepool": "cpu"}, labels)
    assert not selects({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}]}}}, None, labels)


def _pool(taint: dict[str, str]) -> dict:
    return {"kind": "NodePool", "metadata": {"name": "gpu"}, "spec": {"template": {
        "metadata": {"labels": {"team": "a"}},
        "spec": {"taints": [taint], "requirements": [
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g5.xlarge"]},
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]}]}}}}


def test_node_labels_are_the_template_labels_single_valued_requirements_and_the_pool():
    assert node_labels(_pool(TAINT)) == {"team": "a", "node.kubernetes.io/instance-type": "g5.xlarge",
                                         "karpenter.sh/nodepool": "gpu"}


def test_the_placement_proof_reads_a_missing_toleration_value_as_empty():
    # GIVEN a NodePool whose taint has value "" and a NodeSet tolerating its key with no value (Equal)
    nodeset = {"kind": "NodeSet", "metadata": {"name": "w"}, "spec": {
        "slurmd": {"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
        "template": {"spec": {"nodeSelector": {"karpenter.sh/nodepool": "gpu"},
                              "tolerations": [{"key": "nvidia.com/gpu", "operator": "Equal", "effect": "NoSchedule"}]}}}}
    files = {"compute/nodepool-gpu.yaml": _pool({**TAINT, "value": ""}), "slurm/nodeset-w.yaml": nodeset}
    # WHEN the synth-time proof checks placement
    problems = check_placement(files, load_catalog(), DaemonSetReserve())
    # THEN the pods land and fit: Kubernetes tolerates that taint (before, "does not tolerate taint")
    assert problems == []
