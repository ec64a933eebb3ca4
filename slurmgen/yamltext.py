"""YAML text of one rendered object: the bytes PyYAML writes for it, about 4x faster.

Writing YAML cost a fleet more than validating it: PyYAML builds a node for every value and its
resolver is asked about every scalar, in Python, even with libyaml writing the text. Rendered
objects are plain JSON data (maps with string keys, lists, strings, integers, booleans, null) and
`output.dump` always lays them out the same way: block style, a list inside a map not indented,
`{}`/`[]` for empty ones, multi-line strings as literal blocks. That layout is written here
directly. How each *string* is spelled (plain, quoted, which literal header) stays PyYAML's
decision: asked once per distinct string (`Spelling`), or answered by a check that agrees with it
(a plain-looking string that the resolver reads back as a string). Anything else (a float, a key
that is not a short one-line string, a literal block that keeps trailing line breaks, which makes
libyaml end the document with `...`, line breaks other than `\\n`) makes the whole object go to
PyYAML. tests/test_yamltext.py compares the two on every example object and on random ones.
"""

from __future__ import annotations

import re
from typing import Any, Callable

import yaml

#: Characters of strings that need no question to PyYAML: it writes them plain unless its resolver
#: reads them as something else ("true", "1.5", "2026-12-01", "~"): that is asked (cheaply).
_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/@=+:-]*")
_STR = "tag:yaml.org,2002:str"
_OTHER_BREAKS = re.compile("[\r\x85\u2028\u2029]")
_KEY_LIMIT = 100  # PyYAML writes a key of 128 characters or more as `? key`


class _Fallback(Exception):
    """This object is outside what `text` writes: PyYAML writes it."""


class Spelling:
    """How PyYAML spells each scalar, learned from `reference` (PyYAML's dump of one object) and
    remembered (a fleet repeats the same keys, names and images thousands of times)."""

    def __init__(self, reference: Callable[[Any], str]) -> None:
        self._reference = reference
        self._resolver = yaml.resolver.Resolver()
        self._keys: dict[str, str] = {}
        self._values: dict[str, str] = {}
        self._blocks: dict[str, tuple[str, tuple[str, ...]] | str] = {}

    def key(self, key: Any) -> str:
        spelled = self._keys.get(key) if type(key) is str else None
        if spelled is None:
            if type(key) is not str or len(key) >= _KEY_LIMIT or "\n" in key or _OTHER_BREAKS.search(key):
                raise _Fallback
            if self._plain(key):
                self._keys[key] = key
                return key
            full = self._reference({key: 0})
            if not full.endswith(": 0\n") or full.startswith("?") or full.count("\n") != 1:
                raise _Fallback
            spelled = self._keys[key] = full[:-4]
        return spelled

    def value(self, text: str) -> str:
        """A one-line string as written after `key: ` or `- `."""
        spelled = self._values.get(text)
        if spelled is None:
            if self._plain(text):
                spelled = text
            else:
                if _OTHER_BREAKS.search(text):
                    raise _Fallback
                full = self._reference({"k": text})
                if not full.startswith("k: ") or full.count("\n") != 1:
                    raise _Fallback
                spelled = full[3:-1]
            self._values[text] = spelled
        return spelled

    def _plain(self, text: str) -> bool:
        """True for a string PyYAML writes as it is: plain characters, read back as a string."""
        return bool(_PLAIN.fullmatch(text)) and not text.endswith(":") \
            and self._resolver.resolve(yaml.ScalarNode, text, (True, False)) == _STR

    def block(self, text: str) -> tuple[str, tuple[str, ...]] | str:
        """A string with line breaks: (literal header, its lines without indentation; "" for an
        empty line), or the one-line spelling PyYAML chose instead (e.g. double quotes)."""
        spelled = self._blocks.get(text)
        if spelled is None:
            if _OTHER_BREAKS.search(text):
                raise _Fallback
            full = self._reference({"k": text})
            if full.endswith("...\n"):
                raise _Fallback  # `|+`: libyaml ends such a document with `...`
            if full.startswith("k: |"):
                header, _, body = full[3:].partition("\n")
                lines = body.split("\n")[:-1]
                if any(line and not line.startswith("  ") for line in lines):
                    raise _Fallback
                spelled = (header, tuple(line[2:] for line in lines))
            elif full.startswith("k: ") and full.count("\n") == 1:
                spelled = full[3:-1]
            else:
                raise _Fallback  # e.g. single quotes over several lines
            self._blocks[text] = spelled
        return spelled


def text(obj: Any, spelling: Spelling) -> str:
    """`obj` as PyYAML writes it with `output.dump`'s settings."""
    if type(obj) is not dict or not obj:
        return spelling._reference(obj)
    out: list[str] = []
    try:
        _mapping(obj, 0, out, spelling, None)
    except _Fallback:
        return spelling._reference(obj)
    return "".join(out)


def _mapping(data: dict, column: int, out: list[str], spelling: Spelling, first: str | None) -> None:
    """Keys at `column`; the first key after `first` (the `- ` of a list item) when given."""
    pad = " " * column
    for key, value in data.items():
        out.append(first if first is not None else pad)
        first = None
        out.append(spelling.key(key))
        out.append(":")
        kind = type(value)
        if kind is dict and value:
            out.append("\n")
            _mapping(value, column + 2, out, spelling, None)
        elif kind is list and value:
            out.append("\n")
            _sequence(value, column, out, spelling, None)  # a list in a map is not indented
        else:
            _scalar(value, column, out, spelling)


def _sequence(data: list, column: int, out: list[str], spelling: Spelling, first: str | None) -> None:
    """Dashes at `column`; the first dash after `first` (the `- ` of an outer item) when given."""
    pad = " " * column
    for item in data:
        out.append(first if first is not None else pad)
        first = None
        out.append("-")
        kind = type(item)
        if kind is dict and item:
            _mapping(item, column + 2, out, spelling, " ")
        elif kind is list and item:
            _sequence(item, column + 2, out, spelling, " ")
        else:
            _scalar(item, column, out, spelling)


def _scalar(value: Any, column: int, out: list[str], spelling: Spelling) -> None:
    """A value after `key:` or `-` at `column`: a literal block's lines go at `column + 2`."""
    kind = type(value)
    if kind is str:
        if "\n" in value:
            spelled = spelling.block(value)
            if isinstance(spelled, str):
                out.append(" " + spelled + "\n")
                return
            header, lines = spelled
            pad = " " * (column + 2)
            out.append(" " + header + "\n")
            out.extend(pad + line + "\n" if line else "\n" for line in lines)
        else:
            out.append(" " + spelling.value(value) + "\n")
    elif kind is bool:
        out.append(" true\n" if value else " false\n")
    elif kind is int:
        out.append(f" {value}\n")
    elif value is None:
        out.append(" null\n")
    elif kind is dict:
        out.append(" {}\n")  # empty: a non-empty one is laid out by the caller
    elif kind is list:
        out.append(" []\n")
    else:
        raise _Fallback  # floats and anything else: PyYAML's own representers
