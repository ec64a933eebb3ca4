"""The Helm charts deployed as child Applications, pinned, with the values we set.

Every value key set here exists in the chart's default values.yaml at the pinned version
(tests check it against the vendored copies in tests/data/charts/): Helm silently ignores a misspelt key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from slurmgen.plan import identity
from slurmgen.catalog.registries import eks_addon_registry
from charts.secrets import GRAFANA_ADMIN, GRAFANA_PASSWORD_KEY, GRAFANA_USER_KEY, grafana_admin_objects
from slurmgen.kube.vocabulary import NODEPOOL_LABEL
from slurmgen.plan.nodesets import BRIDGE_TAINT, GPU_PRESENT_LABEL, NodeSetPlan
from slurmgen.spec import ClusterSpec
from slurmgen.kube import naming, waves

# Cluster-scoped kinds the charts install, for the AppProject whitelist.
CRD = ("apiextensions.k8s.io", "CustomResourceDefinition")
WEBHOOKS = (("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
            ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"))
RBAC = (("rbac.authorization.k8s.io", "ClusterRole"), ("rbac.authorization.k8s.io", "ClusterRoleBinding"))


@dataclass(frozen=True)
class HelmRelease:
    """One pinned chart installed by one child Application."""

    unit: str                      # Application suffix: <cluster>-<unit>
    repo_url: str                  # scheme-less host/path means an OCI registry to Argo CD
    chart: str
    version: str
    namespace: str
    release_name: str
    wave: int
    values: dict[str, Any] = field(default_factory=dict)
    server_side_apply: bool = False
    cluster_kinds: tuple[tuple[str, str], ...] = ()
    extra_namespaces: tuple[str, ...] = ()  # namespaces the chart writes to besides its own
    keep_on_delete: bool = False  # Delete=false: deleting the Application leaves its objects (CRDs)


def _service_account(name: str, irsa_role: str | None) -> dict[str, Any]:
    """A chart's `serviceAccount` values: its name, and the IRSA role annotation when there is one."""
    out: dict[str, Any] = {"name": name}
    if irsa_role:
        out["annotations"] = {identity.ROLE_ANNOTATION: irsa_role}
    return out


def cert_manager(spec: ClusterSpec) -> HelmRelease:
    place = spec.placement.pod_spec()
    return HelmRelease(
        unit="cert-manager", repo_url="quay.io/jetstack/charts", chart="cert-manager",
        version=spec.versions.cert_manager, namespace="cert-manager", release_name="cert-manager",
        wave=waves.CRDS, server_side_apply=True,
        # Leader election in its own namespace, so the AppProject need not grant kube-system for it.
        values={"crds": {"enabled": True, "keep": True}, **place,
                "global": {"leaderElection": {"namespace": "cert-manager"}},
                "webhook": dict(place), "cainjector": dict(place), "startupapicheck": dict(place)},
        cluster_kinds=(CRD, *WEBHOOKS, *RBAC),
    )


def slurm_operator_crds(spec: ClusterSpec) -> HelmRelease:
    return HelmRelease(
        unit="slurm-operator-crds", repo_url="ghcr.io/slinkyproject/charts", chart="slurm-operator-crds",
        version=spec.versions.slinky, namespace=spec.operator_namespace, release_name="slurm-operator-crds",
        wave=waves.CRDS, server_side_apply=True, cluster_kinds=(CRD,),
        keep_on_delete=True,  # deleting a CRD deletes every Controller, NodeSet, ... with it
    )


def slurm_operator(spec: ClusterSpec) -> HelmRelease:
    place = spec.placement.pod_spec()
    return HelmRelease(
        unit="slurm-operator", repo_url="ghcr.io/slinkyproject/charts", chart="slurm-operator",
        version=spec.versions.slinky, namespace=spec.operator_namespace, release_name="slurm-operator",
        wave=waves.OPERATORS, server_side_apply=True,
        # CRDs come from their own Application; the webhook certificate from cert-manager, never
        # from Helm's genCA (a new CA on every Argo CD render, hence a perpetual diff).
        values={"crds": {"enabled": False}, "certManager": {"enabled": True},
                "operator": dict(place), "webhook": dict(place)},
        cluster_kinds=(*WEBHOOKS, *RBAC),
    )


