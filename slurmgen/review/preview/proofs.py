"""The five proofs `--preview` makes on a cluster, from what the charts really render.

1. AppProject: every cluster-scoped kind and every namespace the children create is permitted,
   and nothing permitted goes unused.
2. Placement: every pod template can land on a node the cluster has. Core components (every pod
   that is not a DaemonSet) on the spec's placement; device-plugin DaemonSets on exactly their
   NodePools; other node agents on every NodePool (the FSx CSI node also through the startup taint).
3. Images: pinned (tag other than `latest`, or digest), and an ECR image in the cluster's Region; the
   same for images passed to a container as an argument or env value.
4. Values: every key of an Application's valuesObject exists in the chart (values.yaml, with its
   subcharts, or values.schema.json), and the values pass the chart's schema.
5. Stability: each chart renders the same objects twice in a row (no random or lookup-based value).
Each problem is one line: `<cluster>/<Application>: <Kind>/<name>: what is wrong`.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any, Callable, Iterator

from ...synth.rendered import RenderedCluster, image_parts, images
from ...verify.schemas.vendored import VENDORED_DIR
from .charts import ChartRender
from .placement import lands_on, node_labels, node_variants

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
VENDORED_INDEX = VENDORED_DIR / "index.json"


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


Node = tuple[str, int]  # (NodePool, index of one of its node_variants)


def _nodes(pools: dict[str, Obj]) -> dict[Node, tuple[dict[str, str], list[Obj], list[Obj]]]:
    """Every kind of node the NodePools may launch: (labels, taints, startup taints)."""
    out = {}
    for p, o in pools.items():
        spec = o["spec"]["template"]["spec"]
        for i, labels in enumerate(node_variants(o)):
            out[(p, i)] = (labels, spec.get("taints") or [], spec.get("startupTaints") or [])
    return out


def _describe(nodes: set[Node], pools: dict[str, Obj]) -> str:
    """NodePool names; where only some of a pool's kinds of node are meant, the labels that tell them apart."""
    parts = []
    for p in sorted({pool for pool, _ in nodes}):
        variants = node_variants(pools[p])
        hit = sorted(i for pool, i in nodes if pool == p)
        if len(hit) == len(variants):
            parts.append(p)
            continue
        base = node_labels(pools[p])
        parts.append(p + " (" + "; ".join(",".join(f"{k}={v}" for k, v in sorted(variants[i].items()) if k not in base)
                                         for i in hit) + ")")
    return ", ".join(parts)


def placement_problems(cluster: RenderedCluster, renders: list[ChartRender]) -> list[str]:
    """Pods that cannot land where they must (a NodePool allowing several instance types launches each)."""
    name = cluster.spec.name
    pools = {o["metadata"]["name"]: o for o in cluster.files.values() if o["kind"] == "NodePool"}
    nodes = _nodes(pools)
    plans_by_pool = {p.nodepool: p for p in cluster.plans.values()}
    core_labels, core_taints = _core_node(cluster)
    want_selector = dict(cluster.spec.placement.node_selector)
    problems = []
    device_sets: dict[tuple[str, str], set[Node]] = {}
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
        landed = {n for n, (labels, taints, _) in nodes.items() if lands_on(pod, labels, taints)}
        if chart in DEVICE_PLUGINS:
            device_sets.setdefault((app, chart), set()).update(landed)
            what, has = DEVICE_PLUGINS[chart]
            want = {p for p, plan in plans_by_pool.items() if has(plan) and p in pools}
            extra = {n for n in landed if n[0] not in want}
            if extra:  # a helper DaemonSet (NVIDIA MPS, GFD) may land on fewer pools, never on others
                problems.append(f"{where}: lands on NodePool(s) {_describe(extra, pools)}, not {what} NodePools")
            continue
        miss = set(nodes) - landed
        if miss:
            problems.append(f"{where}: a node agent that cannot land on NodePool(s) {_describe(miss, pools)}")
        if chart == FSX_CSI_CHART and "node" in obj["metadata"]["name"]:
            stuck = {n for n, (labels, _, startup) in nodes.items() if not lands_on(pod, labels, startup)}
            for p in sorted({pool for pool, _ in stuck}):
                problems.append(f"{where}: does not tolerate the startup taints of NodePool "
                                f"{_describe({n for n in stuck if n[0] == p}, pools)}, "
                                "which it must remove: nodes would never become ready for slurmd")
    for (app, chart), covered in sorted(device_sets.items()):
        what, has = DEVICE_PLUGINS[chart]
        want = {p for p, plan in plans_by_pool.items() if has(plan) and p in pools}
        uncovered = {n for n in nodes if n[0] in want} - covered
        if uncovered:
            problems.append(f"{name}/{app}: no DaemonSet of {chart} lands on the {what} NodePool(s) "
                            f"{_describe(uncovered, pools)}: their devices would never be advertised")
    return problems


