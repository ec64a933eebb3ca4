"""The whole run as one function: specs -> model -> render -> verify -> result to write or compare.

Nothing touches the output folder until every cluster has rendered and verified, so an invalid
spec or a failed check leaves `dist/` exactly as it was.

By default the clusters render here, one after the other (`_render_here`, `render.render_cluster`).
Clusters are independent (one cdk8s App each, checks per cluster), so when asked (`--workers N`) they
render in the standard library's process pool instead (`_render_in_pool`), one task per cluster.
Workers are spawned, never forked: jsii's Node child and its socket must not be shared with a copy of
this process. Results are merged by cluster name, so the bytes do not depend on who rendered what
(tests/run/test_parallel.py).
"""

from __future__ import annotations

import difflib
import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from . import cache as render_cache
from ..verify import collisions, fsx_size, guards
from ..errors import UserError
from ..catalog.catalog import CatalogError, InstanceType, load_catalog, site_catalog_path
from ..write.output import NOT_A_FILE, read_tree, render_texts
from ..plan.nodesets import plan_cluster
from ..synth.rendered import Rendered, RenderedCluster
from ..spec import ClusterSpec, SpecError, load_spec, load_specs
from .timing import Stopwatch
from ..verify.schemas import SchemaUnavailable

class InputError(UserError):
    """Invalid input or output that failed verification: one line per problem, exit status 2."""


