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
from typing import Iterable, Iterator, Sequence

from . import guards, verify
from .build import RenderedCluster, render
from .output import dump, read_tree, replace_dir
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
        return {rel: dump(obj) for rel, obj in cluster.files.items()}

    def guard(self, out: Path, allow: Iterable[str] = ()) -> list[str]:
        """Destructive changes against the trees in `out/` that `allow` (KIND/NAME) does not approve."""
        allowed = set(allow)
        lines: list[str] = []
        for cluster in self.clusters:
            old = guards.read_objects(out / cluster.spec.name)
            for change in guards.destructive_changes(cluster.spec.name, old, cluster.files.values()):
                if change.key not in allowed:
                    lines.append(str(change))
        return lines

    def orphans(self, out: Path) -> list[str]:
        """Cluster folders in `out/` that no spec renders any more (left in place: they hold stateful objects)."""
        names = {c.spec.name for c in self.clusters}
        if not out.is_dir():
            return []
        return sorted(p.name for p in out.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name not in names)

    def write(self, out: Path) -> None:
        """Replace `out/<cluster>/` for every rendered cluster; other folders are left alone."""
        for cluster in self.clusters:
            replace_dir(out / cluster.spec.name, cluster.files)

    def compare(self, out: Path) -> list[str]:
        """Readable drift between this render and `out/`: one line per file, then a short diff."""
        lines: list[str] = []
        for cluster in self.clusters:
            root = out / cluster.spec.name
            new, old = self.texts(cluster), read_tree(root)
            for rel in sorted(set(new) | set(old)):
                if rel not in old:
                    lines.append(f"added:   {root / rel}")
                elif rel not in new:
                    lines.append(f"removed: {root / rel}")
                elif new[rel] != old[rel]:
                    diff = list(difflib.unified_diff(old[rel].splitlines(), new[rel].splitlines(), lineterm="", n=0))
                    changed = [d for d in diff[2:] if not d.startswith("@@")]
                    lines.append(f"changed: {root / rel} ({len(changed)} line(s))")
                    lines += [f"    {d}" for d in changed[:6]]
        return lines


def run(spec_paths: Sequence[Path], *, crd_dir: Path | None = None) -> Result:
    """Load, render and verify; raise InputError with every problem found."""
    if not spec_paths:
        raise InputError(["no spec files: add clusters/<name>.yaml or pass --spec FILE"])
    result = Result(clusters=())
    with result.timer("load"):
        try:
            specs = load_specs(spec_paths)
        except SpecError as err:
            raise InputError(str(p) for p in err.problems) from None
    with result.timer("render"):
        clusters = render(specs)
    with result.timer("checks"):
        problems = verify.static_checks(clusters)
    with result.timer("validate"):
        try:
            problems += verify.schema_checks(clusters, crd_dir=crd_dir)
        except verify.SchemaUnavailable as err:
            raise InputError([f"cannot validate the rendered objects: {err}"]) from None
    if problems:
        raise InputError(problems)
    return Result(clusters=tuple(clusters), timings=result.timings)
