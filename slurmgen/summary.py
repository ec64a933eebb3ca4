"""A pull-request summary: what a change to the rendered tree means, in Markdown.

A 2,000-line YAML diff is unreadable; a reviewer needs "adds 16 p5.48xlarge nodes (128 H100) to
partition `train` and changes nothing stateful". Everything here is read from the rendered objects
(old tree vs new tree), so the summary describes exactly what Argo CD will apply.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from .catalog.catalog import InstanceType, load_catalog
from .guards import IMMUTABLE, POLICY_KINDS, SIZES, STATEFUL, _MISSING, shrinkage, field, has_policy, policy_names
from .rendered import image_parts, images
from .vocabulary import LBC
from .slurmconf.checks import wave_problems
from .slurmconf.diff import changes as slurmconf_changes

Obj = dict[str, Any]
Tree = Mapping[str, Obj]  # relative path -> object, for one cluster

_PARTITION_LINE = re.compile(r"^PartitionName=(\S+) Nodes=(\S+)")


@dataclass(frozen=True)
class NodeSetCapacity:
    """What one nodeset can grow to, read from its NodeSet, ScaledObject and NodePool."""

    nodeset: str
    partitions: tuple[str, ...]
    instance_type: str  # the types, comma-separated (a nodeset may list interchangeable types)
    capacity_type: str
    max_nodes: int
    accelerators: int  # at max_nodes
    accelerator_model: str
    instance_types: tuple[str, ...] = ()

    def nodes_of(self) -> str:
        """'p5.48xlarge' or 'g6.8xlarge or gr6.8xlarge': what the headline counts nodes of."""
        return " or ".join(self.instance_types) or self.instance_type

    def gpus(self) -> str:
        if not self.accelerators:
            return "-"
        return f"{self.accelerators} × {self.accelerator_model.upper() or 'GPU'}"


def _by_kind(tree: Tree, kind: str) -> dict[str, Obj]:
    return {o["metadata"]["name"]: o for o in tree.values() if o.get("kind") == kind}


def _partitions(tree: Tree) -> dict[str, list[str]]:
    """nodeset -> partitions it belongs to (NodeSet-owned partitions and the Controller's extraConf)."""
    out: dict[str, list[str]] = {}
    nodesets = [n["spec"]["template"]["spec"]["hostname"].rstrip("-") for n in _by_kind(tree, "NodeSet").values()]
    for node in _by_kind(tree, "NodeSet").values():
        name = node["spec"]["template"]["spec"]["hostname"].rstrip("-")
        if node["spec"].get("partition", {}).get("enabled"):
            out.setdefault(name, []).append(name)
    for controller in _by_kind(tree, "Controller").values():
        for line in controller["spec"].get("extraConf", "").splitlines():
            match = _PARTITION_LINE.match(line)
            if match:
                members = nodesets if match.group(2) == "ALL" else match.group(2).split(",")
                for member in members:
                    out.setdefault(member, []).append(match.group(1))
    return out


def _instance_types(selector: Mapping[str, str], pool: Obj) -> tuple[str, ...]:
    """The pod's instance type, else every type its NodePool allows (a list selects the pool only)."""
    if "node.kubernetes.io/instance-type" in selector:
        return (selector["node.kubernetes.io/instance-type"],)
    for req in pool.get("spec", {}).get("template", {}).get("spec", {}).get("requirements", []):
        if req.get("key") == "node.kubernetes.io/instance-type" and req.get("operator") == "In" and req.get("values"):
            return tuple(req["values"])
    return ("?",)


def capacity(tree: Tree, catalog: Mapping[str, InstanceType]) -> dict[str, NodeSetCapacity]:
    pools = _by_kind(tree, "NodePool")
    parts = _partitions(tree)
    out: dict[str, NodeSetCapacity] = {}
    for node in _by_kind(tree, "NodeSet").values():
        pod = node["spec"]["template"]["spec"]
        name = pod["hostname"].rstrip("-")
        selector = pod.get("nodeSelector", {})
        pool = pools.get(selector.get("karpenter.sh/nodepool", ""), {})
        types = _instance_types(selector, pool)
        itype = ", ".join(types)
        it = catalog.get(types[0])
        limits = pool.get("spec", {}).get("limits", {})
        accel = int(limits.get(it.accelerator_resource, 0)) if it and it.has_accelerator else 0
        out[name] = NodeSetCapacity(
            nodeset=name, partitions=tuple(sorted(set(parts.get(name, [])))), instance_type=itype, instance_types=types,
            capacity_type=selector.get("karpenter.sh/capacity-type", "?"), max_nodes=int(limits.get("nodes", 0)),
            accelerators=accel, accelerator_model=it.accelerator_model if it else "")
    return dict(sorted(out.items()))


def _arrow(old: Any, new: Any) -> str:
    if old == new:
        return str(new)
    return f"{'-' if old is None else old} → {'-' if new is None else new}"


def changed_paths(old: Any, new: Any, prefix: str = "", depth: int = 3) -> list[str]:
    """Dotted paths (to `depth` levels, top-level metadata left out) where two objects differ."""
    if old == new:
        return []
    if depth and isinstance(old, dict) and isinstance(new, dict):
        paths: list[str] = []
        for key in sorted(set(old) | set(new)):
            if key == "metadata" and not prefix:
                continue
            paths += changed_paths(old.get(key), new.get(key), f"{prefix}.{key}" if prefix else key, depth - 1)
        return paths
    return [prefix or "(whole object)"]


def _app_of(cluster: str, rel: str, obj: Obj) -> str:
    """The Argo CD Application that owns a file: the unit folder's, or the root for apps/."""
    unit = rel.split("/", 1)[0]
    if unit == "apps":
        return f"{cluster}-root"
    if unit in ("bootstrap", "argocd"):
        return "(applied by hand)"
    return f"{cluster}-{unit}"


def _label(obj: Obj) -> str:
    meta = obj["metadata"]
    where = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
    return f"{obj['kind']} {where}"


def _image_tags(tree: Tree) -> dict[str, str]:
    """repository -> tag (or digest) of every image in a tree."""
    found: dict[str, str] = {}
    for obj in tree.values():
        for value in images(obj):
            repo, tag, digest = image_parts(value)
            found[repo] = "@".join(part for part in (tag, digest) if part) or value
    return found


def _ref(repo: str, version: str) -> str:
    """An image reference again from _image_tags' repository and tag/digest."""
    return f"{repo}@{version}" if version.startswith("sha256:") else f"{repo}:{version}"


def _image_changes(old: Mapping[str, str], new: Mapping[str, str]) -> list[str]:
    """One `version: image` line per image whose tag or digest changed, and per image whose
    repository changed (a mirror, a digest pin moving registries), paired by its last path
    segment (slurmd, slurmctld, ...): the only way a reviewer sees what nodes will pull next."""
    notes = [f"version: image {repo} {old[repo]} → {new[repo]}"
             for repo in sorted(set(old) & set(new)) if old[repo] != new[repo]]
    gone = {repo.rsplit("/", 1)[-1]: repo for repo in sorted(set(old) - set(new))}
    added = {repo.rsplit("/", 1)[-1]: repo for repo in sorted(set(new) - set(old))}
    for component in sorted(set(gone) & set(added)):
        was, now = gone[component], added[component]
        notes.append(f"version: image {component} {_ref(was, old[was])} → {_ref(now, new[now])}")
    return notes


def _policy_names(tree: Tree) -> set[tuple[str, str]]:
    return policy_names(tree.values())


def _attention(cluster: str, old: Tree, new: Tree) -> list[str]:
    notes: list[str] = []
    old_objs = {(_label(o)): o for o in old.values()}
    new_objs = {(_label(o)): o for o in new.values()}
    for label in sorted(set(old_objs) | set(new_objs)):
        was, now = old_objs.get(label), new_objs.get(label)
        kind = (was or now or {}).get("kind")
        if kind in STATEFUL and was != now:
            verb = "removes" if now is None else "adds" if was is None else "changes"
            paths = [] if was is None or now is None else changed_paths(was, now)
            # The Controller's state is its persistence; its config can change freely.
            data_paths = [p for p in paths if kind != "Controller" or p.startswith("spec.persistence")]
            if verb != "changes" or data_paths:
                detail = f" ({', '.join(data_paths)})" if data_paths else ""
                notes.append(f"stateful: {verb} {label}{detail}")
        size = SIZES.get(kind or "")
        if size is not None and was is not None and now is not None:
            shrink = shrinkage(field(was, size), field(now, size))
            if shrink:
                notes.append(f"shrinks: {label} {'.'.join(size)} {shrink}; synth needs --allow-destroy "
                             f"{cluster}:{kind}/{now['metadata']['name']}")
        if was is not None and now is not None:
            for path in IMMUTABLE.get(kind or "", ()):
                a, b = field(was, path), field(now, path)
                if a is not _MISSING and a != b:
                    notes.append(f"immutable field: {label} {'.'.join(path)} changes; synth needs --allow-destroy "
                                 f"{cluster}:{kind}/{now['metadata']['name']}")
        if kind == "NodePool" and now is not None:
            before = (was or {}).get("spec", {}).get("limits", {})
            for key, value in sorted(now["spec"].get("limits", {}).items()):
                if _number(value) > _number(before.get(key, "0")):
                    notes.append(f"Karpenter limit raised: NodePool {now['metadata']['name']} {key} "
                                 f"{before.get(key, '-')} → {value}")
        if kind == "Service" and now is not None and now["spec"].get("type") == "LoadBalancer":
            notes += _exposure(label, was, now)
        if kind == "Application" and was is not None and now is not None:
            a, b = was["spec"]["source"].get("targetRevision"), now["spec"]["source"].get("targetRevision")
            if a != b and "chart" in now["spec"]["source"]:
                notes.append(f"version: chart {now['spec']['source']['chart']} {a} → {b}")
        if kind == "EC2NodeClass" and was is not None and now is not None and was["spec"] != now["spec"]:
            a, b = was["spec"].get("amiSelectorTerms"), now["spec"].get("amiSelectorTerms")
            if a != b:
                notes.append(f"version: {label} AMI {a[0].get('alias') if a else '-'} → "
                             f"{b[0].get('alias') if b else '-'} (nodes drift and are replaced once empty)")
    if old and new:  # the first install is checked at synth; here: the waves of this change
        notes += [f"slurm.conf at a sync wave: {p.message}" for p in wave_problems(cluster, old, new)]
    notes += _image_changes(_image_tags(old), _image_tags(new))
    gone = sorted(_policy_names(old) - _policy_names(new))
    if gone and not has_policy(new.values()):
        notes.append("policy: no longer managed here (the accounts Job is gone); its accounts, users and QoS "
                     "stay in slurmdbd as they are")
        gone = []
    for title, name in gone:
        if title in POLICY_KINDS:
            notes.append(f"policy: {title} '{name}' left the spec; the accounts Job deletes it from slurmdbd "
                         f"(synth needs --allow-destroy {cluster}:{POLICY_KINDS[title]}/{name})")
        else:
            notes.append(f"policy: User '{name}' left the spec; the accounts Job deletes its associations "
                         "under slurmgen's accounts (its job records stay)")
    return notes


def _number(value: Any) -> float:
    match = re.match(r"^([0-9.]+)", str(value))
    return float(match.group(1)) if match else 0.0


def _exposure(label: str, was: Obj | None, now: Obj) -> list[str]:
    scheme = f"{LBC}scheme"
    a = (was or {}).get("metadata", {}).get("annotations", {}).get(scheme, "internal" if was else None)
    b = now["metadata"].get("annotations", {}).get(scheme, "internal")
    notes = []
    if b == "internet-facing" and a != "internet-facing":
        notes.append(f"login exposure widened: {label} becomes internet-facing")
    old_ranges = set((was or {}).get("spec", {}).get("loadBalancerSourceRanges", []))
    new_ranges = now["spec"].get("loadBalancerSourceRanges", [])
    added = [r for r in new_ranges if r not in old_ranges]
    if was is not None and added:
        notes.append(f"login exposure widened: {label} also admits {', '.join(added)}")
    if not new_ranges and b == "internet-facing":
        notes.append(f"login exposure: {label} accepts SSH from anywhere (allowPublicSsh)")
    return notes


def _capacity_table(old: Tree, new: Tree, catalog: Mapping[str, InstanceType]) -> list[str]:
    before, after = capacity(old, catalog), capacity(new, catalog)
    rows = []
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name), after.get(name)
        if a == b and a is not None:
            marker = ""
        else:
            marker = " **(new)**" if a is None else " **(removed)**" if b is None else " **(changed)**"
        cur = b or a
        if cur is None:
            continue
        rows.append(
            f"| `{name}`{marker} | {_arrow(', '.join(a.partitions) if a else None, ', '.join(b.partitions) if b else None)}"
            f" | {_arrow(a.instance_type if a else None, b.instance_type if b else None)}"
            f" | {_arrow(a.capacity_type if a else None, b.capacity_type if b else None)}"
            f" | {_arrow(a.max_nodes if a else None, b.max_nodes if b else None)}"
            f" | {_arrow(a.gpus() if a else None, b.gpus() if b else None)} |")
    if not rows:
        return []
    return ["| nodeset | partitions | instance type | capacity | max nodes | GPUs (max) |",
            "|---|---|---|---|---|---|", *rows]


