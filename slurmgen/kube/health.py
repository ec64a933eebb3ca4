"""The Argo CD health checks the sync waves need, as `argocd-cm` keys, from the Lua files in lua/.

A resource Argo CD has no health check for counts as done once applied, so the next wave starts
at once. Argo CD v3.5.1 has no check for `argoproj.io/Application` (removed in 1.8) nor for the
`slinky.slurm.net` kinds (its resource_customizations/ has none), and its CRD check calls a CRD
Degraded in the moment between its names being accepted and its being established. How it runs one (util/lua/lua.go
@ v3.5.1): the live object is the global `obj`, the table the script returns is the health
(`status`: Healthy, Progressing, Degraded, Suspended, Missing or Unknown, anything else becomes
Unknown), and only the base, table, package and a safe os library are loaded (no string, no
math). The check is the `resource.customizations.health.<group>_<kind>` key of argocd-cm
(util/settings/settings.go). In a sync (gitops-engine/pkg/sync/sync_context.go), a resource of
the wave that is Degraded fails the operation (then retried), one that is Progressing holds it.

What slurm-operator v1.2.1 writes into each kind's status is in the Lua files' comments: the
Controller, Accounting and RestApi checks can only read conditions the operator does not write,
so at v1.2.1 those three never hold a wave; the NodeSet (ready slurmd pods) and LoginSet (pods created) do.
A Slinky check is the shared conditions reader (slinky-conditions.lua) followed by its kind's file.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

PREFIX = "resource.customizations.health."
SLINKY_GROUP = "slinky.slurm.net"
_CONDITIONS = "slinky-conditions.lua"
_STATUS_LESS = "slinky-status-less.lua"


def _read(name: str) -> str:
    return resources.files(__package__).joinpath("lua", name).read_text(encoding="utf-8")


@dataclass(frozen=True)
class HealthCheck:
    """One kind's check: its argocd-cm key and Lua, and what waits on it (for --verify-argocd)."""

    group: str
    kind: str
    lua: str
    waits: str

    @property
    def key(self) -> str:
        return f"{PREFIX}{self.group}_{self.kind}"


def _slinky(kind: str, body: str) -> HealthCheck:
    return HealthCheck(SLINKY_GROUP, kind, _read(_CONDITIONS) + _read(body),
                       f"the slurm unit's later waves and its accounts Job do not wait for {kind}")


#: Every check: the Application and the CRD first, then the Slinky kinds in their sync-wave order.
CHECKS: tuple[HealthCheck, ...] = (
    HealthCheck("argoproj.io", "Application", _read("argoproj.io_Application.lua"),
                "sync waves do not wait for child Applications"),
    HealthCheck("apiextensions.k8s.io", "CustomResourceDefinition",
                _read("apiextensions.k8s.io_CustomResourceDefinition.lua"),
                "a CRD applied a moment ago is Degraded in Argo CD v3.5.1, which fails the root's wave and retries it"),
    _slinky("Accounting", _STATUS_LESS),
    _slinky("Controller", _STATUS_LESS),
    _slinky("RestApi", _STATUS_LESS),
    _slinky("LoginSet", "slinky.slurm.net_LoginSet.lua"),
    _slinky("NodeSet", "slinky.slurm.net_NodeSet.lua"),
)


def argocd_cm_data() -> dict[str, str]:
    """The checks as argocd-cm `data` keys, in CHECKS order."""
    return {check.key: check.lua for check in CHECKS}
