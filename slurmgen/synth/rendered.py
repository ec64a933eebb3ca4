"""What a render produces for one cluster, with no cdk8s import: the checks and the writer read only this."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

from ..plan.nodesets import NodeSetPlan
from ..spec import ClusterSpec, floating_image, image_parts

Obj = dict[str, Any]

__all__ = ["Obj", "Rendered", "RenderedCluster", "floating_image", "image_parts", "images", "values_image"]


def images(obj: Any) -> Iterator[str]:
    """Every image anywhere in an object: `image:` strings (containers, Slinky wrappers, init
    containers) and Helm values' `image: {registry, repository, tag, digest}` maps, as one reference."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key == "image" and isinstance(value, str):
                yield value
            elif key == "image" and isinstance(value, dict) and isinstance(value.get("repository"), str):
                yield values_image(value)
            else:
                yield from images(value)
    elif isinstance(obj, list):
        for item in obj:
            yield from images(item)


def values_image(value: Mapping[str, Any]) -> str:
    """The reference a chart builds from an `image:` values map (`registry/repository:tag@digest`, the
    common chart layout); a part we leave unset is missing here too, so the pin check sees it."""
    ref = str(value["repository"])
    if value.get("registry"):
        ref = f"{value['registry']}/{ref}"
    if value.get("tag"):
        ref = f"{ref}:{value['tag']}"
    if value.get("digest"):
        ref = f"{ref}@{value['digest']}"
    return ref


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
