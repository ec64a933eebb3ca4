"""sssd.conf as sssd reads it: ding-libs' ini parser with the flags sssd gives it.

SSSD/sssd src/util/sss_ini.c (2.8.2 to 2.13.1, the same call): ini_config_parse(..., INI_STOP_ON_ANY,
INI_MV1S_OVERWRITE, INI_PARSE_NOWRAP, ...). SSSD/ding-libs 0.6.2 ini/ini_parse.c:
- parser_read: a line ends at `\\n`; trailing CRs and LFs go.
- check_for_comment: a line that is empty or starts (in its first byte: no space before) with `;` or
  `#` is a comment; so are `//` lines and `/* ... */` blocks (INI_PARSE_NO_C_COMMENTS is not set),
  which run to a line ending in `*/`. A `;` or `#` later in a line is part of the value.
- handle_space with INI_PARSE_NOWRAP: a line starting with whitespace is not a continuation but a
  key line of its own (or a comment when blank).
- handle_kvp: the key runs to the first `=`, both trimmed with C isspace(); the value is the rest,
  trimmed; a no-break space is not isspace(), so it stays in the key or value.
- handle_section: `[name]`.
- ding-libs' collection refuses a key holding anything but printable ASCII (a tab, a byte >= 0x80):
  the parse fails with EINVAL (found by tests/deep/test_consumer_grammars.py against libini_config).
- INI_MV1S_OVERWRITE: a key given twice in a section keeps its last value.

`read` gives (section, key, value, line) for every key of a file; `read_value` refuses a value we
write after `key = ` that sssd would read back differently.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import Unreadable, odd_space

_SPACE = " \t\n\v\f\r"


@dataclass(frozen=True)
class Entry:
    """One `key = value` as sssd reads it."""

    section: str
    key: str
    value: str
    line: int


def _comment(line: str, inside: bool) -> tuple[bool, bool]:
    """(is a comment line, inside a C comment afterwards): ini_parse.c check_for_comment."""
    end = line.rstrip(_SPACE)
    if inside:
        return True, not (len(end) > 2 and end.endswith("*/"))
    if line == "" or line[0] in ";#":
        return True, False
    if line.startswith("//"):
        return True, False
    if line.startswith("/*"):
        return True, not (len(end) > 3 and end.endswith("*/"))
    return False, False


def read(text: str) -> list[Entry]:
    """Every key line of an sssd.conf, in order; Unreadable for a line sssd refuses (no `=`, a bad section)."""
    entries: list[Entry] = []
    section, inside = "", False
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.rstrip("\r\n")
        comment, inside = _comment(line, inside)
        if comment:
            continue
        if line.strip(_SPACE) == "":
            continue
        if line[0] == "[":
            name = line.rstrip(_SPACE)
            if not name.endswith("]") or not name[1:-1].strip(_SPACE):
                raise Unreadable(f"line {number}: a section line must end in ']' and name a section, or sssd "
                                 "refuses the file")
            section = name[1:-1].strip(_SPACE)
            continue
        body = line.lstrip(_SPACE)
        key, sep, value = body.partition("=")
        if not sep or not key.strip(_SPACE):
            raise Unreadable(f"line {number}: no `key = value`, and sssd refuses the file")
        key = key.strip(_SPACE)
        if any(not " " <= c <= "~" for c in key):
            raise Unreadable(f"line {number}: the key holds a character other than printable ASCII (a tab, a no-break "
                             "space, a letter with an accent), and sssd refuses the file")
        entries.append(Entry(section, key, value.strip(_SPACE), number))
    if inside:
        raise Unreadable("a /* comment is never closed, and sssd refuses the file")
    return entries


def read_value(value: str) -> str:
    """A value we write after `key = `: it must read back as itself."""
    if found := odd_space(value):
        raise Unreadable(f"holds {found}, which sssd keeps as part of the value; use a plain space")
    if value != value.strip(_SPACE):
        raise Unreadable("starts or ends with whitespace, which sssd removes; remove it")
    if not value:
        raise Unreadable("is empty: sssd ignores a key without a value")
    return value
