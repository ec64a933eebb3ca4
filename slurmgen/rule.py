"""The one way to declare a spec rule: `@rule("nodesets", "partitions")` over a function of the spec.

A rule yields (field path, message) findings. `reads` names the top-level spec sections it reads: the
loader runs it only when those passed the schema (none declared: the whole spec; spec/_checks/ run),
so a schema error is not echoed by a cross-field rule, while the rules on valid sections still report
in the same run.
tests/spec/test_checks.py proves each declaration complete. Rules of every layer (the spec's own, the
instance catalog's, the Region's registry, the model's) are declared the same way.
"""

from __future__ import annotations

from typing import Callable, Generic, Iterator, TypeVar

Finding = tuple[str, str]
S = TypeVar("S")


class Rule(Generic[S]):
    """A check of a spec and the sections it reads; called like the function it wraps."""

    def __init__(self, check: Callable[[S], Iterator[Finding]], reads: tuple[str, ...]) -> None:
        self.check = check
        self.reads = reads
        self.__name__ = check.__name__
        self.__doc__ = check.__doc__

    def __call__(self, spec: S) -> Iterator[Finding]:
        return self.check(spec)

    def __repr__(self) -> str:
        return f"rule {self.__name__} (reads {', '.join(self.reads)})"


def rule(*reads: str) -> Callable[[Callable[[S], Iterator[Finding]]], Rule[S]]:
    """Declare a rule and the top-level spec sections it reads."""
    def declare(check: Callable[[S], Iterator[Finding]]) -> Rule[S]:
        return Rule(check, reads)
    return declare
