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


DYNAMIC = {"fsx": {"enabled": True, "mode": "dynamic", "deploymentType": "PERSISTENT_2", "sizeGiB": 4800,
                   "zone": "us-west-2a", "csiDriver": "eks-addon",
                   "dynamic": {"subnetId": "subnet-0a1b2c3d4e5f60718", "securityGroupIds": ["sg-0123456789abcdef0"],
                               "perUnitStorageThroughput": 500, "fileSystemTypeVersion": "2.15",
                               "dataCompressionType": "LZ4"}}}


def test_dynamic_fsx_storage_class():
    # GIVEN a file system the CSI driver creates on first sync / WHEN the storage chart is built alone
    objects = unit(StorageChart, storage=DYNAMIC)
    sc = objects["StorageClass/t-fsx"]
    # THEN a retained flock StorageClass carries the file system's settings, every parameter a string
    assert sc["provisioner"] == "fsx.csi.aws.com" and sc["reclaimPolicy"] == "Retain" and sc["mountOptions"] == ["flock"]
    assert sc["parameters"] == {"subnetId": "subnet-0a1b2c3d4e5f60718", "securityGroupIds": "sg-0123456789abcdef0",
                                "deploymentType": "PERSISTENT_2", "perUnitStorageThroughput": "500",
                                "fileSystemTypeVersion": "2.15", "dataCompressionType": "LZ4",
                                "automaticBackupRetentionDays": "7", "dailyAutomaticBackupStartTime": "03:00",
                                "copyTagsToBackups": "true"}
    assert all(isinstance(v, str) for v in sc["parameters"].values())
    # AND the claim asks for it
    assert objects["PersistentVolumeClaim/fsx"]["spec"]["storageClassName"] == "t-fsx"
