"""Cross-field rules the JSON Schema cannot express (references between sections, uniqueness).

Each rule returns (field path, message) pairs on the *defaulted* spec dict, so every problem in a
file is reported at once.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Iterator

Finding = tuple[str, str]
Rule = Callable[[dict[str, Any]], Iterator[Finding]]


def _duplicates(items: list[dict[str, Any]], section: str) -> Iterator[Finding]:
    counts = Counter(item["name"] for item in items)
    for index, item in enumerate(items):
        if counts[item["name"]] > 1 and [i["name"] for i in items].index(item["name"]) != index:
            yield f"{section}[{index}].name", f"duplicate {section[:-1]} name {item['name']!r}; names must be unique"


def unique_names(spec: dict[str, Any]) -> Iterator[Finding]:
    yield from _duplicates(spec["nodesets"], "nodesets")
    yield from _duplicates(spec["partitions"], "partitions")


def partition_references(spec: dict[str, Any]) -> Iterator[Finding]:
    known = [ns["name"] for ns in spec["nodesets"]]
    for p_index, part in enumerate(spec["partitions"]):
        names = part["nodesets"]
        if "ALL" in names and len(names) > 1:
            yield f"partitions[{p_index}].nodesets", "ALL already means every nodeset; list ALL alone"
            continue
        for n_index, name in enumerate(names):
            if name != "ALL" and name not in known:
                yield (f"partitions[{p_index}].nodesets[{n_index}]",
                       f"no nodeset named {name!r}; defined nodesets: {', '.join(known)}")


def one_default_partition(spec: dict[str, Any]) -> Iterator[Finding]:
    defaults = [i for i, p in enumerate(spec["partitions"]) if p["default"]]
    for index in defaults[1:]:
        first = spec["partitions"][defaults[0]]["name"]
        yield f"partitions[{index}].default", f"only one partition can be the default; {first!r} already is"


def every_nodeset_in_a_partition(spec: dict[str, Any]) -> Iterator[Finding]:
    used = {n for p in spec["partitions"] for n in p["nodesets"]}
    if "ALL" in used:
        return
    for index, ns in enumerate(spec["nodesets"]):
        if ns["name"] not in used:
            yield f"nodesets[{index}].name", f"nodeset {ns['name']!r} is in no partition, so no job can use it; add it to one"


def no_reserved_slurm_names(spec: dict[str, Any]) -> Iterator[Finding]:
    for index, ns in enumerate(spec["nodesets"]):
        if ns["name"].upper() in {"ALL", "DEFAULT"}:
            yield f"nodesets[{index}].name", f"{ns['name']!r} is reserved by Slurm; pick another name"
    for index, part in enumerate(spec["partitions"]):
        if part["name"].upper() == "DEFAULT":
            yield f"partitions[{index}].name", "'default' is reserved by Slurm; set default: true on a partition instead"


def extra_conf_overrides(spec: dict[str, Any]) -> Iterator[Finding]:
    """Keys the generator owns must not be smuggled in through the free-form maps."""
    owned_partition = {"Nodes", "Default", "MaxTime", "PriorityTier", "PartitionName"}
    for index, part in enumerate(spec["partitions"]):
        for key in sorted(set(part["extraConfig"]) & owned_partition):
            yield f"partitions[{index}].extraConfig.{key}", f"{key} is set by the generator; use the partition's own field"
    owned_node = {"Gres", "NodeName", "Features", "Feature"}
    for index, ns in enumerate(spec["nodesets"]):
        for key in sorted(set(ns["extraSlurmdConf"]) & owned_node):
            yield f"nodesets[{index}].extraSlurmdConf.{key}", f"{key} is set by the generator; use features / gpusPerPod"


def fair_share_needs_accounting(spec: dict[str, Any]) -> Iterator[Finding]:
    if spec["scheduling"]["fairShare"]["enabled"] and not spec["accounting"]["enabled"]:
        yield ("scheduling.fairShare.enabled",
               "fair share needs the accounting database (usage is stored by slurmdbd); enable accounting or set this to false")


def reservations_match_capacity_type(spec: dict[str, Any]) -> Iterator[Finding]:
    for index, ns in enumerate(spec["nodesets"]):
        reserved = ns["capacityType"] == "reserved"
        if reserved and "capacityReservation" not in ns:
            yield (f"nodesets[{index}].capacityReservation",
                   "capacityType reserved needs the ODCR or Capacity Block to use (ids or tags)")
        if not reserved and "capacityReservation" in ns:
            yield f"nodesets[{index}].capacityReservation", "only used with capacityType: reserved"


def ami_version_matches_family(spec: dict[str, Any]) -> Iterator[Finding]:
    compute = spec["compute"]
    dated = compute["amiVersion"][1:].isdigit()
    if compute["amiFamily"] == "al2023" and not dated:
        yield "compute.amiVersion", f"{compute['amiVersion']!r} is not an AL2023 release; use vYYYYMMDD, e.g. v20260724"
    if compute["amiFamily"] == "bottlerocket" and dated:
        yield "compute.amiVersion", f"{compute['amiVersion']!r} is not a Bottlerocket release; use vX.Y.Z, e.g. v1.50.0"


RULES: tuple[Rule, ...] = (
    unique_names,
    partition_references,
    one_default_partition,
    every_nodeset_in_a_partition,
    no_reserved_slurm_names,
    extra_conf_overrides,
    fair_share_needs_accounting,
    reservations_match_capacity_type,
    ami_version_matches_family,
)


def run(spec: dict[str, Any], extra_rules: tuple[Rule, ...] = ()) -> list[Finding]:
    """All findings of every rule, in rule order."""
    return [finding for rule in (*RULES, *extra_rules) for finding in rule(spec)]
