"""Helm add-ons as the charts render them: where their pods may run, what they pull, how Argo CD retries them.

Placement tests merge the pinned chart defaults (../shared/charts) with our valuesObject the way
Helm does and evaluate the result against the NodePools we render (tests/scheduling.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from slurmgen.synth.build import render
from slurmgen.spec import parse_text
from tests.conftest import CHARTS, SHARED, need_shared
from tests.spec_builder import spec_text
from tests.scheduling import helm_values, node_labels, pinned_defaults, selects, tolerates

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
@pytest.mark.parametrize("name", ["training", "prod"])
def test_nvidia_plugin_lands_on_every_gpu_pool_and_nowhere_else(rendered, name):
    # GIVEN a cluster with NVIDIA nodesets on AL2023 and Kubernetes 1.34 (nodeadm sets no gpu.present label)
    cluster = rendered[name]
    gpu = {p.nodepool for p in cluster.plans.values() if p.instance.is_nvidia}
    assert gpu, f"{name} has no NVIDIA nodeset"
    # WHEN the plugin's effective values are the chart defaults merged with ours
    values = helm_values(CHARTS, app(cluster, "nvidia-device-plugin")["spec"]["source"])
    # THEN its DaemonSet pods may run on every GPU NodePool's nodes and on no other pool's
    where = {pool for pool, obj in pools(cluster).items() if lands_on(values, obj)}
    assert where == gpu


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


@needs_charts
def test_efa_plugin_image_tag_stays_the_charts(rendered):
    # GIVEN the training cluster (us-east-1) WHEN its EFA values are merged with the chart's
    values = helm_values(CHARTS, app(rendered["training"], "aws-efa-k8s-device-plugin")["spec"]["source"])
    # THEN only the registry changed: repository in us-east-1, the pinned tag untouched
    assert values["image"] == {"repository": "602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/aws-efa-k8s-device-plugin",
                               "tag": "v0.5.20"}


def test_registry_table_cites_its_source_and_lists_the_regions_with_other_accounts():
    import json

    from slurmgen.catalog.registries import DATA
    data = json.loads(DATA.read_text())
    assert any("add-ons-images" in s for s in data["_source"])
    regs = data["registries"]
    assert len(regs) >= 35 and all(host.split(".")[3] in (r, "ap-east-1") for r, host in regs.items())
    assert {r for r, host in regs.items() if not host.startswith("602401143452.")} >= {
        "af-south-1", "ap-east-1", "me-south-1", "eu-south-1", "cn-north-1", "cn-northwest-1", "us-gov-east-1", "us-gov-west-1"}


# --- 2. every controller, webhook and hook Job of every chart on the core placement ----------------

# Component paths that are not core workloads, with why. Everything else that the pinned chart
# defaults give a nodeSelector or tolerations must carry ours.
NOT_CORE = {
    ("aws-efa-k8s-device-plugin", ""): "DaemonSet on EFA nodes",
    ("nvidia-device-plugin", ""): "DaemonSet on GPU nodes",
    ("nvidia-device-plugin", "nfd.worker"): "node-feature-discovery subchart, disabled",
    ("aws-fsx-csi-driver", "node"): "DaemonSet on every node that mounts FSx",
    ("cert-manager", "global"): "a default merged into each component, which we place one by one",
    ("external-secrets", "global"): "a default for each component, which we place one by one",
    ("neuron-helm-chart", "devicePlugin"): "DaemonSet on Neuron nodes",
    ("kube-prometheus-stack", "prometheus-node-exporter"): "DaemonSet on every node",
    ("neuron-helm-chart", "draDriver"): "disabled",
    ("neuron-helm-chart", "npd"): "disabled",
    ("neuron-helm-chart", "scheduler"): "disabled: whole-device slurmd pods need no scheduler extension",
    ("neuron-helm-chart", "scheduler.customScheduler"): "disabled with the scheduler",
    ("neuron-helm-chart", "scheduler.defaultScheduler"): "disabled with the scheduler",
    ("neuron-helm-chart", "ultraserverOperator"): "disabled",
}


def component_paths(defaults: Any, prefix: tuple[str, ...] = ()):
    """Paths of the maps that hold a nodeSelector or tolerations: one per pod-making component."""
    if isinstance(defaults, dict):
        if "nodeSelector" in defaults or "tolerations" in defaults:
            yield ".".join(prefix)
        for key, sub in defaults.items():
            if key not in ("nodeSelector", "tolerations", "affinity"):
                yield from component_paths(sub, (*prefix, key))


def at(values: dict[str, Any], path: str) -> dict[str, Any]:
    for key in filter(None, path.split(".")):
        values = values.get(key) or {}
    return values


@needs_charts
def test_every_chart_component_runs_on_the_core_placement(rendered):
    checked = 0
    for cluster in rendered.values():
        place = cluster.spec.placement.pod_spec()
        if not place:
            continue
        for rel, obj in cluster.files.items():
            if obj["kind"] != "Application" or "chart" not in obj["spec"]["source"]:
                continue
            # GIVEN a chart's pinned defaults and the values we give it
            source = obj["spec"]["source"]
            defaults = pinned_defaults(CHARTS, source)
            values = helm_values(CHARTS, source)
            for path in component_paths(defaults):
                if (source["chart"], path) in NOT_CORE:
                    continue
                # THEN each component that schedules pods selects the core nodes and tolerates their taints
                where = f"{cluster.spec.name}/{rel}: {path or '<top>'}"
                component = at(values, path)
                if "nodeSelector" in place:
                    selector = component.get("nodeSelector") or {}
                    assert place["nodeSelector"].items() <= selector.items(), f"{where}: nodeSelector {selector}"
                missing = [t for t in place.get("tolerations", []) if t not in (component.get("tolerations") or [])]
                assert not missing, f"{where}: missing tolerations {missing}"
                checked += 1
    assert checked >= 20


@needs_charts
def test_eks_absent_control_plane_targets_are_off(rendered):
    # GIVEN kube-prometheus-stack on EKS WHEN its values are merged with the chart's
    values = helm_values(CHARTS, app(rendered["training"], "kube-prometheus-stack")["spec"]["source"])
    # THEN no ServiceMonitor (and no *Down alert) for what EKS does not expose
    assert [k for k in ("kubeControllerManager", "kubeScheduler", "kubeEtcd", "kubeProxy") if values[k]["enabled"]] == []
    # AND what EKS does expose is still scraped
    assert values["kubelet"]["enabled"] and values["kubeApiServer"]["enabled"] and values["coreDns"]["enabled"]


# --- 3. sync waves that order something, retries that never give up on a slow dependency ---------

def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch, what `kubectl patch --type merge` sends."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


@pytest.mark.parametrize("name", ["example", "training", "prod", "dev"])
def test_argocd_cm_patch_adds_the_health_checks_and_keeps_everything_else(rendered, name):
    # GIVEN a live argocd-cm with the user's settings and a Helm install's labels
    live = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "argocd-cm", "namespace": "argocd",
                         "labels": {"app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/part-of": "argocd"}},
            "data": {"url": "https://argocd.example.com", "resource.exclusions": "- kinds: [Event]\n"}}
    patch = rendered[name].files["argocd/configmap-argocd-cm.yaml"]
    # WHEN the rendered file is applied as `kubectl patch --type merge --patch-file`
    after = merge_patch(live, patch)
    # THEN the user's keys and labels are untouched and the health checks are added
    assert after["metadata"] == live["metadata"]
    assert after["data"]["url"] == live["data"]["url"] and after["data"]["resource.exclusions"]
    lua = after["data"]["resource.customizations.health.argoproj.io_Application"]
    assert "hs.status = obj.status.health.status" in lua and lua.rstrip().endswith("return hs")
    # AND the file holds nothing else (no labels to overwrite, no key but the checks)
    assert set(patch["metadata"]) == {"name", "namespace"} and list(patch["data"]) == [
        "resource.customizations.health.argoproj.io_Application",
        *(f"resource.customizations.health.slinky.slurm.net_{kind}"
          for kind in ("Accounting", "Controller", "RestApi", "LoginSet", "NodeSet"))]


def test_argocd_cm_patch_is_not_in_a_folder_anything_applies(rendered):
    for cluster in rendered.values():
        where = [rel for rel, obj in cluster.files.items() if obj["metadata"]["name"] == "argocd-cm"]
        assert where == ["argocd/configmap-argocd-cm.yaml"]  # not bootstrap/ (kubectl apply), not apps/ (the root)
    # AND every cluster's patch is the same bytes: patching for a second cluster changes nothing
    assert len({str(c.files["argocd/configmap-argocd-cm.yaml"]) for c in rendered.values()}) == 1


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

def test_neuron_plugin_lands_on_exactly_the_neuron_pools(rendered):
    # GIVEN the training cluster with a trn2 nodeset and GPU nodesets beside it
    cluster = rendered["training"]
    neuron = {p.nodepool for p in cluster.plans.values() if p.instance.is_neuron}
    assert neuron == {"training-trn2"}
    # WHEN the neuron-helm-chart values are merged with its 1.9.0 defaults
    source = app(cluster, "neuron-device-plugin")["spec"]["source"]
    assert (source["repoURL"], source["chart"], source["targetRevision"]) == ("public.ecr.aws/neuron", "neuron-helm-chart", "1.9.0")
    values = helm_values(CHARTS, source)
    # THEN the device plugin DaemonSet may run on the Neuron pool (taint tolerated) and on no other pool
    where = {pool for pool, obj in pools(cluster).items() if lands_on(values["devicePlugin"], obj)}
    assert where == neuron
    # AND nothing else of the chart is deployed (no node problem detector tolerating every taint, no scheduler)
    assert not values["npd"]["enabled"] and not values["scheduler"]["enabled"]
    assert not values["draDriver"]["enabled"] and not values["ultraserverOperator"]["enabled"]


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


# --- the AppProject allows every cluster-scoped kind each chart creates ---------------------------

CHART_SOURCES = SHARED / "chart-sources"  # research copies of the pinned chart sources: a deep test
CLUSTER_SCOPED = {"CustomResourceDefinition": "apiextensions.k8s.io", "ClusterRole": "rbac.authorization.k8s.io",
                  "ClusterRoleBinding": "rbac.authorization.k8s.io", "APIService": "apiregistration.k8s.io",
                  "ValidatingWebhookConfiguration": "admissionregistration.k8s.io",
                  "MutatingWebhookConfiguration": "admissionregistration.k8s.io", "CSIDriver": "storage.k8s.io",
                  "StorageClass": "storage.k8s.io", "PriorityClass": "scheduling.k8s.io", "Namespace": "",
                  "ValidatingAdmissionPolicy": "admissionregistration.k8s.io", "DeviceClass": "resource.k8s.io"}


def test_every_release_declares_the_cluster_scoped_kinds_its_chart_templates_create(rendered):
    need_shared(CHART_SOURCES)
    import re

    from apps import helm

    checked = 0
    for cluster in rendered.values():
        for release in helm.releases(cluster.spec, nvidia=True, efa=True, neuron_pools=["p"]):
            folder = CHART_SOURCES / release.chart
            if not folder.is_dir():
                continue
            # GIVEN every `kind:` the chart's templates (and vendored subcharts) can render
            text = "\n".join(p.read_text(errors="replace") for p in sorted(folder.rglob("*"))
                             if p.suffix in (".yaml", ".yml", ".tpl") and "/tests/" not in str(p) and p.is_file())
            kinds = {(CLUSTER_SCOPED[k], k) for k in re.findall(r"(?m)^kind:\s*(\w+)", text) if k in CLUSTER_SCOPED}
            # THEN the release declares them (Namespace is always allowed: CreateNamespace)
            missing = kinds - set(release.cluster_kinds) - {("", "Namespace")}
            assert not missing, f"{release.chart}: {sorted(missing)} not in cluster_kinds"
            checked += 1
    assert checked >= 8


def test_crd_applications_keep_their_crds_when_deleted(rendered):
    crd_apps = 0
    for cluster in rendered.values():
        for rel, obj in cluster.files.items():
            name = obj["metadata"]["name"]
            if obj["kind"] == "Application" and name.endswith(("slurm-operator-crds", "mariadb-operator-crds")):
                assert "Delete=false" in obj["spec"]["syncPolicy"]["syncOptions"], rel
                crd_apps += 1
    assert crd_apps > len(rendered)  # slurm-operator-crds in every cluster, mariadb-operator-crds in some


def test_service_monitor_only_where_a_prometheus_operator_is_known(rendered):
    metrics = {name: c.files["slurm/controller-slurm.yaml"]["spec"]["metrics"] for name, c in rendered.items()}
    assert metrics["example"]["serviceMonitor"]["enabled"] is True      # set explicitly (blueprint's Prometheus)
    assert metrics["training"]["serviceMonitor"]["enabled"] is True     # kube-prometheus-stack enabled here
    assert "serviceMonitor" not in metrics["dev"] and "serviceMonitor" not in metrics["prod"]
