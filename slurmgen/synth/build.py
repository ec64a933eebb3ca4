"""Model -> cdk8s constructs -> plain objects, per cluster and per output file.

Each cluster gets its own cdk8s App (see render_one); nothing is synthesized to disk here. The result maps
`<unit>/<kind>-<name>.yaml` to the object, so the writer and the checks never touch cdk8s.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Mapping

from cdk8s import App, Chart

from apps import helm
from apps.argocd import AppsChart, ArgoCDSettingsChart, RootChart
from ..catalog.catalog import InstanceType, load_catalog
from charts.accounting import DatabaseChart
from charts.compute import ComputeChart
from charts.monitoring import MonitoringChart
from charts.secrets import SecretsChart
from charts.storage import StorageChart
from charts.unit import UnitChart
from charts.slurm_cluster import SlurmClusterChart
from ..plan.nodesets import plan_cluster
from .rendered import RenderedCluster
from ..spec import ClusterSpec

Obj = dict[str, Any]


class DuplicateObjectError(RuntimeError):
    """Two objects would be written to the same file: a generator bug, never silently overwritten."""


def file_name(obj: Obj) -> str:
    """`<kind>-<name>.yaml`, lower-case kind: predictable, and unique inside one unit folder."""
    return f"{obj['kind'].lower()}-{obj['metadata']['name']}.yaml"


def _files(charts: Iterable[Chart]) -> dict[str, Obj]:
    files: dict[str, Obj] = {}
    for chart in charts:
        unit = getattr(chart, "unit")
        for obj in chart.to_json():
            path = f"{unit}/{file_name(obj)}"
            if path in files:
                raise DuplicateObjectError(f"two objects render to {path}")
            files[path] = obj
    return dict(sorted(files.items()))


def render_cluster(app: App, spec: ClusterSpec, catalog: Mapping[str, InstanceType]) -> RenderedCluster:
    plans = plan_cluster(spec, catalog)
    units: list[UnitChart] = [ComputeChart(app, spec, plans)]
    if spec.secrets.generated:
        units.append(SecretsChart(app, spec))
    if spec.storage.fsx.enabled:
        units.append(StorageChart(app, spec))
    if spec.accounting.enabled and spec.accounting.database.managed:
        units.append(DatabaseChart(app, spec))
    units.append(SlurmClusterChart(app, spec, plans))
    if spec.kube_prometheus_stack.enabled:
        units.append(MonitoringChart(app, spec))
    charts: list[Chart] = [*units, AppsChart(app, spec, units, helm.planned_releases(spec, plans)), RootChart(app, spec)]
    if spec.gitops.argocd_install == "plain":  # helm and operator own argocd-cm: see argocd_settings.py
        charts.append(ArgoCDSettingsChart(app, spec))
    return RenderedCluster(spec=spec, plans=plans, files=_files(charts))


def render_one(spec: ClusterSpec, catalog: Mapping[str, InstanceType]) -> RenderedCluster:
    """One cluster in an App of its own: each Chart.to_json() resolves dependencies and validates
    its whole App, so a shared App made a fleet's render quadratic in its size."""
    return render_cluster(App(), spec, catalog)


def render_each(specs: Iterable[ClusterSpec],
                catalog: Mapping[str, InstanceType] | None = None) -> Iterator[RenderedCluster]:
    """Render cluster after cluster, in name order, so checking one can overlap rendering the next."""
    catalog = catalog if catalog is not None else load_catalog()
    for spec in sorted(specs, key=lambda s: s.name):
        yield render_one(spec, catalog)


def render(specs: Iterable[ClusterSpec], catalog: Mapping[str, InstanceType] | None = None) -> list[RenderedCluster]:
    """Render every cluster, in name order, into one in-memory tree per cluster."""
    return list(render_each(specs, catalog))
