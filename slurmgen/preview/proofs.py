"""The four proofs `--preview` makes on a cluster, from what the charts really render.

1. AppProject: every cluster-scoped kind and every namespace the children create is permitted,
   and nothing permitted goes unused.
2. Placement: every pod template can land on a node the cluster has. Core components (every pod
   that is not a DaemonSet) on the spec's placement; device-plugin DaemonSets on exactly their
   NodePools; other node agents on every NodePool (the FSx CSI node also through the startup taint).
3. Images: pinned (tag other than `latest`, or digest), and an ECR image in the cluster's Region.
4. Values: every key of an Application's valuesObject exists in the chart (values.yaml, with its
   subcharts, or values.schema.json), and the values pass the chart's schema.
Each problem is one line: `<cluster>/<Application>: <Kind>/<name>: what is wrong`.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterator

from ..rendered import RenderedCluster, image_parts, images
from .charts import ChartRender
from .placement import lands_on, node_labels

Obj = dict[str, Any]

# Built-in cluster-scoped kinds (Kubernetes 1.35 API discovery, `namespaced: false`).
BUILTIN_CLUSTER_SCOPED = {
    ("", "Namespace"), ("", "Node"), ("", "PersistentVolume"),
    ("rbac.authorization.k8s.io", "ClusterRole"), ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("apiextensions.k8s.io", "CustomResourceDefinition"), ("apiregistration.k8s.io", "APIService"),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding"),
    ("storage.k8s.io", "StorageClass"), ("storage.k8s.io", "CSIDriver"), ("storage.k8s.io", "CSINode"),
    ("storage.k8s.io", "VolumeAttachment"), ("storage.k8s.io", "VolumeAttributesClass"),
    ("scheduling.k8s.io", "PriorityClass"), ("node.k8s.io", "RuntimeClass"),
    ("networking.k8s.io", "IngressClass"), ("networking.k8s.io", "IPAddress"), ("networking.k8s.io", "ServiceCIDR"),
    ("resource.k8s.io", "DeviceClass"), ("resource.k8s.io", "ResourceSlice"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"), ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
    ("certificates.k8s.io", "CertificateSigningRequest"), ("certificates.k8s.io", "ClusterTrustBundle"),
}
# The device plugin charts and which NodePools each one's DaemonSets must cover, exactly.
DEVICE_PLUGINS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "nvidia-device-plugin": ("NVIDIA GPU", lambda plan: plan.instance.is_nvidia),
    "aws-efa-k8s-device-plugin": ("EFA", lambda plan: plan.shape.efa),
    "neuron-helm-chart": ("Neuron", lambda plan: plan.instance.is_neuron),
}
FSX_CSI_CHART = "aws-fsx-csi-driver"  # its node DaemonSet removes the FSx startup taint: it must tolerate it
# Pod templates, by kind: where the PodSpec sits.
POD_SPEC = {"Deployment": ("spec", "template", "spec"), "StatefulSet": ("spec", "template", "spec"),
            "DaemonSet": ("spec", "template", "spec"), "ReplicaSet": ("spec", "template", "spec"),
            "Job": ("spec", "template", "spec"), "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
            "Pod": ("spec",)}
# Labels a core node carries whatever the node group: the placement's nodeSelector is added to them.
CORE_NODE_LABELS = {"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
ECR = re.compile(r"^\d{12}\.dkr\.ecr\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?/")
# Maps whose keys are data (label names, annotations), not chart settings.
FREE_FORM = {"nodeSelector", "labels", "annotations", "podLabels", "podAnnotations", "commonLabels",
             "extraArgs", "extraEnv", "env", "resources", "securityContext", "podSecurityContext"}
VENDORED_INDEX = Path(__file__).resolve().parents[1] / "validate" / "vendored" / "index.json"


@lru_cache(maxsize=1)
def _vendored_cluster_kinds() -> frozenset[tuple[str, str]]:
    crds = json.loads(VENDORED_INDEX.read_text(encoding="utf-8"))["crds"]
    items = crds.values() if isinstance(crds, dict) else crds
    return frozenset((c["group"], c["kind"]) for c in items if c["scope"] == "Cluster")


def group_kind(obj: Obj) -> tuple[str, str]:
    api = str(obj.get("apiVersion", ""))
    return (api.split("/")[0] if "/" in api else "", str(obj.get("kind", "")))


def label(obj: Obj) -> str:
    return f"{obj.get('kind')}/{(obj.get('metadata') or {}).get('name')}"


def _dig(obj: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def unit_objects(cluster: RenderedCluster) -> Iterator[tuple[Obj, Obj]]:
    """(Application, object) for every object of a directory child Application (compute/, slurm/, ...)."""
    apps = {obj["spec"]["source"]["path"].rsplit("/", 1)[-1]: obj for rel, obj in cluster.files.items()
            if rel.startswith("apps/") and obj["kind"] == "Application" and "path" in obj["spec"]["source"]}
    for rel, obj in sorted(cluster.files.items()):
        unit = rel.split("/", 1)[0]
        if unit in apps:
            yield apps[unit], obj


def all_objects(cluster: RenderedCluster, renders: list[ChartRender]) -> Iterator[tuple[str, str, Obj]]:
    """(Application name, default namespace, object) of every child: directory units and rendered charts."""
    for app, obj in unit_objects(cluster):
        yield app["metadata"]["name"], app["spec"]["destination"].get("namespace") or "", obj
    for r in renders:
        for obj in r.objects:
            yield r.source.application, r.source.namespace, obj


def project_problems(cluster: RenderedCluster, renders: list[ChartRender], partial: bool) -> tuple[list[str], list[str]]:
    """(problems, notes): kinds and namespaces the AppProject misses or permits in vain."""
    name = cluster.spec.name
    project = next(o for o in cluster.files.values() if o["kind"] == "AppProject")
    where = f"{name}/AppProject {project['metadata']['name']}"
    allowed = {(k["group"], k["kind"]) for k in project["spec"].get("clusterResourceWhitelist") or []}
    dests = {d["namespace"] for d in project["spec"].get("destinations") or []}
    scoped = set(BUILTIN_CLUSTER_SCOPED) | _vendored_cluster_kinds()
    for r in renders:
        scoped |= {(o["spec"]["group"], o["spec"]["names"]["kind"]) for o in r.objects
                   if o.get("kind") == "CustomResourceDefinition" and (o.get("spec") or {}).get("scope") == "Cluster"}
    used_kinds: dict[tuple[str, str], str] = {}
    used_ns: dict[str, str] = {}
    apps = [o for rel, o in cluster.files.items() if rel.startswith("apps/") and o["kind"] == "Application"]
    for app in apps:
        ns = app["spec"]["destination"].get("namespace")
        if ns:
            used_ns.setdefault(ns, f"{app['metadata']['name']} (destination)")
        if "CreateNamespace=true" in (app["spec"].get("syncPolicy") or {}).get("syncOptions", []):
            used_kinds.setdefault(("", "Namespace"), f"{app['metadata']['name']} (CreateNamespace=true)")
    problems: list[str] = []
    for app_name, default_ns, obj in all_objects(cluster, renders):
        gk = group_kind(obj)
        if gk in scoped:
            used_kinds.setdefault(gk, f"{app_name}: {label(obj)}")
            if gk not in allowed:
                problems.append(f"{where}: spec.clusterResourceWhitelist: {gk[0] or 'core'}/{gk[1]} is not permitted, "
                                f"but {app_name} creates {label(obj)}")
        else:
            ns = (obj.get("metadata") or {}).get("namespace") or default_ns
            used_ns.setdefault(ns, f"{app_name}: {label(obj)}")
            if ns not in dests:
                problems.append(f"{where}: spec.destinations: namespace {ns} is not permitted, "
                                f"but {app_name} creates {label(obj)} in it")
    for r in renders:
        for gk in r.assumed_kinds:
            used_kinds.setdefault(gk, f"{r.source.application} (chart archive)")
            if gk not in allowed:
                problems.append(f"{where}: spec.clusterResourceWhitelist: {gk[0] or 'core'}/{gk[1]} is not permitted, "
                                f"but {r.source.application} creates one")
    unused = [f"{where}: spec.clusterResourceWhitelist: {g or 'core'}/{k} is permitted but no Application creates one"
              for g, k in sorted(allowed - set(used_kinds))]
    unused += [f"{where}: spec.destinations: namespace {ns} is permitted but no Application uses it"
               for ns in sorted(dests - set(used_ns))]
    # With a chart not previewed, its objects are unknown: what looks unused may be its.
    if partial:
        return sorted(set(problems)), [f"{line} (or only by a chart not previewed)" for line in unused]
    return sorted(set(problems)) + unused, []


def _core_node(cluster: RenderedCluster) -> tuple[dict[str, str], list[Obj]]:
    """The labels and taints of a core node, as the spec's placement describes it."""
    placement = cluster.spec.placement
    labels = {**CORE_NODE_LABELS, **dict(placement.node_selector)}
    taints = []
    for tol in placement.tolerations:
        t = tol.as_dict()
        if t.get("key"):
            taints.append({"key": t["key"], "value": t.get("value", ""), "effect": t.get("effect") or "NoSchedule"})
    return labels, taints


