"""A deploy unit: one cdk8s Chart, one folder `dist/<cluster>/<unit>/`, one child Argo CD Application.

The Argo CD layer reads these attributes to write the child Application, so a chart declares
how it must be synced right next to what it renders.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cdk8s import Chart
from constructs import Construct

from slurmgen.spec import ClusterSpec


@dataclass(frozen=True)
class SyncSettings:
    """How Argo CD syncs one unit."""

    wave: int
    namespace: str | None  # destination namespace; None for a unit of cluster-scoped objects
    create_namespace: bool = False
    server_side_apply: bool = False
    ignore_differences: tuple[dict[str, object], ...] = field(default=())
    extra_sync_options: tuple[str, ...] = ()


class UnitChart(Chart):
    """Base of the directory-source deploy units (Slurm cluster, compute, storage, ...)."""

    unit: str = ""

    def __init__(self, scope: Construct, spec: ClusterSpec, sync: SyncSettings) -> None:
        # No chart namespace: cdk8s would stamp it on cluster-scoped objects too. Objects set their own.
        super().__init__(scope, f"{spec.name}-{self.unit}", disable_resource_name_hashes=True)
        self.spec = spec
        self.sync = sync
        self.emitted: list[tuple[str, str, str | None]] = []  # (apiVersion, kind, namespace), see _objects.emit
