"""The one error every stage raises for what the user must fix: the command prints its lines and exits.

A stage never prints and never exits: it raises `UserError` (or a subclass naming the stage's
problem) with one line per problem, and `cli` prints them, paths relative to the current folder,
and returns `status`. `--check` reads some of them as drift: those say `status = 1` and `stdout`.
"""

from __future__ import annotations

from typing import Iterable


class UserError(Exception):
    """Invalid input, or output that may not be written: one line per problem, every problem at once.

    Exit status 2 unless a subclass or the raiser says otherwise; nothing has been written."""

    status = 2
    stdout = False  # where the lines go: stderr, except for --check's drift report

    def __init__(self, lines: str | Iterable[str], *, status: int | None = None, stdout: bool | None = None) -> None:
        self.lines: list[str] = [lines] if isinstance(lines, str) else list(lines)
        if status is not None:
            self.status = status
        if stdout is not None:
            self.stdout = stdout
        super().__init__("\n".join(self.lines))
