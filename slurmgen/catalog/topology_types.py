"""Which EC2 instance types carry the EC2 network topology labels (AWS's published list, vendored).

EKS labels a node `topology.k8s.aws/network-node-layer-1..3` (and `-4` on some types) only for these
types; a nodeset of another type would never get a place in the tree, so the spec refuses it.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

DATA = Path(__file__).with_name("ec2_topology_types.json")


@lru_cache(maxsize=1)
def topology_layers() -> dict[str, int]:
    """Instance type -> number of network node layers its EKS nodes are labelled with."""
    raw = json.loads(DATA.read_text(encoding="utf-8"))["layers"]
    return {t: int(n) for n, types in raw.items() for t in types}


def has_topology(instance_type: str) -> bool:
    return instance_type in topology_layers()


def default_topology_nodeset(ns: dict[str, object]) -> bool:
    """A nodeset placed in the topologies by default: EFA, a GPU (p*, g*) or Trainium type with topology labels."""
    itype = str(ns["instanceType"])
    return bool(ns["efa"]) and has_topology(itype) and itype.startswith(("p", "g", "trn"))
