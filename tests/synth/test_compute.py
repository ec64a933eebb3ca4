"""Compute across the example clusters: zones beside FSx, device plugins, slurmd resources (each chart alone:
tests/charts/test_compute.py)."""

from __future__ import annotations

from slurmgen.synth.build import render
from slurmgen.spec import parse_text
from tests.scheduling import bridged
from tests.spec_builder import spec_text


def obj(rendered, cluster, rel):
    return rendered[cluster].files[rel]


def test_zones_pin_every_pool_but_a_nodeset_with_zones_of_its_own(rendered):
    # GIVEN training: FSx and compute.zones in us-east-1a; the spot nodeset l4 lists us-east-1a and us-east-1b
    pools = {rel: o for rel, o in rendered["training"].files.items() if o["kind"] == "NodePool"}
    assert len(pools) == len(rendered["training"].spec.nodesets)
    for rel, o in pools.items():
        zones = ["us-east-1a", "us-east-1b"] if rel.endswith("-l4.yaml") else ["us-east-1a"]
        # THEN each pool requires exactly its zones: the nodeset's own list is kept beside FSx
        assert {"key": "topology.kubernetes.io/zone", "operator": "In", "values": zones} in \
            o["spec"]["template"]["spec"]["requirements"], rel


def test_device_plugins_only_where_needed(rendered):
    training = set(rendered["training"].files)
    assert "apps/application-training-nvidia-device-plugin.yaml" in training
    assert "apps/application-training-aws-efa-k8s-device-plugin.yaml" in training
    # the example's cluster already runs the GPU operator and an EFA plugin (the blueprint's Terraform)
    assert not any("device-plugin" in rel for rel in rendered["example"].files)
    assert not any("device-plugin" in rel for rel in rendered["dev"].files)  # CPU only
    efa = rendered["training"].files["apps/application-training-aws-efa-k8s-device-plugin.yaml"]
    tolerated = {t["key"] for t in efa["spec"]["source"]["helm"]["valuesObject"]["tolerations"]}
    # (and slurm-bridge's taint, by value: training bridges its L40S nodes, which use EFA)
    assert tolerated == {"nvidia.com/gpu", "aws.amazon.com/neuron", "slurmgen.dev/compute", "slinky.slurm.net/managed-node"}


def test_slurmd_has_no_cpu_or_memory_limits(rendered):
    # Slurm's share is written explicitly (CoreSpecCount, RealMemory: tests/slurmconf/test_slurm_conf.py); limits
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
            if bridged(obj):  # slurmd asks Kubernetes for itself only: the node's memory is Slurm's (RealMemory)
                memory_mi = int(dict(t.split("=", 1) for t in obj["spec"]["extraConf"].split())["RealMemory"])
            for volume in obj["spec"]["template"]["spec"].get("volumes", []):
                if volume.get("emptyDir", {}).get("medium") == "Memory":
                    size = volume["emptyDir"]["sizeLimit"]
                    size_mi = int(size[:-2]) * (1024 if size.endswith("Gi") else 1)
                    assert size_mi <= memory_mi // 2, (rel, size)
                    checked += 1
    assert checked >= 4  # the GPU nodesets of the examples mount a memory-backed /dev/shm


def test_a_whole_node_keeps_its_cpu_layout_and_reserves_the_cores_beyond_the_request():
    spec = parse_text("t.yaml", spec_text(nodeset={"instanceType": "p5.48xlarge"}))
    [cluster] = render([spec])
    conf = cluster.files["slurm/nodeset-slurm-worker-gpu.yaml"]["spec"]["extraConf"].split(" ")
    assert not [c for c in conf if c.startswith("CPUs=")] and "CoreSpecCount=2" in conf and "Gres=gpu:h100:8" in conf
