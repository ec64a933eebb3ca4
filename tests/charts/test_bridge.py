"""slurm-bridge's objects in the Slurm unit, alone: charts/bridge.py emit_bridge (the labeler's logic and
the Helm values: tests/test_bridge.py)."""

from __future__ import annotations

import json

from charts.bridge import emit_bridge
from slurmgen.plan.nodesets import plan_cluster
from tests.charts import model, part
from tests.conftest import REPO


def _bridge() -> dict:
    # GIVEN pods of namespace `inference` scheduled by Slurm onto partition gpu (the minimal nodeset)
    spec = model(bridge={"namespaces": ["inference"], "partition": "gpu"})
    # WHEN the bridge's objects are emitted alone (after the Controller's wave 2, config at wave 1)
    return part(emit_bridge, spec, plan_cluster(spec), 3, 1)


def test_token_makes_the_secret_the_chart_reads():
    token = _bridge()["Token/slurm-bridge-token"]
    # THEN a slurm-operator Token writes the JWT Secret the slurm-bridge chart reads, refreshed yearly
    assert (token["apiVersion"], token["kind"]) == ("slinky.slurm.net/v1beta1", "Token")
    assert token["metadata"]["namespace"] == "slurm"
    assert token["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] == "3"
    assert token["spec"] == {"username": "slurm", "jwtKeyRef": {"name": "slurm-auth-jwt", "key": "jwt.key"},
                             "secretRef": {"name": "slurm-bridge-token", "key": "auth-token"},
                             "lifetime": "8760h", "refresh": True}


def test_labeler_is_wired_to_the_bridged_nodesets():
    objects = _bridge()
    # THEN one labeler runs the packaged script on the bridged nodeset's pool
    deployment = objects["Deployment/slurm-bridge-labeler"]["spec"]
    assert deployment["replicas"] == 1 and deployment["strategy"] == {"type": "Recreate"}
    assert deployment["template"]["spec"]["serviceAccountName"] == "slurm-bridge-labeler"
    data = objects["ConfigMap/slurm-bridge-labeler"]["data"]
    assert data["labeler.py"] == (REPO / "charts" / "bridge_labeler.py").read_text()
    assert json.loads(data["config.json"]) == {
        "namespace": "slurm", "podSelector": "slurmgen.dev/nodeset in (gpu)",
        "nodeLabel": "slinky.slurm.net/slurm-nodename", "poolLabel": "karpenter.sh/nodepool",
        "pools": ["t-gpu"], "interval": 15}
    # AND it may read and patch Nodes, and list pods in the Slurm namespace, nothing else
    assert objects["ClusterRole/t-bridge-labeler"]["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]}]
    role = objects["Role/slurm-bridge-labeler"]
    assert role["metadata"]["namespace"] == "slurm"
    assert role["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]


def test_nothing_without_a_bridge_section():
    spec = model()
    assert part(emit_bridge, spec, plan_cluster(spec), 3, 1) == {}
