"""Render clusters in worker processes, each with its own jsii runtime, and merge in name order.

Why: rendering is mostly jsii round trips to one Node process, so one process renders one
object at a time. Clusters are independent (explicit names, one cdk8s App per process, checks per
cluster), so a fleet renders on several CPUs at once. Workers are started with `spawn`: jsii's Node
child processes and pipes must never be forked mid-use. Each worker loads the catalog itself (it
is not picklable), renders its share, runs the per-cluster checks, validation and YAML, and returns
plain data; the caller keeps its own spec objects and merges results by cluster name, so the output
is the same bytes whatever the number of workers (tests/test_parallel.py).
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from .plan import NodeSetPlan
from .spec import ClusterSpec

#: Peak memory (summed RSS of the process tree) allowed by default; SLURMGEN_MEMORY_MB raises it.
MEMORY_BUDGET_MB = 400
#: Measured by bench/synth_bench.py on a 40-cluster fleet: one process (Python, jsii's two Node
#: processes) peaks at 250-370 MB; each more rendering process adds 190-250 MB (its own interpreter
#: and jsii runtime, ~180 MB before it renders anything). So within 400 MB only one process renders.
FIRST_PROCESS_MB = 300
EXTRA_PROCESS_MB = 200
#: Starting a worker (interpreter, imports, jsii: ~0.7 s of CPU) costs about as much as rendering
#: this many clusters of 10 nodesets (~0.15 s each, bench); below it, one process is faster.
MIN_CLUSTERS_PER_PROCESS = 4


@dataclass
class Rendered:
    """One cluster as a worker returns it: plain data, no cdk8s or spec objects."""

    name: str
    plans: dict[str, NodeSetPlan]
    files: dict[str, Any]
    texts: dict[str, str]
    problems: list[str]
    timings: dict[str, float] = field(default_factory=dict)


def cpu_count() -> int:
    """CPUs this process may run on (the affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def choose_processes(clusters: int, cpus: int | None = None, budget_mb: int | None = None) -> int:
    """How many processes render `clusters` clusters: bounded by the CPUs, the memory budget, and
    enough work per process to pay for its start. SLURMGEN_WORKERS forces a count."""
    env = os.environ.get("SLURMGEN_WORKERS", "")
    if env.isdigit() and int(env) > 0:
        return max(1, min(int(env), clusters))
    cpus = cpus if cpus is not None else cpu_count()
    if budget_mb is None:
        raw = os.environ.get("SLURMGEN_MEMORY_MB", "")
        budget_mb = int(raw) if raw.isdigit() else MEMORY_BUDGET_MB
    by_memory = 1 + max(0, budget_mb - FIRST_PROCESS_MB) // EXTRA_PROCESS_MB
    return max(1, min(cpus, by_memory, clusters // MIN_CLUSTERS_PER_PROCESS))


def weight(spec: ClusterSpec) -> int:
    """Rough render cost of a cluster: its objects grow with its nodesets."""
    return 8 + len(spec.nodesets)


def split(specs: Sequence[ClusterSpec], parts: int) -> list[list[ClusterSpec]]:
    """Deal clusters into `parts` shares of similar cost (heaviest first to the lightest share)."""
    shares: list[list[ClusterSpec]] = [[] for _ in range(parts)]
    loads = [0] * parts
    for spec in sorted(specs, key=lambda s: (-weight(s), s.name)):
        i = loads.index(min(loads))
        shares[i].append(spec)
        loads[i] += weight(spec)
    return [sorted(s, key=lambda s: s.name) for s in shares if s]


def render_share(specs: Sequence[ClusterSpec], site_csv: Path | None, crd_dir: Path | None) -> list[Rendered]:
    """Render, check, validate and dump a share of clusters in this process (a worker's whole job)."""
    from . import build, pipeline, verify
    from .catalog.catalog import load_catalog

    catalog = load_catalog(site_csv)
    timings = pipeline.Result(clusters=())
    out: list[Rendered] = []
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="slurmgen-check") as pool:
        prepared = [pool.submit(verify.prepare, crd_dir, v) for v in sorted({s.aws.kubernetes_version for s in specs})]
        jobs: list[tuple[Any, Future]] = []
        with timings.timer("render"):
            for cluster in build.render_each(specs, catalog):
                jobs.append((cluster, pool.submit(pipeline._check, cluster, crd_dir, prepared, timings, catalog)))
        for cluster, job in jobs:
            problems, texts = job.result()
            out.append(Rendered(cluster.spec.name, dict(cluster.plans), dict(cluster.files), texts, problems))
    if out:
        out[0].timings = dict(timings.timings)
    return out


def start_workers(shares: Sequence[Sequence[ClusterSpec]], site_csv: Path | None,
                  crd_dir: Path | None) -> tuple[ProcessPoolExecutor | None, list[Future]]:
    """Start one spawned worker per share; the caller renders its own share meanwhile."""
    if not shares:
        return None, []
    pool = ProcessPoolExecutor(max_workers=len(shares), mp_context=multiprocessing.get_context("spawn"))
    return pool, [pool.submit(render_share, list(share), site_csv, crd_dir) for share in shares]
