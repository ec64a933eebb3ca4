"""Render clusters in worker processes, each with its own jsii runtime, and merge in name order.

Why: rendering is mostly jsii round trips to one Node process, so one process renders one
object at a time. Clusters are independent (explicit names, one cdk8s App per cluster, checks per
cluster), so a fleet renders on several CPUs at once. Workers are started with `spawn`: jsii's Node
child process and its socket must never be forked mid-use. Each worker starts before the specs are
loaded (Workers) and loads the catalog itself (it is not picklable). Then the caller and the
workers take clusters one at a time from one shared list (Claims, heaviest first), so a worker
that started late, a cluster that costs more or another program on the CPUs never leaves one
process waiting for another: the work ends at most one cluster apart. Each process renders with
render.render_all (the next cluster renders while a helper thread checks the last) and workers
return plain data; the caller merges by cluster name, so the output is the same bytes whoever
rendered what (tests/test_parallel.py). Measured against the simpler schemes (docs/benchmark.md):
a static split by weight cost 13 % of a 40-cluster synth, handing clusters out one at a time
from this process 20 %.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import threading
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

if TYPE_CHECKING:  # annotations only: this module is imported first, by the CLI and each worker
    from ..synth.rendered import Rendered
    from ..spec import ClusterSpec

#: Peak memory (summed RSS of the process tree) allowed by default; SLURMGEN_MEMORY_MB changes it.
#: 500, not the benchmark's 400 MB target: with stock jsii two rendering processes peak at ~490 MB
#: (below), and one process renders a 40-cluster fleet 1.6-2.9x slower (docs/benchmark.md).
MEMORY_BUDGET_MB = 500
#: Peak RSS, 40 clusters of 10 nodesets (bench fleet), sampled every 10 ms, stock jsii (relay
#: included), Node with --max-semi-space-size=2: one process 268 MB (Python 83, jsii's relay 60,
#: its kernel 125); two processes 489 MB (each Python ~80 + relay ~58 + kernel ~97, and
#: multiprocessing's resource tracker 12). The kernel grows with the clusters it rendered.
FIRST_PROCESS_MB = 270
EXTRA_PROCESS_MB = 220
#: Starting a worker (interpreter, imports, jsii kernel: ~0.5 s of CPU) pays once each process has
#: about this many clusters of 10 nodesets. Measured (bench fleets, one process vs two): 4 clusters
#: 1.05 vs 1.10 s, 6 clusters 1.35 vs 1.33 s, 10 clusters 1.85 vs 1.60 s.
MIN_CLUSTERS_PER_PROCESS = 4
#: Seconds to wait for the claim counter's lock, held a few microseconds by whoever claims.
CLAIM_TIMEOUT = 5.0
def cpu_count() -> int:
    """CPUs this process may run on (the affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def cpu_for(index: int, processes: int) -> int | None:
    """The CPU rendering process `index` (0: the caller, 1...: the workers) keeps to, or None.

    Why: a render is a ping-pong between a Python thread and its jsii kernel (a Node process),
    thousands of short calls each way. With as many rendering processes as CPUs, each pair kept
    on a CPU of its own answers without crossing CPUs or migrating, and the pairs do not disturb
    each other: measured on 2 CPUs, 40 clusters, 2 processes: 3.10 -> 2.90 s, CPU 5.6 -> 5.3 s.
    With more CPUs than processes nothing is pinned (the checks and the writer use the others).
    """
    if processes < 2 or not hasattr(os, "sched_getaffinity"):
        return None
    cpus = sorted(os.sched_getaffinity(0))
    return cpus[index] if len(cpus) == processes and index < len(cpus) else None


@contextmanager
def kept_to(cpu: int | None) -> Iterator[None]:
    """Keep this thread, and the threads and processes it starts meanwhile, to `cpu` (None: no
    change); its CPUs are restored on leaving."""
    before = _pin(cpu)
    try:
        yield
    finally:
        if before is not None:
            try:
                os.sched_setaffinity(0, before)
            except OSError:  # the CPUs changed under us (a cpuset): keep running, pinned
                pass


def _pin(cpu: int | None) -> set[int] | None:
    """Keep this thread to `cpu`; the CPUs it had, or None when nothing changed (no CPU given,
    or the system refused: pinning is only a speed-up, never a reason to fail)."""
    if cpu is None:
        return None
    try:
        before = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {cpu})
    except OSError:
        return None
    return before


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


def heaviest_first(specs: Sequence[ClusterSpec]) -> list[ClusterSpec]:
    """The order clusters are taken in: heaviest first (the last ones are the quick ones, so
    the processes finish close together), then by name."""
    return sorted(specs, key=lambda s: (-weight(s), s.name))


class Claims:
    """Which cluster of one list each process renders next: a counter shared by the processes.

    A process takes the next index until none is left; each index is taken by exactly one process.
    """

    def __init__(self, context: Any | None) -> None:
        # With no worker there is nobody to share with: a plain counter (no shared memory, no lock).
        self._shared = context.Value("i", 0) if context is not None else None
        self._local = 0

    def take(self) -> int | None:
        """The next index; None when the counter's lock could not be had (a process was killed
        holding it: a few microseconds a claim). The caller then stops taking: what nobody
        rendered is rendered by the main process at the end (pipeline.run)."""
        if self._shared is None:
            self._local += 1
            return self._local - 1
        lock = self._shared.get_lock()
        if not lock.acquire(timeout=CLAIM_TIMEOUT):
            return None
        try:
            index = int(self._shared.value)
            self._shared.value = index + 1
        finally:
            lock.release()
        return index

    def each(self, specs: Sequence[ClusterSpec]) -> Iterator[ClusterSpec]:
        """The specs this process takes, one at a time, until all are taken."""
        while (index := self.take()) is not None and index < len(specs):
            yield specs[index]