def _exists(key: str) -> dict[str, str]:
    return {"key": key, "operator": "Exists", "effect": "NoSchedule"}


# Taints on Slurm compute nodes (see plan.py); node agents must tolerate all of them.
#: aws-efa-k8s-device-plugin chart v0.5.30 values.yaml `image.tag`: the plugin the chart pins.
EFA_PLUGIN_TAG = "v0.5.20"
COMPUTE_TOLERATIONS = [_exists("aws.amazon.com/neuron"), _exists("nvidia.com/gpu"), _exists("slurmgen.dev/compute")]


def _bridged(spec: ClusterSpec) -> list[dict[str, object]]:
    """The toleration of slurm-bridge's NoExecute taint, for node agents, when the cluster bridges nodes."""
    return [BRIDGE_TAINT.toleration().as_dict()] if spec.bridge is not None else []


def nvidia_device_plugin(spec: ClusterSpec) -> HelmRelease:
    return HelmRelease(
        unit="nvidia-device-plugin", repo_url="https://nvidia.github.io/k8s-device-plugin",
        chart="nvidia-device-plugin", version="0.20.0", namespace="kube-system",
        release_name="nvidia-device-plugin", wave=waves.OPERATORS,
        # The chart's default affinity wants node-feature-discovery labels or nvidia.com/gpu.present,
        # which the AL2023 AMI sets only with kubelet >= 1.35: our GPU NodePools set that label
        # (plan.GPU_PRESENT_LABEL) and the affinity names it alone, so the plugin lands on exactly
        # those nodes whatever the Kubernetes version or the chart's defaults. The list replaces the
        # chart's terms (Helm merges maps, replaces lists). MOFED off: it would grab the EFA devices.
        values={"mofedEnabled": False,
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": GPU_PRESENT_LABEL, "operator": "In", "values": ["true"]}]}]}}},
                "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}, _exists("nvidia.com/gpu"),
                                *_bridged(spec)]},
        cluster_kinds=RBAC,  # templates/role.yml and role-binding.yml, unconditional (0.20.0)
    )


def efa_device_plugin(spec: ClusterSpec, other_taints: tuple[str, ...] = (), pools: Sequence[str] = ()) -> HelmRelease:
    """`other_taints`: taint keys of accelerator pools beyond the usual three (amd.com/gpu, habana.ai/gaudi).

    `pools`: our EFA NodePools. The chart's affinity is one `In` term per `supportedInstanceLabels`
    key (templates/daemonset.yaml @ v0.5.30), by default the EFA-capable instance types: a NodePool
    of EFA-capable types whose nodeset does not use EFA (g6.8xlarge, gr6.8xlarge) would get the plugin
    too. Keyed on the NodePool label instead, it lands on exactly the EFA NodePools.
    """
    placement: dict[str, Any] = (
        {"supportedInstanceLabels": {"keys": [NODEPOOL_LABEL], "values": sorted(pools)}} if pools else {})
    return HelmRelease(
        unit="aws-efa-k8s-device-plugin", repo_url="https://aws.github.io/eks-charts",
        chart="aws-efa-k8s-device-plugin", version="v0.5.30", namespace="kube-system",
        release_name="aws-efa-k8s-device-plugin", wave=waves.OPERATORS,
        # The chart's image is in the us-west-2 registry (values.yaml v0.5.30): pull from the
        # cluster's own Region, which private subnets reach through their regional ECR endpoints.
        # The tag is the chart's own default (values.yaml v0.5.30: `tag: "v0.5.20"`), written out so
        # the tree names the whole image it pulls (tests/spec/test_image_pins.py keeps the two equal).
        values={"image": {"repository": f"{eks_addon_registry(spec.aws.region)}/eks/aws-efa-k8s-device-plugin",
                          "tag": EFA_PLUGIN_TAG},
                "tolerations": COMPUTE_TOLERATIONS + [_exists(key) for key in sorted(other_taints)] + _bridged(spec),
                **placement},
    )


