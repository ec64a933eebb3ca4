"""sshd_config as sshd reads it (openssh-portable V_9_2_P1 to V_10_2_P1: the code below is the same in both).

- servconf.c load_server_config: the file is cut at `\\n` and each line loses its leading spaces, tabs
  and CRs; there is no line continuation.
- servconf.c process_server_config_line_depth: trailing whitespace and form feeds go; the keyword is
  the first `strdelim` token, read again when it is empty; a keyword starting with `#` makes a comment;
  a keyword without arguments is an error; the arguments are `argv_split(rest, terminate_on_comment)`,
  and unbalanced quotes there are an error ("invalid quotes"). Keywords are compared case-insensitively
  (parse_token, strcasecmp).
- misc.c strdelim_internal: a token ends at whitespace (" \\t\\r\\n"), `"` or one `=`; a `"` is removed
  and the token runs to the next `"`, whitespace included; an unmatched `"` makes sshd skip the line
  silently. So `"Match" all` is `Match all`, `""Match all` too, and `Ma""tch all` is keyword `Ma`.
- misc.c argv_split: arguments split on space and tab; `'` and `"` quote; a backslash escapes a quote,
  a backslash, and (outside quotes) a space; a `#` starting an argument ends the line.

`read` gives what sshd reads, and refuses (Unreadable) a line whose keyword is quoted, escaped or cut
(what it looks like is not what sshd looks up) and a line sshd itself refuses (unbalanced quotes, no
argument), so a check sees exactly the keyword sshd acts on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import Unreadable, odd_space

WHITESPACE = " \t\r\n"
_DELIMITERS = WHITESPACE + '"='
_PLAIN_KEYWORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?=[ \t=]|\Z)")


@dataclass(frozen=True)
class Line:
    """One directive as sshd reads it: its line number (1-based), keyword as written and arguments."""

    number: int
    keyword: str
    args: tuple[str, ...]

    @property
    def key(self) -> str:
        """The keyword as sshd compares it (case-insensitively)."""
        return self.keyword.casefold()


def strdelim(text: str) -> tuple[str | None, str | None]:
    """misc.c strdelim_internal(split_equals=1): (token, rest). rest is None when no delimiter follows;
    token is None for an unmatched quote (sshd then ignores the whole line)."""
    index = next((i for i, c in enumerate(text) if c in _DELIMITERS), None)
    if index is None:
        return text, None
    if text[index] == '"':
        unquoted = text[:index] + text[index + 1:]
        end = unquoted.find('"', index)
        if end < 0:
            return None, None
        return unquoted[:end], unquoted[end + 1:].lstrip(WHITESPACE)
    rest = text[index + 1:].lstrip(WHITESPACE)
    if text[index] != "=" and rest.startswith("="):
        rest = rest[1:].lstrip(WHITESPACE)
    return text[:index], rest


def argv_split(text: str) -> list[str]:
    """misc.c argv_split(terminate_on_comment=1); Unreadable for unbalanced quotes (sshd: "invalid quotes")."""
    args: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] in " \t":
            i += 1
            continue
        if text[i] == "#":
            break
        quote, arg = "", []
        while i < n:
            char = text[i]
            if char == "\\" and i + 1 < n and (text[i + 1] in "'\"\\" or (not quote and text[i + 1] == " ")):
                i += 1
                arg.append(text[i])
            elif not quote and char in " \t":
                break
            elif not quote and char in "'\"":
                quote = char
            elif quote and char == quote:
                quote = ""
            else:
                arg.append(char)
            i += 1
        if quote:
            raise Unreadable("has an unclosed quote, and sshd refuses the whole file (\"invalid quotes\")")
        args.append("".join(arg))
        i += 1
    return args


def read_line(raw: str, number: int = 1) -> Line | None:
    """One line as sshd reads it: None for a blank or comment line; Unreadable when sshd would read a
    keyword other than the one written (quoted, escaped, cut by a quote) or refuse the line."""
    line = raw.lstrip(" \t\r").rstrip(WHITESPACE + "\f")
    if not line:
        return None
    if found := odd_space(line):
        raise Unreadable(f"holds {found}, which sshd does not read as a space")
    keyword, rest = strdelim(line)
    if keyword == "":
        keyword, rest = strdelim(rest or "")
    if keyword is None:
        raise Unreadable("starts with an unclosed quote, so sshd skips the line without a word")
    if not keyword or keyword.startswith("#"):
        return None
    written = _PLAIN_KEYWORD.match(line)
    if written is None or written.group(0) != keyword:
        raise Unreadable(f"sshd reads the keyword as {keyword!r}, not as it looks (it removes a '\"' and runs the "
                         "keyword to the next one; it keeps a \"'\"); write the keyword plainly, letters only")
    if not rest:
        raise Unreadable(f"{keyword} has no argument, and sshd refuses the whole file")
    return Line(number, keyword, tuple(argv_split(rest)))


def read(text: str) -> list[Line]:
    """Every directive of a file, in order (blank and comment lines left out); Unreadable, with the line
    number, at the first line that cannot be read unambiguously."""
    lines: list[Line] = []
    for number, raw in enumerate(text.split("\n"), start=1):
        try:
            line = read_line(raw, number)
        except Unreadable as err:
            raise Unreadable(f"line {number}: {err}") from None
        if line is not None:
            lines.append(line)
    return lines
