"""What a render produces for one cluster, with no cdk8s import: the checks and the writer read only this."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from .plan import NodeSetPlan
from .spec import ClusterSpec

Obj = dict[str, Any]


@dataclass(frozen=True)
class RenderedCluster:
    """Everything rendered for one cluster: relative file path -> object."""

    spec: ClusterSpec
    plans: Mapping[str, NodeSetPlan]
    files: Mapping[str, Obj]
