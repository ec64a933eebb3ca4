"""Which EC2 instance types carry the EC2 network topology labels (AWS's published list, vendored).

EKS labels a node `topology.k8s.aws/network-node-layer-1..3` (and `-4` on some types) only for these
types; a nodeset of another type would never get a place in the tree, so the spec refuses it.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

DATA = Path(__file__).with_name("ec2_topology_types.json")


@lru_cache(maxsize=1)
def topology_layers() -> dict[str, int]:
    """Instance type -> number of network node layers its EKS nodes are labelled with."""
    raw = json.loads(DATA.read_text(encoding="utf-8"))["layers"]
    return {t: int(n) for n, types in raw.items() for t in types}


def _types(instance_type: str | Sequence[str]) -> list[str]:
    """A nodeset's `instanceType`: one name, or a list of interchangeable types (catalog/mixed.py)."""
    return [instance_type] if isinstance(instance_type, str) else [str(t) for t in instance_type]


def unlabelled(instance_type: str | Sequence[str]) -> list[str]:
    """The types of a nodeset's `instanceType` (a name or a list) that EKS does not label."""
    return [t for t in _types(instance_type) if t not in topology_layers()]


def fewest_layers(instance_type: str | Sequence[str]) -> int:
    """The fewest network node layers any type of a nodeset's `instanceType` is labelled with (0: unlabelled)."""
    return min(topology_layers().get(t, 0) for t in _types(instance_type))


def has_topology(instance_type: str | Sequence[str]) -> bool:
    """Every type the nodeset may launch carries the labels (Karpenter may pick any type of a list)."""
    return not unlabelled(instance_type)


def default_topology_nodeset(ns: dict[str, Any]) -> bool:
    """A nodeset placed in the topologies by default: EFA, GPU (p*, g*) or Trainium types with topology labels."""
    types = _types(ns["instanceType"])
    return bool(ns["efa"]) and has_topology(types) and all(t.startswith(("p", "g", "trn")) for t in types)
