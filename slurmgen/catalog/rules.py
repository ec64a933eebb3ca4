"""Spec rule: every nodeset must fit its instance type, so a bad shape is an exit-2 error, not a Pending pod.

The catalog is a parameter (the packaged one, or with the site's clusters/instance-types.csv merged
in): the spec layer builds this rule from whatever catalog its caller passes, so the answer never
depends on which module happened to be imported first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Iterator

from ..rule import Finding, Rule, rule
from .catalog import NEURON, NVIDIA_GPU, InstanceType
from .mixed import fit, type_names
from .sizing import DaemonSetReserve


# Device plugins slurmgen does not deploy, by the resource they advertise: the spec must say each is
# installed, or the slurmd pods would wait forever for a resource no node offers.
_PLUGIN_NAMES = {"amd.com/gpu": "AMD GPU device plugin", "habana.ai/gaudi": "Habana device plugin"}


def _plugin_missing(it: InstanceType, plugins: Mapping[str, Any]) -> str | None:
    """The message for an accelerator whose device plugin the spec does not declare, else None."""
    resource = it.accelerator_resource
    if not it.has_accelerator or resource == NVIDIA_GPU:
        return None
    if resource == NEURON:
        return None  # slurmgen deploys the Neuron device plugin (apps/helm.py), unless installed separately
    if resource in plugins["installedSeparately"]:
        return None
    name = _PLUGIN_NAMES.get(resource, f"device plugin for {resource}")
    return (f"{it.instance_type} needs the {name} ({resource}), which slurmgen does not deploy; install it "
            f"and list {resource} in compute.devicePlugins.installedSeparately")


def nodesets_fit(spec: dict[str, Any], catalog: Mapping[str, InstanceType]) -> Iterator[Finding]:
    """Unknown instance types, lists of types that cannot share one pod (catalog/mixed.py), GPUs per pod above
    the instance's, uneven splits, EFA where there is none, types too small for a slurmd pod, and device
    plugins not installed. (The node ceiling is judged on the model: spec/_model_rules.py.)"""
    raw = spec["compute"]["daemonSetReserve"]
    reserve = DaemonSetReserve(cpu_m=raw["cpuMillicores"], memory_mi=raw["memoryMiB"], percent=raw["percent"])
    for index, ns in enumerate(spec["nodesets"]):
        sized = fit(catalog, type_names(ns), efa=ns["efa"], allow_mixed=ns["allowMixedTypes"],
                    gpus_per_pod=ns.get("gpusPerPod"), reserve=reserve)
        if sized.problems:
            yield from ((where if where.startswith("compute.") else f"nodesets[{index}].{where}", problem)
                        for where, problem in sized.problems)
            continue
        # the same accelerators on every type (interchangeable)
        missing = _plugin_missing(sized.types[0], spec["compute"]["devicePlugins"])
        if missing:
            yield f"nodesets[{index}].instanceType", missing


def catalog_rule(catalog: Mapping[str, InstanceType]) -> Rule[dict[str, Any]]:
    """``nodesets_fit`` bound to one catalog, declared as every spec rule is. It still runs when another
    section fails the schema, so an unknown instance type is reported in the same run as, say, a bad aws.region."""
    def nodesets_fit_here(spec: dict[str, Any]) -> Iterator[Finding]:
        return nodesets_fit(spec, catalog)
    nodesets_fit_here.__name__ = "nodesets_fit"
    return rule("compute", "nodesets")(nodesets_fit_here)