# An image reference passed as a value: a registry host (a dot or a port, or localhost), a path, then
# an optional tag and digest (distribution/reference's grammar, simplified to what registries serve).
IMAGE_REF = re.compile(r"^(?:[a-z0-9-]+(?:\.[a-z0-9-]+)+(?::\d+)?|localhost(?::\d+)?)(?:/[a-z0-9._-]+)+"
                       r"(?::[\w][\w.-]{0,127})?(?:@[a-z0-9]+:[0-9a-fA-F]{32,})?$")


def _passed_image(name: str, value: str) -> bool:
    """True when a flag or env value is an image: it reads as one and has a tag or digest, or its name says image.

    A label key (`node.kubernetes.io/instance-type`) reads as an untagged image too: without a tag,
    digest or `image` in the name it is not taken for one.
    """
    if not IMAGE_REF.match(value):
        return False
    _, tag, digest = image_parts(value)
    return tag is not None or digest is not None or "image" in name.lower()


def _container_values(container: Obj) -> Iterator[tuple[str, str, str]]:
    """(where, name, value) of each `--flag=value` / `--flag value` argument and each literal env value."""
    argv = [a for a in (container.get("command") or []) + (container.get("args") or []) if isinstance(a, str)]
    for i, arg in enumerate(argv):
        flag, eq, value = arg.partition("=")
        if eq and flag.startswith("-"):
            yield "args", flag, value
        elif arg.startswith("-") and i + 1 < len(argv) and not argv[i + 1].startswith("-"):
            yield "args", arg, argv[i + 1]
    for env in container.get("env") or []:
        if isinstance(env, dict) and isinstance(env.get("value"), str):
            yield f"env {env.get('name')}", str(env.get("name")), env["value"]


def passed_images(obj: Any) -> Iterator[tuple[str, str]]:
    """(where, image) of images a container gets as an argument or env value (operators' `--*-image=` flags).

    They are pulled like `image:` fields (prometheus-operator starts its config-reloader sidecars
    from `--prometheus-config-reloader=<image>`), so the same pin and Region rules apply.
    """
    if isinstance(obj, dict):
        if isinstance(obj.get("image"), str) and ("args" in obj or "env" in obj or "command" in obj):
            for where, name, value in _container_values(obj):
                if _passed_image(name, value):
                    yield where, value
        for value in obj.values():
            yield from passed_images(value)
    elif isinstance(obj, list):
        for item in obj:
            yield from passed_images(item)


def image_problems(cluster: RenderedCluster, renders: list[ChartRender]) -> list[str]:
    """Images that are not pinned, or come from another Region's ECR: `image:` fields, args and env values."""
    name, region = cluster.spec.name, cluster.spec.aws.region
    problems = set()
    for app, _ns, obj in all_objects(cluster, renders):
        found = [(image, "") for image in images(obj)] + [(image, f" (in {where})") for where, image in passed_images(obj)]
        for image, passed in found:
            where = f"{name}/{app}: {label(obj)}: image {image}{passed}"
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


def stability_problems(cluster: RenderedCluster, renders: list[ChartRender]) -> list[str]:
    """Objects a chart renders differently each time with the same values (charts.render renders twice)."""
    return [f"{cluster.spec.name}/{r.source.application}: chart {r.source.chart} {r.source.version} renders "
            f"{what} differently each time: Argo CD would see a change at every manifest-cache expiry or hard "
            "refresh (a random or lookup-based value: give the chart that value, e.g. an existing Secret)"
            for r in renders for what in r.unstable]


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