def _headline(old: Tree, new: Tree, catalog: Mapping[str, InstanceType]) -> list[str]:
    before, after = capacity(old, catalog), capacity(new, catalog)
    lines = []
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name), after.get(name)
        nodes = (b.max_nodes if b else 0) - (a.max_nodes if a else 0)
        gpus = (b.accelerators if b else 0) - (a.accelerators if a else 0)
        if not nodes and not gpus:
            continue
        cur = b or a
        if cur is None:
            continue
        verb = "adds" if nodes > 0 else "removes"
        gpu_text = f" ({abs(gpus)} {cur.accelerator_model.upper()})" if gpus else ""
        where = ", ".join(f"`{p}`" for p in cur.partitions) or "no partition"
        lines.append(f"- {verb} {abs(nodes)} {cur.nodes_of()} node(s){gpu_text} {'to' if nodes > 0 else 'from'} {where}")
    return lines


def summarize(old: Mapping[str, Tree], new: Mapping[str, Tree],
              catalog: Mapping[str, InstanceType] | None = None,
              charts: Callable[[str, Tree, Tree], list[str]] | None = None) -> str:
    """Markdown comparing two renders ({cluster: {path: object}}); deterministic, pasteable into a PR.

    `charts(cluster, old, new)` adds the section on changed Helm sources (slurmgen/preview/diff.py).
    """
    catalog = catalog if catalog is not None else load_catalog()
    out = ["## slurmgen: what this change deploys", ""]
    changed_any = False
    for cluster in sorted(set(old) | set(new)):
        a, b = old.get(cluster, {}), new.get(cluster, {})
        if a == b:
            continue
        changed_any = True
        state = " (new cluster)" if not a else " (cluster removed)" if not b else ""
        out += [f"### Cluster `{cluster}`{state}", ""]
        headline = _headline(a, b, catalog)
        attention = _attention(cluster, a, b)
        stateful = any(n.startswith("stateful") for n in attention)
        out += headline or ["- no change in capacity"]
        out += ["- changes nothing stateful" if not stateful else "- **touches stateful objects** (see below)", ""]
        table = _capacity_table(a, b, catalog)
        if table:
            out += ["**Capacity**", "", *table, ""]
        out += ["**Objects by Argo CD application**", ""]
        out += _objects(cluster, a, b)
        chart_lines = charts(cluster, a, b) if charts else []
        if chart_lines:
            out += ["", "**Helm charts** (rendered at base and head; `main.py --preview`)", "", *chart_lines]
        conf = slurmconf_changes(a, b)
        if conf:
            out += ["", "**Effective slurm.conf** (as slurm-operator 1.2.1 writes it; `main.py --explain slurm.conf`)", ""]
            out += [f"- {line}" for line in conf]
        out += ["", "**Needs attention**", ""]
        out += [f"- {n}" for n in attention] or ["- nothing"]
        out.append("")
    if not changed_any:
        out += ["No change to the rendered tree.", ""]
    return "\n".join(out)


def _objects(cluster: str, old: Tree, new: Tree) -> list[str]:
    groups: dict[str, dict[str, list[str]]] = {}
    for rel in sorted(set(old) | set(new)):
        was, now = old.get(rel), new.get(rel)
        if was == now:
            continue
        obj = now or was
        if obj is None:
            continue
        app = _app_of(cluster, rel, obj)
        if was is None:
            groups.setdefault(app, {}).setdefault("added", []).append(_label(obj))
        elif now is None:
            groups.setdefault(app, {}).setdefault("removed", []).append(_label(obj))
        else:
            paths = ", ".join(changed_paths(was, now)) or "metadata"
            groups.setdefault(app, {}).setdefault("changed", []).append(f"{_label(obj)} ({paths})")
    lines = []
    for app in sorted(groups):
        for verb in ("added", "removed", "changed"):
            items = groups[app].get(verb, [])
            if items:
                lines.append(f"- `{app}` {verb} {len(items)}: " + "; ".join(items))
    return lines or ["- none"]