#: neuron-helm-chart 1.9.0 values.yaml devicePlugin.tolerations (aws-neuron/neuron-helm-charts @ b77a6f9)
NEURON_TOLERATIONS = [{"key": "CriticalAddonsOnly", "operator": "Exists"}, _exists("aws.amazon.com/neuron"),
                      {"key": "sagemaker.amazonaws.com/node-health-status", "operator": "Equal",
                       "value": "Unschedulable", "effect": "NoSchedule"}]


def neuron_device_plugin(spec: ClusterSpec, pools: Sequence[str]) -> HelmRelease:
    """AWS's neuron-helm-chart (OCI public.ecr.aws/neuron), device plugin only, on exactly our Neuron NodePools.

    1.9.0 is the release for Neuron SDK 2.31.0 (device plugin 2.31.0.0, trn1/trn2/trn3/inf1/inf2 in
    its instance list). The chart's default affinity lists instance types; ours names the NodePools
    (the list replaces the chart's terms), and the chart's tolerations already cover the
    aws.amazon.com/neuron taint. Off: the node problem detector (its own namespace and a DaemonSet
    tolerating every taint) and the scheduler extension, which only helps pods that take part of a
    node's NeuronCores; slurmd pods take whole devices. With a bridge, the chart's tolerations
    (values.yaml @ b77a6f9, release 1.9.0) written out with slurm-bridge's added: Helm replaces lists.
    """
    plugin: dict[str, Any] = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": NODEPOOL_LABEL, "operator": "In", "values": sorted(pools)}]}]}}}}
    if spec.bridge is not None:
        plugin["tolerations"] = [*NEURON_TOLERATIONS, *_bridged(spec)]
    return HelmRelease(
        unit="neuron-device-plugin", repo_url="public.ecr.aws/neuron", chart="neuron-helm-chart",
        version="1.9.0", namespace="kube-system", release_name="neuron-device-plugin", wave=waves.OPERATORS,
        values={"devicePlugin": plugin, "npd": {"enabled": False}, "scheduler": {"enabled": False}},
        cluster_kinds=RBAC,
    )


def external_secrets(spec: ClusterSpec) -> HelmRelease:
    place = spec.placement.pod_spec()
    return HelmRelease(
        unit="external-secrets", repo_url="ghcr.io/external-secrets/charts", chart="external-secrets",
        version="2.9.0", namespace="external-secrets", release_name="external-secrets",
        wave=waves.CRDS, server_side_apply=True,  # its SecretStore CRDs are larger than 256 KiB
        # The service account named explicitly: an EKS Pod Identity association names it
        # (slurmgen/plan/identity.py). With IRSA the SecretStore uses its own service account instead.
        values={"installCRDs": True, **place, "webhook": dict(place), "certController": dict(place),
                "serviceAccount": {"name": identity.ESO_CONTROLLER_SA}},
        cluster_kinds=(CRD, *WEBHOOKS, *RBAC),
    )


def mariadb_operator_crds(spec: ClusterSpec) -> HelmRelease:
    return HelmRelease(
        unit="mariadb-operator-crds", repo_url="ghcr.io/mariadb-operator/charts", chart="mariadb-operator-crds",
        version="26.6.0", namespace="mariadb-operator", release_name="mariadb-operator-crds",
        wave=waves.CRDS, server_side_apply=True, cluster_kinds=(CRD,),
        keep_on_delete=True,  # deleting the MariaDB CRD deletes the accounting database's CR
    )


