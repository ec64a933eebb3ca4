"""Rules on a fact the generator derives from the model: judged with the very function the charts use.

A rule here runs on the built `ClusterSpec`, once the spec's shape and cross-field rules passed
(_checks/, on the raw document), so it never re-derives from raw dicts what the model and the plan
compute: the zones a NodePool requires (`ClusterSpec.pool_zones`, charts/compute.py), the most slurmd
pods a nodeset can run (`NodeSetSpec.ceiling`, plan/nodesets.py `max_nodes`). It is declared as every rule
is (slurmgen/rule.py) and yields the same (field path, message) pairs; the loader shows them with item
names and the YAML line.
"""

from __future__ import annotations

from typing import Iterator

from ..rule import Finding, Rule, rule
from .model import ClusterSpec

ModelRule = Rule[ClusterSpec]


@rule("nodesets", "storage", "compute")
def placement_group_zone(spec: ClusterSpec) -> Iterator[Finding]:
    """A cluster placement group is in one zone: its nodeset's NodePool must require exactly that one.

    Karpenter v1.14.1 adds no zone requirement for a cluster group (only partition groups change
    offerings: pkg/providers/instancetype/offering/placement_group_resolver.go), so a NodePool open
    to several zones would try launches in zones where the group cannot place the instance.
    """
    for index, ns in enumerate(spec.nodesets):
        if ns.placement_group is None:
            continue
        zones = spec.pool_zones(ns)
        if len(zones) != 1:
            which = f"{len(zones)} zones ({', '.join(zones)})" if zones else "any zone (compute.zones is empty)"
            yield (f"nodesets[{index}].placementGroup",
                   f"a cluster placement group lives in one availability zone, but this nodeset may use {which}; "
                   "set the nodeset's zones to the group's zone")


@rule("nodesets")
def max_nodes_hold_the_ceiling(spec: ClusterSpec) -> Iterator[Finding]:
    """maxNodes (the NodePool's limits.nodes) holds the most slurmd pods the nodeset can run, one per node."""
    for index, ns in enumerate(spec.nodesets):
        if ns.max_nodes is not None and ns.max_nodes < ns.ceiling:
            what = "autoscale.max" if ns.autoscale else "replicas"
            yield (f"nodesets[{index}].maxNodes",
                   f"{ns.ceiling} {what} need {ns.ceiling} {ns.instance_type} nodes (one slurmd each); "
                   f"maxNodes is {ns.max_nodes}")


MODEL_RULES: tuple[ModelRule, ...] = (placement_group_zone, max_nodes_hold_the_ceiling)


def run(spec: ClusterSpec, rules: tuple[ModelRule, ...] = MODEL_RULES) -> list[Finding]:
    """Every finding of the model rules, in rule order."""
    return [finding for each in rules for finding in each(spec)]
