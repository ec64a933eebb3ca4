"""The whole run as one function: specs -> model -> render -> verify -> result to write or compare.

Nothing touches the output folder until every cluster has rendered and verified, so an invalid
spec or a failed check leaves `dist/` exactly as it was.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from . import verify
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

    @property
    def object_count(self) -> int:
        return sum(len(c.files) for c in self.clusters)

    def texts(self, cluster: RenderedCluster) -> dict[str, str]:
        return {rel: dump(obj) for rel, obj in cluster.files.items()}

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
    try:
        specs = load_specs(spec_paths)
    except SpecError as err:
        raise InputError(str(p) for p in err.problems) from None
    clusters = render(specs)
    problems = verify.verify(clusters, crd_dir=crd_dir)
    if problems:
        raise InputError(problems)
    return Result(clusters=tuple(clusters))
