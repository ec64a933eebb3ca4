"""The one reader of YAML files that are not specs: rendered objects in dist/, the summary's base,
Chart.yaml and values.yaml of a --preview chart folder, --crd-dir schemas, a CRD bundle.

PyYAML's safe loader (libyaml's when available) behind one streaming pass over the parser's events
that caps what a hostile file can cost (nesting, aliases and their expanded size, digits of a
number), so every input ends in one line, never a traceback or a hang. Repeated keys keep the last,
as Kubernetes and Helm do. The spec reader (slurmgen/spec/_yaml.py) runs the same pass with tighter
bounds and its own field-aware refusals (`walk_events` with an `EventVisitor`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import yaml

__all__ = ["DOCUMENT_BOUNDS", "BoundExceeded", "Bounds", "DocumentError", "EventVisitor", "load_document",
           "load_documents", "walk_events"]

#: libyaml's safe loader when PyYAML was built with it, else the pure-Python one.
Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class Bounds:
    """What one YAML stream may cost: nesting, aliases, nodes once aliases are expanded, digits of a number."""

    depth: int
    aliases: int
    nodes: int
    number_chars: int


# CRD schemas nest ~60 levels and run to megabytes, numbers stay below int()'s 4,300 digits; aliases
# are as rare as in a spec.
DOCUMENT_BOUNDS = Bounds(depth=256, aliases=100, nodes=5_000_000, number_chars=4000)


class BoundExceeded(ValueError):
    """A stream went past its Bounds (or a visitor refused a scalar) at parser mark `mark`."""

    def __init__(self, message: str, mark: Any) -> None:
        super().__init__(message)
        self.message, self.mark = message, mark


class DocumentError(yaml.YAMLError):
    """A YAML file that is not a spec could not be read within its bounds (one line); a yaml.YAMLError,
    so every reader's existing `except yaml.YAMLError` reports it."""


class EventVisitor(Protocol):
    """Follows the parser's events during walk_events (the spec reader tracks field paths with it)."""

    def open(self, event: Any) -> None: ...

    def close(self) -> None: ...

    def scalar(self, event: Any) -> str | None:
        """A scalar event: a one-line refusal of its value, else None."""

    def alias(self, event: Any) -> None: ...


def walk_events(text: str, bounds: Bounds, visitor: EventVisitor | None = None) -> None:
    """One pass over the parser's events, raising BoundExceeded past `bounds`.

    Each open collection counts the nodes it holds as expanded (an alias adds its anchor's whole
    count), so the total is known without ever building the expansion. Syntax errors propagate as
    PyYAML's MarkedYAMLError."""
    depth = aliases = total = 0
    sizes: dict[str, int] = {}
    stack: list[tuple[str | None, int]] = []  # (anchor, expanded total when the collection opened)
    for event in yaml.parse(text, Loader=Loader):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            if visitor:
                visitor.open(event)
            depth += 1
            if depth > bounds.depth:
                raise BoundExceeded(f"nested deeper than {bounds.depth} levels; a spec is at most a few levels deep",
                                    event.start_mark)
            stack.append((event.anchor, total))
            total += 1
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            if visitor:
                visitor.close()
            depth -= 1
            anchor, start = stack.pop()
            if anchor is not None:
                sizes[anchor] = total - start
        elif isinstance(event, yaml.ScalarEvent):
            total += 1
            if event.anchor is not None:
                sizes[event.anchor] = 1
            if not event.style and len(event.value) > bounds.number_chars and _is_number(event.value):
                raise BoundExceeded(f"a number of {len(event.value)} characters; at most {bounds.number_chars} "
                                    "(quote it if it is text)", event.start_mark)
            refusal = visitor.scalar(event) if visitor else None
            if refusal:
                raise BoundExceeded(refusal, event.start_mark)
        elif isinstance(event, yaml.AliasEvent):
            if visitor:
                visitor.alias(event)
            aliases += 1
            if aliases > bounds.aliases:
                raise BoundExceeded(f"more than {bounds.aliases} aliases (*name); write the values out or use "
                                    "extends:", event.start_mark)
            total += sizes.get(event.anchor, 1)
        if total > bounds.nodes:
            raise BoundExceeded(f"more than {bounds.nodes:,} values, counting each alias as all it repeats; "
                                "a spec has a few hundred", event.start_mark)


_RESOLVER = yaml.resolver.Resolver()
_NUMBER_TAGS = {"tag:yaml.org,2002:int", "tag:yaml.org,2002:float"}


def _is_number(plain: str) -> bool:
    """PyYAML would read the plain scalar as an int or a float (its own implicit resolver)."""
    return _RESOLVER.resolve(yaml.ScalarNode, plain, (True, False)) in _NUMBER_TAGS


class _DocumentLoader(Loader):  # type: ignore[misc,valid-type]
    """libyaml's safe loader; a bare `=` is the string "=" (PyYAML's 'value' tag has no constructor)."""


_DocumentLoader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))


def _where(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""


def load_documents(text: str, *, bounds: Bounds = DOCUMENT_BOUNDS) -> list[Any]:
    """Every document of a YAML stream that is not a spec, read within `bounds`; DocumentError (one
    line) otherwise."""
    try:
        walk_events(text, bounds)
        return list(yaml.load_all(text, Loader=_DocumentLoader))  # noqa: S506 - safe loader subclass
    except BoundExceeded as err:
        raise DocumentError(f"{_where(err.mark)}{err.message}") from None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        raise DocumentError(f"{_where(mark)}invalid YAML: {_problem(err)}") from None
    except (ValueError, TypeError, OverflowError, RecursionError) as err:
        raise DocumentError(f"a value cannot be read ({type(err).__name__}: {err})"[:300]) from None


def load_document(text: str, *, bounds: Bounds = DOCUMENT_BOUNDS) -> Any:
    """The single document of a file that is not a spec (None when empty); DocumentError past `bounds`."""
    docs = load_documents(text, bounds=bounds)
    if len(docs) > 1:
        raise DocumentError(f"{len(docs)} YAML documents; expected one")
    return docs[0] if docs else None


def _problem(err: yaml.MarkedYAMLError) -> str:
    """PyYAML's problem in one phrase ("expected X, but found Y")."""
    problem = err.problem or err.context or "invalid YAML"
    if err.context and err.problem and err.problem.startswith("but "):
        problem = f"{err.context}, {err.problem}"
    return problem
