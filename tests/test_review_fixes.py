"""Behaviour a real cluster depends on, each once found missing in review: explicit checks, no snapshots."""

from __future__ import annotations

from slurmgen.build import render
from charts.autoscaling import partitions_of
from slurmgen.spec import parse_text
from tests.conftest import MINIMAL_SPEC


def test_slurmd_has_no_cpu_or_memory_limits(rendered):
    # Slurm's share is written explicitly (CoreSpecCount, RealMemory: tests/test_slurm_conf.py); limits
    # would make the entrypoint add its own, and the operator after v1.2.1 puts an empty Topology=
    # before them (slurm-operator#261)
    nodesets = [(rel, obj) for c in rendered.values() for rel, obj in c.files.items() if obj["kind"] == "NodeSet"]
    assert len(nodesets) == sum(len(c.spec.nodesets) for c in rendered.values())
    for rel, obj in nodesets:
        limits = obj["spec"]["slurmd"]["resources"].get("limits", {})
        assert not {"cpu", "memory"} & set(limits), rel
        assert {"cpu", "memory"} <= set(obj["spec"]["slurmd"]["resources"]["requests"]), rel


def test_shm_never_exceeds_half_the_pod_memory(rendered):
    checked = 0
    for cluster in rendered.values():
        for rel, obj in cluster.files.items():
            if obj["kind"] != "NodeSet":
                continue
            memory_mi = int(obj["spec"]["slurmd"]["resources"]["requests"]["memory"].rstrip("Mi"))
            for volume in obj["spec"]["template"]["spec"].get("volumes", []):
                if volume.get("emptyDir", {}).get("medium") == "Memory":
                    size = volume["emptyDir"]["sizeLimit"]
                    size_mi = int(size[:-2]) * (1024 if size.endswith("Gi") else 1)
                    assert size_mi <= memory_mi // 2, (rel, size)
                    checked += 1
    assert checked >= 4  # the GPU nodesets of the examples mount a memory-backed /dev/shm


def test_every_partition_has_a_default_memory_per_job(rendered):
    for cluster in rendered.values():
        conf = cluster.files["slurm/controller-slurm.yaml"]["spec"]["extraConf"]
        lines = [line for line in conf.splitlines() if line.startswith("PartitionName=")]
        assert all("DefMemPer" in line for line in lines), cluster.spec.name
        for rel, obj in cluster.files.items():
            if obj["kind"] == "NodeSet" and "partition" in obj["spec"]:
                assert "DefMemPer" in obj["spec"]["partition"]["config"], rel


def test_crd_applications_keep_their_crds_when_deleted(rendered):
    crd_apps = 0
    for cluster in rendered.values():
        for rel, obj in cluster.files.items():
            name = obj["metadata"]["name"]
            if obj["kind"] == "Application" and name.endswith(("slurm-operator-crds", "mariadb-operator-crds")):
                assert "Delete=false" in obj["spec"]["syncPolicy"]["syncOptions"], rel
                crd_apps += 1
    assert crd_apps > len(rendered)  # slurm-operator-crds in every cluster, mariadb-operator-crds in some


def test_service_monitor_only_where_a_prometheus_operator_is_known(rendered):
    metrics = {name: c.files["slurm/controller-slurm.yaml"]["spec"]["metrics"] for name, c in rendered.items()}
    assert metrics["example"]["serviceMonitor"]["enabled"] is True      # set explicitly (blueprint's Prometheus)
    assert metrics["training"]["serviceMonitor"]["enabled"] is True     # kube-prometheus-stack enabled here
    assert "serviceMonitor" not in metrics["dev"] and "serviceMonitor" not in metrics["prod"]


def test_autoscaling_counts_own_partitions_when_there_are_some(rendered):
    spec = rendered["example"].spec
    assert partitions_of(spec, "spot") == ["backfill"]
    shared_only = parse_text("t.yaml", MINIMAL_SPEC.replace(
        "nodesets: [{name: gpu, instanceType: g5.xlarge}]",
        "nodesets: [{name: gpu, instanceType: g5.xlarge}, {name: cpu, instanceType: m7i.xlarge}]").replace(
        "partitions: [{name: gpu, nodesets: [gpu]}]", "partitions: [{name: all, nodesets: [gpu, cpu]}]"))
    assert partitions_of(shared_only, "gpu") == ["all"]


def test_a_whole_node_keeps_its_cpu_layout_and_reserves_the_cores_beyond_the_request():
    spec = parse_text("t.yaml", MINIMAL_SPEC.replace("instanceType: g5.xlarge}", "instanceType: p5.48xlarge}"))
    [cluster] = render([spec])
    conf = cluster.files["slurm/nodeset-slurm-worker-gpu.yaml"]["spec"]["extraConf"].split(" ")
    assert not [c for c in conf if c.startswith("CPUs=")] and "CoreSpecCount=2" in conf and "Gres=gpu:h100:8" in conf
