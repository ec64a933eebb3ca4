"""FSx for Lustre shared storage: a dynamic StorageClass or a static PersistentVolume, and an RWX claim.

Every object here holds or leads to data, so each carries Argo CD's `Prune=false,Delete=false`:
no sync and no Application deletion can drop the file system. The StorageClass and PV also use
`reclaimPolicy: Retain` (Kubernetes' StorageClass default, Delete, would delete the file system
with the claim), and `flock` so POSIX locks work across nodes.

Growing a dynamic file system is a claim resize: the StorageClass allows expansion when its
deployment type can grow (Fsx.can_grow), the csi-resizer sidecar of chart 1.17.0 calls the driver's
ControllerExpandVolume, and that calls fsx:UpdateFileSystem (pkg/driver/controller.go,
pkg/cloud/cloud.go @ v1.9.0). A static volume cannot be grown from Kubernetes: slurmgen/verify/fsx_size.py.
"""

from __future__ import annotations

from typing import Any

from constructs import Construct

from slurmgen.kube import waves
from slurmgen.kube.quantity import memory_mib
from slurmgen.spec import ClusterSpec
from slurmgen.kube.vocabulary import KEEP, SYNC_OPTIONS
from ._objects import emit, wave
from .unit import SyncSettings, UnitChart

DRIVER = "fsx.csi.aws.com"
STARTUP_TAINT = {"key": "fsx.csi.aws.com/agent-not-ready", "effect": "NoExecute"}  # removed by the FSx node plugin
VOLUME = "fsx"
SHM_VOLUME = "shm"


def _keep(wave_no: int) -> dict[str, str]:
    return wave(wave_no, **{SYNC_OPTIONS: KEEP})


def storage_class_name(spec: ClusterSpec) -> str:
    return f"{spec.name}-fsx"


def volume_name(spec: ClusterSpec) -> str:
    return f"{spec.name}-fsx"


class StorageChart(UnitChart):
    unit = "storage"

    def __init__(self, scope: Construct, spec: ClusterSpec) -> None:
        super().__init__(scope, spec, SyncSettings(wave=waves.INFRA, namespace=spec.namespace, create_namespace=True))
        fsx = spec.storage.fsx
        if fsx.mode == "dynamic":
            self._storage_class()
        else:
            self._volume()
        self._claim()

    def _storage_class(self) -> None:
        fsx = self.spec.storage.fsx
        body: dict[str, Any] = {
            "provisioner": DRIVER,
            "parameters": dict(fsx.dynamic),
            "reclaimPolicy": "Retain",
            "volumeBindingMode": "Immediate",
            "mountOptions": ["flock"],
        }
        if fsx.can_grow:
            # Without it the API server refuses a larger claim (admission PersistentVolumeClaimResize) and
            # Argo CD retries the sync forever; the field may change on an existing StorageClass.
            body["allowVolumeExpansion"] = True
        emit(self, api_version="storage.k8s.io/v1", kind="StorageClass", name=storage_class_name(self.spec),
             annotations=_keep(0), body=body)

    def _volume(self) -> None:
        fsx = self.spec.storage.fsx
        static = dict(fsx.static)
        emit(self, api_version="v1", kind="PersistentVolume", name=volume_name(self.spec),
             annotations=_keep(0), body={"spec": {
                 "capacity": {"storage": f"{fsx.size_gib}Gi"},
                 "volumeMode": "Filesystem",
                 "accessModes": ["ReadWriteMany"],
                 "mountOptions": ["flock"],
                 "persistentVolumeReclaimPolicy": "Retain",
                 "storageClassName": "",
                 # Reserve the volume for our claim, so no other claim can bind it first.
                 "claimRef": {"namespace": self.spec.namespace, "name": fsx.claim_name},
                 "csi": {"driver": DRIVER, "volumeHandle": static["fileSystemId"],
                         "volumeAttributes": {"dnsname": static["dnsName"], "mountname": static["mountName"]}},
             }})

    def _claim(self) -> None:
        fsx = self.spec.storage.fsx
        spec: dict[str, Any] = {"accessModes": ["ReadWriteMany"],
                                "resources": {"requests": {"storage": f"{fsx.size_gib}Gi"}}}
        if fsx.mode == "dynamic":
            spec["storageClassName"] = storage_class_name(self.spec)
        else:
            spec.update(storageClassName="", volumeName=volume_name(self.spec))
        emit(self, api_version="v1", kind="PersistentVolumeClaim", name=fsx.claim_name,
             namespace=self.spec.namespace, annotations=_keep(1), body={"spec": spec})


def shm_size(spec: ClusterSpec, memory_mi: int | None) -> str:
    """The /dev/shm size limit, at most half the pod's memory: a memory-backed volume counts against
    the pod's memory, and going past its size limit evicts the pod (and every job on it)."""
    wanted = spec.storage.shm_size_limit
    if memory_mi is None:
        return wanted
    return wanted if memory_mib(wanted) <= memory_mi // 2 else f"{memory_mi // 2}Mi"


def pod_volumes(spec: ClusterSpec, *, gpu: bool, memory_mi: int | None = None
                ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(template.spec.volumes, container volumeMounts) for a pod that mounts the shared storage.

    GPU pods also get a memory-backed /dev/shm: NCCL needs far more than the runtime's 64 MiB.
    """
    volumes: list[dict[str, Any]] = []
    mounts: list[dict[str, Any]] = []
    fsx = spec.storage.fsx
    if fsx.enabled:
        volumes.append({"name": VOLUME, "persistentVolumeClaim": {"claimName": fsx.claim_name}})
        mounts.append({"name": VOLUME, "mountPath": fsx.mount_path})
    if gpu and spec.storage.shm_enabled:
        volumes.append({"name": SHM_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": shm_size(spec, memory_mi)}})
        mounts.append({"name": SHM_VOLUME, "mountPath": "/dev/shm"})
    return volumes, mounts
