"""A strict, bounded YAML reader for specs.

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

__all__ = ["MAX_BYTES", "DocumentError", "UnreadableFile", "YamlSyntaxError", "decode", "field_lines",
           "load_document", "load_documents", "load_yaml", "read_text"]

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


def load_yaml(text: str) -> Any:
    """Parse one YAML document within the caps; raise YamlSyntaxError with the position of the first problem."""
    if len(text) > MAX_BYTES:
        raise YamlSyntaxError(f"longer than {MAX_BYTES // 1024} KiB; a spec is a few KiB", None, None)
    try:
        _check_bounds(text)
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
    problem = err.problem or err.context or "invalid YAML"
    if err.context and err.problem and err.problem.startswith("but "):  # "expected X, but found Y"
        problem = f"{err.context}, {err.problem}"
    if mark is None:
        return YamlSyntaxError(f"invalid YAML: {problem}", None, None)
    return YamlSyntaxError(f"invalid YAML: {problem}", mark.line + 1, mark.column + 1)


def _fail(message: str, mark: Any) -> YamlSyntaxError:
    return YamlSyntaxError(message, mark.line + 1 if mark else None, mark.column + 1 if mark else None)


@dataclass(frozen=True)
class Bounds:
    """What one YAML stream may cost: nesting, aliases, nodes once aliases are expanded, digits of a number."""

    depth: int = MAX_DEPTH
    aliases: int = MAX_ALIASES
    nodes: int = MAX_EXPANDED_NODES
    number_chars: int = MAX_NUMBER_CHARS
    yaml11_readings: bool = True  # refuse plain 010 (octal 8), 1:30 (base 60: 90), yes (true): see yaml11_reading


SPEC_BOUNDS = Bounds()
# Files that are not specs (rendered objects in dist/, the summary's base, Chart.yaml and values.yaml
# of a --preview chart folder, --crd-dir schemas): CRD schemas nest ~60 levels and run to megabytes,
# numbers stay below int()'s 4,300 digits; aliases are as rare as in a spec.
DOCUMENT_BOUNDS = Bounds(depth=256, aliases=MAX_ALIASES, nodes=5_000_000, number_chars=4000,
                       yaml11_readings=False)


class DocumentError(yaml.YAMLError):
    """A YAML file that is not a spec could not be read within DOCUMENT_BOUNDS (one line); a
    yaml.YAMLError, so every reader's existing `except yaml.YAMLError` reports it."""


def load_documents(text: str, *, bounds: Bounds = DOCUMENT_BOUNDS) -> list[Any]:
    """Every document of a YAML stream that is not a spec, read within `bounds` by libyaml's safe
    loader (repeated keys keep the last, as Kubernetes and Helm do). The one reader of such files."""
    try:
        _check_bounds(text, bounds)
        return list(yaml.load_all(text, Loader=_DocumentLoader))  # noqa: S506 - safe loader subclass
    except YamlSyntaxError as err:
        raise DocumentError(str(err)) from None
    except yaml.MarkedYAMLError as err:
        raise DocumentError(str(_one_line(err))) from None
    except (ValueError, TypeError, OverflowError, RecursionError) as err:
        raise DocumentError(f"a value cannot be read ({type(err).__name__}: {err})"[:300]) from None


def load_document(text: str, *, bounds: Bounds = DOCUMENT_BOUNDS) -> Any:
    """The single document of a file that is not a spec (None when empty); DocumentError past `bounds`."""
    docs = load_documents(text, bounds=bounds)
    if len(docs) > 1:
        raise DocumentError(f"{len(docs)} YAML documents; expected one")
    return docs[0] if docs else None


class _DocumentLoader(_Loader):  # type: ignore[misc,valid-type]
    """libyaml's safe loader; a bare `=` is the string "=" (PyYAML's 'value' tag has no constructor)."""


_DocumentLoader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))


def _check_bounds(text: str, bounds: Bounds = SPEC_BOUNDS) -> None:
    """One pass over the parser's events: refuse deep nesting, alias bombs and huge numbers.

    Each open collection counts the nodes it holds as expanded (an alias adds its anchor's whole
    count), so the total is known without ever building the expansion.
    """
    depth = 0
    aliases = 0
    total = 0
    sizes: dict[str, int] = {}
    stack: list[tuple[str | None, int]] = []  # (anchor, expanded total when the collection opened)
    place = _Place() if bounds.yaml11_readings else _NOWHERE  # only a spec's refusals name a field
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            place.open(isinstance(event, yaml.MappingStartEvent))
            depth += 1
            if depth > bounds.depth:
                raise _fail(f"nested deeper than {bounds.depth} levels; a spec is at most a few levels deep",
                            event.start_mark)
            stack.append((event.anchor, total))
            total += 1
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            place.close()
            depth -= 1
            anchor, start = stack.pop()
            if anchor is not None:
                sizes[anchor] = total - start
        elif isinstance(event, yaml.ScalarEvent):
            total += 1
            if event.anchor is not None:
                sizes[event.anchor] = 1
            if not event.style and len(event.value) > bounds.number_chars and _is_number(event.value):
                raise _fail(f"a number of {len(event.value)} characters; at most {bounds.number_chars} "
                            "(quote it if it is text)", event.start_mark)
            if bounds.yaml11_readings and not event.style and (reading := yaml11_reading(event.value)):
                raise _fail(_yaml11_message(event.value, reading[0], place), event.start_mark)
            place.node(event.value)
        elif isinstance(event, yaml.AliasEvent):
            place.node(None)
            aliases += 1
            if aliases > bounds.aliases:
                raise _fail(f"more than {bounds.aliases} aliases (*name); write the values out or use extends:",
                            event.start_mark)
            total += sizes.get(event.anchor, 1)
        if total > bounds.nodes:
            raise _fail(f"more than {bounds.nodes:,} values, counting each alias as all it repeats; "
                        "a spec has a few hundred", event.start_mark)


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


