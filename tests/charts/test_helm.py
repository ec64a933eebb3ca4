"""The Helm releases of one cluster alone (apps/helm.py): which charts a spec installs, pinned, with our values.

A release is plain data (HelmRelease); tests/charts/test_argocd.py checks the Application made of it.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from apps import helm
from charts.compute import ComputeChart
from slurmgen.plan.nodesets import plan_cluster
from slurmgen.spec import ClusterSpec
from tests.charts import Obj, build, model
from tests.charts.test_storage import STATIC
from tests.conftest import CHARTS, SHARED, need_shared
from tests.scheduling import helm_values, node_labels, pinned_defaults, selects, tolerates

needs_charts = pytest.mark.skipif(not CHARTS.is_dir(), reason=f"pinned chart defaults not found at {CHARTS}")

#: An NVIDIA nodeset with EFA, a CPU one and a Trainium2 one: each device plugin has one pool to land on.
MIXED = {
    "nodesets": [{"name": "gpu", "instanceType": "g5.8xlarge", "efa": True},
                 {"name": "cpu", "instanceType": "m7i.2xlarge"},
                 {"name": "trn", "instanceType": "trn2.48xlarge", "efa": True}],
    "partitions": [{"name": "gpu", "nodesets": ["gpu", "cpu", "trn"]}],
}
#: MIXED with every optional release on, and the control plane on a tainted core node group.
EVERY = {
    **MIXED,
    "nodesets": [*MIXED["nodesets"][:1], {**MIXED["nodesets"][1], "autoscale": {"min": 0, "max": 2}}, *MIXED["nodesets"][2:]],
    "placement": {"nodeSelector": {"eks.amazonaws.com/nodegroup": "core"},
                  "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}]},
    "storage": {"fsx": {**STATIC["fsx"], "csiDriver": "helm"}},
    "monitoring": {"kubePrometheusStack": {"enabled": True}},
    "bridge": {"namespaces": ["inference"], "partition": "gpu"},
}


def release(spec: ClusterSpec, unit: str) -> helm.HelmRelease | None:
    """The release of Application suffix `unit` for the spec's planned nodesets, or None."""
    return next((r for r in helm.planned_releases(spec, plan_cluster(spec)) if r.unit == unit), None)


def source(r: helm.HelmRelease | None) -> dict[str, Any]:
    """The part of a release's Application source that Helm reads (as tests/scheduling.py takes it)."""
    assert r is not None
    return {"repoURL": r.repo_url, "chart": r.chart, "targetRevision": r.version, "helm": {"valuesObject": r.values}}


def pools(spec: ClusterSpec) -> dict[str, Obj]:
    """The NodePools of the compute chart built alone: {name: NodePool}."""
    return {name.split("/", 1)[1]: o for name, o in build(ComputeChart, spec).items() if name.startswith("NodePool/")}


def lands_on(values: dict[str, Any], pool: Obj) -> bool:
    """A DaemonSet pod with these values' nodeSelector/affinity/tolerations can run on the pool's nodes."""
    taints = pool["spec"]["template"]["spec"].get("taints") or []
    return (selects(values.get("affinity"), values.get("nodeSelector"), node_labels(pool))
            and all(tolerates(values.get("tolerations"), t) for t in taints))


def units(**changes: Any) -> set[str]:
    """The Application suffixes of the minimal spec's releases, with `changes`."""
    return {r.unit for r in helm.releases(model(**changes))}


def test_the_minimal_spec_installs_the_operator_its_crds_and_what_its_units_need():
    # GIVEN the minimal spec (secrets generated, accounting in a managed MariaDB) / WHEN its releases are listed
    # THEN cert-manager, the operator and its CRDs, External Secrets and the MariaDB operator and its CRDs
    assert units() == {"cert-manager", "slurm-operator-crds", "slurm-operator", "external-secrets",
                       "mariadb-operator-crds", "mariadb-operator"}


def test_the_fsx_csi_driver_is_a_release_unless_it_is_an_eks_addon():
    # GIVEN static FSx with the driver from Helm, then from the EKS add-on
    # THEN only the first installs the chart
    assert "aws-fsx-csi-driver" in units(storage={"fsx": {**STATIC["fsx"], "csiDriver": "helm"}})
    assert "aws-fsx-csi-driver" not in units(storage=STATIC)


def test_precreated_secrets_install_no_external_secrets():
    # GIVEN Secrets made by hand and an external database (whose password cannot be generated)
    found = units(secrets={"mode": "precreated", "slurmKey": {"name": "k", "key": "slurm.key"},
                           "jwtKey": {"name": "j", "key": "jwt.key"}},
                  accounting={"database": {"mode": "external", "host": "db.example.com",
                                           "passwordSecret": {"name": "db", "key": "password"}}})
    # THEN neither External Secrets nor the MariaDB operator is installed
    assert found == {"cert-manager", "slurm-operator-crds", "slurm-operator"}


