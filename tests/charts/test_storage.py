"""StorageChart alone: the FSx for Lustre volume and its claim (charts/storage.py)."""

from __future__ import annotations

from charts.storage import StorageChart
from tests.charts import unit

STATIC = {"fsx": {"enabled": True, "mode": "static", "csiDriver": "eks-addon", "sizeGiB": 2400, "zone": "us-west-2a",
                  "static": {"fileSystemId": "fs-0123456789abcdef0", "mountName": "abcdefgh",
                             "dnsName": "fs-0123456789abcdef0.fsx.us-west-2.amazonaws.com"}}}
KEEP = "Prune=false,Delete=false"


def test_static_fsx_is_a_retained_flock_pv_bound_to_our_claim():
    # GIVEN a static FSx file system of 2400 GiB / WHEN the storage chart is built alone
    objects = unit(StorageChart, storage=STATIC)
    assert sorted(objects) == ["PersistentVolume/t-fsx", "PersistentVolumeClaim/fsx"]
    pv, pvc = objects["PersistentVolume/t-fsx"]["spec"], objects["PersistentVolumeClaim/fsx"]
    # THEN the volume is retained, mounted with flock, names the file system, and is bound to our claim only
    assert pv["persistentVolumeReclaimPolicy"] == "Retain" and pv["mountOptions"] == ["flock"]
    assert pv["csi"] == {"driver": "fsx.csi.aws.com", "volumeHandle": "fs-0123456789abcdef0",
                         "volumeAttributes": {"dnsname": "fs-0123456789abcdef0.fsx.us-west-2.amazonaws.com",
                                              "mountname": "abcdefgh"}}
    assert pv["claimRef"] == {"namespace": "slurm", "name": "fsx"}
    assert pvc["spec"]["volumeName"] == "t-fsx" and pvc["spec"]["accessModes"] == ["ReadWriteMany"]
    assert pvc["spec"]["resources"]["requests"]["storage"] == pv["capacity"]["storage"] == "2400Gi"


def test_the_volume_and_claim_are_never_pruned_or_deleted():
    # GIVEN the static FSx volume and claim / THEN Argo CD never prunes nor cascades them away
    for obj in unit(StorageChart, storage=STATIC).values():
        assert KEEP in obj["metadata"]["annotations"]["argocd.argoproj.io/sync-options"], obj["kind"]