def mariadb_operator(spec: ClusterSpec) -> HelmRelease:
    place = spec.placement.pod_spec()
    return HelmRelease(
        unit="mariadb-operator", repo_url="ghcr.io/mariadb-operator/charts", chart="mariadb-operator",
        version="26.6.0", namespace="mariadb-operator", release_name="mariadb-operator",
        wave=waves.OPERATORS, server_side_apply=True,
        # CRDs from their own Application: uninstalling an operator chart that owns them deletes every MariaDB.
        values={"crds": {"enabled": False}, **place,
                "webhook": {**place, "cert": {"certManager": {"enabled": True}}}, "certController": dict(place)},
        cluster_kinds=(*WEBHOOKS, *RBAC),
    )


def fsx_csi_driver(spec: ClusterSpec) -> HelmRelease:
    place = spec.placement.pod_spec()
    region = spec.aws.region
    return HelmRelease(
        unit="aws-fsx-csi-driver", repo_url="https://kubernetes-sigs.github.io/aws-fsx-csi-driver",
        chart="aws-fsx-csi-driver", version="1.17.0", namespace="kube-system", release_name="aws-fsx-csi-driver",
        wave=waves.OPERATORS,
        # IMDS is out of reach for pods on Karpenter nodes (hop limit 1): give the region explicitly.
        # The controller's service account by name (a Pod Identity association names it) and, with
        # IRSA, its role (templates/controller-serviceaccount.yaml @ 1.17.0 renders the annotations).
        values={"controller": {"region": region, **place,  # the chart has no node.region
                               "serviceAccount": _service_account(identity.FSX_CONTROLLER_SA,
                                                                  identity.irsa_role(spec, "fsxCsiController"))}},
        cluster_kinds=(("storage.k8s.io", "CSIDriver"), *RBAC),
    )


# Control-plane scrape targets EKS does not expose to pods (the controller manager, scheduler and
# etcd run in the AWS-managed control plane; kube-proxy binds its metrics to 127.0.0.1): left on,
# their ServiceMonitors scrape nothing and the *Down alerts fire forever (the chart's rule files,
# templates/prometheus/rules-1.14/*.yaml @ 88.5.3, are gated on the same `enabled` keys).
EKS_ABSENT_TARGETS = ("kubeControllerManager", "kubeScheduler", "kubeEtcd", "kubeProxy")


def kube_prometheus_stack(spec: ClusterSpec) -> HelmRelease:
    kps = spec.kube_prometheus_stack
    place = spec.placement.pod_spec()
    grafana = grafana_admin_objects(spec)
    storage = {"volumeClaimTemplate": {"spec": {
        "storageClassName": kps.storage_class_name, "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": kps.storage_size}}}}}
    return HelmRelease(
        unit="kube-prometheus-stack", repo_url="ghcr.io/prometheus-community/charts", chart="kube-prometheus-stack",
        version="88.5.3", namespace=kps.namespace, release_name="kube-prometheus-stack",
        wave=waves.CRDS, server_side_apply=True,  # its CRDs exceed the client-side apply limit
        values={
            # Every Deployment, StatefulSet and Job of the chart on the core placement, each under
            # the values key its template reads (88.5.3). The admission-webhook `patch` Jobs are
            # Helm hooks that Argo CD runs as PreSync: unplaced on a tainted core, the sync stops.
            "prometheusOperator": {**place, "admissionWebhooks": {"patch": dict(place), "deployment": dict(place)}},
            "prometheus": {"prometheusSpec": {
                # pick up the Slurm ServiceMonitor whatever its labels
                "serviceMonitorSelectorNilUsesHelmValues": False, "podMonitorSelectorNilUsesHelmValues": False,
                "retention": kps.retention, "storageSpec": storage, **place}},
            "alertmanager": {"alertmanagerSpec": dict(place)},
            "thanosRuler": {"thanosRulerSpec": dict(place)},
            "crds": {"upgradeJob": dict(place)},
            # Subcharts (grafana 12.11.1, kube-state-metrics 8.4.0) read nodeSelector/tolerations at
            # their top level. node-exporter stays a DaemonSet on every node (its default tolerates
            # every NoSchedule taint).
            # Grafana's admin login from a Secret made in the cluster (charts/secrets.py
            # grafana_admin_objects), never the chart's randAlphaNum: that one changes at every render.
            "grafana": {**place, "sidecar": {"dashboards": {"enabled": True, "searchNamespace": "ALL"}},
                        "admin": {"existingSecret": GRAFANA_ADMIN, "userKey": GRAFANA_USER_KEY,
                                  "passwordKey": GRAFANA_PASSWORD_KEY}},
            "kube-state-metrics": dict(place),
            # node-exporter on every node, bridged ones too: its default (NoSchedule Exists,
            # prometheus-node-exporter-4.56.1 values.yaml `tolerations`) with slurm-bridge's NoExecute taint.
            **({"prometheus-node-exporter": {"tolerations": [{"effect": "NoSchedule", "operator": "Exists"},
                                                             *_bridged(spec)]}} if spec.bridge else {}),
            **{target: {"enabled": False} for target in EKS_ABSENT_TARGETS},
            **({"extraManifests": grafana} if grafana else {}),
        },
        cluster_kinds=(CRD, *WEBHOOKS, *RBAC),
        extra_namespaces=("kube-system",),  # Services for the CoreDNS and kubelet scrape targets
    )


