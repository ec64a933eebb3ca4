"""Topology section: which nodesets and partitions get a topology, and the rules on it.

Shared by the loader (to build the model) and the cross-field rules, so both resolve defaults alike.
Slurm rules cited: SchedMD/slurm slurm-26-05-1-1 doc/man/man5/topology.yaml.5 (block_sizes: "Successive
BlockSizes must be a power of two larger than the prior values") and src/plugins/topology/block/
topology_block.c (topology_p_add_rm_node: a node can join only a block the file declares).
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any, Iterator

from ..catalog.topology_types import DATA, default_topology_nodeset, fewest_layers, has_topology, unlabelled
from ..rule import Finding, rule

LAYER_LABEL = "topology.k8s.aws/network-node-layer-"
MAX_BLOCK_LEVELS = 16  # src/plugins/topology/block/block_record.h; block_record.c _list_to_bitmap
TOPOLOGY_NAMES = {"tree": "tree", "flat": "flat"}  # block topologies are named block-<partition>


def settings(spec: dict[str, Any]) -> dict[str, Any] | None:
    """The topology section with `nodesets` resolved (default: EFA GPU/Trainium types with labels); None when off."""
    raw = spec["topology"]  # the schema's defaults applied: enabled, default, ...
    if not raw["enabled"]:
        return None
    nodesets = raw.get("nodesets")
    if nodesets is None:
        nodesets = [ns["name"] for ns in spec["nodesets"] if default_topology_nodeset(ns)]
    return {**raw, "nodesets": list(nodesets)}


def block_sizes(part: dict[str, Any], topo: dict[str, Any]) -> list[int]:
    """A block partition's block_sizes: its own, else topology.blockSizes; empty when neither is set
    (a problem for the rule below)."""
    own, shared = part["topology"].get("blockSizes"), topo.get("blockSizes")
    return list(own if own else shared if shared else [])


def members(part: dict[str, Any], in_all: list[str]) -> list[str]:
    return list(in_all) if part["nodesets"] == ["ALL"] else list(part["nodesets"])


def kind(part: dict[str, Any], topo: dict[str, Any] | None, in_all: list[str]) -> str | None:
    """tree, block or flat for a partition; None when topology is off. Without its own `topology`:
    topology.default when every member is a topology nodeset, else flat."""
    if topo is None:
        return None
    if "topology" in part:
        return str(part["topology"]["type"])
    return str(topo["default"]) if set(members(part, in_all)) <= set(topo["nodesets"]) else "flat"


def name(part_name: str, part_kind: str) -> str:
    return TOPOLOGY_NAMES.get(part_kind, f"block-{part_name}")


def slurm_nodes(ns: dict[str, Any]) -> int:
    """Most Slurm nodes (slurmd pods) a nodeset can have: autoscale.max, else replicas."""
    return int(ns["autoscale"]["max"]) if ns.get("autoscale") else int(ns["replicas"])


def _block_sizes_problem(sizes: list[int]) -> str | None:
    base = sizes[0]
    for prev, size in pairwise(sizes):
        ratio, rest = divmod(size, base)
        if size <= prev or rest or ratio & (ratio - 1) or ratio >= 2 ** MAX_BLOCK_LEVELS:
            return (f"block sizes {sizes} are not the base {base} times growing powers of two "
                    f"(Slurm block_sizes), e.g. {[base * 2 ** i for i in range(len(sizes))]}")
    return None


@rule("topology", "nodesets", "partitions")
def topology_rules(spec: dict[str, Any]) -> Iterator[Finding]:
    """Topology nodesets exist and carry EC2 topology labels; partition topologies are on, labelled, and
    their block sizes are valid and fit the partition's maximum Slurm nodes."""
    topo = settings(spec)
    parts = spec["partitions"]
    if topo is None:
        for index, part in enumerate(parts):
            if "topology" in part and part["topology"]["type"] != "flat":
                yield f"partitions[{index}].topology", "needs topology.enabled: true"
        return
    by_name = {ns["name"]: ns for ns in spec["nodesets"]}
    explicit = (spec.get("topology") or {}).get("nodesets") is not None
    for index, nsname in enumerate(topo["nodesets"] if explicit else ()):
        ns = by_name.get(nsname)
        if ns is None:
            yield (f"topology.nodesets[{index}]",
                   f"no nodeset named {nsname!r}; defined nodesets: {', '.join(by_name)}")
        elif not has_topology(ns["instanceType"]):
            yield (f"topology.nodesets[{index}]",
                   f"nodeset {nsname!r} runs {', '.join(unlabelled(ns['instanceType']))}, which EKS does not label "
                   "with the EC2 network "
                   f"topology (AWS list in slurmgen/catalog/{DATA.name}); remove it from topology.nodesets")
    if not topo["nodesets"]:
        yield ("topology.enabled", "no nodeset is placed in a topology: none is an EFA GPU or Trainium type with "
               "EC2 topology labels; list them in topology.nodesets or turn topology off")
        return
    in_all = [ns["name"] for ns in spec["nodesets"] if ns.get("includeInAll", ns["capacityType"] != "spot"
                                                              and ns.get("autoscale") is None)]
    labelled = set(topo["nodesets"])
    for index, part in enumerate(parts):
        part_kind = kind(part, topo, in_all)
        if part_kind == "flat":
            continue
        names = members(part, in_all)
        missing = [n for n in names if n in by_name and n not in labelled]
        if missing:
            yield (f"partitions[{index}].topology.type",
                   f"{part_kind} topology needs every member nodeset in topology.nodesets; "
                   f"{', '.join(repr(n) for n in missing)} is not")
            continue
        if part_kind != "block":
            continue
        sizes = block_sizes(part, spec["topology"])
        field = f"partitions[{index}].topology.blockSizes"
        if not sizes:
            yield field, "a block topology needs block sizes; set them here or in topology.blockSizes"
            continue
        problem = _block_sizes_problem(list(sizes))
        if problem:
            yield field, problem
            continue
        most = sum(slurm_nodes(by_name[n]) for n in names if n in by_name)
        if max(sizes) > most:
            yield (field, f"block size {max(sizes)} is larger than the {most} Slurm node(s) partition "
                          f"{part['name']!r} can have ({', '.join(names)}); use sizes up to {most}")
            continue
        yield from _domain_label_rule(spec, part, [by_name[n] for n in names if n in by_name])


def _domain_label_rule(spec: dict[str, Any], part: dict[str, Any], nodesets: list[dict[str, Any]]) -> Iterator[Finding]:
    """The labeler places a node in a block only once it carries the domain label: an EC2 layer its
    instance types lack would leave the partition with no block node, and no block job could run."""
    label = (spec.get("topology") or {}).get("blockDomainLabel", f"{LAYER_LABEL}3")
    layer = label.removeprefix(LAYER_LABEL)
    if not (label.startswith(LAYER_LABEL) and layer.isdigit()):
        return
    short = [ns["name"] for ns in nodesets if fewest_layers(ns["instanceType"]) < int(layer)]
    if short:
        yield ("topology.blockDomainLabel",
               f"{label} is on no node of {', '.join(repr(n) for n in short)} (EKS labels its instance types "
               f"with layers 1..{min(fewest_layers(ns['instanceType']) for ns in nodesets if ns['name'] in short)}), "
               f"so block partition {part['name']!r} would get no node in a block; use {LAYER_LABEL}3")
