"""A small node labeler: a stdlib Python script from a ConfigMap, run by a one-replica Deployment whose
ServiceAccount may read and patch nodes. The topology labeler (charts/topology.py) and slurm-bridge's node
name labeler (charts/bridge.py) are two of them; only their script, configuration and rights differ."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping

from constructs import Construct

from slurmgen.kube import naming
from slurmgen.spec import ClusterSpec
from ._objects import emit, wave

RBAC = "rbac.authorization.k8s.io/v1"


def emit_node_labeler(scope: Construct, spec: ClusterSpec, *, cluster_role: str, account: str, component: str,
                      image: str, files: Mapping[str, str], wave_no: int) -> None:
    """ServiceAccount `account` with the nodes ClusterRole `cluster_role`, the ConfigMap of `files`
    (labeler.py, config.json), and the Deployment that runs it; a change of `files` rolls the pod."""
    ns = spec.namespace
    labels = {naming.COMPONENT_LABEL: component}
    emit(scope, api_version="v1", kind="ServiceAccount", name=account, namespace=ns, annotations=wave(wave_no))
    emit(scope, api_version=RBAC, kind="ClusterRole", name=cluster_role, annotations=wave(wave_no),
         body={"rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]}]})
    emit(scope, api_version=RBAC, kind="ClusterRoleBinding", name=cluster_role, annotations=wave(wave_no),
         body={"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_role},
               "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": ns}]})
    emit(scope, api_version="v1", kind="ConfigMap", name=account, namespace=ns, annotations=wave(wave_no),
         body={"data": dict(files)})
    digest = hashlib.sha256(json.dumps(dict(files), sort_keys=True).encode()).hexdigest()
    container: dict[str, Any] = {
        "name": "labeler",
        "image": image,
        "command": ["python3", "-u", "/app/labeler.py", "/app/config.json"],
        "env": [{"name": "PYTHONDONTWRITEBYTECODE", "value": "1"}],
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}},
        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                            "runAsNonRoot": True, "runAsUser": 65534, "runAsGroup": 65534,
                            "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}},
        "volumeMounts": [{"name": "app", "mountPath": "/app", "readOnly": True}],
    }
    pod = {**spec.placement.pod_spec(), "serviceAccountName": account, "containers": [container],
           "volumes": [{"name": "app", "configMap": {"name": account}}]}
    emit(scope, api_version="apps/v1", kind="Deployment", name=account, namespace=ns, labels=labels,
         annotations=wave(wave_no),
         body={"spec": {"replicas": 1, "strategy": {"type": "Recreate"}, "selector": {"matchLabels": labels},
                        "template": {"metadata": {"labels": labels,
                                                  "annotations": {"slurmgen.dev/labeler-hash": digest}},
                                     "spec": pod}}})
