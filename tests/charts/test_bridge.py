"""slurm-bridge's objects in the Slurm unit, alone: charts/bridge.py emit_bridge (the labeler's logic and
the Helm values: tests/synth/test_bridge.py)."""

from __future__ import annotations

import json

from charts.bridge import emit_bridge
from charts.compute import ComputeChart
from charts.slurm_cluster import SlurmClusterChart
from slurmgen.plan.nodesets import BRIDGE_TAINT, BRIDGED_SLURMD_REQUESTS, plan_cluster
from tests.charts import build, model, part
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


TWO = {"nodesets": [{"name": "l40s", "instanceType": "g6e.48xlarge", "efa": True},
                    {"name": "l4", "instanceType": "g6.8xlarge"}],
       "partitions": [{"name": "l40s", "nodesets": ["l40s"]}, {"name": "l4", "nodesets": ["l4"]}]}
TOLERATION = {"key": "slinky.slurm.net/managed-node", "operator": "Equal", "value": "slurm-bridge-scheduler",
              "effect": "NoExecute"}


def _conf(nodeset: dict) -> dict[str, str]:
    return dict(t.split("=", 1) for t in nodeset["spec"]["extraConf"].split())


def test_bridged_nodepool_and_nodeset():
    # GIVEN two nodesets, the L40S one bridged (partition l40s), and the same cluster without the bridge
    bridged, before = model(bridge={"namespaces": ["inference"], "partition": "l40s"}, **TWO), model(**TWO)
    # WHEN the compute and Slurm cluster charts are built alone for each
    pools, pools_before = build(ComputeChart, bridged), build(ComputeChart, before)
    slurm, slurm_before = build(SlurmClusterChart, bridged), build(SlurmClusterChart, before)
    # THEN the bridged NodePool declares slurm-bridge's taint; the other does not
    assert BRIDGE_TAINT.as_dict() == {"key": "slinky.slurm.net/managed-node", "effect": "NoExecute",
                                      "value": "slurm-bridge-scheduler"}
    assert pools["NodePool/t-l40s"]["spec"]["template"]["spec"]["taints"] == [
        {"key": "nvidia.com/gpu", "effect": "NoSchedule"}, BRIDGE_TAINT.as_dict()]
    assert pools["NodePool/t-l4"] == pools_before["NodePool/t-l4"]
    # AND its slurmd tolerates it and asks Kubernetes for itself only (EFA kept), no GPU ...
    nodeset = slurm["NodeSet/slurm-worker-l40s"]
    slurmd = nodeset["spec"]["slurmd"]
    assert TOLERATION in nodeset["spec"]["template"]["spec"]["tolerations"]
    assert slurmd["resources"] == {"requests": {**BRIDGED_SLURMD_REQUESTS, "vpc.amazonaws.com/efa": "4"},
                                   "limits": {"vpc.amazonaws.com/efa": "4"}}
    assert BRIDGED_SLURMD_REQUESTS == {"cpu": "250m", "memory": "512Mi"}
    # ... and sees every GPU through the NVIDIA runtime
    assert slurmd["env"] == [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
                             {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"}]
    # AND Slurm's books for the node are what they were without the bridge
    unbridged = slurm_before["NodeSet/slurm-worker-l40s"]
    assert _conf(nodeset) == _conf(unbridged)
    assert unbridged["spec"]["slurmd"]["resources"]["requests"]["nvidia.com/gpu"] == "8"
    # AND the unbridged nodeset is unchanged
    assert slurm["NodeSet/slurm-worker-l4"] == slurm_before["NodeSet/slurm-worker-l4"]


def test_the_labeler_runs_on_the_core_placement_from_a_pinned_image():
    # GIVEN the control plane on a tainted core node group, and a bridge
    core = {"nodeSelector": {"eks.amazonaws.com/nodegroup": "core"},
            "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}]}
    spec = model(placement=core, bridge={"namespaces": ["inference"], "partition": "gpu"})
    pod = part(emit_bridge, spec, plan_cluster(spec), 3, 1)["Deployment/slurm-bridge-labeler"]["spec"]["template"]["spec"]
    # THEN the labeler pod lands there, from the pinned Python image
    assert pod["nodeSelector"] == core["nodeSelector"] and pod["tolerations"] == core["tolerations"]
    assert pod["containers"][0]["image"] == "public.ecr.aws/docker/library/python:3.13.7-alpine3.22"


def test_slurm_conf_lends_a_node_to_one_kind_of_work_and_has_the_partition():
    # GIVEN the two nodesets with the L40S one bridged, and without the bridge
    bridged = build(SlurmClusterChart, model(bridge={"namespaces": ["inference"], "partition": "l40s"}, **TWO))
    before = build(SlurmClusterChart, model(**TWO))
    # THEN slurm.conf labels jobs so a node runs pods or jobs, never both (MCS), and keeps the partition
    extra = bridged["Controller/slurm"]["spec"]["extraConf"].splitlines()
    assert "MCSPlugin=mcs/label" in extra and "MCSParameters=ondemand,ondemandselect" in extra
    assert bridged["NodeSet/slurm-worker-l40s"]["spec"]["partition"]["enabled"] is True
    # AND without the bridge there is no MCS plugin
    assert "MCSPlugin" not in before["Controller/slurm"]["spec"]["extraConf"]
