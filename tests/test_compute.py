"""Karpenter objects of the larger example (clusters/training.yaml): limits, disruption, reservations, one slurmd per node."""

from __future__ import annotations

from slurmgen.synth.build import render
from slurmgen.spec import parse_text
from tests.scheduling import bridged
from tests.spec_builder import spec_text


def obj(rendered, cluster, rel):
    return rendered[cluster].files[rel]


def test_limits_are_the_capacity_of_the_nodes_the_replicas_need(rendered):
    # GIVEN 16 whole-node p5.48xlarge replicas
    pool = obj(rendered, "training", "compute/nodepool-training-h100.yaml")["spec"]
    # THEN the pool may never hold more than 16 such nodes
    assert pool["limits"] == {"nodes": "16", "cpu": "3072", "memory": f"{2048 * 1024 * 16}Mi", "nvidia.com/gpu": "128"}


def test_one_slurmd_per_instance_holds_every_device_and_the_pool_stops_at_max_nodes():
    # GIVEN 2 replicas of g6e.48xlarge (8 GPUs, 4 EFA) with maxNodes 4
    spec = parse_text("t.yaml", spec_text(
        nodeset={"instanceType": "g6e.48xlarge", "efa": True, "replicas": 2, "maxNodes": 4}))
    [cluster] = render([spec])
    pool = cluster.files["compute/nodepool-t-gpu.yaml"]["spec"]
    nodeset = cluster.files["slurm/nodeset-slurm-worker-gpu.yaml"]["spec"]
    # THEN the pool stops at 4 nodes, and each slurmd (one per node, the operator's anti-affinity kept)
    # holds all 8 GPUs and 4 EFA interfaces and offers them all to Slurm
    assert pool["limits"]["nodes"] == "4" and pool["limits"]["nvidia.com/gpu"] == "32"
    assert "oversubscribeNode" not in nodeset
    limits = nodeset["slurmd"]["resources"]["limits"]
    assert limits["nvidia.com/gpu"] == "8" and limits["vpc.amazonaws.com/efa"] == "4"
    assert "Gres=gpu:l40s:8" in nodeset["extraConf"].split(" ")


def test_capacity_block_nodeset_selects_its_reservation(rendered):
    pool = obj(rendered, "training", "compute/nodepool-training-h200.yaml")["spec"]
    node_class = obj(rendered, "training", "compute/ec2nodeclass-training-h200.yaml")["spec"]
    assert {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["reserved"]} in pool["template"]["spec"]["requirements"]
    assert node_class["capacityReservationSelectorTerms"] == [{"id": "cr-0123456789abcdef0"}]


def test_zones_pin_every_pool_but_a_nodeset_with_zones_of_its_own(rendered):
    # GIVEN training: FSx and compute.zones in us-east-1a; the spot nodeset l4 lists us-east-1a and us-east-1b
    pools = {rel: o for rel, o in rendered["training"].files.items() if o["kind"] == "NodePool"}
    assert len(pools) == len(rendered["training"].spec.nodesets)
    for rel, o in pools.items():
        zones = ["us-east-1a", "us-east-1b"] if rel.endswith("-l4.yaml") else ["us-east-1a"]
        # THEN each pool requires exactly its zones: the nodeset's own list is kept beside FSx
        assert {"key": "topology.kubernetes.io/zone", "operator": "In", "values": zones} in \
            o["spec"]["template"]["spec"]["requirements"], rel


def test_neuron_pool_is_tainted_and_tolerated(rendered):
    pool = obj(rendered, "training", "compute/nodepool-training-trn2.yaml")["spec"]
    nodeset = obj(rendered, "training", "slurm/nodeset-slurm-worker-trn2.yaml")["spec"]
    assert pool["template"]["spec"]["taints"] == [{"key": "aws.amazon.com/neuron", "effect": "NoSchedule"}]
    assert nodeset["template"]["spec"]["tolerations"] == [
        {"key": "aws.amazon.com/neuron", "operator": "Exists", "effect": "NoSchedule"}]
    assert nodeset["slurmd"]["resources"]["limits"]["aws.amazon.com/neuron"] == "16"
    assert "Gres=gpu:16" in nodeset["extraConf"].split()  # gpu/nrt detects and fences them (tests/test_neuron_gres.py)


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
