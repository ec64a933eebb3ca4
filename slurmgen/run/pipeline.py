"""The whole run as one function: specs -> model -> render -> verify -> result to write or compare.

Nothing touches the output folder until every cluster has rendered and verified, so an invalid
spec or a failed check leaves `dist/` exactly as it was.
"""

from __future__ import annotations

import difflib
import importlib
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from . import cache as render_cache, parallel
from ..verify import collisions, fsx_size, guards
from ..errors import UserError
from ..catalog.catalog import CatalogError, InstanceType, load_catalog
from .launch import Launch, launch, site_csvs
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
        processes: int | None = None, launched: Launch | None = None, fleet: Sequence[Path] = ()) -> Result:
    """Load, render and verify; raise InputError with every problem found.

    `catalog` defaults to the packaged one plus the specs' folder's instance-types.csv (site_catalog).
    With `use_cache`, a cluster whose inputs are unchanged is taken from the render cache (cache.py)
    instead of rendered; it is off with `crd_dir` or a caller's own `catalog` (not in the key).
    The clusters left to render are shared among `processes` processes (default: parallel.choose_processes).
    `launched` is that first step (launch.launch) when the caller took it already, with the same
    `use_cache` as here (the command line does, to start the workers before importing this module).
    `fleet` are the repository's other spec files (cli.fleet_files): loaded, never rendered, so that
    what must be unique across the fleet (collisions.TABLE) is compared with them too.
    """
    if not spec_paths:
        raise InputError(["no spec files: add clusters/<name>.yaml or pass --spec FILE"])
    own_catalog = catalog is None
    use_cache = use_cache and own_catalog and crd_dir is None
    started = launched or launch(spec_paths, use_cache=use_cache, own_catalog=own_catalog, processes=processes)
    stopwatch = Stopwatch(dict(started.timings))
    with started.workers as workers, ThreadPoolExecutor(max_workers=1, thread_name_prefix="slurmgen") as early:
        if started.likely and not workers.pools:
            # One process with clusters to render: start cdk8s (its Node kernel) while the specs load.
            # Not with workers: the import would hold the GIL while the specs load, and the warmed-up
            # workers would wait for their shares (measured: ~0.15 s).
            early.submit(importlib.import_module, "slurmgen.run.render")
        entries = _cache_entries(started.keys, stopwatch) if use_cache else {}
        with stopwatch.timer("load"):
            catalog = catalog if catalog is not None else site_catalog(spec_paths)
            specs, spec_data = _load(spec_paths, catalog, entries, use_cache)
        with stopwatch.timer("fleet"):
            fleet_notes = _fleet_problems(specs, fleet, catalog)
        cached = {s.name: entries[s.source] for s in specs if s.source in entries}
        misses = [s for s in specs if s.name not in cached]
        rendered, notes = _render(misses, workers, catalog, started.site_csv, crd_dir, stopwatch)
    by_name = {s.name: s for s in specs}
    problems = [line for r in sorted(rendered, key=lambda r: r.name) for line in r.problems]
    if use_cache:
        with stopwatch.timer("cache"):
            _store(rendered, by_name, started.keys, spec_data)
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


def _cache_entries(keys: Mapping[str, str], stopwatch: Stopwatch) -> dict[str, render_cache.Entry]:
    """spec source -> its render cache entry, for the specs that have one. Read before the specs: a
    hit carries the spec data that passed every check from exactly these inputs (the key covers
    them), so that spec is built, not checked again."""
    entries: dict[str, render_cache.Entry] = {}
    with stopwatch.timer("cache"):
        for source, key in keys.items():
            entry = render_cache.load(Path(source).stem, key)
            if entry is not None:
                entries[source] = entry
    return entries


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


def _render(specs: Sequence[ClusterSpec], workers: parallel.Workers, catalog: Mapping[str, InstanceType],
            site_csv: Path | None, crd_dir: Path | None, stopwatch: Stopwatch) -> tuple[list[Rendered], list[str]]:
    """Render `specs`: this process and the workers take them one at a time (parallel.Claims). What a
    worker that ended abruptly (killed, out of memory) took and never handed back is rendered here,
    so the run still gives every cluster, the same bytes. Returns the clusters and what the user
    should be told."""
    order = parallel.heaviest_first(specs)
    futures = workers.render(order, site_csv, crd_dir)
    if not order:
        return [], []
    try:
        # kept to a CPU of its own with the kernel the import starts (parallel.cpu_for)
        with parallel.kept_to(parallel.cpu_for(0, workers.processes)):
            with stopwatch.timer("cdk8s start"):
                render = importlib.import_module("slurmgen.run.render")
            done = render.render_all(workers.claims.each(order), catalog, crd_dir, stopwatch)
        with stopwatch.timer("wait for workers"):
            from_workers, lost = parallel.collect(futures)
        have = {r.name for r in done + from_workers}
        done += render.render_all([s for s in order if s.name not in have], catalog, crd_dir, stopwatch)
    except SchemaUnavailable as err:
        raise InputError([f"cannot validate the rendered objects: {err}"]) from None
    for r in from_workers:
        for step, secs in r.timings.items():
            stopwatch.timings[f"worker {step}"] = stopwatch.timings.get(f"worker {step}", 0.0) + secs
    return done + from_workers, [f"{lost}; its clusters were rendered by the main process"] if lost else []


def _store(rendered: Sequence[Rendered], specs: Mapping[str, ClusterSpec], keys: Mapping[str, str],
           spec_data: Mapping[str, dict]) -> None:
    """Keep each cluster that passed every check in the render cache, under its inputs' key."""
    for r in rendered:
        source = specs[r.name].source
        if not r.problems and source in keys and source in spec_data:
            render_cache.store(Path(source).stem, keys[source], r.files, r.texts, spec_data[source],
                               collisions.keys(r.files))
