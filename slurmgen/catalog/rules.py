"""Spec rule: every nodeset must fit its instance type, so a bad shape is an exit-2 error, not a Pending pod."""

from __future__ import annotations

from typing import Any, Iterator

from .catalog import load_catalog
from .sizing import DaemonSetReserve, SizingError, lookup, pod_resources


def nodesets_fit(spec: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """Unknown instance types, GPUs per pod above the instance's, uneven splits, EFA where there is none,
    and a maxNodes too small for the replicas."""
    catalog = load_catalog()
    raw = spec["compute"]["daemonSetReserve"]
    reserve = DaemonSetReserve(cpu_m=raw["cpuMillicores"], memory_mi=raw["memoryMiB"], percent=raw["percent"])
    for index, ns in enumerate(spec["nodesets"]):
        try:
            it = lookup(catalog, ns["instanceType"])
        except SizingError as err:
            yield f"nodesets[{index}].instanceType", str(err)
            continue
        try:
            shape = pod_resources(it, gpus_per_pod=ns.get("gpusPerPod"), efa=ns["efa"], reserve=reserve)
        except SizingError as err:
            text = str(err).lower()
            field = "efa" if "efa" in text else "compute.daemonSetReserve" if "reserve" in text else "gpusPerPod"
            yield (field if field.startswith("compute") else f"nodesets[{index}].{field}"), str(err)
            continue
        ceiling = ns["autoscale"]["max"] if "autoscale" in ns else ns["replicas"]
        needed = -(-ceiling // shape.pods_per_node)
        if ns.get("maxNodes", needed) < needed:
            what = "autoscale.max" if "autoscale" in ns else "replicas"
            yield (f"nodesets[{index}].maxNodes",
                   f"{ceiling} {what} at {shape.pods_per_node} per {it.instance_type} need {needed} nodes; "
                   f"maxNodes is {ns['maxNodes']}")
