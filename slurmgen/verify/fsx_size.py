"""A change of `storage.fsx.sizeGiB`, judged against the claim in the tree it replaces.

Kubernetes grows a claim only through its StorageClass (admission plugin PersistentVolumeClaimResize,
plugin/pkg/admission/storage/persistentvolume/resize/admission.go: a claim with storageClassName ""
is refused, "only dynamically provisioned pvc can be resized"), and never shrinks one. Argo CD would
retry such a refused update on every sync, so synth refuses it first, with what to do instead:

- shrink (either mode): an FSx for Lustre file system cannot shrink (UpdateFileSystem takes a larger
  StorageCapacity only);
- grow a static volume: Kubernetes cannot reach the file system; `aws fsx update-file-system` grows
  it, and the claim keeps its size (a static PersistentVolume's capacity only matches it to the claim
  at binding: Kubernetes docs, Persistent Volumes, "Binding"; pods see the file system's real size);
- grow a dynamic SCRATCH_1 file system: FSx cannot grow that type (UpdateFileSystem API reference,
  StorageCapacity), and the StorageClass we render for it does not allow expansion.

A dynamic file system of another type grows: the StorageClass allows expansion, the CSI driver's
ControllerExpandVolume calls fsx:UpdateFileSystem (aws-fsx-csi-driver v1.9.0, pkg/driver/controller.go,
pkg/cloud/cloud.go). Its sizes need no base to check: every size the spec accepts (1200, 2400, then
multiples of 2400; spec/_checks/aws.py fsx_valid_size) that is larger than another is a multiple of
2400 GiB, the increment UpdateFileSystem takes, and the driver's rounding (pkg/util/util.go
RoundUpVolumeSize) leaves it as it is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from .._input import UnreadableFile, read_text
from ..kube.quantity import memory_mib
from ..spec import ClusterSpec, field_lines
from ..spec.errors import Problem

Obj = dict[str, Any]
FIELD = "storage.fsx.sizeGiB"


def claim_in(spec: ClusterSpec, objs: Iterable[Obj]) -> Obj | None:
    """The FSx claim of `spec` among `objs` (a previous render), if it has one."""
    fsx = spec.storage.fsx
    return next((o for o in objs if o.get("kind") == "PersistentVolumeClaim"
                 and o["metadata"].get("name") == fsx.claim_name
                 and o["metadata"].get("namespace") == spec.namespace), None)


def fsx_objects(spec: ClusterSpec, objs: Iterable[Obj]) -> set[tuple[str, str]]:
    """(kind, name) of the FSx claim and of the PersistentVolume reserved for it, among `objs`."""
    fsx = spec.storage.fsx
    ref = {"namespace": spec.namespace, "name": fsx.claim_name}
    return {(o["kind"], o["metadata"]["name"]) for o in objs
            if (o.get("kind") == "PersistentVolumeClaim" and o["metadata"].get("name") == fsx.claim_name
                and o["metadata"].get("namespace") == spec.namespace)
            or (o.get("kind") == "PersistentVolume" and (o.get("spec") or {}).get("claimRef") == ref)}


def claim_gib(claim: Obj) -> int | None:
    """The claim's requested size in GiB (None when it is not a readable quantity)."""
    try:
        mib = memory_mib(str(claim["spec"]["resources"]["requests"]["storage"]))
    except (KeyError, TypeError, ValueError):
        return None
    return int(mib // 1024)


def is_static(claim: Obj) -> bool:
    """A claim bound to a PersistentVolume we name (storageClassName ""), not provisioned by a class."""
    return (claim.get("spec") or {}).get("storageClassName") == ""


def grow_command(spec: ClusterSpec, size: int) -> str:
    """The AWS CLI command that grows the static file system to `size` GiB."""
    file_system = dict(spec.storage.fsx.static).get("fileSystemId", "fs-...")
    return (f"aws fsx update-file-system --region {spec.aws.region} --file-system-id {file_system} "
            f"--storage-capacity {size}")


def why(spec: ClusterSpec, was: int) -> str | None:
    """What is wrong with going from a claim of `was` GiB to the spec's size, or None."""
    fsx = spec.storage.fsx
    now = fsx.size_gib
    if now is None or now == was:  # None: FSx is off, so there is no claim to judge
        return None
    if now < was:
        return (f"{now} GiB is less than the {was} GiB of the claim {spec.namespace}/{fsx.claim_name}: an FSx for "
                f"Lustre file system cannot shrink and Kubernetes refuses a smaller claim; set it back to {was}")
    if fsx.mode == "static":
        return (f"{was} -> {now} GiB would resize the claim of an existing file system, which Kubernetes refuses "
                f"(no StorageClass can expand it): grow the file system with `{grow_command(spec, now)}` and keep "
                f"sizeGiB at {was} (for an existing file system it only binds the claim; pods see the real size)")
    if not fsx.can_grow:
        return (f"{was} -> {now} GiB: a SCRATCH_1 file system cannot grow (FSx UpdateFileSystem refuses it); "
                f"keep {was}, or copy the data to a new file system of another deploymentType")
    return None


def size_problems(spec: ClusterSpec, previous: Iterable[Obj]) -> list[str]:
    """One `FILE:LINE: storage.fsx.sizeGiB: ...` line when the size change cannot be applied, else none.

    A cluster without a claim in `previous` (new, or FSx just enabled) is a creation, judged by the spec
    checks alone; a claim whose mode changed (static <-> dynamic) is refused by the immutable-field guard.
    """
    fsx = spec.storage.fsx
    claim = claim_in(spec, previous) if fsx.enabled else None
    if claim is None or is_static(claim) != (fsx.mode == "static"):
        return []
    was = claim_gib(claim)
    message = why(spec, was) if was is not None else None
    if message is None:
        return []
    return [str(Problem(spec.source, FIELD, message, _line(spec.source)))]


def _line(source: str) -> int | None:
    """The line of sizeGiB in the spec file (of `storage.fsx` when it comes from a file it extends)."""
    try:
        return field_lines(read_text(Path(source))).line(FIELD, nearest=True)
    except (OSError, UnreadableFile):
        return None
