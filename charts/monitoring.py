"""A Grafana dashboard of our own, on slurmctld's native OpenMetrics names (Slinky 1.x).

No upstream dashboard works with these names (slurm-exporter's use `_total` suffixes). The JSON is
built here, so it is deterministic and every query names only metrics slurmctld 26.05 exports, plus
the HPA series kube-state-metrics exports for KEDA's HPAs. It ships as a ConfigMap with the label
the kube-prometheus-stack Grafana sidecar watches.
"""

from __future__ import annotations

import json
from typing import Any

from constructs import Construct

from slurmgen.kube import naming
from slurmgen.kube import waves
from slurmgen.spec import ClusterSpec
from ._objects import emit, wave
from .unit import SyncSettings, UnitChart

DASHBOARD_LABEL = {"grafana_dashboard": "1"}
NODE_STATES = ("alloc", "mixed", "idle", "drain", "down")


def _target(expr: str, legend: str, ref: str) -> dict[str, Any]:
    return {"datasource": {"type": "prometheus", "uid": "${datasource}"}, "expr": expr,
            "legendFormat": legend, "refId": ref}


def _panel(pid: int, title: str, targets: list[dict[str, Any]], x: int, y: int, *, stacked: bool = False,
           unit: str = "short") -> dict[str, Any]:
    return {
        "id": pid, "type": "timeseries", "title": title,
        "gridPos": {"h": 8, "w": 12, "x": x, "y": y},
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "fieldConfig": {"defaults": {"unit": unit, "custom": {"stacking": {"mode": "normal" if stacked else "none"}}},
                        "overrides": []},
        "options": {"legend": {"displayMode": "table", "placement": "bottom"}, "tooltip": {"mode": "multi"}},
        "targets": targets,
    }


def dashboard(spec: ClusterSpec) -> dict[str, Any]:
    sel = f'namespace="{spec.namespace}",partition=~"$partition"'
    refs = "ABCDEFGH"
    panels = [
        _panel(1, "Nodes by state per partition", [
            _target(f"sum by (partition) (slurm_partition_nodes_{state}{{{sel}}})", f"{{{{partition}}}} {state}", refs[i])
            for i, state in enumerate(NODE_STATES)], 0, 0, stacked=True),
        _panel(2, "Jobs per partition", [
            _target(f"sum by (partition) (slurm_partition_jobs_pending{{{sel}}})", "{{partition}} pending", "A"),
            _target(f"sum by (partition) (slurm_partition_jobs_running{{{sel}}})", "{{partition}} running", "B")],
            12, 0),
        _panel(3, "NodeSet replicas vs KEDA target", [
            _target(f'kube_horizontalpodautoscaler_status_desired_replicas{{namespace="{spec.namespace}",'
                    f'horizontalpodautoscaler=~"keda-hpa-.*"}}', "{{horizontalpodautoscaler}} target", "A"),
            _target(f'kube_horizontalpodautoscaler_status_current_replicas{{namespace="{spec.namespace}",'
                    f'horizontalpodautoscaler=~"keda-hpa-.*"}}', "{{horizontalpodautoscaler}} current", "B")],
            0, 8),
        _panel(4, "GPU allocation per partition", [
            _target(f"sum by (partition) (slurm_partition_jobs_gpus_alloc{{{sel}}})", "{{partition}} allocated", "A"),
            _target(f"sum by (partition) (slurm_partition_gpus{{{sel}}})", "{{partition}} total", "B")],
            12, 8),
    ]
    return {
        "title": f"Slurm / {spec.name}",
        "uid": f"slurmgen-{spec.name}"[:40],
        "editable": False,
        "schemaVersion": 39,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "1m",
        "tags": ["slurm", "slinky", "slurmgen"],
        "templating": {"list": [
            {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Prometheus"},
            {"name": "partition", "type": "query", "label": "Partition", "multi": True, "includeAll": True,
             "datasource": {"type": "prometheus", "uid": "${datasource}"},
             "query": f'label_values(slurm_partition_nodes{{namespace="{spec.namespace}"}}, partition)',
             "refresh": 2},
        ]},
        "panels": panels,
    }


class MonitoringChart(UnitChart):
    """`dist/<cluster>/monitoring/`: the dashboard, in the Slurm namespace (the sidecar watches all)."""

    unit = "monitoring"

    def __init__(self, scope: Construct, spec: ClusterSpec) -> None:
        super().__init__(scope, spec, SyncSettings(wave=waves.ADDONS, namespace=spec.namespace, create_namespace=True))
        text = json.dumps(dashboard(spec), indent=2, sort_keys=True) + "\n"
        emit(self, api_version="v1", kind="ConfigMap", name=f"slurm-dashboard-{spec.name}", namespace=spec.namespace,
             labels={**DASHBOARD_LABEL, naming.COMPONENT_LABEL: "dashboard"}, annotations=wave(0),
             body={"data": {f"slurm-{spec.name}.json": text}})
