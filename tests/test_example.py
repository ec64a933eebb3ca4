"""Explicit checks on the fields that matter in the embedded example (clusters/example.yaml)."""

from __future__ import annotations

import pytest

WAVE = "argocd.argoproj.io/sync-wave"
OPTIONS = "argocd.argoproj.io/sync-options"
FINALIZER = "resources-finalizer.argocd.argoproj.io"


def by_kind(files, kind):
    return {o["metadata"]["name"]: o for o in files.values() if o["kind"] == kind}


def test_root_application_points_at_the_apps_folder(example):
    # GIVEN the bootstrap folder
    root = example["bootstrap/application-example-root.yaml"]
    # THEN it is the only object there, syncs dist/example/apps into argocd, and cascades on delete
    assert [p for p in example if p.startswith("bootstrap/")] == ["bootstrap/application-example-root.yaml"]
    assert root["spec"]["source"]["path"] == "dist/example/apps"
    assert root["spec"]["destination"] == {"namespace": "argocd", "server": "https://kubernetes.default.svc"}
    assert root["metadata"]["finalizers"] == [FINALIZER]
    assert root["spec"]["syncPolicy"]["automated"] == {"prune": True, "selfHeal": True}


def children(files):
    return {o["metadata"]["name"]: o for p, o in files.items() if p.startswith("apps/") and o["kind"] == "Application"}


def test_child_applications_are_ordered_by_string_waves(example):
    apps = children(example)
    waves = {name: apps[name]["metadata"]["annotations"][WAVE] for name in apps}
    # THEN every wave is a string and CRDs/cert-manager < operator < compute < Slurm CRs
    assert all(isinstance(w, str) for w in waves.values())
    w = {k: int(v) for k, v in waves.items()}
    assert w["example-cert-manager"] == w["example-slurm-operator-crds"] < w["example-slurm-operator"]
    assert w["example-slurm-operator"] < w["example-compute"] < w["example-slurm"]
    assert int(by_kind(example, "AppProject")["example"]["metadata"]["annotations"][WAVE]) < min(w.values())


@pytest.mark.parametrize("name", ["example-cert-manager", "example-slurm-operator-crds", "example-slurm-operator",
                                  "example-slurm", "example-compute", "example-external-secrets", "example-secrets",
                                  "example-keda", "example-database", "example-storage"])
def test_every_child_has_finalizer_automated_sync_and_retry(example, name):
    app = children(example)[name]
    assert app["metadata"]["finalizers"] == [FINALIZER]
    policy = app["spec"]["syncPolicy"]
    assert policy["automated"] == {"prune": True, "selfHeal": True}
    assert (policy["retry"]["limit"] >= 5 or policy["retry"]["limit"] == -1) and policy["retry"]["backoff"]["factor"] == 2
    assert app["spec"]["project"] == "example"
    assert app["metadata"]["labels"]["app.kubernetes.io/part-of"] == "example-root"


def test_helm_children_are_pinned_and_use_oci_without_scheme(example):
    apps = by_kind(example, "Application")
    operator = apps["example-slurm-operator"]["spec"]
    assert operator["source"] == {
        "chart": "slurm-operator", "repoURL": "ghcr.io/slinkyproject/charts", "targetRevision": "1.2.1",
        "helm": {"releaseName": "slurm-operator", "valuesObject": operator["source"]["helm"]["valuesObject"]}}
    values = operator["source"]["helm"]["valuesObject"]
    assert values["crds"] == {"enabled": False} and values["certManager"] == {"enabled": True}
    assert "ServerSideApply=true" in apps["example-slurm-operator-crds"]["spec"]["syncPolicy"]["syncOptions"]
    cert = apps["example-cert-manager"]["spec"]["source"]
    assert cert["targetRevision"] == "v1.21.1" and cert["helm"]["valuesObject"]["crds"]["enabled"] is True
    for app in apps.values():
        source = app["spec"]["source"]
        assert "*" not in source["repoURL"] and source["targetRevision"] not in ("", "HEAD", "latest", "*")


def test_slurm_app_reads_the_slurm_folder_and_creates_its_namespace(example):
    app = by_kind(example, "Application")["example-slurm"]["spec"]
    assert app["source"]["path"] == "dist/example/slurm"
    assert app["destination"]["namespace"] == "slurm"
    assert "CreateNamespace=true" in app["syncPolicy"]["syncOptions"]


def test_project_is_explicit(example):
    project = by_kind(example, "AppProject")["example"]["spec"]
    text = repr(project)
    assert "'*'" not in text
    assert "https://github.com/example-org/slurm-gitops.git" in project["sourceRepos"]
    assert {d["namespace"] for d in project["destinations"]} >= {"slurm", "slinky", "cert-manager", "kube-system"}
    kinds = {(k["group"], k["kind"]) for k in project["clusterResourceWhitelist"]}
    assert ("karpenter.sh", "NodePool") in kinds and ("karpenter.k8s.aws", "EC2NodeClass") in kinds
    assert ("apiextensions.k8s.io", "CustomResourceDefinition") in kinds
    # every child's destination and repository is allowed by the project
    assert children(example)
    for app in children(example).values():
        assert app["spec"]["project"] == "example"
        assert app["spec"]["source"]["repoURL"] in project["sourceRepos"]
        assert app["spec"]["destination"]["namespace"] in {d["namespace"] for d in project["destinations"]}


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