def keda(spec: ClusterSpec) -> HelmRelease:
    place = spec.placement.pod_spec()
    return HelmRelease(
        unit="keda", repo_url="https://kedacore.github.io/charts", chart="keda", version="2.20.2",
        namespace="keda", release_name="keda", wave=waves.CRDS,
        server_side_apply=True,  # its ScaledJob CRD is larger than client-side apply allows
        # Least privilege: KEDA may scale NodeSets (plural resource name), not every */scale.
        # Each component falls back to the top-level placement (templates/*/deployment.yaml @ v2.20.2);
        # set on each as well, so the placement test reads it where the template does.
        values={"crds": {"install": True}, **place,
                "operator": dict(place), "metricsServer": dict(place), "webhooks": dict(place),
                # The operator runs the scalers: its service account holds the AWS identity for
                # Amazon Managed Prometheus (slurmgen/plan/identity.py), named for a Pod Identity association.
                "serviceAccount": {"operator": _service_account(identity.KEDA_OPERATOR_SA,
                                                                identity.irsa_role(spec, "keda"))},
                "rbac": {"enabledCustomScaledRefKinds": True,
                         "scaledRefKinds": [{"apiGroup": "slinky.slurm.net", "kind": "nodesets"}]}},
        cluster_kinds=(CRD, *WEBHOOKS, *RBAC, ("apiregistration.k8s.io", "APIService")),
        extra_namespaces=("kube-system",),  # RoleBinding to read the extension-apiserver configuration
    )


#: slurm-bridge's chart, the release that pairs with slurm-operator 1.2.x (docs/versioning.md of both
#: projects); its images are tagged with the chart version (templates/*/_*.tpl @ v1.2.1), written out.
BRIDGE_VERSION = "1.2.1"
BRIDGE_IMAGES = "ghcr.io/slinkyproject"
RESTAPI_PORT = 6820  # slurm-operator v1.2.1 internal/builder/restapibuilder/restapi_app.go SlurmrestdPort