@dataclass(frozen=True)
class Result:
    clusters: tuple[RenderedCluster, ...]
    timings: dict[str, float] = field(default_factory=dict)  # step -> seconds, in run order (a Stopwatch's)
    rendered_texts: dict[str, dict[str, str]] = field(default_factory=dict)  # cluster -> path -> YAML
    catalog: Mapping[str, InstanceType] | None = None  # the one the specs were checked and rendered with
    bases: dict[Path, dict] = field(default_factory=dict)  # out/<cluster> -> its objects, read once
    cached: frozenset[str] = frozenset()  # clusters taken from the render cache, not rendered
    old_texts: dict[Path, dict[str, str]] = field(default_factory=dict)  # out/<cluster> -> path -> text, read once
    notes: tuple[str, ...] = ()  # what the user should know although the run succeeded (warnings)

    def base(self, root: Path) -> dict:
        """The objects of the tree a write would replace (path -> object), read once per run."""
        if root not in self.bases:
            self.bases[root] = guards.read_tree(root)
        return self.bases[root]

    def old_text(self, root: Path) -> dict[str, str]:
        """The files of the tree a write would replace (path -> text), read once per run."""
        if root not in self.old_texts:
            self.old_texts[root] = read_tree(root)  # never follows a link (NOT_A_FILE), unlike os.walk + open
        return self.old_texts[root]

    def unchanged(self, out: Path, cluster: RenderedCluster) -> bool:
        """True when `out/<cluster>/` already holds exactly this render, byte for byte.

        Then nothing is removed or changed: the guards and sync-wave checks have nothing to judge and
        the write nothing to do, so a fleet where one cluster changed costs about one cluster.
        """
        try:
            return self.old_text(out / cluster.spec.name) == self.texts(cluster)
        except (OSError, UnicodeDecodeError):  # unreadable: judged and replaced as a changed tree
            return False

    def timer(self, step: str) -> AbstractContextManager[None]:
        """Time a later step of the same run (the CLI's write) into these timings."""
        return Stopwatch(self.timings).timer(step)

    @property
    def object_count(self) -> int:
        return sum(len(c.files) for c in self.clusters)

    def texts(self, cluster: RenderedCluster) -> dict[str, str]:
        cached = self.rendered_texts.get(cluster.spec.name)
        return cached if cached is not None else render_texts(cluster.files, cluster.spec.source)

    def guard(self, out: Path, allow: Iterable[str] = ()) -> list[str]:
        """Destructive changes against the trees in `out/` that `allow` does not approve, after the FSx
        size changes Kubernetes would refuse (verify/fsx_size.py: spec lines, never approvable).

        A cluster whose folder already holds exactly this render changes nothing and is not judged.
        Raises guards.BadApproval for an approval that is ambiguous or matches nothing, and
        guards.UnreadableTree when a previous tree cannot be read (its objects cannot be checked).
        """
        lines: list[str] = []
        changes: list[guards.Change] = []
        for cluster in self.clusters:
            if self.unchanged(out, cluster):
                continue
            old = list(self.base(out / cluster.spec.name).values())
            found = guards.destructive_changes(cluster.spec.name, old, cluster.files.values())
            sized = fsx_size.size_problems(cluster.spec, old)
            if sized:  # the spec line says what to do: no approval makes Kubernetes or FSx shrink the volume
                ours = fsx_size.fsx_objects(cluster.spec, old)
                found = [c for c in found if not (c.what.startswith("shrink") and (c.kind, c.name) in ours)]
            lines += sized
            changes += found
        try:
            left = guards.unapproved(changes, allow)
        except guards.BadApproval as err:
            raise guards.BadApproval(lines + err.lines) from None  # every problem at once
        return lines + [str(change) for change in left]

    def sync_problems(self, out: Path) -> list[str]:
        """slurm.conf problems at a sync wave of the change from the trees in `out/` to this render
        (a partition naming a NodeSet not yet created or already pruned): one line each."""
        from ..verify.slurm_files import blocking, wave_problems

        lines: list[str] = []
        with self.timer("sync waves"):
            for cluster in self.clusters:
                if self.unchanged(out, cluster):
                    continue
                old = self.base(out / cluster.spec.name)
                if old:
                    lines += blocking(wave_problems(cluster.spec.name, old, cluster.files))
        return lines

    def orphans(self, out: Path) -> list[str]:
        """Cluster folders in `out/` that no spec renders any more (left in place: they hold stateful objects)."""
        names = {c.spec.name for c in self.clusters}
        if not out.is_dir():
            return []
        return sorted(p.name for p in out.iterdir()
                      if p.is_dir() and not p.is_symlink() and not p.name.startswith(".") and p.name not in names)

    def changed_trees(self, out: Path) -> dict[str, dict[str, str]]:
        """cluster -> path -> text of every cluster whose `out/<cluster>/` does not already hold exactly
        this render: a fleet where one cluster changed rewrites one folder."""
        return {c.spec.name: self.texts(c) for c in self.clusters if not self.unchanged(out, c)}

    def compare(self, out: Path) -> list[str]:
        """Readable drift between this render and `out/`: one line per file, then a short diff."""
        lines: list[str] = []
        for cluster in self.clusters:
            root = out / cluster.spec.name
            new, old = self.texts(cluster), self.old_text(root)
            for rel in sorted(set(new) | set(old)):
                if old.get(rel) == NOT_A_FILE:
                    lines.append(f"foreign: {root / rel} (not a regular file; never followed, synth refuses it)")
                elif rel not in old:
                    lines.append(f"added:   {root / rel}")
                elif rel not in new:
                    lines.append(f"removed: {root / rel}")
                elif new[rel] != old[rel]:
                    diff = list(difflib.unified_diff(old[rel].splitlines(), new[rel].splitlines(), lineterm="", n=0))
                    changed = [d for d in diff[2:] if not d.startswith("@@")]
                    lines.append(f"changed: {root / rel} ({len(changed)} line(s))")
                    lines += [f"    {d}" for d in changed[:6]]
        return lines


#: Peak memory (summed RSS of the process tree) allowed by default; SLURMGEN_MEMORY_MB changes it.
#: One process renders alone at ~280 MB. With a pool this process only waits (~60 MB, no jsii kernel)
#: while each worker holds Python, jsii's relay and its kernel (~220 MB): two workers peak at ~510 MB.
#: 400 (the benchmark's target) means one process by default: on the 2-CPU benchmark machine a pool of
#: two was not reliably faster at 40 clusters (1.06-1.63x the bare app against 1.50-1.60x, docs/benchmark.md).
MEMORY_BUDGET_MB = 400
ALONE_MB = 270
MAIN_MB = 60
WORKER_MB = 220
#: A worker (interpreter, imports, jsii kernel: ~0.5 s of CPU) pays once each has about this many
#: clusters of 10 nodesets to render.
MIN_CLUSTERS_PER_PROCESS = 4


