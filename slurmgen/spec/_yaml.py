"""A strict, bounded YAML reader for specs (files that are not specs: slurmgen/kube/documents.py).

PyYAML's safe loader, but: a repeated key is an error (not a silent overwrite); keys are plain
strings; and before anything is built, one streaming pass over the parser's events caps what a
hostile file can cost (nesting depth, aliases and their expanded size, the length of numbers), so
every input ends in one line, in bounded time and memory, never a traceback or a hang.
Files are read by `slurmgen._input.read_text` (size cap, regular files only, strict UTF-8).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from .._input import MAX_BYTES, UnreadableFile, decode, read_text
from ..kube.documents import BoundExceeded, Bounds, walk_events

__all__ = ["MAX_BYTES", "UnreadableFile", "YamlSyntaxError", "decode", "field_lines", "load_yaml", "read_text"]

MAX_DEPTH = 32  # nested mappings/lists; the schema's deepest path is under 10
MAX_ALIASES = 100  # `*ref` uses in one file
MAX_EXPANDED_NODES = 100_000  # nodes once every alias is expanded (an alias bomb is billions)
MAX_NUMBER_CHARS = 24  # a plain scalar that reads as a number; Python refuses int() of > 4300 digits

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _StrictLoader(_Loader):  # type: ignore[misc,valid-type]
    """The safe loader (libyaml's parser when available) refusing duplicate and non-string keys."""


def _construct_mapping(loader: Any, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            kind = "a mapping" if isinstance(key_node, yaml.MappingNode) else "a list"
            raise yaml.constructor.ConstructorError(None, None, f"{kind} used as a key; keys are plain words",
                                                    key_node.start_mark)
        key = loader.construct_object(key_node, deep=deep)
        if not isinstance(key, str):
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key_node.value!r} reads as {type(key).__name__}, not text; quote it",
                key_node.start_mark)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen[key] = loader.construct_object(value_node, deep=deep)
    return seen


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


class YamlSyntaxError(ValueError):
    """A YAML error with a 1-based line and column, for one-line reporting."""

    def __init__(self, message: str, line: int | None, column: int | None) -> None:
        self.line, self.column = line, column
        where = f"line {line}, column {column}: " if line is not None else ""
        super().__init__(f"{where}{message}")


# The JSON types a spec field allows, by its path (slurmgen/spec/_schema.field_types); None where unknown.
FieldTypes = Callable[[tuple[Any, ...]], "frozenset[str] | None"]


def load_yaml(text: str, *, field_types: FieldTypes | None = None) -> Any:
    """Parse one YAML document within the caps; raise YamlSyntaxError with the position of the first problem.

    With `field_types`, a refusal offers only the fixes the field allows: no "write the number in
    decimal" for a string such as aws.accountId, and a plain scalar YAML 1.2 reads as a number (an
    unquoted 012345678901) is refused in a field that takes only text."""
    if len(text) > MAX_BYTES:
        raise YamlSyntaxError(f"longer than {MAX_BYTES // 1024} KiB; a spec is a few KiB", None, None)
    try:
        _check_bounds(text, field_types)
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - SafeLoader subclass
    except YamlSyntaxError:
        raise
    except yaml.MarkedYAMLError as err:
        raise _one_line(err) from None
    except yaml.YAMLError as err:
        raise YamlSyntaxError(f"invalid YAML: {err}", None, None) from None
    except (ValueError, TypeError, OverflowError, RecursionError) as err:
        # A value the resolver accepts but Python cannot build (e.g. a timestamp 2026-13-45).
        raise YamlSyntaxError(f"invalid YAML: a value cannot be read ({type(err).__name__}: {err})"[:300],
                              None, None) from None


def _one_line(err: yaml.MarkedYAMLError) -> YamlSyntaxError:
    """PyYAML's several-line error as one line with its position."""
    mark = err.problem_mark or err.context_mark
    if mark is None:
        return YamlSyntaxError(f"invalid YAML: {_problem(err)}", None, None)
    return YamlSyntaxError(f"invalid YAML: {_problem(err)}", mark.line + 1, mark.column + 1)


def _problem(err: yaml.MarkedYAMLError) -> str:
    problem = err.problem or err.context or "invalid YAML"
    if err.context and err.problem and err.problem.startswith("but "):  # "expected X, but found Y"
        problem = f"{err.context}, {err.problem}"
    return problem


