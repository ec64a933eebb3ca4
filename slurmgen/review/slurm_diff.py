"""What a change does to the effective Slurm configuration, per entity and per key, for the PR summary.

A unified diff of slurm.conf mixes operator boilerplate with what matters; a reviewer wants
"`PartitionName=gpu` MaxTime 7-00:00:00 → 14-00:00:00". Partitions and NodeSets are compared
parameter by parameter (the NodeSet's node parameters are those its slurmd registers with), global
keys by their effective (last) value, grouped as scheduling, accounting or other.
"""

from __future__ import annotations

from typing import Mapping

import yaml

from ..slurmconf.operator import SLURM_CONF, Effective, Tree, Unresolved, effective
from ..slurmconf.parse import Entity, parse, tokens
from ..kube.documents import load_document

SCHEDULING = ("priority", "preempt", "select", "sched", "defmem", "maxmem", "oversubscribe", "gres", "task",
              "proctrack", "overtime", "killwait", "inactivelimit", "minjobage", "maxjobcount", "suspend", "resume")
ACCOUNTING = ("accounting", "jobacct", "jobcomp", "acct")


def _effective(tree: Tree) -> Effective | None:
    try:
        return effective(tree) if tree else None
    except Unresolved:
        return None


def _params(pairs: list[tuple[str, str]]) -> dict[str, tuple[str, str]]:
    """lower key -> (key as written, value); a repeated key keeps its last value, as Slurm does."""
    out: dict[str, tuple[str, str]] = {}
    for key, value in pairs:
        out[key.lower()] = (out.get(key.lower(), (key, ""))[0], value)
    return out


def _param_changes(old: dict[str, tuple[str, str]], new: dict[str, tuple[str, str]]) -> list[str]:
    changes = []
    for key in sorted(set(old) | set(new), key=lambda k: (new.get(k) or old[k])[0].lower()):
        a, b = old.get(key, (None, None))[1], new.get(key, (None, None))[1]
        if a != b:
            changes.append(f"{(new.get(key) or old[key])[0]} {'-' if a is None else a} → {'-' if b is None else b}")
    return changes


def _flat(pairs: list[tuple[str, str]]) -> str:
    return " ".join(f"{k}={v}" for k, v in pairs)


def _entities(label: str | None, old: Mapping[str, list[tuple[str, str]]], new: Mapping[str, list[tuple[str, str]]],
              what: str = "") -> list[str]:
    """One line per added, removed or changed entity (`label=name`, or the bare name without a label);
    `what` names what its parameters are."""
    lines = []
    for name in sorted(set(old) | set(new)):
        a, b = old.get(name), new.get(name)
        head = f"`{label}={name}`" if label else f"`{name}`"
        if a is None and b is not None:
            lines.append(f"{head} added{';' if what else ''}{what}: {_flat(b)}")
        elif b is None and a is not None:
            lines.append(f"{head} removed (was{what}: {_flat(a)})")
        elif a is not None and b is not None:
            changes = _param_changes(_params(a), _params(b))
            if changes:
                lines.append(f"{head}{what or ''}{':' if what else ''} " + "; ".join(changes))
    return lines


def _partitions(eff: Effective | None) -> dict[str, list[tuple[str, str]]]:
    if eff is None:
        return {}
    parts: dict[str, list[Entity]] = parse(eff.slurm.text).partitions
    return {name: entities[-1].params for name, entities in parts.items()}


def _nodes(eff: Effective | None) -> dict[str, list[tuple[str, str]]]:
    return {} if eff is None else {name: tokens(conf) for name, conf in eff.nodes.items()}


def _group(key: str) -> str:
    low = key.lower()
    if low.startswith(ACCOUNTING):
        return "accounting"
    if low.startswith(SCHEDULING):
        return "scheduling"
    return "other"


def _keys(eff: Effective | None, name: str) -> dict[str, tuple[str, str]]:
    if eff is None or name not in eff.files:
        return {}
    return parse(eff.files[name]).values()


def _topologies(eff: Effective | None, name: str) -> dict[str, list[tuple[str, str]]]:
    """topology.yaml as {topology: [(what, value)]}: kind, default, block sizes, counts of blocks/switches."""
    if eff is None or name not in eff.files:
        return {}
    try:
        doc = load_document(eff.files[name]) or []  # bounded: the old side is dist/'s
    except yaml.YAMLError:
        return {"(unreadable)": [("text", "changed")]}
    out: dict[str, list[tuple[str, str]]] = {}
    for item in doc if isinstance(doc, list) else []:
        params = [("cluster_default", str(bool(item.get("cluster_default", False))).lower())]
        for kind in ("tree", "block", "flat", "ring", "torus3d"):
            if kind in item:
                params.insert(0, ("type", kind))
                body = item[kind] if isinstance(item[kind], dict) else {}
                if kind == "block":
                    params.append(("block_sizes", ",".join(str(x) for x in body.get("block_sizes") or [])))
                    params.append(("blocks", str(len(body.get("blocks") or []))))
                if kind == "tree":
                    params.append(("switches", ",".join(str(sw.get("switch")) for sw in body.get("switches") or [])))
        out[str(item.get("topology"))] = params
    return out


def _topologies_changes(old: dict[str, list[tuple[str, str]]], new: dict[str, list[tuple[str, str]]]) -> list[str]:
    """One line per topology of topology.yaml added, removed or changed (shown by its bare name)."""
    return _entities(None, old, new)


def changes(old: Tree, new: Tree) -> list[str]:
    """Markdown list items (without the leading `- `) describing the effective-config change."""
    a, b = _effective(old), _effective(new)
    lines = _entities("PartitionName", _partitions(a), _partitions(b))
    lines += _entities("NodeSet", _nodes(a), _nodes(b), " nodes (slurmd -Z --conf)")
    keyed: dict[str, list[str]] = {}
    for change in _param_changes(_keys(a, SLURM_CONF), _keys(b, SLURM_CONF)):
        keyed.setdefault(_group(change.split(" ", 1)[0]), []).append(change)
    for group in ("scheduling", "accounting", "other"):
        lines += [f"{group}: `{c.split(' ', 1)[0]}` {c.split(' ', 1)[1]}" for c in keyed.get(group, [])]
    for name in sorted({*(a.files if a else {}), *(b.files if b else {})} - {SLURM_CONF}):
        if name.endswith(".yaml"):
            lines += [f"{name}: {c}" for c in _topologies_changes(_topologies(a, name), _topologies(b, name))]
            continue
        for change in _param_changes(_keys(a, name), _keys(b, name)):
            lines.append(f"{name}: `{change.split(' ', 1)[0]}` {change.split(' ', 1)[1]}")
    return lines