def _pods(cluster: RenderedCluster, renders: list[ChartRender]) -> Iterator[tuple[str, str | None, Obj, Obj]]:
    """(Application, chart or None, workload, PodSpec) of every pod template."""
    charts = {r.source.application: r.source.chart for r in renders}
    for app_name, _ns, obj in all_objects(cluster, renders):
        path = POD_SPEC.get(str(obj.get("kind")))
        pod = _dig(obj, path) if path else None
        if isinstance(pod, dict):
            yield app_name, charts.get(app_name), obj, pod


def placement_problems(cluster: RenderedCluster, renders: list[ChartRender]) -> list[str]:
    """Pods that cannot land where they must."""
    name = cluster.spec.name
    pools = {o["metadata"]["name"]: o for o in cluster.files.values() if o["kind"] == "NodePool"}
    plans_by_pool = {p.nodepool: p for p in cluster.plans.values()}
    core_labels, core_taints = _core_node(cluster)
    want_selector = dict(cluster.spec.placement.node_selector)
    problems = []
    device_sets: dict[tuple[str, str], set[str]] = {}
    for app, chart, obj, pod in _pods(cluster, renders):
        where = f"{name}/{app}: {label(obj)}"
        if obj["kind"] != "DaemonSet":
            missing = {k: v for k, v in want_selector.items() if (pod.get("nodeSelector") or {}).get(k) != v}
            if missing:
                problems.append(f"{where}: a core component without the placement nodeSelector {missing}")
            elif not lands_on(pod, core_labels, core_taints):
                problems.append(f"{where}: cannot land on a core node (labels {core_labels}, taints "
                                f"{[t['key'] for t in core_taints]}): check its affinity and tolerations")
            continue
        where_pools = {p for p, o in pools.items()
                       if lands_on(pod, node_labels(o), o["spec"]["template"]["spec"].get("taints") or [])}
        if chart in DEVICE_PLUGINS:
            device_sets.setdefault((app, chart), set()).update(where_pools)
            what, has = DEVICE_PLUGINS[chart]
            want = {p for p, plan in plans_by_pool.items() if has(plan) and p in pools}
            extra = sorted(where_pools - want)
            if extra:  # a helper DaemonSet (NVIDIA MPS, GFD) may land on fewer pools, never on others
                problems.append(f"{where}: lands on NodePool(s) {', '.join(extra)}, not {what} NodePools")
            continue
        miss = sorted(set(pools) - where_pools)
        if miss:
            problems.append(f"{where}: a node agent that cannot land on NodePool(s) {', '.join(miss)}")
        if chart == FSX_CSI_CHART and "node" in obj["metadata"]["name"]:
            for p, o in pools.items():
                startup = o["spec"]["template"]["spec"].get("startupTaints") or []
                if not lands_on(pod, node_labels(o), startup):
                    problems.append(f"{where}: does not tolerate the startup taints of NodePool {p}, "
                                    "which it must remove: nodes would never become ready for slurmd")
    for (app, chart), where_pools in sorted(device_sets.items()):
        what, has = DEVICE_PLUGINS[chart]
        want = {p for p, plan in plans_by_pool.items() if has(plan) and p in pools}
        miss = sorted(want - where_pools)
        if miss:
            problems.append(f"{name}/{app}: no DaemonSet of {chart} lands on the {what} NodePool(s) "
                            f"{', '.join(miss)}: their devices would never be advertised")
    return problems


