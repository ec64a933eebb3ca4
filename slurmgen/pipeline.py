"""The whole run as one function: specs -> model -> render -> verify -> result to write or compare.

Nothing touches the output folder until every cluster has rendered and verified, so an invalid
spec or a failed check leaves `dist/` exactly as it was.
"""

from __future__ import annotations

import difflib
import time
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Sequence

import importlib
from concurrent.futures import ThreadPoolExecutor

from . import cache as render_cache, collisions, guards, parallel, verify
from .plan import plan_cluster
from .slurmconf import checks as slurmconf_checks
from .output import NOT_A_FILE, dump, read_tree
from .catalog.catalog import CatalogError, InstanceType, load_catalog
from .launch import Launch, launch, site_csvs
from .rendered import RenderedCluster
from .spec import SpecError, load_specs


class InputError(Exception):
    """Invalid input or output that failed verification: one line per problem, exit status 2."""

    def __init__(self, lines: Iterable[str]) -> None:
        self.lines = list(lines)
        super().__init__("\n".join(self.lines))


@dataclass
class Stopwatch:
    """Seconds per step of a run, summed when a step runs several times (checks run per cluster).

    The dict is shared on purpose: the caller's Result, a worker's report and the CLI's write step
    add to the same one, in the order the steps first ran."""

    timings: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def timer(self, step: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timings[step] = self.timings.get(step, 0.0) + time.perf_counter() - start

    def lines(self) -> list[str]:
        total = sum(self.timings.values()) or 1.0
        return [f"{step:>10}: {secs * 1000:8.1f} ms ({secs / total:5.1%})" for step, secs in self.timings.items()]


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
        return cached if cached is not None else {rel: dump(obj) for rel, obj in cluster.files.items()}

    def guard(self, out: Path, allow: Iterable[str] = ()) -> list[str]:
        """Destructive changes against the trees in `out/` that `allow` does not approve.

        A cluster whose folder already holds exactly this render changes nothing and is not judged.
        Raises guards.BadApproval for an approval that is ambiguous or matches nothing, and
        guards.UnreadableTree when a previous tree cannot be read (its objects cannot be checked).
        """
        changes = [change for cluster in self.clusters if not self.unchanged(out, cluster)
                   for change in guards.destructive_changes(cluster.spec.name,
                                                            list(self.base(out / cluster.spec.name).values()),
                                                            cluster.files.values())]
        return [str(change) for change in guards.unapproved(changes, allow)]

    def sync_problems(self, out: Path) -> list[str]:
        """slurm.conf problems at a sync wave of the change from the trees in `out/` to this render
        (a partition naming a NodeSet not yet created or already pruned): one line each."""
        from .slurmconf.checks import blocking, wave_problems

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
        processes: int | None = None, launched: Launch | None = None) -> Result:
    """Load, render and verify; raise InputError with every problem found.

    `catalog` defaults to the packaged one plus the specs' folder's instance-types.csv (site_catalog).
    With `use_cache`, a cluster whose inputs are unchanged is taken from the render cache (cache.py)
    instead of rendered; it is off with `crd_dir` or a caller's own `catalog` (not in the key).
    The clusters left to render are shared among `processes` processes (default: parallel.choose_processes).
    `launched` is that first step (launch.launch) when the caller took it already, with the same
    `use_cache` as here (the command line does, to start the workers before importing this module).
    """
    if not spec_paths:
        raise InputError(["no spec files: add clusters/<name>.yaml or pass --spec FILE"])
    own_catalog = catalog is None
    use_cache = use_cache and own_catalog and crd_dir is None
    started = launched or launch(spec_paths, use_cache=use_cache, own_catalog=own_catalog, processes=processes)
    result = Stopwatch(dict(started.timings))
    site_csv, keys, likely = started.site_csv, started.keys, started.likely
    # Starting cdk8s (a Node.js process loading its assemblies) and building the validators is
    # mostly waiting or independent work: it runs beside spec loading and rendering; with the
    # cache on, unless every cluster has an entry. Worker processes are starting already
    # (warming up their jsii kernel and catalog) while this process loads the specs.
    # With as many rendering processes as CPUs, this thread (and the threads and kernel it starts)
    # keeps to one CPU until the results are in, each worker to another (parallel.cpu_for).
    with parallel.kept_to(parallel.cpu_for(0, started.workers.processes)), started.workers as workers, \
            ThreadPoolExecutor(max_workers=2, thread_name_prefix="slurmgen") as pool:
        # Start cdk8s now unless every cluster has a cache entry (that is then read and checked),
        # or workers wait for the specs: their clusters first (importing cdk8s here would hold the
        # GIL while the specs load: measured, the worker then sat idle ~0.15 s).
        maybe_all_cached = not likely
        early = not maybe_all_cached and not workers.pools
        builder = pool.submit(importlib.import_module, "slurmgen.build") if early else None
        # Entries are read before the specs: a hit carries the spec data that passed every check
        # from exactly these inputs (the key covers them), so that spec is built, not checked again.
        entries: dict[str, render_cache.Entry] = {}  # spec source -> entry
        if use_cache:
            with result.timer("cache"):
                for source, key in keys.items():
                    entry = render_cache.load(Path(source).stem, key)
                    if entry is not None:
                        entries[source] = entry
        spec_data: dict[str, dict] = {}  # spec source -> the data checked now, for the cache to keep
        with result.timer("load"):
            catalog = catalog if catalog is not None else site_catalog(spec_paths)
            try:
                specs = load_specs(spec_paths, catalog=catalog,
                                   validated={source: e.spec_data for source, e in entries.items()},
                                   data_out=spec_data if use_cache else None)
            except SpecError as err:
                raise InputError(str(p) for p in err.problems) from None
        cached: dict[str, RenderedCluster] = {}
        cached_texts: dict[str, dict[str, str]] = {}
        entry_keys: dict[str, tuple[str, str, str]] = {}  # cluster -> (entry label, key, spec source)
        if use_cache:
            with result.timer("cache"):
                for spec in specs:
                    if spec.source not in keys:
                        continue
                    entry_keys[spec.name] = (Path(spec.source).stem, keys[spec.source], spec.source)
                    entry = entries.get(spec.source)
                    if entry is not None:
                        cached[spec.name] = RenderedCluster(spec=spec, plans=plan_cluster(spec, catalog),
                                                            files=entry.files, shared_names=entry.shared_names)
                        cached_texts[spec.name] = entry.texts
        misses = [s for s in specs if s.name not in cached]
        # This process and the workers started above take the clusters to render one at a time
        # (a cache entry found unreadable renders too: no worker is started late).
        order = parallel.claim_order(misses)
        futures = workers.render(order, site_csv, crd_dir)
        if misses and builder is None:
            builder = pool.submit(importlib.import_module, "slurmgen.build")
        prepared = [pool.submit(verify.prepare, crd_dir, version)
                    for version in sorted({s.aws.kubernetes_version for s in misses})]
        # While the main thread waits on jsii for cluster n+1, a worker checks, validates and dumps
        # cluster n (jsii's pipe reads release the GIL).
        clusters: list[RenderedCluster] = []
        jobs = []
        notes: list[str] = []
        build = None
        if order:
            with result.timer("cdk8s start"):
                # imported beside spec loading, or (with workers) once they have their clusters
                build = builder.result() if builder is not None else importlib.import_module("slurmgen.build")
            with result.timer("render"):
                for spec in workers.claims.each(order):
                    cluster = build.render_one(spec, catalog)
                    clusters.append(cluster)
                    jobs.append(pool.submit(_check, cluster, crd_dir, prepared, result, catalog))
        with result.timer("finish checks"):
            try:
                from_workers, lost = parallel.collect(futures)
                # A worker that ended abruptly (killed, out of memory) took clusters it never
                # handed back (or died holding the claim counter): they render here, so the run
                # still gives every cluster, the same bytes.
                done = {c.spec.name for c in clusters} | {r.name for r in from_workers}
                missing = [s for s in order if s.name not in done]
                if lost:
                    notes.append(f"{lost}; its clusters were rendered by the main process")
                if missing:
                    build = build or importlib.import_module("slurmgen.build")
                    for spec in missing:
                        cluster = build.render_one(spec, catalog)
                        clusters.append(cluster)
                        jobs.append(pool.submit(_check, cluster, crd_dir, prepared, result, catalog))
                checked = [job.result() for job in jobs]
            except verify.SchemaUnavailable as err:
                raise InputError([f"cannot validate the rendered objects: {err}"]) from None
    by_spec = {s.name: s for s in specs}
    outcome: dict[str, tuple[RenderedCluster, list[str], dict[str, str]]] = {
        cluster.spec.name: (cluster, lines, text) for cluster, (lines, text) in zip(clusters, checked, strict=True)}
    for r in from_workers:
        outcome[r.name] = (RenderedCluster(spec=by_spec[r.name], plans=r.plans, files=r.files), r.problems, r.texts)
        for step, secs in r.timings.items():
            result.timings[f"worker {step}"] = result.timings.get(f"worker {step}", 0.0) + secs
    problems = [line for name in sorted(outcome) for line in outcome[name][1]]
    if use_cache:
        with result.timer("cache"):
            for name, (cluster, lines, text) in outcome.items():
                if not lines and name in entry_keys:
                    label, key, source = entry_keys[name]
                    if source in spec_data:
                        render_cache.store(label, key, cluster.files, text, spec_data[source],
                                           collisions.keys(cluster.files))
    if problems:
        raise InputError(problems)
    for name, cluster in cached.items():
        outcome[name] = (cluster, [], cached_texts[name])
    names = sorted(outcome)
    return Result(clusters=tuple(outcome[n][0] for n in names), timings=result.timings,
                  rendered_texts={n: outcome[n][2] for n in names}, catalog=catalog,
                  cached=frozenset(cached), notes=tuple(notes))


def _check(cluster: RenderedCluster, crd_dir: Path | None, prepared: list, result: Stopwatch,
           catalog: Mapping[str, InstanceType]) -> tuple[list[str], dict[str, str]]:
    """Checks, schema validation and YAML of one cluster: (problems, path -> text)."""
    for job in prepared:
        job.result()
    with result.timer("checks"):
        problems = verify.static_checks([cluster], catalog)
        problems += slurmconf_checks.blocking(slurmconf_checks.problems(cluster.spec.name, cluster.files))
    with result.timer("validate"):
        problems += verify.schema_checks([cluster], crd_dir=crd_dir)
    with result.timer("dump"):
        texts = {rel: dump(obj) for rel, obj in cluster.files.items()}
    return problems, texts
