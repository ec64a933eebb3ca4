"""No control characters in any string of a spec, no out-of-range number: decided here, once, for
every field and key.

Why centrally: JSON Schema `pattern` is a search, and Python's `$` also matches before a final
newline, so `^[a-z]+$` accepts "gpu\\n"; that newline would then reach a label value, an image
reference, a slurm.conf line or the sacctmgr file. Refusing line breaks, other C0/C1 controls,
Unicode line separators, invisible format characters (bidi overrides, zero-width) and the other
characters that show as nothing (variation selectors, Hangul fillers: errors.INVISIBLE) in every
string, before the schema runs, makes each pattern a whole-string match. Only the fields that
are whole files (MULTILINE) may hold line breaks and tabs. Numbers: every integer must fit the
fields it reaches (Slurm's uint32 limits and priorities, Kubernetes' int32/int64), so one range
for all; NaN and infinities are no value any consumer reads.
"""

from __future__ import annotations

import math
import unicodedata
from typing import Any, Callable, Iterator

from ..errors import INVISIBLE
from ._numbers import out_of_range
from .errors import dotted

# Fields whose value is a whole config file, written as-is into a Secret/ConfigMap: lines are expected.
MULTILINE = frozenset({("login", "sssdConf"), ("login", "extraSshdConfig")})
_LINE_OK = frozenset("\n\t")
_REFUSED = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
INT_MIN, INT_MAX = -(2 ** 31), 2 ** 32 - 2  # Slurm's uint32 fields reserve 0xFFFFFFFF (INFINITE)


def _bad_char(text: str, multiline: bool) -> tuple[int, str] | None:
    for index, char in enumerate(text):
        if multiline and char in _LINE_OK:
            continue
        if char in INVISIBLE or unicodedata.category(char) in _REFUSED:
            return index, char
    return None


def _describe(index: int, char: str) -> str:
    name = unicodedata.name(char, "")
    label = {"\n": "a line break", "\r": "a carriage return", "\t": "a tab"}.get(char) or name.lower() or "control"
    return f"U+{ord(char):04X} ({label}) at position {index}"


def unsafe_values(data: Any, path: tuple[Any, ...] = (),
                  text_only: Callable[[tuple[Any, ...]], bool] = lambda path: False,
                  string_range: Callable[[tuple[Any, ...]], dict[str, Any] | None] = lambda path: None,
                  ) -> Iterator[tuple[str, str]]:
    """Yield (field path, message) for each string (value or key) holding a refused character, each
    empty key, and each number out of range: an integer, or the number a text field spells (a
    duration, a TRES count: `string_range`, the schema's `x-range`). A number where only text is
    allowed (`text_only`: an unquoted 12-digit accountId) is left to the schema, whose line says to quote it."""
    if isinstance(data, dict):
        for key, value in data.items():
            if key == "":
                yield dotted(path) or "(top level)", "an empty key; remove it or name it"
                continue
            if isinstance(key, str) and (found := _bad_char(key, False)):
                yield dotted(path) or "(top level)", (f"key {key!r} contains {_describe(*found)}; "
                                                      "keys are plain single-line words")
                continue
            yield from unsafe_values(value, (*path, key), text_only, string_range)
    elif isinstance(data, list):
        for index, item in enumerate(data):
            yield from unsafe_values(item, (*path, index), text_only, string_range)
    elif isinstance(data, bool):
        return
    elif isinstance(data, int) and not INT_MIN <= data <= INT_MAX and not text_only(path):
        yield dotted(path), f"{data} is out of range; numbers here are between {INT_MIN} and {INT_MAX}"
    elif isinstance(data, float) and not math.isfinite(data):
        yield dotted(path), f"{data} is not a finite number"
    elif isinstance(data, str):
        multiline = path in MULTILINE
        if found := _bad_char(data, multiline):
            char = found[1]
            fix = ("only line breaks and tabs are allowed in this file's text" if multiline
                   else "values are single-line text: remove it (a trailing newline from `|`? use a plain or quoted scalar)"
                   if unicodedata.category(char) in ("Cc", "Zl", "Zp")
                   else "remove it: it shows as nothing, or changes how the text around it is shown")
            yield dotted(path), f"contains {_describe(*found)}; {fix}"
        elif (limits := string_range(path)) and (problem := out_of_range(data, limits)):
            yield dotted(path), problem
