"""Names that must be unique across clusters: cluster-scoped objects, and the Argo CD Applications.

Each cluster prefixes its cluster-scoped names (`naming.nodepool`: `<cluster>-<nodeset>`), but a
prefix is not a namespace: cluster `foo` with nodeset `slurm-spot` and cluster `foo-slurm` with
nodeset `spot` both render NodePool `foo-slurm-spot`. When both land on one Kubernetes API server,
two Argo CD Applications would fight over one object (and a prune of one would delete the other's
nodes). The same holds for Applications and AppProjects on a shared Argo CD.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

Obj = dict[str, Any]
_ARGO_SIDE = ("apps", "bootstrap")  # folders whose objects live on the Argo CD instance
_NOT_APPLIED = ("argocd",)  # the argocd-cm merge patch, the same for every cluster, applied by hand


@dataclass(frozen=True)
class Tree:
    """One cluster's rendered objects, with where they came from (a spec file, or a folder of dist/);
    `names` is keys(files) when it is known already (a render cache hit: its objects stay undecoded)."""

    source: str
    files: Mapping[str, Obj]
    names: Mapping[tuple[str, ...], str] | None = None


def _unit_destinations(files: Mapping[str, Obj]) -> dict[str, str]:
    """unit folder -> API server its child Application syncs to; `__argo__` -> the root's destination."""
    out: dict[str, str] = {}
    for rel, obj in files.items():
        if obj.get("kind") != "Application" or not isinstance(obj.get("spec"), dict):
            continue
        spec = obj["spec"]
        server = str((spec.get("destination") or {}).get("server", ""))
        path = str((spec.get("source") or {}).get("path", ""))
        if rel.startswith("bootstrap/"):
            out["__argo__"] = server
        elif path:
            out[path.rstrip("/").rsplit("/", 1)[-1]] = server
    return out


def keys(files: Mapping[str, Obj]) -> dict[tuple[str, ...], str]:
    """(where, group, kind, namespace, name) -> label, for every object whose name is shared per destination."""
    servers = _unit_destinations(files)
    argo = servers.get("__argo__", "the Argo CD cluster")
    found: dict[tuple[str, ...], str] = {}
    for rel, obj in sorted(files.items()):
        unit = rel.split("/", 1)[0]
        meta = obj.get("metadata") or {}
        api, kind, name, namespace = str(obj.get("apiVersion", "")), str(obj.get("kind", "")), meta.get("name"), meta.get("namespace")
        if unit in _NOT_APPLIED or not isinstance(name, str):
            continue
        group = api.split("/")[0] if "/" in api else ""
        if unit in _ARGO_SIDE:
            where = f"Argo CD at {argo}"
            found[(where, group, kind, str(namespace or ""), name)] = f"{kind} {namespace}/{name} on {where}"
        elif namespace is None:
            where = servers.get(unit, "an unknown destination")
            found[(where, group, kind, "", name)] = f"cluster-scoped {kind} {name} on {where}"
    return found


def problems(trees: Iterable[Tree]) -> list[str]:
    """One line per name two trees share, naming both: `A: ... also rendered by B; ...`."""
    owner: dict[tuple[str, ...], str] = {}
    lines: list[str] = []
    for tree in sorted(trees, key=lambda t: t.source):
        for key, label in (tree.names if tree.names is not None else keys(tree.files)).items():
            first = owner.setdefault(key, tree.source)
            if first != tree.source:
                lines.append(f"{tree.source}: name: {label} is also rendered by {first}; names must be unique "
                             "per destination: rename this cluster or the nodeset")
    return lines
