"""The whole run as one function: specs -> model -> render -> verify -> result to write or compare.

Nothing touches the output folder until every cluster has rendered and verified, so an invalid
spec or a failed check leaves `dist/` exactly as it was.
"""

from __future__ import annotations

import difflib
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Sequence

import importlib
from concurrent.futures import ThreadPoolExecutor

from . import guards, verify
from .slurmconf import checks as slurmconf_checks
from .output import NOT_A_FILE, dump, read_tree, write_all
from .catalog.catalog import CatalogError, InstanceType, load_catalog, site_catalog_path
from .rendered import RenderedCluster
from .spec import SpecError, load_specs


class InputError(Exception):
    """Invalid input or output that failed verification: one line per problem, exit status 2."""

    def __init__(self, lines: Iterable[str]) -> None:
        self.lines = list(lines)
        super().__init__("\n".join(self.lines))


@dataclass(frozen=True)
class Result:
    clusters: tuple[RenderedCluster, ...]
    timings: dict[str, float] = field(default_factory=dict)  # step -> seconds, in run order
    rendered_texts: dict[str, dict[str, str]] = field(default_factory=dict)  # cluster -> path -> YAML
    catalog: Mapping[str, InstanceType] | None = None  # the one the specs were checked and rendered with
    bases: dict[Path, dict] = field(default_factory=dict)  # out/<cluster> -> its objects, read once

    def base(self, root: Path) -> dict:
        """The objects of the tree a write would replace (path -> object), read once per run."""
        if root not in self.bases:
            self.bases[root] = guards.read_tree(root)
        return self.bases[root]

    @contextmanager
    def timer(self, step: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timings[step] = self.timings.get(step, 0.0) + time.perf_counter() - start

    def timing_lines(self) -> list[str]:
        total = sum(self.timings.values()) or 1.0
        return [f"{step:>10}: {secs * 1000:8.1f} ms ({secs / total:5.1%})" for step, secs in self.timings.items()]

    @property
    def object_count(self) -> int:
        return sum(len(c.files) for c in self.clusters)

    def texts(self, cluster: RenderedCluster) -> dict[str, str]:
        cached = self.rendered_texts.get(cluster.spec.name)
        return cached if cached is not None else {rel: dump(obj) for rel, obj in cluster.files.items()}

    def guard(self, out: Path, allow: Iterable[str] = ()) -> list[str]:
        """Destructive changes against the trees in `out/` that `allow` does not approve.

        Raises guards.BadApproval for an approval that is ambiguous or matches nothing, and
        guards.UnreadableTree when a previous tree cannot be read (its objects cannot be checked).
        """
        changes = [change for cluster in self.clusters
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

    def write(self, out: Path) -> None:
        """Replace `out/<cluster>/` for every rendered cluster, all or nothing; other folders are left alone.

        Raises output.OutputError when `out` (or a cluster folder in it) is not ours, OSError when
        the file system fails.
        """
        write_all(out, {cluster.spec.name: self.texts(cluster) for cluster in self.clusters})

    def compare(self, out: Path) -> list[str]:
        """Readable drift between this render and `out/`: one line per file, then a short diff."""
        lines: list[str] = []
        for cluster in self.clusters:
            root = out / cluster.spec.name
            new, old = self.texts(cluster), read_tree(root)
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
    found = sorted({p for p in (site_catalog_path(path.parent) for path in spec_paths) if p is not None})
    if len(found) > 1:
        raise InputError([f"{', '.join(map(str, found))}: specs from folders with different instance-types.csv; "
                          "render them in separate runs"])
    try:
        return load_catalog(found[0] if found else None)
    except CatalogError as err:
        raise InputError([str(err)]) from None


def run(spec_paths: Sequence[Path], *, crd_dir: Path | None = None,
        catalog: Mapping[str, InstanceType] | None = None) -> Result:
    """Load, render and verify; raise InputError with every problem found.

    `catalog` defaults to the packaged one plus the specs' folder's instance-types.csv (site_catalog).
    """
    if not spec_paths:
        raise InputError(["no spec files: add clusters/<name>.yaml or pass --spec FILE"])
    result = Result(clusters=())
    # Starting cdk8s (a Node.js process loading its assemblies) and building the validators is
    # mostly waiting or independent work: it runs beside spec loading and rendering.
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="slurmgen") as pool:
        builder = pool.submit(importlib.import_module, "slurmgen.build")
        with result.timer("load"):
            catalog = catalog if catalog is not None else site_catalog(spec_paths)
            try:
                specs = load_specs(spec_paths, catalog=catalog)
            except SpecError as err:
                raise InputError(str(p) for p in err.problems) from None
        prepared = [pool.submit(verify.prepare, crd_dir, version)
                    for version in sorted({s.aws.kubernetes_version for s in specs})]
        # While the main thread waits on jsii for cluster n+1, a worker checks, validates and dumps
        # cluster n (jsii's pipe reads release the GIL).
        clusters: list[RenderedCluster] = []
        jobs = []
        with result.timer("cdk8s start"):
            build = builder.result()  # imported beside spec loading; waits only for what is left
        with result.timer("render"):
            for cluster in build.render_each(specs, catalog):
                clusters.append(cluster)
                jobs.append(pool.submit(_check, cluster, crd_dir, prepared, result, catalog))
        with result.timer("finish checks"):
            try:
                checked = [job.result() for job in jobs]
            except verify.SchemaUnavailable as err:
                raise InputError([f"cannot validate the rendered objects: {err}"]) from None
    problems = [line for lines, _ in checked for line in lines]
    if problems:
        raise InputError(problems)
    texts = {cluster.spec.name: text for cluster, (_, text) in zip(clusters, checked)}
    return Result(clusters=tuple(clusters), timings=result.timings, rendered_texts=texts, catalog=catalog)


def _check(cluster: RenderedCluster, crd_dir: Path | None, prepared: list, result: Result,
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
