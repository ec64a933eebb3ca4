"""slurm-bridge: Kubernetes pods of chosen namespaces scheduled by Slurm onto chosen nodesets (docs/bridge.md).

The training example bridges namespace `inference` into partition `inference` (its L40S nodes); the
other examples bridge nothing. Bad specs are data in tests/cases/bad/bridge_*.yaml.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from apps.argocd import RETRY
from charts import bridge_labeler
from charts.policy import declared, flat_file
from slurmgen.review.bridge_words import bridge_view
from slurmgen.review.explain import explain_one
from slurmgen.review.summary import summarize
from slurmgen.spec import parse_text
from slurmgen.spec._checks.bridge import _namespace_owner
from slurmgen.spec.model import Bridge
from slurmgen.synth.build import render
from tests.conftest import SPECS
from tests.spec_builder import spec_text

REPO = Path(__file__).resolve().parent.parent
APP = "apps/application-training-slurm-bridge.yaml"
TOLERATION = {"key": "slinky.slurm.net/managed-node", "operator": "Equal", "value": "slurm-bridge-scheduler",
              "effect": "NoExecute"}
CORE = {"nodeSelector": {"eks.amazonaws.com/nodegroup": "core"},
        "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}]}


def training_without_bridge() -> dict[str, Any]:
    """The training example rendered from its spec with the bridge section (and its partition) left out."""
    raw = yaml.safe_load((SPECS / "training.yaml").read_text())
    del raw["bridge"]
    raw["partitions"] = [p for p in raw["partitions"] if p["name"] != "inference"]
    [cluster] = render([parse_text("training.yaml", yaml.safe_dump(raw))])
    return cluster.files


# --- the spec ------------------------------------------------------------------------------------

def test_training_bridges_inference_onto_its_l40s_nodes(rendered):
    # GIVEN the training example WHEN loaded THEN the bridge is resolved, nodesets from its partition
    assert rendered["training"].spec.bridge == Bridge(
        namespaces=("inference",), partition="inference", nodesets=("l40s",), account=None, qos=None,
        labeler_image="public.ecr.aws/docker/library/python:3.13.7-alpine3.22")
    assert rendered["training"].spec.bridged("l40s") and not rendered["training"].spec.bridged("l4")


def test_nothing_is_bridged_unless_asked(rendered):
    # GIVEN the examples without a bridge section
    for name in ("dev", "example", "prod"):
        cluster = rendered[name]
        assert cluster.spec.bridge is None
        # THEN no slurm-bridge Application, Token or labeler, no bridge taint or MCS anywhere
        assert bridge_view(cluster.files) is None
        assert not [rel for rel in cluster.files if "bridge" in rel], name
        text = json.dumps(cluster.files)
        assert "slinky.slurm.net/managed-node" not in text and "MCSPlugin" not in text, name


def test_bridge_namespaces_refuse_every_namespace_the_tree_renders_into(rendered):
    # GIVEN every namespace any example deploys into (its objects and its Applications' destinations)
    for cluster in rendered.values():
        spaces = {o["metadata"].get("namespace") for o in cluster.files.values()} - {None}
        spaces |= {o["spec"]["destination"]["namespace"] for o in cluster.files.values() if o["kind"] == "Application"}
        raw = yaml.safe_load(Path(cluster.spec.source).read_text())
        raw.setdefault("gitops", {}).setdefault("argocdNamespace", cluster.spec.gitops.argocd_namespace)
        raw.setdefault("slurm", {}).update(namespace=cluster.spec.namespace, operatorNamespace=cluster.spec.operator_namespace)
        raw.setdefault("monitoring", {}).setdefault("kubePrometheusStack", {})["namespace"] = cluster.spec.kube_prometheus_stack.namespace
        # THEN the bridge check names an owner for each of them
        unowned = sorted(ns for ns in spaces if _namespace_owner(raw, ns) is None)
        assert unowned == [], cluster.spec.name


def test_the_bridge_account_is_the_default_account_of_its_user():
    # GIVEN a policy and a bridge charged to account `serving` with its default QoS `serve`
    spec = parse_text("t.yaml", spec_text(
        policy={"qos": [{"name": "normal"}, {"name": "serve"}], "defaultQos": "normal",
                "accounts": [{"name": "serving", "qos": ["serve"], "defaultQos": "serve"}]},
        bridge={"namespaces": ["inference"], "partition": "gpu", "account": "serving", "qos": "serve"}))
    # THEN the Slurm user slurm-bridge submits as gets that account, in the flat file and the declared list
    assert spec.bridge is not None and (spec.bridge.account, spec.bridge.qos) == ("serving", "serve")
    lines = flat_file(spec).splitlines()
    assert lines[lines.index("Parent - 'serving'") + 1] == "User - 'slurm':DefaultAccount='serving':Fairshare=1"
    assert declared(spec)["declared-associations"].splitlines() == ["slurm|serving"]


# --- the Helm Application ------------------------------------------------------------------------

def test_slurm_bridge_application_is_pinned_and_synced_like_the_other_charts(rendered):
    files = rendered["training"].files
    app = files[APP]
    operator = files["apps/application-training-slurm-operator.yaml"]
    # THEN the OCI chart at 1.2.1, released into the Slurm namespace, last (wave 10, after the Slurm unit)
    assert app["spec"]["source"]["repoURL"] == "ghcr.io/slinkyproject/charts"  # scheme-less: OCI to Argo CD
    assert app["spec"]["source"]["chart"] == "slurm-bridge"
    assert app["spec"]["source"]["targetRevision"] == "1.2.1"
    assert app["spec"]["source"]["helm"]["releaseName"] == "slurm-bridge"
    assert app["spec"]["destination"]["namespace"] == "slurm"
    assert app["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] == "10"
    assert app["metadata"]["finalizers"] == operator["metadata"]["finalizers"]
    assert app["spec"]["project"] == operator["spec"]["project"] == "training"
    # AND the same automated sync, unbounded retry and health as every Helm Application
    assert app["spec"]["syncPolicy"]["automated"] == {"prune": True, "selfHeal": True}
    assert app["spec"]["syncPolicy"]["retry"] == RETRY == operator["spec"]["syncPolicy"]["retry"]
    assert app["spec"]["syncPolicy"]["syncOptions"] == ["CreateNamespace=true"]
    # AND the AppProject admits its webhooks, cluster RBAC and the kube-system RoleBinding
    project = files["apps/appproject-training.yaml"]["spec"]
    assert "ghcr.io/slinkyproject/charts" in project["sourceRepos"]
    kinds = {(k["group"], k["kind"]) for k in project["clusterResourceWhitelist"]}
    assert {("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
            ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
            ("rbac.authorization.k8s.io", "ClusterRole"), ("rbac.authorization.k8s.io", "ClusterRoleBinding")} <= kinds
    assert {"namespace": "kube-system", "server": "https://kubernetes.default.svc"} in project["destinations"]


def test_slurm_bridge_values_field_by_field(rendered):
    values = rendered["training"].files[APP]["spec"]["source"]["helm"]["valuesObject"]
    # THEN each component pinned by version on the core placement
    for component in ("scheduler", "admission", "controllers"):
        assert values[component]["image"] == {"repository": f"ghcr.io/slinkyproject/slurm-bridge-{component}",
                                              "tag": "1.2.1"}, component
        assert values[component]["nodeSelector"] == CORE["nodeSelector"], component
        assert values[component]["tolerations"] == CORE["tolerations"], component
    # AND the bridged namespaces, partition, REST API and JWT Secret
    assert values["admission"]["managedNamespaces"] == ["inference"]
    assert values["admission"]["certManager"] == {"enabled": True}
    assert values["schedulerConfig"] == {"partition": "inference"}
    assert values["sharedConfig"] == {"slurmRestApi": "http://slurm-restapi.slurm:6820",
                                      "slurmJwtSecret": "slurm-bridge-token"}
    assert set(values) == {"scheduler", "admission", "controllers", "schedulerConfig", "sharedConfig"}


# --- the objects in the Slurm unit ---------------------------------------------------------------

def test_labeler_is_wired_to_the_bridged_nodesets(rendered):
    files = rendered["training"].files
    dep = files["slurm/deployment-slurm-bridge-labeler.yaml"]
    pod = dep["spec"]["template"]["spec"]
    assert dep["spec"]["replicas"] == 1 and dep["spec"]["strategy"] == {"type": "Recreate"}
    assert pod["nodeSelector"] == CORE["nodeSelector"] and pod["tolerations"] == CORE["tolerations"]
    assert pod["serviceAccountName"] == "slurm-bridge-labeler"
    assert pod["containers"][0]["image"] == "public.ecr.aws/docker/library/python:3.13.7-alpine3.22"
    cm = files["slurm/configmap-slurm-bridge-labeler.yaml"]["data"]
    assert cm["labeler.py"] == (REPO / "charts" / "bridge_labeler.py").read_text()
    assert json.loads(cm["config.json"]) == {
        "namespace": "slurm", "podSelector": "slurmgen.dev/nodeset in (l40s)",
        "nodeLabel": "slinky.slurm.net/slurm-nodename", "poolLabel": "karpenter.sh/nodepool",
        "pools": ["training-l40s"], "interval": 15}
    # AND it may read and patch Nodes, and list pods in the Slurm namespace, nothing else
    assert files["slurm/clusterrole-training-bridge-labeler.yaml"]["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]}]
    role = files["slurm/role-slurm-bridge-labeler.yaml"]
    assert role["metadata"]["namespace"] == "slurm"
    assert role["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]


def test_labeler_sets_the_slurm_name_and_removes_a_stale_one():
    # GIVEN two bridged nodes: one holds slurmd pod l40s-0, the other's pod is being deleted
    nodes = [{"metadata": {"name": "ip-10-0-1-1.ec2.internal", "labels": {}}},
             {"metadata": {"name": "ip-10-0-1-2.ec2.internal", "labels": {"slinky.slurm.net/slurm-nodename": "l40s-1"}}},
             {"metadata": {"name": "ip-10-0-1-3.ec2.internal", "labels": {"slinky.slurm.net/slurm-nodename": "l40s-2"}}}]
    pods = [{"metadata": {"name": "slurm-worker-l40s-0"}, "spec": {"nodeName": "ip-10-0-1-1.ec2.internal", "hostname": "l40s-0"}},
            {"metadata": {"name": "slurm-worker-l40s-1", "deletionTimestamp": "2026-01-01T00:00:00Z"},
             "spec": {"nodeName": "ip-10-0-1-2.ec2.internal", "hostname": "l40s-1"}},
            {"metadata": {"name": "slurm-worker-l40s-2"}, "spec": {"nodeName": "ip-10-0-1-3.ec2.internal", "hostname": "l40s-2"}},
            {"metadata": {"name": "slurm-worker-l40s-3"}, "spec": {"hostname": "l40s-3"}}]  # pending
    # WHEN the labeler computes its patches
    changes = bridge_labeler.desired(nodes, pods, "slinky.slurm.net/slurm-nodename")
    # THEN the new node gets its Slurm name, the stale one loses it, the right one is left alone
    assert changes == {"ip-10-0-1-1.ec2.internal": "l40s-0", "ip-10-0-1-2.ec2.internal": None}


def test_slurm_conf_lends_a_node_to_one_kind_of_work_and_has_the_partition(rendered):
    extra = rendered["training"].files["slurm/controller-slurm.yaml"]["spec"]["extraConf"].splitlines()
    assert "MCSPlugin=mcs/label" in extra and "MCSParameters=ondemand,ondemandselect" in extra
    assert "PartitionName=inference Nodes=l40s State=UP MaxTime=1-00:00:00 PriorityTier=1 DefMemPerGPU=178818" in extra
    before = training_without_bridge()["slurm/controller-slurm.yaml"]["spec"]["extraConf"]
    assert "MCSPlugin" not in before


def test_node_agents_tolerate_the_bridge_taint(rendered):
    files = rendered["training"].files

    def values(unit: str) -> dict[str, Any]:
        return files[f"apps/application-training-{unit}.yaml"]["spec"]["source"]["helm"]["valuesObject"]

    assert TOLERATION in values("nvidia-device-plugin")["tolerations"]
    assert TOLERATION in values("aws-efa-k8s-device-plugin")["tolerations"]
    assert TOLERATION in values("neuron-device-plugin")["devicePlugin"]["tolerations"]
    assert values("kube-prometheus-stack")["prometheus-node-exporter"]["tolerations"] == [
        {"effect": "NoSchedule", "operator": "Exists"}, TOLERATION]


# --- the review ----------------------------------------------------------------------------------

def test_summary_says_which_namespaces_slurm_now_schedules_and_where(rendered):
    text = summarize({"training": training_without_bridge()}, {"training": rendered["training"].files})
    assert ("- Slurm schedules the Kubernetes pods of namespace(s) `inference` (slurm-bridge 1.2.1) in partition "
            "`inference`, onto nodeset(s) `l40s` (NodePool(s) training-l40s): a node runs native Slurm jobs or "
            "those pods, never both at once") in text.splitlines()
    back = summarize({"training": rendered["training"].files}, {"training": training_without_bridge()})
    assert "- Slurm no longer schedules the Kubernetes pods of namespace(s) inference (slurm-bridge removed)" in back.splitlines()


def test_explain_shows_the_bridged_partition(rendered):
    text = explain_one("training", rendered["training"].files, "slurm.conf")
    assert text.endswith(
        "### BRIDGE: slurm-bridge 1.2.1 submits the Kubernetes pods of namespace(s) inference as external jobs to "
        "PartitionName=inference ###\n"
        "# nodesets lent to those pods: l40s; MCSPlugin=mcs/label keeps native jobs off a lent node\n")