def test_crd_releases_keep_their_crds_when_deleted():
    # GIVEN the minimal spec (the Slinky and MariaDB operators) / WHEN its releases are listed
    keep = {r.unit for r in helm.releases(model()) if r.keep_on_delete}
    # THEN exactly the CRD releases outlive their Application (tests/charts/test_argocd.py: Delete=false)
    assert keep == {"slurm-operator-crds", "mariadb-operator-crds"}


@needs_charts
def test_the_nvidia_plugin_lands_on_the_nvidia_pool_and_nowhere_else():
    # GIVEN an NVIDIA, a CPU and a Trainium2 nodeset
    spec = model(**MIXED)
    # WHEN the plugin's effective values are the pinned chart defaults merged with ours
    values = helm_values(CHARTS, source(release(spec, "nvidia-device-plugin")))
    # THEN its DaemonSet pods may run on the NVIDIA NodePool's nodes and on no other pool's
    assert {name for name, pool in pools(spec).items() if lands_on(values, pool)} == {"t-gpu"}


@needs_charts
def test_the_neuron_plugin_lands_on_exactly_the_neuron_pool_and_nothing_else_of_its_chart_runs():
    # GIVEN an NVIDIA, a CPU and a Trainium2 nodeset
    spec = model(**MIXED)
    neuron = source(release(spec, "neuron-device-plugin"))
    # WHEN the neuron-helm-chart values are merged with its pinned defaults
    assert (neuron["repoURL"], neuron["chart"], neuron["targetRevision"]) == ("public.ecr.aws/neuron", "neuron-helm-chart", "1.9.0")
    values = helm_values(CHARTS, neuron)
    # THEN the device plugin DaemonSet may run on the Neuron pool (taint tolerated) and on no other pool
    assert {name for name, pool in pools(spec).items() if lands_on(values["devicePlugin"], pool)} == {"t-trn"}
    # AND nothing else of the chart is deployed (no node problem detector tolerating every taint, no scheduler)
    assert not values["npd"]["enabled"] and not values["scheduler"]["enabled"]
    assert not values["draDriver"]["enabled"] and not values["ultraserverOperator"]["enabled"]


@needs_charts
def test_the_efa_plugin_changes_only_the_registry_of_its_image():
    # GIVEN an EFA nodeset in us-east-1 / WHEN the EFA plugin's values are merged with the chart's
    values = helm_values(CHARTS, source(release(model(aws={"region": "us-east-1"}, nodeset={
        "instanceType": "g5.8xlarge", "efa": True}), "aws-efa-k8s-device-plugin")))
    # THEN only the registry changed: repository in us-east-1, the pinned tag untouched
    assert values["image"] == {"repository": "602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/aws-efa-k8s-device-plugin",
                               "tag": "v0.5.20"}


@needs_charts
def test_eks_absent_control_plane_targets_are_off():
    # GIVEN kube-prometheus-stack on EKS / WHEN its values are merged with the chart's
    values = helm_values(CHARTS, source(helm.kube_prometheus_stack(model(monitoring={"kubePrometheusStack": {"enabled": True}}))))
    # THEN no ServiceMonitor (and no *Down alert) for what EKS does not expose
    assert [k for k in ("kubeControllerManager", "kubeScheduler", "kubeEtcd", "kubeProxy") if values[k]["enabled"]] == []
    # AND what EKS does expose is still scraped
    assert values["kubelet"]["enabled"] and values["kubeApiServer"]["enabled"] and values["coreDns"]["enabled"]


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
def test_every_chart_component_runs_on_the_core_placement():
    # GIVEN every release a spec can install, with the control plane on a tainted core node group
    spec = model(**EVERY)
    place = spec.placement.pod_spec()
    found = helm.planned_releases(spec, plan_cluster(spec))
    assert len(found) == 13, sorted(r.unit for r in found)
    checked = 0
    for r in found:
        # WHEN a chart's pinned defaults are overlaid with the values we give it
        defaults, values = pinned_defaults(CHARTS, source(r)), helm_values(CHARTS, source(r))
        for path in component_paths(defaults):
            if (r.chart, path) in NOT_CORE:
                continue
            # THEN each component that schedules pods selects the core nodes and tolerates their taints
            where = f"{r.chart}: {path or '<top>'}"
            component = at(values, path)
            selector = component.get("nodeSelector") or {}
            assert place["nodeSelector"].items() <= selector.items(), f"{where}: nodeSelector {selector}"
            missing = [t for t in place["tolerations"] if t not in (component.get("tolerations") or [])]
            assert not missing, f"{where}: missing tolerations {missing}"
            checked += 1
    assert checked >= 20


CHART_SOURCES = SHARED / "chart-sources"  # research copies of the pinned chart sources: a deep test
CLUSTER_SCOPED = {"CustomResourceDefinition": "apiextensions.k8s.io", "ClusterRole": "rbac.authorization.k8s.io",
                  "ClusterRoleBinding": "rbac.authorization.k8s.io", "APIService": "apiregistration.k8s.io",
                  "ValidatingWebhookConfiguration": "admissionregistration.k8s.io",
                  "MutatingWebhookConfiguration": "admissionregistration.k8s.io", "CSIDriver": "storage.k8s.io",
                  "StorageClass": "storage.k8s.io", "PriorityClass": "scheduling.k8s.io", "Namespace": "",
                  "ValidatingAdmissionPolicy": "admissionregistration.k8s.io", "DeviceClass": "resource.k8s.io"}


