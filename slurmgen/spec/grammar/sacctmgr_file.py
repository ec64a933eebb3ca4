"""The sacctmgr flat file (`sacctmgr load`) as sacctmgr reads it, for the free text we put in it.

SchedMD/slurm slurm-26-05-3-1 src/sacctmgr/file_functions.c:
- _get_next_line: the same comment, continuation and escape rules as slurm.conf (a `#` not escaped
  cuts the line; an odd number of trailing backslashes joins the next line; every backslash is
  removed, keeping the character after it).
- load_sacctmgr_cfg_file: the object is the text before the first `-`; the options start after the
  next space.
- _parse_options / _parse_option: options are separated by `:` (a `:` after a `/` inside the option is
  part of a typed TRES, _is_colon_typed_tres); `'` or `"` opens a quote that runs to the same quote,
  past a `:`.
- src/sacctmgr/common.c strip_quotes: a leading quote is removed with its closing one; leading and
  trailing whitespace (C isspace) is trimmed; a quote inside becomes '`'; every option after the name
  is lowercased.

`read_option` gives the value sacctmgr stores for one `Key='value'` option we write, and
`read_back` refuses text that would not be stored as written (case aside).
"""

from __future__ import annotations

from . import Unreadable, odd_space
from .slurm_conf import strip_comment

_SPACE = " \t\n\v\f\r"


def _strip_escapes(line: str) -> str:
    out, i = [], 0
    while i < len(line):
        if line[i] == "\\":
            i += 1
            if i >= len(line):
                break
        out.append(line[i])
        i += 1
    return "".join(out)


def _typed_tres(text: str, start: int, colon: int) -> bool:
    """file_functions.c _is_colon_typed_tres: a `:` after a `/` (gres/gpu:a100=4) is no separator."""
    for char in reversed(text[start:colon]):
        if char in "=,:\"'":
            return False
        if char == "/":
            return True
    return False


def _strip_quotes(option: str, lower: bool) -> str:
    """common.c strip_quotes."""
    quote = option[:1] if option[:1] in ("'", '"') else ""
    body = option[1:] if quote else option
    body = body.lstrip(_SPACE)
    out = []
    for char in body:
        if quote and char == quote:
            break
        out.append("`" if char in "'\"" else (char.lower() if lower else char))
    return "".join(out).rstrip(_SPACE)


def options(line: str) -> list[tuple[str, str]]:
    """(key, value) of each option of one flat-file line after the object and name (`QOS - 'x':A='b'`);
    the name comes first with key ''. Comments, a trailing continuation and escapes are applied first."""
    text = _strip_escapes(strip_comment(line))  # the same rule as slurm.conf's
    start = text.find("-")
    if start < 0:
        return []
    rest = text[text.find(" ", start) + 1:] if " " in text[start:] else ""
    out: list[tuple[str, str]] = []
    i, first = 0, True
    while i < len(rest):
        begin, quote = i, ""
        while i < len(rest) and rest[i] != "\n":
            if rest[i] == ":" and not _typed_tres(rest, begin, i):
                break
            if rest[i] in "'\"":
                quote = "" if quote == rest[i] else (quote or rest[i])
            i += 1
        if quote:
            closing = rest.find(quote, i)
            if closing < 0:
                raise Unreadable("has an unclosed quote, and sacctmgr stops the whole load")
            i = closing + 1
        option = rest[begin:i]
        key, sep, value = option.partition("=")
        out.append(("", _strip_quotes(option, False)) if not sep else (key, _strip_quotes(value, not first)))
        first = False
        if i < len(rest) and rest[i] == ":":
            i += 1
        else:
            break
    return out


def read_back(field: str, text: str) -> str:
    """The value sacctmgr stores when we write `Field='text'` among other options; Unreadable when it
    would store something else than `text` (lowercased, as sacctmgr lowercases every option)."""
    if found := odd_space(text):
        raise Unreadable(f"holds {found}, which sacctmgr keeps as part of the text; use a plain space")
    line = f"Account - 'name':{field}='{text}':Fairshare=1"
    stored = dict(options(line)).get(field)
    if "\\" in text:
        raise Unreadable("holds '\\', which sacctmgr removes as an escape (and, at the end of a line, reads as "
                         "a continuation); remove it")
    if stored != text.lower():
        raise Unreadable("sacctmgr would store it otherwise (it trims surrounding spaces, turns quotes into '`' and "
                         "cuts at ':' or '#'); remove them")
    return stored
