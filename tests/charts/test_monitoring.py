"""MonitoringChart alone: the Slurm dashboard for kube-prometheus-stack's Grafana (charts/monitoring.py)."""

from __future__ import annotations

import json

from charts.monitoring import MonitoringChart
from tests.charts import unit


def test_the_dashboard_is_one_configmap_grafana_discovers():
    # GIVEN kube-prometheus-stack enabled / WHEN the monitoring chart is built alone
    objects = unit(MonitoringChart, monitoring={"kubePrometheusStack": {"enabled": True}})
    # THEN it is one ConfigMap labelled for Grafana's sidecar, holding a dashboard that is valid JSON
    [(name, config_map)] = objects.items()
    assert name == "ConfigMap/slurm-dashboard-t"
    assert config_map["metadata"]["labels"].get("grafana_dashboard") == "1"
    [dashboard] = config_map["data"].values()
    assert json.loads(dashboard)["panels"]
