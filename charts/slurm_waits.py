"""Sync hooks that hold a wave until the Slurm daemon the wave before it started answers.

slurm-operator v1.2.1 writes no status on a Controller or an Accounting (api/v1beta1/controller_types.go,
accounting_types.go; slurmgen/kube/lua/), so no Argo CD health check can tell when slurmctld or slurmdbd
is up, and the next wave (the NodeSets, the LoginSet; the Controller after the Accounting) would start
at once. A Sync-phase hook runs with the resources of its wave, and Argo CD starts the next wave only
once it has succeeded (gitops-engine pkg/sync/sync_context.go at Argo CD v3.5.1). Each hook here is a Job
that connects to its daemon's Service: the operator makes those ClusterIP Services, not headless ones
(internal/builder/controllerbuilder/controller_service.go, accountingbuilder/accounting_service.go,
common/service.go at v1.2.1), so they forward only to ready pods (slurmctld's /readyz, slurmdbd's TCP probe).
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from constructs import Construct

from slurmgen.kube import naming
from slurmgen.spec import ClusterSpec
from ._objects import emit, wave

SCRIPT = (resources.files(__package__) / "scripts" / "wait-tcp.sh").read_text()
WAIT_TRIES = 120  # x 5 s: a first start pulls images and creates the database
#: (Job name, what it waits for, Service, port, the wave it holds); ports: common/const.go at v1.2.1
SLURMDBD = ("slurm-wait-slurmdbd", "slurmdbd", f"{naming.CONTROLLER}-accounting", 6819)
SLURMCTLD = ("slurm-wait-slurmctld", "slurmctld", f"{naming.CONTROLLER}-controller", 6817)


def wait_job(spec: ClusterSpec, target: tuple[str, str, str, int], wave_no: int,
             placement: dict[str, Any]) -> dict[str, Any]:
    """The hook Job's metadata annotations and body (`emit_waits` emits it)."""
    name, what, service, port = target
    pod = {
        **placement,
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "securityContext": {"runAsNonRoot": True, "runAsUser": 401, "runAsGroup": 401},
        "containers": [{
            "name": "wait",
            "image": spec.images.for_component("login"),  # bash, for /dev/tcp
            "command": ["/bin/sh", "-c", SCRIPT],
            "env": [{"name": "WHAT", "value": what}, {"name": "HOST", "value": f"{service}.{spec.namespace}"},
                    {"name": "PORT", "value": str(port)}, {"name": "WAIT_TRIES", "value": str(WAIT_TRIES)}],
        }],
    }
    return {"name": name,
            "annotations": wave(wave_no, **{"argocd.argoproj.io/hook": "Sync",
                                            "argocd.argoproj.io/hook-delete-policy": "BeforeHookCreation"}),
            "body": {"spec": {"backoffLimit": 0, "activeDeadlineSeconds": WAIT_TRIES * 8,
                              "ttlSecondsAfterFinished": 86400,
                              "template": {"metadata": {"labels": {naming.COMPONENT_LABEL: "wait"}}, "spec": pod}}}}


def emit_waits(scope: Construct, spec: ClusterSpec, accounting_wave: int | None, controller_wave: int,
               placement: dict[str, Any]) -> None:
    """A hook in the Accounting's wave (when there is one) and one in the Controller's."""
    targets = [(SLURMCTLD, controller_wave)]
    if accounting_wave is not None:
        targets.insert(0, (SLURMDBD, accounting_wave))
    for target, wave_no in targets:
        job = wait_job(spec, target, wave_no, placement)
        emit(scope, api_version="batch/v1", kind="Job", name=job["name"], namespace=spec.namespace,
             annotations=job["annotations"], body=job["body"])
