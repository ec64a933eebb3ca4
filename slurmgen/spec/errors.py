"""Problems found in a spec, reported one line each as `FILE: field.path: what is wrong`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong with one spec file, with the field path and the fix."""

    file: str
    path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.path}: " if self.path else ""
        return f"{self.file}: {where}{self.message}"


class SpecError(Exception):
    """Raised when one or more spec files are invalid; carries every problem, not just the first."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


def dotted(parts: Iterable[object]) -> str:
    """Render a JSON path like ['nodesets', 0, 'name'] as 'nodesets[0].name'."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out