def choose_processes(clusters: int, cpus: int | None = None, budget_mb: int | None = None) -> int:
    """How many processes render `clusters` clusters (1: this one, no pool): bounded by the CPUs,
    the memory budget, and enough work per process to pay for its start. SLURMGEN_WORKERS forces a count."""
    env = os.environ.get("SLURMGEN_WORKERS", "")
    if env.isdigit() and int(env) > 0:
        return max(1, min(int(env), clusters))
    if cpus is None:
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if budget_mb is None:
        raw = os.environ.get("SLURMGEN_MEMORY_MB", "")
        budget_mb = int(raw) if raw.isdigit() else MEMORY_BUDGET_MB
    by_memory = max(0, budget_mb - MAIN_MB) // WORKER_MB if budget_mb > ALONE_MB else 1
    return max(1, min(cpus, by_memory, clusters // MIN_CLUSTERS_PER_PROCESS))


def heaviest_first(specs: Sequence[ClusterSpec]) -> list[ClusterSpec]:
    """The order clusters are handed out in: heaviest first (objects grow with nodesets), so the
    quick ones come last and the workers finish close together; then by name."""
    return sorted(specs, key=lambda s: (-len(s.nodesets), s.name))


def site_csvs(spec_paths: Sequence[Path]) -> list[Path]:
    """Every site `instance-types.csv` beside the specs, sorted (site_catalog refuses two)."""
    return sorted({p for p in (site_catalog_path(path.parent) for path in spec_paths) if p is not None})


def site_catalog(spec_paths: Sequence[Path]) -> Mapping[str, InstanceType]:
    """The packaged catalog plus the `instance-types.csv` beside the specs, if there is one.

    Specs from several folders may share one such file; two different ones would give one instance
    type two meanings in one run, so that is refused.
    """
    found = site_csvs(spec_paths)
    if len(found) > 1:
        raise InputError([f"{', '.join(map(str, found))}: specs from folders with different instance-types.csv; "
                          "render them in separate runs"])
    try:
        return load_catalog(found[0] if found else None)
    except CatalogError as err:
        raise InputError([str(err)]) from None


def run(spec_paths: Sequence[Path], *, crd_dir: Path | None = None,
        catalog: Mapping[str, InstanceType] | None = None, use_cache: bool = False,
        processes: int | None = None, fleet: Sequence[Path] = ()) -> Result:
    """Load, render and verify; raise InputError with every problem found.

    `catalog` defaults to the packaged one plus the specs' folder's instance-types.csv (site_catalog).
    With `use_cache`, a cluster whose inputs are unchanged is taken from the render cache (cache.py)
    instead of rendered; it is off with `crd_dir` or a caller's own `catalog` (not in the key).
    The clusters left to render are rendered by `processes` processes (default: choose_processes);
    a caller's own catalog cannot reach a worker, so it renders here.
    `fleet` are the repository's other spec files (cli.fleet_files): loaded, never rendered, so that
    what must be unique across the fleet (collisions.TABLE) is compared with them too.
    """
    if not spec_paths:
        raise InputError(["no spec files: add clusters/<name>.yaml or pass --spec FILE"])
    own_catalog = catalog is None
    use_cache = use_cache and own_catalog and crd_dir is None
    stopwatch = Stopwatch()
    csvs = site_csvs(spec_paths) if own_catalog else []
    keys, entries = _cache_entries(spec_paths, csvs[0] if csvs else None, stopwatch) if use_cache else ({}, {})
    with stopwatch.timer("load"):
        catalog = catalog if catalog is not None else site_catalog(spec_paths)
        specs, spec_data = _load(spec_paths, catalog, entries, use_cache)
    with stopwatch.timer("fleet"):
        fleet_notes = _fleet_problems(specs, fleet, catalog)
    cached = {s.name: entries[s.source] for s in specs if s.source in entries}
    misses = [s for s in specs if s.name not in cached]
    wanted = processes if processes is not None else choose_processes(len(misses))
    notes: list[str] = []
    if wanted < 2 or len(misses) < 2 or not own_catalog:  # the default: one after the other, here
        rendered = _render_here(misses, catalog, crd_dir, stopwatch)
    else:  # asked for (--workers N): a caller's own catalog cannot reach a worker
        rendered, notes = _render_in_pool(misses, catalog, crd_dir, min(wanted, len(misses)),
                                          csvs[0] if csvs else None, stopwatch)
    by_name = {s.name: s for s in specs}
    problems = [line for r in sorted(rendered, key=lambda r: r.name) for line in r.problems]
    if use_cache:
        with stopwatch.timer("cache"):
            _store(rendered, by_name, keys, spec_data)
    if problems:
        raise InputError(problems)
    outcome = {r.name: (RenderedCluster(spec=by_name[r.name], plans=r.plans, files=r.files), r.texts) for r in rendered}
    for name, entry in cached.items():
        outcome[name] = (RenderedCluster(spec=by_name[name], plans=plan_cluster(by_name[name], catalog),
                                         files=entry.files, shared_names=entry.shared_names), entry.texts)
    names = sorted(outcome)
    return Result(clusters=tuple(outcome[n][0] for n in names), timings=stopwatch.timings,
                  rendered_texts={n: outcome[n][1] for n in names}, catalog=catalog,
                  cached=frozenset(cached), notes=(*fleet_notes, *notes))


def _cache_entries(spec_paths: Sequence[Path], site_csv: Path | None,
                   stopwatch: Stopwatch) -> tuple[dict[str, str], dict[str, render_cache.Entry]]:
    """spec source -> its cache key (inputs all readable), and spec source -> its entry (hits).
    Read before the specs: a hit carries the spec data that passed every check from exactly these
    inputs (the key covers them), so that spec is built, not checked again."""
    keys: dict[str, str] = {}
    entries: dict[str, render_cache.Entry] = {}
    with stopwatch.timer("cache"):
        shared = render_cache.generator_digest()
        options = render_cache.environment_options()
        for path in spec_paths:
            key = render_cache.cluster_key(path, shared, site_csv, options)
            entry = render_cache.load(path.stem, key) if key else None
            if key:
                keys[str(path)] = key
            if entry is not None:
                entries[str(path)] = entry
    return keys, entries


def _load(spec_paths: Sequence[Path], catalog: Mapping[str, InstanceType], entries: Mapping[str, render_cache.Entry],
          use_cache: bool) -> tuple[list[ClusterSpec], dict[str, dict]]:
    """The specs, and (with the cache) the data each was checked from, for its cache entry."""
    spec_data: dict[str, dict] = {}
    try:
        specs = load_specs(spec_paths, catalog=catalog, validated={source: e.spec_data for source, e in entries.items()},
                           data_out=spec_data if use_cache else None)
    except SpecError as err:
        raise InputError(str(p) for p in err.problems) from None
    return specs, spec_data


def _fleet_problems(specs: Sequence[ClusterSpec], fleet: Sequence[Path],
                    catalog: Mapping[str, InstanceType]) -> list[str]:
    """Raise InputError when a spec of this run holds what another spec must not (collisions.TABLE);
    the other specs are `fleet`'s that load. One that does not is left out, with a warning: it cannot
    be rendered either, so it deploys nothing until it is fixed, and then its own run compares it."""
    others: list[ClusterSpec] = []
    notes: list[str] = []
    for path in sorted(fleet):
        try:
            others.append(load_spec(path, catalog=catalog))
        except SpecError as err:
            notes.append(f"{path}: not compared with the rendered clusters for what must be unique across the fleet: "
                         f"it does not load ({len(err.problems)} problem(s); render it to see them)")
    clashes = collisions.spec_problems(specs, others)
    if clashes:
        raise InputError(str(p) for p in clashes)
    return notes


def _render_here(specs: Sequence[ClusterSpec], catalog: Mapping[str, InstanceType], crd_dir: Path | None,
                 stopwatch: Stopwatch) -> list[Rendered]:
    """Render, check, validate and dump `specs` in this process, one after the other (importing
    cdk8s starts its jsii kernel: only when there is something to render)."""
    if not specs:
        return []
    with stopwatch.timer("cdk8s start"):
        from .render import render_cluster
    try:
        return [render_cluster(spec, catalog, crd_dir, stopwatch) for spec in specs]
    except SchemaUnavailable as err:
        raise InputError([f"cannot validate the rendered objects: {err}"]) from None


def _render_in_pool(specs: Sequence[ClusterSpec], catalog: Mapping[str, InstanceType], crd_dir: Path | None,
                    processes: int, site_csv: Path | None, stopwatch: Stopwatch) -> tuple[list[Rendered], list[str]]:
    """`specs` rendered as in _render_here, one task per cluster in a pool of `processes` spawned
    workers. What a worker that ended abruptly (killed, out of memory) did not hand back is rendered
    here, so the run still gives every cluster, the same bytes. Returns the clusters and what the
    user should be told. On any failure or stop signal the workers are ended at once, not waited for."""
    pool = ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_start_worker, initargs=(site_csv,))
    done: list[Rendered] = []
    lost: list[ClusterSpec] = []
    specs = heaviest_first(specs)
    try:
        futures = [pool.submit(_render_in_worker, spec, crd_dir) for spec in specs]
        with stopwatch.timer("wait for workers"):
            for spec, future in zip(specs, futures, strict=True):
                try:
                    done.append(future.result())
                except BrokenProcessPool:
                    lost.append(spec)
                except SchemaUnavailable as err:
                    raise InputError([f"cannot validate the rendered objects: {err}"]) from None
    except BaseException:
        _stop(pool)
        raise
    pool.shutdown()
    for rendered in done:
        for step, secs in rendered.timings.items():
            stopwatch.timings[f"worker {step}"] = stopwatch.timings.get(f"worker {step}", 0.0) + secs
    if not lost:
        return done, []
    return done + _render_here(lost, catalog, crd_dir, stopwatch), [
        f"a worker process ended abruptly (killed? out of memory?); {len(lost)} cluster(s) were rendered by "
        "the main process"]


def _stop(pool: ProcessPoolExecutor) -> None:
    """End every worker now, also one still starting; its jsii kernel sees the end of its pipe and
    exits too. The pool's workers are this process's only multiprocessing children, so the public
    multiprocessing.active_children() finds them (ProcessPoolExecutor.terminate_workers is Python 3.14's)."""
    for process in multiprocessing.active_children():
        process.terminate()
    pool.shutdown(wait=False, cancel_futures=True)


#: This worker's catalog (loaded once, when it starts: a catalog is not picklable).
_WORKER_CATALOG: list[Mapping[str, InstanceType]] = []


def _start_worker(site_csv: Path | None) -> None:
    """A worker's start: its catalog and jsii kernel, Ctrl-C left to the main process (which ends the workers:
    no traceback from each), and an exit as soon as the main process is gone, even killed outright.

    Why the last: an idle worker waits on its task pipe, whose other end it holds too, so it would
    never see the end of a SIGKILLed caller and would outlive it with its jsii kernel.
    multiprocessing gives each spawned process its parent's sentinel (readable once the parent
    exits); a daemon thread waits on it.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = multiprocessing.parent_process()
    if parent is not None:
        sentinel = parent.sentinel

        def watch() -> None:
            multiprocessing.connection.wait([sentinel])
            os._exit(1)

        threading.Thread(target=watch, name="slurmgen-parent-watch", daemon=True).start()
    _WORKER_CATALOG[:] = [load_catalog(site_csv)]
    from . import render  # noqa: F401  (imports cdk8s, which starts this worker's jsii kernel)


def _render_in_worker(spec: ClusterSpec, crd_dir: Path | None) -> Rendered:
    """One cluster rendered in a worker, with that render's timings."""
    from .render import render_cluster

    stopwatch = Stopwatch()
    rendered = render_cluster(spec, _WORKER_CATALOG[0], crd_dir, stopwatch)
    rendered.timings = dict(stopwatch.timings)
    return rendered


def _store(rendered: Sequence[Rendered], specs: Mapping[str, ClusterSpec], keys: Mapping[str, str],
           spec_data: Mapping[str, dict]) -> None:
    """Keep each cluster that passed every check in the render cache, under its inputs' key."""
    for r in rendered:
        source = specs[r.name].source
        if not r.problems and source in keys and source in spec_data:
            render_cache.store(Path(source).stem, keys[source], r.files, r.texts, spec_data[source],
                               collisions.keys(r.files))
