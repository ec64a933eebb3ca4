"""Helm add-ons in a whole rendered cluster: which Applications a spec gets, what the NodePools say to the
device plugins, how Argo CD retries them. The releases alone, and their placement against the NodePools,
are in tests/charts/test_helm.py.

Placement tests merge the pinned chart defaults (tests/data/charts) with our valuesObject the way
Helm does and evaluate the result against the NodePools we render (tests/scheduling.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from slurmgen.synth.build import render
from slurmgen.spec import parse_text
from tests.conftest import CHARTS
from tests.spec_builder import spec_text
from tests.scheduling import helm_values, node_labels, selects, tolerates

needs_charts = pytest.mark.skipif(not CHARTS.is_dir(), reason=f"pinned chart defaults not found at {CHARTS}")


def app(cluster, unit: str) -> dict[str, Any] | None:
    return cluster.files.get(f"apps/application-{cluster.spec.name}-{unit}.yaml")


def pools(cluster) -> dict[str, dict[str, Any]]:
    return {obj["metadata"]["name"]: obj for rel, obj in cluster.files.items() if obj["kind"] == "NodePool"}


def lands_on(values: dict[str, Any], pool: dict[str, Any]) -> bool:
    """A DaemonSet pod with these values' nodeSelector/affinity/tolerations can run on the pool's nodes."""
    labels = node_labels(pool)
    taints = pool["spec"]["template"]["spec"].get("taints") or []
    return (selects(values.get("affinity"), values.get("nodeSelector"), labels)
            and all(tolerates(values.get("tolerations"), t) for t in taints))


def render_one(k8s: str = "1.34", instance: str = "g5.xlarge", **top: Any):
    text = spec_text(nodeset={"instanceType": instance}, aws={"kubernetesVersion": k8s}, **top)
    [cluster] = render([parse_text("t.yaml", text)])
    return cluster


# --- 1. the NVIDIA device plugin lands on our GPU nodes --------------------------------------------

@needs_charts
@pytest.mark.parametrize("k8s", ["1.32", "1.33", "1.34", "1.35"])
def test_nvidia_plugin_placement_does_not_depend_on_the_kubernetes_version(k8s):
    # GIVEN a GPU nodeset on AL2023 at any Kubernetes version we accept
    cluster = render_one(k8s=k8s)
    # WHEN the NodePool is rendered THEN it labels its nodes itself
    [pool] = pools(cluster).values()
    assert pool["spec"]["template"]["metadata"]["labels"]["nvidia.com/gpu.present"] == "true"
    # AND the plugin lands there
    assert lands_on(helm_values(CHARTS, app(cluster, "nvidia-device-plugin")["spec"]["source"]), pool)


def test_bottlerocket_gets_no_nvidia_plugin_and_no_label():
    # GIVEN a GPU nodeset on Bottlerocket (its NVIDIA variant runs its own device plugin)
    cluster = render_one(compute={"amiFamily": "bottlerocket", "amiVersion": "v1.50.0"})
    # THEN we deploy no second plugin, and the label that would attract one is absent
    assert app(cluster, "nvidia-device-plugin") is None
    [pool] = pools(cluster).values()
    assert "nvidia.com/gpu.present" not in pool["spec"]["template"]["metadata"]["labels"]


def test_cpu_pools_do_not_claim_a_gpu():
    cluster = render_one(instance="m7i.2xlarge")
    [pool] = pools(cluster).values()
    assert "nvidia.com/gpu.present" not in pool["spec"]["template"]["metadata"]["labels"]


# --- 5. the EFA device plugin pulls from the cluster's own Region ---------------------------------

@pytest.mark.parametrize("region,registry", [
    ("us-east-1", "602401143452.dkr.ecr.us-east-1.amazonaws.com"),
    ("af-south-1", "877085696533.dkr.ecr.af-south-1.amazonaws.com"),
    ("me-south-1", "558608220178.dkr.ecr.me-south-1.amazonaws.com"),
    ("eu-south-1", "590381155156.dkr.ecr.eu-south-1.amazonaws.com"),
    ("cn-north-1", "918309763551.dkr.ecr.cn-north-1.amazonaws.com.cn"),
    ("us-gov-west-1", "013241004608.dkr.ecr.us-gov-west-1.amazonaws.com"),
])
def test_efa_plugin_image_comes_from_the_regional_eks_registry(region, registry):
    # GIVEN an EFA nodeset in a Region whose EKS add-on registry may be another account
    text = spec_text(aws={"region": region}, nodeset={"instanceType": "g5.8xlarge", "efa": True})
    [cluster] = render([parse_text("t.yaml", text)])
    # WHEN the EFA plugin Application is rendered
    values = app(cluster, "aws-efa-k8s-device-plugin")["spec"]["source"]["helm"]["valuesObject"]
    # THEN its image is that Region's registry, never the chart's us-west-2 default
    assert values["image"]["repository"] == f"{registry}/eks/aws-efa-k8s-device-plugin"


def test_registry_table_cites_its_source_and_lists_the_regions_with_other_accounts():
    import json

    from slurmgen.catalog.registries import DATA
    data = json.loads(DATA.read_text())
    assert any("add-ons-images" in s for s in data["_source"])
    regs = data["registries"]
    assert len(regs) >= 35 and all(host.split(".")[3] in (r, "ap-east-1") for r, host in regs.items())
    assert {r for r, host in regs.items() if not host.startswith("602401143452.")} >= {
        "af-south-1", "ap-east-1", "me-south-1", "eu-south-1", "cn-north-1", "cn-northwest-1", "us-gov-east-1", "us-gov-west-1"}


# --- 3. sync waves that order something, retries that never give up on a slow dependency ---------

def test_every_application_retries_forever_on_the_newest_revision_with_capped_backoff():
    # GIVEN a cluster with Helm children (cert-manager, operators, a device plugin) and directory children
    cluster = render_one()
    apps = {rel: obj for rel, obj in cluster.files.items() if obj["kind"] == "Application"}
    assert "apps/application-t-cert-manager.yaml" in apps and "bootstrap/application-t-root.yaml" in apps
    for rel, obj in apps.items():
        retry = obj["spec"]["syncPolicy"]["retry"]
        # THEN no retry budget runs out: Argo CD v3.5.1 never auto-syncs a failed revision again,
        # so a bounded retry parks a pinned chart until someone syncs by hand
        assert retry["limit"] == -1, rel
        # AND each retry takes the newest revision (a fix commit is picked up during the retries)
        assert retry["refresh"] is True, rel
        # AND the wait between attempts is capped
        assert retry["backoff"] == {"duration": "10s", "factor": 2, "maxDuration": "5m"}, rel


# --- 7. the Neuron device plugin, on exactly the Neuron NodePools --------------------------------

def test_neuron_plugin_opt_out_and_absence():
    # GIVEN a Trainium nodeset WHEN the plugin is said to be installed another way THEN we deploy none
    opted_out = render_one(compute={"devicePlugins": {"neuronInstalledSeparately": True}}, instance="trn2.48xlarge")
    assert app(opted_out, "neuron-device-plugin") is None
    # AND by default it is deployed, and its AppProject allows the chart's repository and cluster kinds
    cluster = render_one(instance="trn2.48xlarge")
    assert app(cluster, "neuron-device-plugin") is not None
    project = cluster.files["apps/appproject-t.yaml"]["spec"]
    assert "public.ecr.aws/neuron" in project["sourceRepos"]
    kinds = {(k["group"], k["kind"]) for k in project["clusterResourceWhitelist"]}
    assert {("rbac.authorization.k8s.io", "ClusterRole"), ("rbac.authorization.k8s.io", "ClusterRoleBinding")} <= kinds
    # AND a cluster without Neuron nodesets gets no Neuron Application
    assert app(render_one(), "neuron-device-plugin") is None