def image_problems(cluster: RenderedCluster, renders: list[ChartRender]) -> list[str]:
    """Images that are not pinned, or come from another Region's ECR."""
    name, region = cluster.spec.name, cluster.spec.aws.region
    problems = set()
    for app, _ns, obj in all_objects(cluster, renders):
        for image in images(obj):
            where = f"{name}/{app}: {label(obj)}: image {image}"
            _, tag, digest = image_parts(image)
            if digest is not None:
                if not digest.startswith("sha256:"):
                    problems.add(f"{where}: a digest must be sha256:…")
            else:
                if not tag or tag == "latest":
                    problems.add(f"{where}: not pinned (no tag or digest, or latest)")
            match = ECR.match(image)
            if match and match.group(1) != region:
                problems.add(f"{where}: in the ECR of {match.group(1)}, not pullable through {region}'s endpoints; "
                             f"use the {region} registry")
    return sorted(problems)


def _key_exists(defaults: Any, schema: Any, path: tuple[str, ...]) -> bool:
    """True when the chart reads `path`: in values.yaml (free-form maps open), or in its schema."""
    node = defaults
    for index, key in enumerate(path):
        if index and path[index - 1] in FREE_FORM and isinstance(node, dict):
            return True
        if not isinstance(node, dict) or key not in node:
            return _in_schema(schema, path)
        node = node[key]
        more = index < len(path) - 1
        if more and isinstance(node, dict) and not node:
            return True
        if more and not isinstance(node, dict):
            return _in_schema(schema, path)
    return True