def test_every_release_declares_the_cluster_scoped_kinds_its_chart_templates_create():
    need_shared(CHART_SOURCES)
    checked = 0
    for r in helm.planned_releases(spec := model(**EVERY), plan_cluster(spec)):
        folder = CHART_SOURCES / r.chart
        if not folder.is_dir():
            continue
        # GIVEN every `kind:` the chart's templates (and vendored subcharts) can render
        text = "\n".join(p.read_text(errors="replace") for p in sorted(folder.rglob("*"))
                         if p.suffix in (".yaml", ".yml", ".tpl") and "/tests/" not in str(p) and p.is_file())
        kinds = {(CLUSTER_SCOPED[k], k) for k in re.findall(r"(?m)^kind:\s*(\w+)", text) if k in CLUSTER_SCOPED}
        # THEN the release declares them (Namespace is always allowed: CreateNamespace)
        missing = kinds - set(r.cluster_kinds) - {("", "Namespace")}
        assert not missing, f"{r.chart}: {sorted(missing)} not in cluster_kinds"
        checked += 1
    assert checked >= 8


BRIDGE_TOLERATION = {"key": "slinky.slurm.net/managed-node", "operator": "Equal", "value": "slurm-bridge-scheduler",
                     "effect": "NoExecute"}


def test_slurm_bridge_is_pinned_and_released_into_the_slurm_namespace_last():
    # GIVEN a bridge (and every other release) / WHEN its release is read
    bridge = release(model(**EVERY), "slurm-bridge")
    # THEN the OCI chart at 1.2.1, released into the Slurm namespace after the Slurm unit
    assert bridge is not None
    assert (bridge.repo_url, bridge.chart, bridge.version, bridge.release_name, bridge.namespace) == (
        "ghcr.io/slinkyproject/charts", "slurm-bridge", "1.2.1", "slurm-bridge", "slurm")
    assert bridge.wave == 10 and not bridge.server_side_apply and not bridge.keep_on_delete
    # AND it declares its webhooks, cluster RBAC and the kube-system RoleBinding for the AppProject
    assert {("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
            ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
            ("rbac.authorization.k8s.io", "ClusterRole"),
            ("rbac.authorization.k8s.io", "ClusterRoleBinding")} <= set(bridge.cluster_kinds)
    assert bridge.extra_namespaces == ("kube-system",)


def test_slurm_bridge_values_field_by_field():
    # GIVEN a bridge of namespace inference into partition gpu, the control plane on the core node group
    spec = model(**EVERY)
    values = helm.slurm_bridge(spec).values
    # THEN each component is pinned by version on the core placement
    for component in ("scheduler", "admission", "controllers"):
        assert values[component]["image"] == {"repository": f"ghcr.io/slinkyproject/slurm-bridge-{component}",
                                              "tag": "1.2.1"}, component
        assert values[component]["nodeSelector"] == EVERY["placement"]["nodeSelector"], component
        assert values[component]["tolerations"] == EVERY["placement"]["tolerations"], component
    # AND the bridged namespaces, partition, REST API and JWT Secret
    assert values["admission"]["managedNamespaces"] == ["inference"]
    assert values["admission"]["certManager"] == {"enabled": True}
    assert values["schedulerConfig"] == {"partition": "gpu"}
    assert values["sharedConfig"] == {"slurmRestApi": "http://slurm-restapi.slurm:6820",
                                      "slurmJwtSecret": "slurm-bridge-token"}
    assert set(values) == {"scheduler", "admission", "controllers", "schedulerConfig", "sharedConfig"}


def test_node_agents_tolerate_the_bridge_taint():
    # GIVEN a bridge and every node agent a spec can install
    spec = model(**EVERY)

    def values(unit: str) -> dict[str, Any]:
        found = release(spec, unit)
        assert found is not None, unit
        return found.values

    # THEN the device plugins and the node exporter run on the bridged nodes too
    assert BRIDGE_TOLERATION in values("nvidia-device-plugin")["tolerations"]
    assert BRIDGE_TOLERATION in values("aws-efa-k8s-device-plugin")["tolerations"]
    assert BRIDGE_TOLERATION in values("neuron-device-plugin")["devicePlugin"]["tolerations"]
    assert values("kube-prometheus-stack")["prometheus-node-exporter"]["tolerations"] == [
        {"effect": "NoSchedule", "operator": "Exists"}, BRIDGE_TOLERATION]


def test_without_a_bridge_no_node_agent_tolerates_its_taint():
    # GIVEN every release but the bridge
    spec = model(**{k: v for k, v in EVERY.items() if k != "bridge"})
    # THEN no release mentions the bridge's taint, and there is no slurm-bridge release
    found = helm.planned_releases(spec, plan_cluster(spec))
    assert "slurm-bridge" not in {r.unit for r in found}
    assert not [r.unit for r in found if "slinky.slurm.net/managed-node" in repr(r.values)]
