"""slurm-bridge: Kubernetes pods of chosen namespaces scheduled by Slurm onto chosen nodesets (docs/bridge.md):
the spec, the labeler's logic, the whole rendered trees and the review. The bridge's objects and release,
each built alone, are in tests/charts/ (test_bridge.py, test_helm.py, test_argocd.py).

The training example bridges namespace `inference` into partition `inference` (its L40S nodes); the
other examples bridge nothing. Bad specs are data in tests/cases/bad/bridge_*.yaml.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

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

def test_a_bridge_resolves_the_nodesets_of_its_partition():
    # GIVEN two nodesets and a bridge into the partition of one / WHEN the spec is loaded
    spec = parse_text("t.yaml", spec_text(
        nodesets=[{"name": "l40s", "instanceType": "g6e.48xlarge"}, {"name": "l4", "instanceType": "g6.8xlarge"}],
        partitions=[{"name": "inference", "nodesets": ["l40s"]}, {"name": "l4", "nodesets": ["l4"]}],
        bridge={"namespaces": ["inference"], "partition": "inference"}))
    # THEN the bridge is resolved, its nodesets from its partition, with the pinned labeler image
    assert spec.bridge == Bridge(
        namespaces=("inference",), partition="inference", nodesets=("l40s",), account=None, qos=None,
        labeler_image="public.ecr.aws/docker/library/python:3.13.7-alpine3.22")
    assert spec.bridged("l40s") and not spec.bridged("l4")


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