def _fail(message: str, mark: Any) -> YamlSyntaxError:
    return YamlSyntaxError(message, mark.line + 1 if mark else None, mark.column + 1 if mark else None)


SPEC_BOUNDS = Bounds(depth=MAX_DEPTH, aliases=MAX_ALIASES, nodes=MAX_EXPANDED_NODES, number_chars=MAX_NUMBER_CHARS)


def _check_bounds(text: str, field_types: FieldTypes | None = None) -> None:
    """The bounded pass over the parser's events (slurmgen/kube/documents.walk_events) with the
    spec's own refusals: YAML 1.1 readings (010, 1:30, yes) and numbers in text fields. A syntax
    error names the last field read before it, with a hint for the usual causes (see _syntax_error)."""
    place = _Place()
    try:
        walk_events(text, SPEC_BOUNDS, _SpecEvents(place, field_types))
    except BoundExceeded as err:
        raise _fail(err.message, err.mark) from None
    except yaml.MarkedYAMLError as err:
        raise _syntax_error(err, text, place) from None


class _SpecEvents:
    """Follows the events for _Place and refuses the plain scalars a spec must quote."""

    def __init__(self, place: "_Place", field_types: FieldTypes | None) -> None:
        self.place, self.field_types = place, field_types

    def open(self, event: Any) -> None:
        self.place.open(isinstance(event, yaml.MappingStartEvent), bool(event.flow_style), event.start_mark)

    def close(self) -> None:
        self.place.close()

    def scalar(self, event: Any) -> str | None:
        refusal = None if event.style else _plain_refusal(event.value, self.place, self.field_types)
        if refusal is None:
            self.place.node(event.value, event.start_mark)
        return refusal

    def alias(self, event: Any) -> None:
        self.place.node(None, event.start_mark)


