"""slurm.conf lines (and the `slurmd --conf` string, and partition lines) as Slurm reads them.

SchedMD/slurm slurm-26-05-3-1 src/common/parse_config.c:
- _get_next_line: per physical line, `_strip_comments` cuts at the first `#` not preceded by an odd
  number of backslashes; `_strip_continuation` then joins the next line when the line (trailing
  whitespace aside) ends in an odd number of backslashes, dropping one backslash and the newline and
  adding no space; `_strip_escapes` finally removes every backslash, keeping the character after it.
- keyvalue_pattern (POSIX ERE, C locale): `^[[:space:]]*([[:alnum:]_.]+)[[:space:]]*([-*+/]?)=[[:space:]]*
  (("([^"]*)")|([^[:space:]]+))([[:space:]]|$)`: a key, an optional operator, `=`, and a value that
  is either quoted (whitespace allowed) or a run of non-whitespace. Keys compare case-insensitively
  (_conf_hashtbl_index). `[[:space:]]` is C isspace(): a no-break space is part of a value.
- s_p_parse_file/_parse_next_key: a global line holds one key; whatever follows it must be
  whitespace, else "Parse error". Entity lines (PartitionName=, NodeName=, NodeSet=, DownNodes=) read
  the rest of the line as their own keys (s_p_parse_line), and stop at the first text that is no
  `Key=Value`, which is then the same parse error.

`read_line` gives the tokens of one line we write, and refuses (Unreadable) what Slurm would read
differently from how it looks: a `#`, a backslash (an escape, or a continuation that joins the next
line), a quote that does not wrap a whole value, a character other than a plain space between
tokens, text that is no `Key=Value`, and a second key on a global line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import Unreadable, odd_space

ENTITY_KEYS = frozenset({"partitionname", "nodename", "nodeset", "downnodes", "frontendname"})
_SPACE = " \t\n\v\f\r"  # C isspace() in the C locale
_TOKEN = re.compile(r"[ \t\n\v\f\r]*([A-Za-z0-9_.]+)[ \t\n\v\f\r]*([-*+/]?)=[ \t\n\v\f\r]*"
                    r"(?:\"([^\"]*)\"(?=[ \t\n\v\f\r]|\Z)|([^ \t\n\v\f\r]+))")

COMMENT_FIX = "holds '#', where Slurm starts a comment and drops every key after it; remove it"
BACKSLASH_FIX = ("holds '\\', which Slurm removes as an escape, and at the end of a line joins the next "
                 "slurm.conf line onto this one; remove it")


@dataclass(frozen=True)
class Token:
    """One `Key=Value` as Slurm reads it (`op` is `+`, `-`, `*`, `/` or empty)."""

    key: str
    value: str
    op: str = ""

    @property
    def folded(self) -> str:
        """The key as Slurm compares it (case-insensitively)."""
        return self.key.casefold()


def _plain(text: str) -> None:
    """Refuse what makes the text read differently from how it looks, before any token is read."""
    if "#" in text:
        raise Unreadable(COMMENT_FIX)
    if "\\" in text:
        raise Unreadable(BACKSLASH_FIX)
    if found := odd_space(text):
        raise Unreadable(f"holds {found}, which Slurm reads as part of a value, not as a space; use a plain space")


def read_value(value: str) -> str:
    """One value we write unquoted after `Key=` (a partition or node parameter): it must read back as itself."""
    _plain(value)
    if '"' in value:
        raise Unreadable("holds '\"', which Slurm reads as a quote; remove it")
    if not value or any(c in _SPACE for c in value):
        raise Unreadable("Slurm reads a value up to the first space; give one word")
    return value


def strip_comment(line: str) -> str:
    """parse_config.c _strip_comments: the line up to the first `#` not escaped by an odd number of backslashes."""
    backslashes = 0
    for index, char in enumerate(line):
        if char == "#" and backslashes % 2 == 0:
            return line[:index]
        backslashes = backslashes + 1 if char == "\\" else 0
    return line


def scan(line: str) -> tuple[list[Token], int]:
    """The `Key=Value` tokens at the start of a line (comments already cut), as keyvalue_pattern reads
    them one after another, and the position where that reading stopped (len(line) when all of it
    was read). Slurm stops there too: what is left is its parse error."""
    tokens: list[Token] = []
    pos = 0
    while line[pos:].strip(_SPACE):
        match = _TOKEN.match(line, pos)
        if match is None:
            break
        key, op, quoted, bare = match.groups()
        tokens.append(Token(key, quoted if quoted is not None else bare, op))
        pos = match.end()
        if pos < len(line) and line[pos] not in _SPACE:
            break  # a quoted value with text right after it
    else:
        pos = len(line)
    return tokens, pos


def read_line(line: str) -> list[Token]:
    """The tokens of one line as Slurm reads it; Unreadable when it would read them differently."""
    _plain(line)
    tokens, stopped = scan(line)
    if stopped < len(line):
        after = f"what follows {tokens[-1].key}=" if tokens else "it"
        raise Unreadable(f"Slurm cannot read {after} as Key=Value (a parse error that stops slurmctld)")
    for token in tokens:
        if '"' in token.value:  # a quoted value holds none: this one is bare, its quotes kept
            raise Unreadable(f"the value of {token.key} holds '\"' that does not wrap the whole value; quote the "
                             "whole value or remove it")
    if len(tokens) > 1 and tokens[0].folded not in ENTITY_KEYS:
        raise Unreadable(f"Slurm reads one Key=Value on a {tokens[0].key} line and refuses the rest; "
                         "write each on its own line")
    return tokens