def _is_number(plain: str) -> bool:
    """Whether PyYAML reads the plain scalar `plain` as an int or float (its implicit resolver, as yaml.load)."""
    return _RESOLVER.resolve(yaml.ScalarNode, plain, (True, False)) in _NUMBER_TAGS


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


def _yaml11_message(plain: str, value: Any, place: "_Place") -> str:
    """The one line for a plain scalar YAML 1.1 misreads: its field path, what it reads as, and the fix."""
    path, key, is_key = place.next_node(plain)
    if is_key:
        quoted = f'"{plain}": ...'
    elif key is not None:
        quoted = f'{key}: "{plain}"'
    else:
        quoted = f'- "{plain}"' if path.endswith("]") else f'"{plain}"'
    if isinstance(value, bool):
        reads, other = f"boolean {str(value).lower()}", ", or write true or false"
    else:
        reads, other = f"number {value!r}", "" if ":" in plain else ", or write the number in decimal"
    return (f"{path}: {plain} reads as the YAML 1.1 {reads} ({_yaml11_why(plain, value)}); "
            f"quote it: {quoted}{other}")


class _Place:
    """Where the parser stands in the tree, from its events alone: the field path of the next node."""

    def __init__(self) -> None:
        # per open collection: [is a mapping, its current key (None when not a plain word) or list index,
        # the next node is a key]
        self._frames: list[list[Any]] = []

    def node(self, plain: str | None) -> None:
        """A node starts (a scalar spelt `plain`; None for an alias or collection): a mapping alternates
        key and value, a list counts its items."""
        if self._frames:
            frame = self._frames[-1]
            if not frame[0]:
                frame[1] += 1
            elif frame[2]:
                frame[1], frame[2] = plain, False
            else:
                frame[2] = True

    def open(self, mapping: bool) -> None:
        self.node(None)
        self._frames.append([mapping, None if mapping else -1, True])

    def close(self) -> None:
        self._frames.pop()

    def next_node(self, plain: str) -> tuple[str, str | None, bool]:
        """(field path, the key it is the value of, whether it is itself a key) of a next scalar `plain`."""
        parts = []
        for i, (mapping, at, is_key) in enumerate(self._frames):
            last = i == len(self._frames) - 1
            at = (at + 1 if not mapping else plain if is_key else at) if last else at
            parts.append(f"[{at}]" if not mapping else f".{at if at is not None else '?'}")
        path = "".join(parts).lstrip(".") or "(top level)"
        top = self._frames[-1] if self._frames else None
        key = top[1] if top and top[0] and not top[2] else None
        return path, key, bool(top and top[0] and top[2])


class _Nowhere(_Place):
    """A _Place that tracks nothing, for files whose reading refuses nothing by field (a large CRD)."""

    def node(self, plain: str | None) -> None:
        pass

    def open(self, mapping: bool) -> None:
        pass

    def close(self) -> None:
        pass


_NOWHERE = _Nowhere()


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
        node, line, pos = self.root, None, 0
        while pos < len(path) and node is not None:
            if path[pos] == ".":
                pos += 1
                continue
            index = _INDEX.match(path, pos)
            if index:
                i = int(index.group(1))
                if not (isinstance(node, yaml.SequenceNode) and i < len(node.value)):
                    return line if nearest else None
                node, pos = node.value[i], index.end()
                line = node.start_mark.line + 1
                continue
            if not isinstance(node, yaml.MappingNode):
                return line if nearest else None
            keys = {k.value: (k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode)}
            parts = re.match(r"[^\[]*", path[pos:]).group(0).split(".")  # type: ignore[union-attr]
            for count in range(len(parts), 0, -1):  # a key may hold dots (label keys): longest first
                key = ".".join(parts[:count])
                if key in keys:
                    key_node, node = keys[key]
                    line, pos = key_node.start_mark.line + 1, pos + len(key)
                    break
            else:
                return line if nearest else None
        return line