# YAML 1.1 (PyYAML) reads some plain scalars otherwise than YAML 1.2 and every reader of the spec
# who is not a parser: `1:30` is 90 (base 60), `010` is 8 (octal), `1_000` is 1000, `0b11` is 3,
# `yes`/`on` are true. The 1.1 reading is PyYAML's own implicit resolver (yaml/resolver.py, PyYAML
# 6.0.3), so nothing PyYAML reads as text is refused: `04:00:00` is a string (base 60 starts 1-9).
_RESOLVER = yaml.resolver.Resolver()
_CONSTRUCTOR = yaml.constructor.SafeConstructor()
_NUMBER_TAGS = {"tag:yaml.org,2002:int", "tag:yaml.org,2002:float"}
_YAML11_TAGS = {*_NUMBER_TAGS, "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null"}
# The YAML 1.2 core schema's plain scalars (https://yaml.org/spec/1.2.2/#1032-tag-resolution), in order.
_CORE12: tuple[tuple[re.Pattern[str], Callable[[str], Any]], ...] = (
    (re.compile(r"null|Null|NULL|~|"), lambda _: None),
    (re.compile(r"true|True|TRUE"), lambda _: True),
    (re.compile(r"false|False|FALSE"), lambda _: False),
    (re.compile(r"[-+]?[0-9]+"), int),
    (re.compile(r"0o[0-7]+"), lambda s: int(s[2:], 8)),
    (re.compile(r"0x[0-9a-fA-F]+"), lambda s: int(s[2:], 16)),
    (re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?"), float),
    (re.compile(r"[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)"), lambda s: float(s.replace(".", ""))),
)


def yaml11_reading(plain: str) -> tuple[Any] | None:
    """(value,) when PyYAML reads the plain scalar `plain` as a number, boolean or null that the YAML
    1.2 core schema reads otherwise (as text or another value); None when both agree, or PyYAML reads text."""
    tag = _RESOLVER.resolve(yaml.ScalarNode, plain, (True, False))
    if tag not in _YAML11_TAGS:
        return None
    try:
        value = _CONSTRUCTOR.yaml_constructors[tag](_CONSTRUCTOR, yaml.ScalarNode(tag, plain))  # no memo kept
    except (ValueError, OverflowError):
        return None  # not a value at all (`._`): the loader itself reports it
    core = next((read(plain) for pattern, read in _CORE12 if pattern.fullmatch(plain)), plain)
    same = type(core) is type(value) and (core == value or (core != core and value != value))  # nan is nan
    return None if same else (value,)


def yaml12_number(plain: str) -> int | float | None:
    """The number the YAML 1.2 core schema reads the plain scalar `plain` as, when PyYAML reads it as text
    (`012345678901`, `1e3`, `0o17`); None otherwise."""
    if _RESOLVER.resolve(yaml.ScalarNode, plain, (True, False)) != "tag:yaml.org,2002:str":
        return None
    core = next((read(plain) for pattern, read in _CORE12 if pattern.fullmatch(plain)), plain)
    return core if isinstance(core, (int, float)) and not isinstance(core, bool) else None


def _yaml11_why(plain: str, value: Any) -> str:
    """Why YAML 1.1 reads `plain` as `value`, in a few words."""
    digits = plain.lstrip("+-")
    if isinstance(value, bool):
        return "YAML 1.1 booleans include yes, no, on and off"
    if ":" in plain:
        return "colons count in base 60"
    if digits.startswith("0b"):
        return "0b makes it binary"
    if digits.startswith("0x"):
        return "a sign or _ in a 0x number"
    if isinstance(value, int) and digits[:1] == "0":
        return "a leading 0 makes it octal"
    return "underscores are dropped"


def _plain_refusal(plain: str, place: "_Place", field_types: FieldTypes | None) -> str | None:
    """Why the plain scalar `plain`, the next node at `place`, is refused; None when it is read as written.

    Refused: what YAML 1.1 reads as a number or boolean where YAML 1.2 reads otherwise; and, in a field
    that takes only text, what YAML 1.2 (an editor, yq) reads as a number though PyYAML reads text
    (aws.accountId: 012345678901 is the number 12345678901 there)."""
    reading = yaml11_reading(plain)
    if reading is None and field_types is None:
        return None
    parts, key, is_key = place.next_node(plain)
    types = field_types(tuple(parts)) if field_types and not is_key and None not in parts else None
    if reading is not None:
        return _yaml11_message(plain, reading[0], parts, key, is_key, types)
    if types == frozenset({"string"}) and (number := yaml12_number(plain)) is not None:
        return (f"{_dotted(parts)}: {plain} reads as the number {number!r} in YAML 1.2 (editors, yq), though this "
                f"reader takes it as text; quote it: {_quoted(plain, parts, key, is_key)}")
    return None


def _quoted(plain: str, parts: list[Any], key: str | None, is_key: bool) -> str:
    """`plain` quoted where it stands: as a key, the value of `key`, or a list item."""
    if is_key:
        return f'"{plain}": ...'
    if key is not None:
        return f'{key}: "{plain}"'
    return f'- "{plain}"' if parts and isinstance(parts[-1], int) else f'"{plain}"'


def _yaml11_message(plain: str, value: Any, parts: list[Any], key: str | None, is_key: bool,
                    types: frozenset[str] | None) -> str:
    """The one line for a plain scalar YAML 1.1 misreads: its field path, what it reads as, and the fix;
    the unquoted alternative only where the field (`types`, None when unknown) takes it."""
    if isinstance(value, bool):
        takes = types is None or "boolean" in types
        reads, other = f"boolean {str(value).lower()}", ", or write true or false" if takes else ""
    else:
        takes = ":" not in plain and (types is None or bool(types & {"integer", "number"}))
        reads, other = f"number {value!r}", ", or write the number in decimal" if takes else ""
    return (f"{_dotted(parts)}: {plain} reads as the YAML 1.1 {reads} ({_yaml11_why(plain, value)}); "
            f"quote it: {_quoted(plain, parts, key, is_key)}{other}")


def _dotted(parts: list[Any]) -> str:
    """A field path (`nodesets[0].name`) from keys and list indexes; `?` for a key that is no scalar."""
    text = "".join(f"[{p}]" if isinstance(p, int) else f".{p if p is not None else '?'}" for p in parts)
    return text.lstrip(".") or "(top level)"


@dataclass
class _Frame:
    """One open collection as the parser reports it."""

    mapping: bool
    flow: bool
    column: int  # 1-based column where it starts (a block list: its first '-')
    at: Any  # the current key (None when it is no scalar) or list index (-1 before the first item)
    want_key: bool = True  # the next node in a mapping is a key
    key_line: int = 0  # 1-based line and column of the current key
    key_column: int = 0


class _Place:
    """Where the parser stands in the tree, from its events alone: the field path of the next node, and
    the keys and list items open around it, with their columns (for an indentation hint)."""

    def __init__(self) -> None:
        self.frames: list[_Frame] = []
        self.last_key: list[Any] = []  # the path of the last key read, kept when its collection closes
        self.closed: list[_Frame] = []  # collections a dedent closed just now, innermost first

    def node(self, plain: str | None, mark: Any) -> None:
        """A node starts (a scalar spelt `plain`; None for an alias or collection): a mapping alternates
        key and value, a list counts its items."""
        self.closed = []
        if self.frames:
            frame = self.frames[-1]
            if not frame.mapping:
                frame.at += 1
            elif frame.want_key:
                frame.at, frame.want_key = plain, False
                frame.key_line, frame.key_column = mark.line + 1, mark.column + 1
                self.last_key = [f.at for f in self.frames]
            else:
                frame.want_key = True

    def open(self, mapping: bool, flow: bool, mark: Any) -> None:
        self.node(None, mark)
        self.frames.append(_Frame(mapping, flow, mark.column + 1, None if mapping else -1))

    def close(self) -> None:
        self.closed.append(self.frames.pop())

    def next_node(self, plain: str) -> tuple[list[Any], str | None, bool]:
        """(field path parts, the key it is the value of, whether it is itself a key) of a next scalar `plain`."""
        parts = [f.at for f in self.frames]
        top = self.frames[-1] if self.frames else None
        if top is not None:
            parts[-1] = plain if top.mapping and top.want_key else top.at + 1 if not top.mapping else top.at
        key = top.at if top and top.mapping and not top.want_key else None
        return parts, key, bool(top and top.mapping and top.want_key)

    def indent_hint(self, line_no: int, column: int, dash: bool) -> str:
        """Which column line `line_no` (indented to `column`) must start at: the key it follows, or for a
        list item ('- ') the items above; with the enclosing one when it sits between the two. A line
        indented less than the key before it has already closed that key's mapping: it counts too."""
        block = [f for f in (*self.closed, *reversed(self.frames)) if not f.flow]
        if dash:
            found = [(f.column, "the '-' of the items above") for f in block if not f.mapping]
        else:
            found = [(f.key_column, str(f.at)) for f in block if f.mapping and f.key_column]
        if not found:
            keys = [f.at for f in block if f.mapping and f.key_column]
            return (f"line {line_no} starts a list item ('- ') among keys such as {keys[0]}; write it as a key, "
                    "or make every entry a list item") if dash and keys else ""
        (col, label), outer = found[0], next(((c, k) for c, k in found[1:] if c < column), None)
        if col == column:
            return ""
        hint = f"check the indentation of line {line_no}: it must line up with {label} (column {col})"
        return hint + (f", or with {outer[1]} (column {outer[0]})" if column < col and outer else "")

    def key_frame(self) -> _Frame | None:
        """The innermost mapping with a key read."""
        return next((f for f in reversed(self.frames) if f.mapping and f.key_column), None)


# libyaml's problems where a line's indentation is the usual cause (yaml/libyaml 0.2.5 src/parser.c, scanner.c).
_INDENT_PROBLEMS = frozenset({"mapping values are not allowed in this context", "did not find expected key",
                              "did not find expected '-' indicator"})
_TAB_PROBLEMS = frozenset({"found character that cannot start any token",
                           "found a tab character that violates indentation"})
_DOCUMENT_END = re.compile(r"\.\.\.([ \t].*)?")  # `...` at column 1 ends a YAML document
_LINE_BREAK = re.compile(r"\r\n|[\r\n\x85\u2028\u2029]")  # what YAML counts as a line break


def _syntax_error(err: yaml.MarkedYAMLError, text: str, place: _Place) -> YamlSyntaxError:
    """A spec's syntax error on one line: its position, the last field read before it (where the file
    has one), the parser's words, and a hint for the usual causes: a stray `...`, a line indented
    off its neighbours or with a tab, an unquoted ": " in a value, a bracket left open."""
    plain = _one_line(err)
    if err.problem_mark is None:
        return plain
    line_no = err.problem_mark.line + 1
    lines = _LINE_BREAK.split(text)
    hint = _hint(_problem(err), line_no, lines, err.context_mark, place)
    path = _dotted(place.last_key) if place.last_key else ""
    return YamlSyntaxError(f"{path + ': ' if path else ''}invalid YAML: {_problem(err)}{'; ' + hint if hint else ''}",
                           plain.line, plain.column)


def _value_after(line: str, key: _Frame) -> str:
    """The plain value written after `key:` on `line` (up to a comment), for a quoted fix; cut when long."""
    start = key.key_column - 1 + len(str(key.at))
    if line[key.key_column - 1:start] != str(key.at):  # a quoted or escaped key: not spelt as read
        return "…"
    value = line[start:].lstrip(" ").removeprefix(":")
    value = re.split(r"\s#", value, maxsplit=1)[0].strip().replace("\\", "\\\\").replace('"', '\\"')
    return value if len(value) <= 60 else value[:60] + "…"


def _hint(problem: str, line_no: int, lines: list[str], context_mark: Any, place: _Place) -> str:
    line = lines[line_no - 1] if line_no <= len(lines) else ""
    lead = line[:len(line) - len(line.lstrip(" \t"))]
    if problem in _TAB_PROBLEMS and "\t" in lead:
        return f"line {line_no} is indented with a tab; YAML indents with spaces only"
    if "<document start>" in problem:
        ends = [n for n, text in enumerate(lines[:line_no - 1], 1) if _DOCUMENT_END.fullmatch(text)]
        return (f'the "..." on line {ends[-1]} ends the YAML document, so nothing after it is read; remove that line'
                if ends else "")
    if problem.startswith("did not find expected ',' or ") and context_mark is not None:
        bracket = "{" if problem.endswith("'}'") else "["
        return f"the {bracket} on line {context_mark.line + 1} is not closed, or a ',' is missing in it"
    if problem not in _INDENT_PROBLEMS:
        return ""
    key = place.key_frame()
    if problem.startswith("mapping values") and key is not None and key.key_line == line_no:
        return f'a value holding ": " must be quoted: {key.at}: "{_value_after(line, key)}"'
    stripped = line.lstrip(" ")
    return place.indent_hint(line_no, len(line) - len(stripped) + 1, stripped == "-" or stripped.startswith("- "))


_INDEX = re.compile(r"\[(\d+)\]")


def field_lines(text: str) -> "FieldLines":
    """Where `text` (which load_yaml accepted) writes each field: for error lines, built only on failure."""
    try:
        return FieldLines(yaml.compose(text, Loader=_Loader))
    except yaml.YAMLError:
        return FieldLines(None)


class FieldLines:
    """The 1-based line of a field path (`nodesets[0].instanceType`) in one YAML file's node tree."""

    def __init__(self, root: yaml.Node | None) -> None:
        self.root = root

    def line(self, path: str, *, nearest: bool) -> int | None:
        """The line of the key (or list item) at `path`; for a field the file does not write, the line of
        its deepest written parent when `nearest` (a missing key belongs there), else None. None for ""."""
        node, line, found = self._walk(path)
        return line if found or nearest else None

    def spelling(self, path: str) -> str | None:
        """The text of the plain scalar the file writes at `path` (`1.30`, which reads as 1.3), else None."""
        node, _, found = self._walk(path)
        plain = found and isinstance(node, yaml.ScalarNode) and not node.style
        return node.value if plain else None  # type: ignore[union-attr]

    def _walk(self, path: str) -> tuple[yaml.Node | None, int | None, bool]:
        """(the node at `path`, the line of its key or item, whether the file writes it); when it does
        not, the deepest written parent's line."""
        node, line, pos = self.root, None, 0
        while pos < len(path) and node is not None:
            if path[pos] == ".":
                pos += 1
                continue
            index = _INDEX.match(path, pos)
            if index:
                i = int(index.group(1))
                if not (isinstance(node, yaml.SequenceNode) and i < len(node.value)):
                    return None, line, False
                node, pos = node.value[i], index.end()
                line = node.start_mark.line + 1
                continue
            if not isinstance(node, yaml.MappingNode):
                return None, line, False
            keys = {k.value: (k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode)}
            parts = re.match(r"[^\[]*", path[pos:]).group(0).split(".")  # type: ignore[union-attr]
            for count in range(len(parts), 0, -1):  # a key may hold dots (label keys): longest first
                key = ".".join(parts[:count])
                if key in keys:
                    key_node, node = keys[key]
                    line, pos = key_node.start_mark.line + 1, pos + len(key)
                    break
            else:
                return None, line, False
        return node, line, node is not None
