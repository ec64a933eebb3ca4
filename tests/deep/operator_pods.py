"""The pods slurm-operator v1.2.1 builds around our rendered templates, as far as the deep tests play them.

Transcribed from SlinkyProject/slurm-operator at tag v1.2.1:
- internal/builder/controllerbuilder/controller_app.go: the slurmctld pod (securityContext 401/401,
  fsGroup 401; volumes slurm-etc (projected, 0610: the config ConfigMap, the configFileRefs, slurm.key,
  jwt.key), slurm-logfile and run (emptyDir), slurm-authsocket (emptyDir at /run/slurmctld), statesave
  (the claim, at /var/spool/slurmctld/<clusterName>));
- internal/builder/accountingbuilder/accounting_app.go: the slurmdbd pod (the same user; slurm-etc
  projected 0600 from the slurmdbd.conf Secret, slurm.key and jwt.key; run at /run);
- internal/builder/common/pod_template.go: our template's initContainers and volumes are merged in by name.

What is left out, and why: the logfile sidecar (it only tails the log to stdout); probes (nothing here
calls them); the container images' entrypoints, for which `command` stands (`slurmctld -D`,
`slurmdbd -D`: what the images' entrypoints exec in the foreground). The next step is to take these pods
from the operator itself rather than from this transcription.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from .pod import Pod

SLURM_UID = 401  # internal/builder/common/const.go SlurmUserUid (= SlurmUserGid)
SECURITY = {"runAsNonRoot": True, "runAsUser": SLURM_UID, "runAsGroup": SLURM_UID}
CONFIG_MAP = "slurm-config"  # the operator's <controller>-config ConfigMap; its name does not matter here


def _secret_item(name: str, key: str, path: str) -> dict[str, Any]:
    return {"secret": {"name": name, "items": [{"key": key, "path": path}]}}


def controller_pod(root: Path, controller: Mapping[str, Any], files: Mapping[str, str],
                   configmaps: Mapping[str, Mapping[str, str]], secrets: Mapping[str, Mapping[str, bytes]],
                   state: Path) -> Pod:
    """The Controller's pod: our init containers, then slurmctld, sharing the volumes the operator adds.

    `files` are the effective Slurm files (slurm.conf and the configFileRefs' keys), as the operator's
    config ConfigMap and the projected volume put them together in /etc/slurm."""
    spec = controller["spec"]
    template = spec.get("template", {}).get("spec", {})
    cluster = spec["clusterName"]
    slurm_key, jwt_key = spec["slurmKeyRef"], spec["jwtKeyRef"]
    volumes = [
        {"name": "slurm-etc", "projected": {"defaultMode": 0o610, "sources": [
            {"configMap": {"name": CONFIG_MAP}},
            _secret_item(slurm_key["name"], slurm_key["key"], "slurm.key"),
            _secret_item(jwt_key["name"], jwt_key["key"], "jwt.key")]}},
        {"name": "slurm-logfile", "emptyDir": {"medium": "Memory"}},
        {"name": "run", "emptyDir": {"medium": "Memory"}},
        {"name": "slurm-authsocket", "emptyDir": {}},
        {"name": "statesave", "persistentVolumeClaim": {"claimName": "statesave"}},
        *template.get("volumes", []),
    ]
    slurmctld = {
        "name": "slurmctld", "command": ["slurmctld", "-D"], "securityContext": SECURITY,
        "volumeMounts": [
            {"name": "slurm-etc", "mountPath": "/etc/slurm", "readOnly": True},
            {"name": "run", "mountPath": "/run"},
            {"name": "statesave", "mountPath": f"/var/spool/slurmctld/{cluster}"},
            {"name": "slurm-authsocket", "mountPath": "/run/slurmctld"},
            {"name": "slurm-logfile", "mountPath": "/var/log/slurm"},
        ],
    }
    pod_spec = {"securityContext": {**SECURITY, "fsGroup": SLURM_UID},
                "initContainers": list(template.get("initContainers", [])),
                "containers": [slurmctld], "volumes": volumes}
    return Pod(root, pod_spec, configmaps={**configmaps, CONFIG_MAP: dict(files)}, secrets=secrets,
               claims={"statesave": state}, hostname="slurm-controller-0")


def accounting_pod(root: Path, slurmdbd_conf: str, key: bytes) -> Pod:
    """The Accounting's pod: slurmdbd with its Secret-made /etc/slurm and an emptyDir /run."""
    volumes = [
        {"name": "slurm-etc", "projected": {"defaultMode": 0o600, "sources": [
            _secret_item("slurm-accounting-config", "slurmdbd.conf", "slurmdbd.conf"),
            _secret_item("slurm-auth-slurm", "slurm.key", "slurm.key"),
            _secret_item("slurm-auth-jwt", "jwt.key", "jwt.key")]}},
        {"name": "run", "emptyDir": {"medium": "Memory"}},
    ]
    slurmdbd = {
        "name": "slurmdbd", "command": ["slurmdbd", "-D"], "securityContext": SECURITY,
        "volumeMounts": [{"name": "slurm-etc", "mountPath": "/etc/slurm", "readOnly": True},
                         {"name": "run", "mountPath": "/run"}],
    }
    secrets = {"slurm-accounting-config": {"slurmdbd.conf": slurmdbd_conf.encode()},
               "slurm-auth-slurm": {"slurm.key": key}, "slurm-auth-jwt": {"jwt.key": key}}
    return Pod(root, {"securityContext": {**SECURITY, "fsGroup": SLURM_UID}, "containers": [slurmdbd],
                      "volumes": volumes}, secrets=secrets, hostname="slurm-accounting-0")
