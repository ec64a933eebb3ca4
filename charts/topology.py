"""The node labeler that keeps `topology.slinky.slurm.net/spec` current on the topology nodes.

A one-replica Deployment on the core placement (Recreate: never two writers), its script and config
in one ConfigMap (a pod-template hash rolls it when either changes), and a ClusterRole limited to
reading and patching Nodes. Why not NVIDIA topograph v1.0.0: docs/compute.md, Topology.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from constructs import Construct

from slurmgen.kube import naming
from slurmgen.spec import ClusterSpec
from slurmgen.plan.topology import labeler_config
from ._objects import emit, wave

SCRIPT = Path(__file__).resolve().parent / "topology_labeler.py"  # shipped as is in a ConfigMap
RBAC = "rbac.authorization.k8s.io/v1"


def labeler_files(spec: ClusterSpec) -> dict[str, str]:
    """ConfigMap data: the script (byte for byte the packaged module) and its JSON config."""
    config = json.dumps(labeler_config(spec), indent=2, sort_keys=True) + "\n"
    return {"labeler.py": SCRIPT.read_text(encoding="utf-8"), "config.json": config}


def emit_labeler(scope: Construct, spec: ClusterSpec, wave_no: int) -> None:
    name = naming.topology_labeler(spec.name)
    ns = spec.namespace
    labels = {naming.COMPONENT_LABEL: "topology-labeler"}
    files = labeler_files(spec)
    emit(scope, api_version="v1", kind="ServiceAccount", name=naming.TOPOLOGY_LABELER, namespace=ns,
         annotations=wave(wave_no))
    emit(scope, api_version=RBAC, kind="ClusterRole", name=name, annotations=wave(wave_no),
         body={"rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]}]})
    emit(scope, api_version=RBAC, kind="ClusterRoleBinding", name=name, annotations=wave(wave_no),
         body={"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
               "subjects": [{"kind": "ServiceAccount", "name": naming.TOPOLOGY_LABELER, "namespace": ns}]})
    emit(scope, api_version="v1", kind="ConfigMap", name=naming.TOPOLOGY_LABELER, namespace=ns,
         annotations=wave(wave_no), body={"data": files})
    digest = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()
    container = {
        "name": "labeler",
        "image": spec.topology.labeler_image if spec.topology else "",
        "command": ["python3", "-u", "/app/labeler.py", "/app/config.json"],
        "env": [{"name": "PYTHONDONTWRITEBYTECODE", "value": "1"}],
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}},
        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                            "runAsNonRoot": True, "runAsUser": 65534, "runAsGroup": 65534,
                            "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}},
        "volumeMounts": [{"name": "app", "mountPath": "/app", "readOnly": True}],
    }
    pod = {**spec.placement.pod_spec(), "serviceAccountName": naming.TOPOLOGY_LABELER,
           "containers": [container],
           "volumes": [{"name": "app", "configMap": {"name": naming.TOPOLOGY_LABELER}}]}
    emit(scope, api_version="apps/v1", kind="Deployment", name=naming.TOPOLOGY_LABELER, namespace=ns,
         labels=labels, annotations=wave(wave_no),
         body={"spec": {"replicas": 1, "strategy": {"type": "Recreate"}, "selector": {"matchLabels": labels},
                        "template": {"metadata": {"labels": labels,
                                                  "annotations": {"slurmgen.dev/labeler-hash": digest}},
                                     "spec": pod}}})
