"""Print how much of each catalog type a whole-node slurmd pod gets, and fail if any goal is missed.

Goals (default DaemonSet reserve, one slurmd per node, EFA on where the type has it):
requested/allocatable >= 90% for CPU and memory on types with >= 16 GiB (at 8 GiB the fixed 640 Mi
reserve is ~10 %: 89.9-90.7 %), 100% for accelerators and EFA, never > 100% once the DaemonSet reserve is
added back. Types the sizing refuses (too small for a slurmd pod) are listed, not failed. Exit
status 1 when a goal is missed, so CI can run it.

Usage: .venv/bin/python bench/sizing_report.py
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from slurmgen.catalog.catalog import InstanceType, load_catalog  # noqa: E402
from slurmgen.catalog.sizing import DEFAULT_RESERVE, SizingError, allocatable, pod_resources  # noqa: E402

MIN_CPU_MEM_RATIO = 0.90
MIN_MEMORY_FOR_RATIO_GOAL_MIB = 16384


@dataclass(frozen=True)
class Row:
    """One instance type's whole-node sizing and its ratios against Karpenter's allocatable."""

    name: str
    memory_mib: int
    alloc_cpu_m: int
    alloc_mem_mi: int
    req_cpu_m: int
    req_mem_mi: int
    cpu: float
    mem: float
    accel: float | None
    efa: float | None
    overcommitted: bool


def _ratio(part: int, whole: int) -> float | None:
    """None when the resource does not exist on the type (shown as '-')."""
    return part / whole if whole else None


def measure(it: InstanceType) -> Row:
    """Size one type as the generator would by default and compare with allocatable."""
    alloc = allocatable(it)
    shape = pod_resources(it, gpus_per_pod=None, efa=it.has_efa, reserve=DEFAULT_RESERVE)
    cpu = shape.cpu_m * shape.pods_per_node
    mem = shape.memory_mi * shape.pods_per_node
    over = cpu + DEFAULT_RESERVE.cpu_m > alloc.cpu_m or mem + DEFAULT_RESERVE.memory_mi > alloc.memory_mi
    return Row(
        name=it.instance_type,
        memory_mib=it.memory_mib,
        alloc_cpu_m=alloc.cpu_m,
        alloc_mem_mi=alloc.memory_mi,
        req_cpu_m=cpu,
        req_mem_mi=mem,
        cpu=cpu / alloc.cpu_m,
        mem=mem / alloc.memory_mi,
        accel=_ratio(shape.accelerators * shape.pods_per_node, alloc.accelerators),
        efa=_ratio(shape.efa * shape.pods_per_node, alloc.efa),
        overcommitted=over,
    )


def misses(row: Row) -> list[str]:
    """Which goals this row misses (empty list = all met)."""
    problems = []
    goal = row.memory_mib >= MIN_MEMORY_FOR_RATIO_GOAL_MIB
    if goal and row.cpu < MIN_CPU_MEM_RATIO:
        problems.append("cpu<90%")
    if goal and row.mem < MIN_CPU_MEM_RATIO:
        problems.append("mem<90%")
    if row.accel not in (None, 1.0):
        problems.append("accel!=100%")
    if row.efa not in (None, 1.0):
        problems.append("efa!=100%")
    if row.overcommitted or row.cpu > 1 or row.mem > 1:
        problems.append(">100%")
    return problems


def _pct(value: float | None) -> str:
    """Percent with one decimal, '-' for a resource the type does not have."""
    return "-" if value is None else f"{value:.1%}"


def render(rows: list[Row]) -> str:
    """Fixed-width table, one line per type, plus a min line per ratio."""
    header = (
        f"{'type':<22}{'alloc cpu':>11}{'alloc mem':>12}{'req cpu':>11}{'req mem':>12}"
        f"{'cpu':>8}{'mem':>8}{'accel':>8}{'efa':>8}  status"
    )
    lines = [header, "-" * len(header)]
    for r in rows:
        status = ", ".join(misses(r)) or "ok"
        lines.append(
            f"{r.name:<22}{r.alloc_cpu_m:>10}m{r.alloc_mem_mi:>10}Mi{r.req_cpu_m:>10}m{r.req_mem_mi:>10}Mi"
            f"{_pct(r.cpu):>8}{_pct(r.mem):>8}{_pct(r.accel):>8}{_pct(r.efa):>8}  {status}"
        )
    accel = [r.accel for r in rows if r.accel is not None]
    efa = [r.efa for r in rows if r.efa is not None]
    lines.append("-" * len(header))
    lines.append(
        f"{'min':<22}{'':>11}{'':>12}{'':>11}{'':>12}{_pct(min(r.cpu for r in rows)):>8}"
        f"{_pct(min(r.mem for r in rows)):>8}{_pct(min(accel, default=None)):>8}{_pct(min(efa, default=None)):>8}"
    )
    return "\n".join(lines)


def main() -> int:
    """Print the report; non-zero exit when any type misses a goal."""
    rows, refused = [], []
    for it in load_catalog().values():
        try:
            rows.append(measure(it))
        except SizingError as err:
            refused.append(f"{it.instance_type}: {err}")
    reserve = f"{DEFAULT_RESERVE.cpu_m}m CPU, {DEFAULT_RESERVE.memory_mi}Mi"
    print(f"DaemonSet reserve: {reserve} (whole node, EFA where available)")
    print(render(rows))
    print(f"refused ({len(refused)}, too small for a slurmd pod):")
    print("\n".join(f"  {line}" for line in refused))
    failed = [r.name for r in rows if misses(r)]
    if failed:
        print(f"FAIL: {len(failed)}/{len(rows)} types miss a goal: {', '.join(failed)}")
        return 1
    print(f"PASS: all {len(rows)} types meet >=90% CPU/memory (>= 16 GiB types), 100% accelerators/EFA, "
          f"never >100% of allocatable; {len(refused)} refused")
    return 0


if __name__ == "__main__":
    sys.exit(main())
