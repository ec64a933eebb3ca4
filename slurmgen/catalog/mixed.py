"""Interchangeable instance types: one nodeset, one slurmd pod shape, several EC2 types Karpenter may pick.

A list buys capacity (more spot pools, more chances at scarce on-demand GPUs) only if every type in
it can run the very same slurmd pod with the very same Slurm node line, because a NodeSet has one
pod template and one `extraConf`. So:

- Architecture and accelerators (resource, count, model) must be equal, always: the image, the
  device request and `Gres=gpu:<model>:<n>` are per nodeset, and a job asking for `--gres=gpu:h100`
  must never land on an H200.
- vCPU count and threads per core must be equal, always: `CoreSpecCount` counts cores of the *node*
  (the ones beyond the pod's request, kept for kubelet and DaemonSets). One value on types of
  different core counts is either too small on the larger type (Slurm would hand jobs the cores
  kept for the node) or at least the whole node on the smaller one (slurmd refuses to register).
  `CPUs=` below the detected count instead would need the socket/core layout to bind correctly.
  Types of different sizes go into separate nodesets; a partition may span them.
- Memory, accelerator memory (p4d/p4de are both `a100`, 40 and 80 GB) and EFA count may differ
  only with `allowMixedTypes: true`: the pod, RealMemory and the EFA request are those of the
  smallest type, which is valid on every type (a node may have more
  than Slurm is told), at the price of the difference left unused on the larger ones.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .catalog import InstanceType
from .sizing import DEFAULT_RESERVE, DaemonSetReserve, PodShape, SizingError, lookup, pod_resources, threads_per_core


def _differs(types: Sequence[InstanceType], fact: Callable[[InstanceType], Any],
             show: Callable[[InstanceType], str]) -> str | None:
    """'a has X, b has Y' over the types whose `fact` differs from the first type's, else None."""
    if len({fact(it) for it in types}) == 1:
        return None
    return ", ".join(f"{it.instance_type} has {show(it)}" for it in types)


def _accelerators(it: InstanceType) -> str:
    if not it.has_accelerator:
        return "no accelerators"
    model = f" {it.accelerator_model}" if it.accelerator_model else ""
    return f"{it.accelerator_count}{model} {it.accelerator_resource}"


def interchangeable(types: Sequence[InstanceType], *, efa: bool, allow_mixed: bool) -> list[str]:
    """One message per way the types cannot share one slurmd pod and Slurm node line (empty when they can)."""
    if len(types) < 2:
        return []
    problems: list[str] = []
    split = "; use one nodeset per {what} (a partition may list several nodesets)"
    arch = _differs(types, lambda it: it.arch, lambda it: it.arch)
    if arch:
        problems.append(f"types differ in architecture ({arch}); one slurmd image serves one architecture"
                        + split.format(what="architecture"))
    accel = _differs(types, lambda it: (it.accelerator_resource, it.accelerator_count, it.accelerator_model),
                     _accelerators)
    if accel:
        problems.append(f"types differ in accelerators ({accel}); Gres and the device request are per nodeset"
                        + split.format(what="accelerator model and count"))
    cores = _differs(types, lambda it: (it.vcpu, threads_per_core(it)),
                     lambda it: f"{it.vcpu} vCPUs" + ("" if threads_per_core(it) == 2 else " (1 thread per core)"))
    if cores:
        problems.append(f"types differ in CPUs ({cores}); CoreSpecCount counts the node's cores, so one value "
                        "cannot fit both" + split.format(what="vCPU count"))
    if allow_mixed:
        return problems
    hint = "; set allowMixedTypes: true to size the slurmd pod for the smallest"
    memory = _differs(types, lambda it: it.memory_mib, lambda it: f"{it.memory_mib} MiB")
    if memory:
        problems.append(f"types differ in memory ({memory}){hint}")
    gpu_memory = _differs(types, lambda it: it.accelerator_memory_mib, lambda it: f"{it.accelerator_memory_mib} MiB")
    if gpu_memory:
        problems.append(f"types differ in accelerator memory ({gpu_memory}), which Slurm cannot tell apart "
                        f"(one Gres model){hint}")
    efa_count = _differs(types, lambda it: it.efa_max, lambda it: f"{it.efa_max} EFA")
    if efa and efa_count:
        problems.append(f"types differ in EFA interfaces ({efa_count}){hint}")
    return problems


def pod_resources_for(types: Sequence[InstanceType], *, gpus_per_pod: int | None = None, efa: bool = False,
                      reserve: DaemonSetReserve = DEFAULT_RESERVE) -> PodShape:
    """The pod shape that fits every type: each resource the smallest any type allows.

    Raises SizingError for the first type the shape cannot be built on at all. The shape names the
    type with the least memory (the one that bounds it in practice).
    """
    shapes = [pod_resources(it, gpus_per_pod=gpus_per_pod, efa=efa, reserve=reserve) for it in types]
    smallest = min(shapes, key=lambda s: (s.memory_mi, s.cpu_m, s.efa))
    return PodShape(
        instance_type=smallest.instance_type,
        cpu_m=min(s.cpu_m for s in shapes),
        memory_mi=min(s.memory_mi for s in shapes),
        accelerators=min(s.accelerators for s in shapes),
        accelerator_resource=shapes[0].accelerator_resource,
        efa=min(s.efa for s in shapes),
    )


@dataclass(frozen=True)
class Fit:
    """How a nodeset's instance types hold its slurmd pod (`shape`), or why they cannot (`problems`).

    Each problem is (field, message): the field under the nodeset (`instanceType`, `instanceType[1]`,
    `gpusPerPod`) or a `compute.` path. The spec rule reports them all; the plan sizes with `shape`."""

    types: tuple[InstanceType, ...]
    shape: PodShape | None
    problems: tuple[tuple[str, str], ...] = ()


def fit(catalog: Mapping[str, InstanceType], names: Sequence[str], *, efa: bool, allow_mixed: bool,
        gpus_per_pod: int | None, reserve: DaemonSetReserve) -> Fit:
    """The one sizing of a nodeset, read by the spec rule (catalog/rules.py) and the plan (plan/nodesets.py):
    every type known, the types interchangeable, and one slurmd pod shape that fits each of them."""
    types: list[InstanceType] = []
    unknown: list[tuple[str, str]] = []
    for index, name in enumerate(names):
        try:
            types.append(lookup(catalog, name))
        except SizingError as err:
            unknown.append(("instanceType" if len(names) == 1 else f"instanceType[{index}]", str(err)))
    if unknown:
        return Fit(tuple(types), None, tuple(unknown))
    mismatch = interchangeable(types, efa=efa, allow_mixed=allow_mixed)
    if mismatch:
        return Fit(tuple(types), None, tuple(("instanceType", problem) for problem in mismatch))
    try:
        shape = pod_resources_for(types, gpus_per_pod=gpus_per_pod, efa=efa, reserve=reserve)
    except SizingError as err:
        return Fit(tuple(types), None, ((err.field, str(err)),))
    return Fit(tuple(types), shape)


def type_names(raw_nodeset: dict[str, Any]) -> tuple[str, ...]:
    """A raw nodeset's `instanceType` as a tuple: one name, or the list as written (order kept)."""
    value = raw_nodeset["instanceType"]
    return (value,) if isinstance(value, str) else tuple(value)
