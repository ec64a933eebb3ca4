"""The topology labeler alone: charts/topology.py emit_labeler (the labeler's logic: tests/plan/test_topology.py)."""

from __future__ import annotations

import json

from charts.topology import emit_labeler
from tests.charts import model, part
from tests.conftest import REPO


def test_labeler_wiring():
    # GIVEN a tree topology over one EFA nodeset / WHEN the labeler is emitted alone
    objects = part(emit_labeler, model(topology={"enabled": True, "default": "tree"},
                                       nodeset={"instanceType": "p5.48xlarge", "efa": True}), 3)
    assert sorted(objects) == ["ClusterRole/t-topology-labeler", "ClusterRoleBinding/t-topology-labeler",
                               "ConfigMap/slurm-topology-labeler", "Deployment/slurm-topology-labeler",
                               "ServiceAccount/slurm-topology-labeler"]
    # THEN one replica runs the packaged script, recreated (never two labelling at once)
    deployment = objects["Deployment/slurm-topology-labeler"]["spec"]
    assert deployment["replicas"] == 1 and deployment["strategy"]["type"] == "Recreate"
    data = objects["ConfigMap/slurm-topology-labeler"]["data"]
    assert data["labeler.py"] == (REPO / "charts" / "topology_labeler.py").read_text()
    config = json.loads(data["config.json"])
    assert config["annotation"] == "topology.slinky.slurm.net/spec"
    assert config["tree"]["pools"] == ["t-gpu"]
    # AND its ClusterRole reads and patches Nodes, nothing else
    assert objects["ClusterRole/t-topology-labeler"]["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]}]
