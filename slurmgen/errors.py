"""The one error every stage raises for what the user must fix: the command prints its lines and exits.

A stage never prints and never exits: it raises `UserError` (or a subclass naming the stage's
problem) with one line per problem, and `cli` prints them, paths relative to the current folder,
and returns `status`. `--check` reads some of them as drift: those say `status = 1` and `stdout`.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
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


@dataclass(frozen=True, order=True)
class Problem:
    """One thing the user must fix, printed as one line `WHERE[:LINE]: PATH: WHAT` by every stage.

    `where` is what holds the fault: a spec file, a file of dist/ as `<cluster>/<path>`, or a rendered
    object as `Kind namespace/name`. `line` (1-based) is where that file writes the field, when known:
    the form editors and CI annotations jump to. `path` is the field inside `where` ('' for all of it).
    `what` says what is wrong; `fix` what to do about it, shown after it (`WHAT; FIX`); a stage whose
    message reads as one sentence keeps both in `what`. `check` names the check that found it, when the
    stage names its checks (slurm_files.CHECKS); it is not shown."""

    where: str
    path: str
    what: str
    line: int | None = None
    fix: str = field(default="", compare=False)
    check: str = field(default="", compare=False)

    @property
    def message(self) -> str:
        """What is wrong and the fix, without where: `WHAT; FIX`."""
        return f"{self.what}; {self.fix}" if self.fix else self.what

    def __str__(self) -> str:
        path = f"{self.path}: " if self.path else ""
        at = f":{self.line}" if self.line is not None else ""
        return printable(f"{self.where}{at}: {path}{self.message}")


def lines(problems: Iterable[Problem]) -> list[str]:
    """The lines a stage raises or prints: one per problem."""
    return [str(p) for p in problems]


#: Characters that show as nothing yet are not control or format characters: Unicode's
#: Default_Ignorable_Code_Point (DerivedCoreProperties.txt) outside category Cf (the combining grapheme
#: joiner, the Hangul fillers, Khmer inherent vowels, Mongolian and other variation selectors), and
#: the Braille blank, which renders as a space that is none. Refused in spec text, escaped in output.
INVISIBLE = frozenset(chr(c) for c in (0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, *range(0x180B, 0x1810), 0x2800,
                                       0x3164, *range(0xFE00, 0xFE10), 0xFFA0, *range(0xE0100, 0xE01F0)))
_HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})
_ASCII_CONTROL = re.compile("[\x00-\x1f\x7f]")


def hidden(char: str) -> bool:
    """Whether `char` is a control, format, separator-of-lines, private, unassigned or invisible one."""
    return char in INVISIBLE or unicodedata.category(char) in _HIDDEN


def printable(line: str, keep: str = "") -> str:
    """`line` with every control, format or invisible character escaped (`\\x1b`, `\\u202e`) except those
    in `keep`: a spec's file name (a PR can add `clusters/<ESC>]0;...yaml`), `--out`, `--allow-destroy`
    or a file name in dist/ must not drive the terminal or CI log viewer that shows a message. The
    one escaper of every line slurmgen prints (cli wraps standard output and the error lines)."""
    if line.isascii():  # the usual case, in C: a summary of 60,000 characters costs nothing
        return _ASCII_CONTROL.sub(lambda found: found[0] if found[0] in keep else _escape(found[0]), line)
    return "".join(_escape(c) if c not in keep and hidden(c) else c for c in line)


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
