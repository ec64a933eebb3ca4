"""The node labeler that keeps `topology.slinky.slurm.net/spec` current on the topology nodes.

A one-replica Deployment on the core placement (Recreate: never two writers), its script and config
in one ConfigMap (a pod-template hash rolls it when either changes), and a ClusterRole limited to
reading and patching Nodes. Why not NVIDIA topograph v1.0.0: docs/compute.md, Topology.
"""

from __future__ import annotations

import json
from pathlib import Path

from constructs import Construct

from slurmgen.kube import naming
from slurmgen.spec import ClusterSpec
from slurmgen.plan.topology import labeler_config
from ._node_labeler import emit_node_labeler

SCRIPT = Path(__file__).resolve().parent / "topology_labeler.py"  # shipped as is in a ConfigMap
RBAC = "rbac.authorization.k8s.io/v1"


def labeler_files(spec: ClusterSpec) -> dict[str, str]:
    """ConfigMap data: the script (byte for byte the packaged module) and its JSON config."""
    config = json.dumps(labeler_config(spec), indent=2, sort_keys=True) + "\n"
    return {"labeler.py": SCRIPT.read_text(encoding="utf-8"), "config.json": config}


def emit_labeler(scope: Construct, spec: ClusterSpec, wave_no: int) -> None:
    emit_node_labeler(scope, spec, cluster_role=naming.topology_labeler(spec.name), account=naming.TOPOLOGY_LABELER,
                      component="topology-labeler", image=spec.topology.labeler_image if spec.topology else "",
                      files=labeler_files(spec), wave_no=wave_no)