def _in_schema(schema: Any, path: tuple[str, ...]) -> bool:
    node = schema
    for key in path:
        if not isinstance(node, dict):
            return False
        props = node.get("properties") or {}
        if key in props:
            node = props[key]
        elif node.get("additionalProperties") not in (None, False) or node.get("patternProperties"):
            return True
        else:
            return False
    return True


def leaf_paths(values: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """The key path of every leaf of a Helm values tree (an empty mapping counts as a leaf)."""
    if isinstance(values, dict) and values:
        for key, sub in values.items():
            yield from leaf_paths(sub, (*prefix, key))
    else:
        yield prefix


def values_problems(cluster: RenderedCluster, renders: list[ChartRender]) -> list[str]:
    """valuesObject keys the chart does not know (Helm ignores them silently), and schema failures."""
    problems = []
    for r in renders:
        where = f"{cluster.spec.name}/{r.source.application}: valuesObject"
        for path in leaf_paths(r.source.values):
            if path and not _key_exists(r.defaults, r.schema, path):
                problems.append(f"{where}.{'.'.join(path)}: no such key in chart {r.source.chart} {r.source.version} "
                                "(values.yaml, values.schema.json): Helm would ignore it")
        problems += [f"{where}: {err}" for err in r.schema_errors]
    return problems