def slurm_bridge(spec: ClusterSpec) -> HelmRelease:
    """slurm-bridge 1.2.1 in the Slurm namespace, beside the Token Secret its pods read (charts/bridge.py).

    After the Slurm unit (its RestApi and Token) and last of all: its mutating webhook sees every pod
    created outside kube-system and its own namespace and fails closed (templates/admission/webhook.yaml
    @ v1.2.1 sets no failurePolicy: Fail), so it starts once the rest of the tree is up. The scheduler
    name stays the chart's (`slurm-bridge-scheduler`: templates/scheduler/_scheduler.tpl redefines the
    helper schedulerConfig.schedulerName feeds, so that value reaches the ConfigMap but not every
    object). The serving certificate comes from cert-manager (admission.certManager, the default),
    never from the chart's genCA (a new CA at every Argo CD render).
    """
    bridge = spec.bridge
    if bridge is None:
        raise ValueError(f"{spec.name} bridges nothing")
    place = spec.placement.pod_spec()
    image = {"tag": BRIDGE_VERSION}
    return HelmRelease(
        unit="slurm-bridge", repo_url=f"{BRIDGE_IMAGES}/charts", chart="slurm-bridge", version=BRIDGE_VERSION,
        namespace=spec.namespace, release_name="slurm-bridge", wave=waves.ADDONS,
        values={"scheduler": {"image": {"repository": f"{BRIDGE_IMAGES}/slurm-bridge-scheduler", **image}, **place},
                "schedulerConfig": {"partition": bridge.partition},
                "admission": {"image": {"repository": f"{BRIDGE_IMAGES}/slurm-bridge-admission", **image},
                              "certManager": {"enabled": True}, "managedNamespaces": list(bridge.namespaces), **place},
                "controllers": {"image": {"repository": f"{BRIDGE_IMAGES}/slurm-bridge-controllers", **image}, **place},
                "sharedConfig": {"slurmRestApi": f"http://{naming.CONTROLLER}-restapi.{spec.namespace}:{RESTAPI_PORT}",
                                 "slurmJwtSecret": naming.BRIDGE_TOKEN}},
        cluster_kinds=(*WEBHOOKS, *RBAC),
        extra_namespaces=("kube-system",),  # RoleBinding to read the extension-apiserver configuration
    )


def releases(spec: ClusterSpec, *, nvidia: bool = False, efa: bool = False,
             other_taints: tuple[str, ...] = (), neuron_pools: Sequence[str] = (),
             efa_pools: Sequence[str] = ()) -> list[HelmRelease]:
    """Every Helm child Application of a cluster; device plugins only where a nodeset needs them.

    `other_taints` are compute taints outside COMPUTE_TOLERATIONS (AMD/Habana pools) the EFA plugin must tolerate;
    `efa_pools` the NodePools whose nodesets use EFA (the EFA plugin lands on exactly those).
    """
    out = [cert_manager(spec), slurm_operator_crds(spec), slurm_operator(spec)]
    if spec.secrets.generated:
        out.append(external_secrets(spec))
    if spec.accounting.enabled and spec.accounting.database.managed:
        out += [mariadb_operator_crds(spec), mariadb_operator(spec)]
    if spec.storage.fsx.enabled and spec.storage.fsx.csi_driver == "helm":
        out.append(fsx_csi_driver(spec))
    if spec.kube_prometheus_stack.enabled:
        out.append(kube_prometheus_stack(spec))
    if any(ns.autoscale for ns in spec.nodesets):
        out.append(keda(spec))
    c = spec.compute
    if nvidia and c.nvidia_device_plugin and c.ami_family != "bottlerocket":  # Bottlerocket ships its own
        out.append(nvidia_device_plugin(spec))
    if efa and c.efa_device_plugin:
        out.append(efa_device_plugin(spec, other_taints, efa_pools))
    if neuron_pools and not c.neuron_installed_separately:
        out.append(neuron_device_plugin(spec, neuron_pools))
    if spec.bridge is not None:
        out.append(slurm_bridge(spec))
    return out


def planned_releases(spec: ClusterSpec, plans: Mapping[str, NodeSetPlan]) -> list[HelmRelease]:
    """releases() for the nodesets as planned: the device plugins their instance types need, landing on their pools."""
    known = {t["key"] for t in COMPUTE_TOLERATIONS} | {BRIDGE_TAINT.key}  # tolerated by value (_bridged)
    other_taints = tuple(sorted({t.key for p in plans.values() for t in p.taints} - known))
    return releases(spec, nvidia=any(p.instance.is_nvidia for p in plans.values()),
                    efa=any(p.shape.efa for p in plans.values()), other_taints=other_taints,
                    neuron_pools=[p.nodepool for p in plans.values() if p.instance.is_neuron],
                    efa_pools=[p.nodepool for p in plans.values() if p.shape.efa])
