"""Explicit checks on the fields that matter in the embedded example (clusters/example.yaml)."""

from __future__ import annotations

WAVE = "argocd.argoproj.io/sync-wave"
OPTIONS = "argocd.argoproj.io/sync-options"


def by_kind(files, kind):
    return {o["metadata"]["name"]: o for o in files.values() if o["kind"] == kind}


def test_controller_is_protected_and_synced_after_its_config(example):
    controller = by_kind(example, "Controller")["slurm"]
    assert "Prune=false" in controller["metadata"]["annotations"][OPTIONS]
    assert "Delete=false" in controller["metadata"]["annotations"][OPTIONS]
    slurm = {rel: obj for rel, obj in example.items() if rel.startswith("slurm/")}  # argocd/ holds argocd-cm
    for cm in by_kind(slurm, "ConfigMap").values():
        assert int(cm["metadata"]["annotations"][WAVE]) < int(controller["metadata"]["annotations"][WAVE])
    assert controller["spec"]["clusterName"] == "slurm-on-eks"
    assert controller["spec"]["persistence"]["storageClassName"] == "gp3"


def test_partitions_slinky_backfill_and_default_all(example):
    conf = by_kind(example, "Controller")["slurm"]["spec"]["extraConf"]
    assert "GresTypes=gpu\n" in conf
    # every partition gets a default memory per GPU, so a job without --mem does not take a whole node;
    # [ALL] is written as the nodesets in it: not the autoscaled spot nodeset, which did not opt in
    assert ("PartitionName=all Nodes=slinky State=UP Default=YES MaxTime=UNLIMITED PriorityTier=5 "
            "DefMemPerGPU=115956\n") in conf
    assert ("PartitionName=backfill Nodes=spot State=UP MaxTime=1-00:00:00 PriorityTier=1 AllowQos=scavenger "
            "DefMemPerGPU=28390\n") in conf
    slinky = by_kind(example, "NodeSet")["slurm-worker-slinky"]["spec"]
    assert slinky["partition"] == {"enabled": True,
                                   "config": "State=UP MaxTime=UNLIMITED PriorityTier=10 DefMemPerGPU=115956"}
    assert "partition" not in by_kind(example, "NodeSet")["slurm-worker-spot"]["spec"]


def test_nodeset_gpu_and_efa_limits_match_slurm_gres(example):
    ns = by_kind(example, "NodeSet")["slurm-worker-slinky"]["spec"]
    limits = ns["slurmd"]["resources"]["limits"]
    requests = ns["slurmd"]["resources"]["requests"]
    # extended resources: limits == requests; CPU and memory: requests only (see PodShape.limits)
    assert limits == {"nvidia.com/gpu": "1", "vpc.amazonaws.com/efa": "1"}
    assert {k: requests[k] for k in limits} == limits and {"cpu", "memory"} <= set(requests)
    assert "Gres=gpu:a10g:1" in ns["extraConf"].split(" ")
    assert "  " not in ns["extraConf"] and all("=" in t for t in ns["extraConf"].split(" "))
    assert ns["template"]["spec"]["hostname"] == "slinky-"
    assert ns["template"]["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] == "true"


def test_cluster_scoped_objects_have_no_namespace(example):
    for rel, obj in example.items():
        if obj["kind"] in ("NodePool", "EC2NodeClass", "PersistentVolume", "StorageClass"):
            assert "namespace" not in obj["metadata"], rel
        else:
            assert obj["metadata"].get("namespace"), rel


def test_no_names_carry_cdk8s_hashes_and_files_are_named_after_objects(example):
    for rel, obj in example.items():
        assert rel.endswith(f"/{obj['kind'].lower()}-{obj['metadata']['name']}.yaml")
        assert not any(len(part) == 8 and part.isalnum() and not part.isalpha()
                       for part in obj["metadata"]["name"].split("-")), rel