#: This worker's catalog, loaded by warm_up while the caller loads the specs (site CSV -> catalog).
_CATALOGS: dict[Path | None, Any] = {}
#: The counter shared with the caller and the other workers (set when the process starts).
_CLAIMS: list[Claims] = []


def _adopt(claims: Claims) -> None:
    """Worker initializer: take the shared counter (it can only be handed over when the process
    starts), and end with the process that started it, however that one ends."""
    _CLAIMS[:] = [claims]
    _exit_with_parent()


def _exit_with_parent() -> None:
    """Exit this worker as soon as the process that spawned it is gone, even killed outright.

    Why: an idle worker waits on its task pipe, whose other end it holds too, so it would never see
    the end of a SIGKILLed caller and would outlive it with its jsii kernel. multiprocessing gives
    each spawned process its parent's sentinel (a pipe end that turns readable when the parent
    exits, on every platform); a daemon thread waits on it. The worker's kernel then sees the end
    of its own pipe and exits too.
    """
    parent = multiprocessing.parent_process()
    if parent is None:  # pragma: no cover - not started by multiprocessing
        return

    def watch() -> None:
        multiprocessing.connection.wait([parent.sentinel])
        os._exit(1)

    threading.Thread(target=watch, name="slurmgen-parent-watch", daemon=True).start()


def warm_up(site_csv: Path | None, cpu: int | None = None) -> None:
    """Start this worker's jsii kernel (importing cdk8s) and load its catalog: ~0.5 s that overlaps
    the caller's own start and spec loading instead of delaying the worker's first cluster. With a
    `cpu` (cpu_for), the worker and its kernel keep to it for the rest of their (one-run) life."""
    _pin(cpu)
    from ..synth import build  # noqa: F401  (imports cdk8s, which starts the kernel)
    from ..catalog.catalog import load_catalog

    _CATALOGS[site_csv] = load_catalog(site_csv)


def render_claimed(specs: Sequence[ClusterSpec], site_csv: Path | None, crd_dir: Path | None) -> list[Rendered]:
    """Render, check, validate and dump the clusters of `specs` this worker claims (its whole job);
    its timings ride on the first."""
    from ..catalog.catalog import load_catalog
    from .render import render_all
    from .timing import Stopwatch

    catalog = _CATALOGS.pop(site_csv, None) or load_catalog(site_csv)
    stopwatch = Stopwatch()
    done = render_all(_CLAIMS[0].each(specs), catalog, crd_dir, stopwatch)
    if done:
        done[0].timings = dict(stopwatch.timings)
    return done


class Workers:
    """Worker processes, one single-process pool each, started (and warmed up) before the specs are
    loaded; later they and the caller take the clusters of one list (`claims`). Spawned, never
    forked: jsii's Node child and its socket must not be shared with a copy of this process."""

    def __init__(self, count: int, site_csv: Path | None) -> None:
        context = multiprocessing.get_context("spawn") if count > 0 else None
        self.claims = Claims(context)
        self.pools = [ProcessPoolExecutor(max_workers=1, mp_context=context, initializer=_adopt,
                                          initargs=(self.claims,)) for _ in range(max(0, count))]
        self.processes = 1 + len(self.pools)
        for index, pool in enumerate(self.pools, start=1):
            pool.submit(warm_up, site_csv, cpu_for(index, self.processes))

    def render(self, specs: Sequence[ClusterSpec], site_csv: Path | None, crd_dir: Path | None) -> list[Future]:
        """Set every worker taking clusters of `specs` (heaviest_first; the caller takes its own with
        `self.claims.each(specs)`); a future per worker, each with what that worker rendered. With
        fewer clusters than processes, the workers not needed are stopped instead."""
        busy = self.pools[:max(0, len(specs) - 1)]
        futures = []
        for pool in busy:
            try:
                futures.append(pool.submit(render_claimed, list(specs), site_csv, crd_dir))
            except BrokenProcessPool as err:  # it died while starting: its result says so (collect)
                failed: Future = Future()
                failed.set_exception(err)
                futures.append(failed)
        for pool in self.pools[len(busy):]:
            _stop(pool)
        return futures

    def __enter__(self) -> "Workers":
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        for pool in self.pools:
            if exc_type is not None:
                # The run failed (a spec error, Ctrl-C, a failed check): what a worker still does is
                # wasted, and the interpreter would wait for it at exit. Its kernel sees the end of
                # its socket and exits too.
                _stop(pool)
            pool.shutdown(wait=False, cancel_futures=True)


def collect(futures: Sequence[Future]) -> tuple[list[Rendered], str]:
    """What the workers rendered, and a line naming those that ended abruptly ("" for none): a
    killed worker (out of memory, SIGKILL) loses the clusters it took, which the caller renders
    again instead of failing the run."""
    rendered: list[Rendered] = []
    lost = 0
    for future in futures:
        try:
            rendered += future.result()
        except BrokenProcessPool:
            lost += 1
    return rendered, (f"{lost} worker process(es) ended abruptly (killed? out of memory?)" if lost else "")


def _stop(pool: ProcessPoolExecutor) -> None:
    """End a worker now, whatever it is doing, also one still starting (ProcessPoolExecutor has no
    public terminate before Python 3.14)."""
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
