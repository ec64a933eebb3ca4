"""Render clusters in worker processes, each with its own jsii runtime, and merge in name order.

Why: rendering is mostly jsii round trips to one Node process, so one process renders one
object at a time. Clusters are independent (explicit names, one cdk8s App per cluster, checks per
cluster), so a fleet renders on several CPUs at once. Workers are started with `spawn`: jsii's Node
child process and its socket must never be forked mid-use. Each worker starts before the specs are
loaded (Workers), loads the catalog itself (it is not picklable), renders its share, runs the
per-cluster checks, validation and YAML, and returns
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
#: Measured by bench/synth_bench.py on a 40-cluster fleet: one process (Python and jsii's kernel,
#: started without jsii's relay, see _jsii_channel.py) peaks at 170-180 MB; each more rendering
#: process adds 140-150 MB (its own interpreter and kernel). So within 400 MB two processes render.
FIRST_PROCESS_MB = 190
EXTRA_PROCESS_MB = 160
#: Starting a worker (interpreter, imports, jsii kernel: ~0.5 s of CPU) pays once each process has
#: about this many clusters of 10 nodesets. Measured (bench fleets, one process vs two): 4 clusters
#: 1.05 vs 1.10 s, 6 clusters 1.35 vs 1.33 s, 10 clusters 1.85 vs 1.60 s.
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


#: This worker's catalog, loaded by warm_up while the caller loads the specs (site CSV -> catalog).
_CATALOGS: dict[Path | None, Any] = {}


def warm_up(site_csv: Path | None) -> None:
    """Start this worker's jsii kernel (importing cdk8s) and load its catalog: ~0.5 s that overlaps
    the caller's own start and spec loading instead of delaying the worker's share."""
    from . import build  # noqa: F401  (imports cdk8s, which starts the kernel)
    from .catalog.catalog import load_catalog

    _CATALOGS[site_csv] = load_catalog(site_csv)


def render_share(specs: Sequence[ClusterSpec], site_csv: Path | None, crd_dir: Path | None) -> list[Rendered]:
    """Render, check, validate and dump a share of clusters in this process (a worker's whole job)."""
    from . import build, pipeline, verify
    from .catalog.catalog import load_catalog

    catalog = _CATALOGS.pop(site_csv, None) or load_catalog(site_csv)
    timings = pipeline.Stopwatch()
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


class Workers:
    """Worker processes, one single-process pool each, started (and warmed up) before the specs are
    loaded; each later renders one share. Spawned, never forked: jsii's Node child and its socket
    must not be shared with a copy of this process."""

    def __init__(self, count: int, site_csv: Path | None) -> None:
        context = multiprocessing.get_context("spawn")
        self.pools = [ProcessPoolExecutor(max_workers=1, mp_context=context) for _ in range(max(0, count))]
        for pool in self.pools:
            pool.submit(warm_up, site_csv)

    def render(self, shares: Sequence[Sequence[ClusterSpec]], site_csv: Path | None,
               crd_dir: Path | None) -> list[Future]:
        """One share per worker (in order); workers left without a share are stopped."""
        futures = [pool.submit(render_share, list(share), site_csv, crd_dir) for pool, share in zip(self.pools, shares, strict=False)]
        for pool in self.pools[len(futures):]:
            pool.shutdown(wait=False, cancel_futures=True)
        return futures

    def __enter__(self) -> "Workers":
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        for pool in self.pools:
            if exc_type is not None:
                # The run failed (a spec error, Ctrl-C, a failed check): what a worker still does is
                # wasted, and the interpreter would wait for it at exit. Its kernel sees the end of
                # its socket and exits too. (ProcessPoolExecutor has no public terminate before 3.14.)
                for process in list((getattr(pool, "_processes", None) or {}).values()):
                    process.terminate()
            pool.shutdown(wait=False, cancel_futures=True)
