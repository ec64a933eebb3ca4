"""What a render produces for one cluster, with no cdk8s import: the checks and the writer read only this."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

from ..plan.nodesets import NodeSetPlan
from ..spec import ClusterSpec

Obj = dict[str, Any]


def images(obj: Any) -> Iterator[str]:
    """Every `image:` value anywhere in an object (containers, Slinky wrappers, init containers)."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key == "image" and isinstance(value, str):
                yield value
            else:
                yield from images(value)
    elif isinstance(obj, list):
        for item in obj:
            yield from images(item)


def image_parts(ref: str) -> tuple[str, str | None, str | None]:
    """(repository, tag, digest) of an image reference: `reg:5000/app:1.2@sha256:…` ->
    (`reg:5000/app`, `1.2`, `sha256:…`). A registry's port is not a tag; no `@` is digest None."""
    name, at, digest = ref.partition("@")
    if ":" in name.rsplit("/", 1)[-1]:
        repository, _, tag = name.rpartition(":")
        return repository, tag, digest if at else None
    return name, None, digest if at else None


@dataclass(frozen=True)
class RenderedCluster:
    """Everything rendered for one cluster: relative file path -> object."""

    spec: ClusterSpec
    plans: Mapping[str, NodeSetPlan]
    files: Mapping[str, Obj]
    #: collisions.keys(files) when known without reading the objects (a render cache hit keeps them)
    shared_names: Mapping[tuple[str, ...], str] | None = None


@dataclass
class Rendered:
    """One cluster rendered and checked, as plain data: what a worker process sends back (render.py)."""

    name: str
    plans: dict[str, NodeSetPlan]
    files: dict[str, Any]
    texts: dict[str, str]  # path -> YAML
    problems: list[str]
    timings: dict[str, float] = field(default_factory=dict)  # step -> seconds (a worker's, on its first cluster)
