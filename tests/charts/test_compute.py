"""ComputeChart alone: one EC2NodeClass and one NodePool per nodeset (charts/compute.py)."""

from __future__ import annotations

from pathlib import Path

import yaml

from charts.compute import ComputeChart
from charts.slurm_cluster import SlurmClusterChart
from tests.charts import build, model, unit
from tests.conftest import assert_golden

GOLDEN = Path(__file__).parents[1] / "golden" / "charts"


def test_the_minimal_compute_chart_matches_its_snapshot():
    # GIVEN the minimal spec / WHEN the compute chart is built alone
    objects = unit(ComputeChart)
    # THEN its objects are the reviewed snapshot (SLURMGEN_UPDATE_GOLDEN=1 rewrites it: review the diff)
    assert_golden(yaml.safe_dump_all(objects.values(), sort_keys=True), GOLDEN / "compute-minimal.yaml")


def test_a_nodeset_gets_one_node_class_and_one_pool_and_nothing_else():
    # GIVEN the minimal spec (one g5.xlarge nodeset "gpu") / WHEN the compute chart is built alone
    objects = unit(ComputeChart)
    # THEN it holds exactly the nodeset's EC2NodeClass and NodePool, named <cluster>-<nodeset>
    assert sorted(objects) == ["EC2NodeClass/t-gpu", "NodePool/t-gpu"]
    pool = objects["NodePool/t-gpu"]["spec"]
    assert pool["template"]["spec"]["nodeClassRef"]["name"] == "t-gpu"
    assert {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g5.xlarge"]} \
        in pool["template"]["spec"]["requirements"]


def test_disruption_never_interrupts_a_job():
    # GIVEN any nodeset / WHEN its pool is built
    pool = unit(ComputeChart)["NodePool/t-gpu"]["spec"]
    # THEN Karpenter only consolidates empty nodes and never expires one under a job
    assert pool["disruption"]["consolidationPolicy"] == "WhenEmpty"
    assert pool["template"]["spec"]["expireAfter"] == "Never"


def test_a_gpu_pool_is_tainted_with_its_device():
    # GIVEN a GPU nodeset / THEN its nodes carry the NVIDIA taint only GPU pods tolerate
    taints = unit(ComputeChart)["NodePool/t-gpu"]["spec"]["template"]["spec"]["taints"]
    assert {"key": "nvidia.com/gpu", "effect": "NoSchedule"} in taints


def test_node_class_is_pinned_and_uses_local_nvme():
    # GIVEN a pinned AMI version and a node role (compute.*)
    node_class = unit(ComputeChart, compute={"nodeRole": "KarpenterNodeRole-t", "amiFamily": "al2023",
                                             "amiVersion": "v20260724"})["EC2NodeClass/t-gpu"]["spec"]
    # THEN the AMI is the pinned alias, instance store is RAID0, IMDSv2 only, subnets by discovery tag
    assert node_class["amiSelectorTerms"] == [{"alias": "al2023@v20260724"}]
    assert node_class["instanceStorePolicy"] == "RAID0"
    assert node_class["role"] == "KarpenterNodeRole-t"
    assert node_class["subnetSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "eks"}}]
    assert node_class["metadataOptions"]["httpTokens"] == "required"


def test_limits_are_the_capacity_of_the_nodes_the_replicas_need():
    # GIVEN 16 whole-node p5.48xlarge replicas
    pool = unit(ComputeChart, nodeset={"instanceType": "p5.48xlarge", "efa": True, "replicas": 16})
    # THEN the pool may never hold more than 16 such nodes
    assert pool["NodePool/t-gpu"]["spec"]["limits"] == {
        "nodes": "16", "cpu": "3072", "memory": f"{2048 * 1024 * 16}Mi", "nvidia.com/gpu": "128"}


def test_one_slurmd_per_instance_holds_every_device_and_the_pool_stops_at_max_nodes():
    # GIVEN 2 replicas of g6e.48xlarge (8 GPUs, 4 EFA) with maxNodes 4
    spec = model(nodeset={"instanceType": "g6e.48xlarge", "efa": True, "replicas": 2, "maxNodes": 4})
    # WHEN the compute and the Slurm cluster charts are built, each alone
    pool = build(ComputeChart, spec)["NodePool/t-gpu"]["spec"]
    nodeset = build(SlurmClusterChart, spec)["NodeSet/slurm-worker-gpu"]["spec"]
    # THEN the pool stops at 4 nodes, and each slurmd (one per node, the operator's anti-affinity kept)
    # holds all 8 GPUs and 4 EFA interfaces and offers them all to Slurm
    assert pool["limits"]["nodes"] == "4" and pool["limits"]["nvidia.com/gpu"] == "32"
    assert "oversubscribeNode" not in nodeset
    limits = nodeset["slurmd"]["resources"]["limits"]
    assert limits["nvidia.com/gpu"] == "8" and limits["vpc.amazonaws.com/efa"] == "4"
    assert "Gres=gpu:l40s:8" in nodeset["extraConf"].split(" ")


def test_capacity_block_nodeset_selects_its_reservation():
    # GIVEN a nodeset on a capacity reservation
    objects = unit(ComputeChart, nodeset={"instanceType": "p5e.48xlarge", "efa": True, "capacityType": "reserved",
                                          "capacityReservation": {"ids": ["cr-0123456789abcdef0"]}})
    # THEN its pool asks for reserved capacity and its node class selects that reservation
    requirements = objects["NodePool/t-gpu"]["spec"]["template"]["spec"]["requirements"]
    assert {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["reserved"]} in requirements
    assert objects["EC2NodeClass/t-gpu"]["spec"]["capacityReservationSelectorTerms"] == [{"id": "cr-0123456789abcdef0"}]


def test_neuron_pool_is_tainted_and_tolerated():
    # GIVEN a Trainium2 nodeset
    spec = model(nodeset={"instanceType": "trn2.48xlarge", "efa": True})
    pool = build(ComputeChart, spec)["NodePool/t-gpu"]["spec"]
    nodeset = build(SlurmClusterChart, spec)["NodeSet/slurm-worker-gpu"]["spec"]
    # THEN its pool carries the Neuron taint, which its slurmd alone tolerates, holding all 16 devices
    assert pool["template"]["spec"]["taints"] == [{"key": "aws.amazon.com/neuron", "effect": "NoSchedule"}]
    assert nodeset["template"]["spec"]["tolerations"] == [
        {"key": "aws.amazon.com/neuron", "operator": "Exists", "effect": "NoSchedule"}]
    assert nodeset["slurmd"]["resources"]["limits"]["aws.amazon.com/neuron"] == "16"
    assert "Gres=gpu:16" in nodeset["extraConf"].split()  # gpu/nrt detects and fences them (tests/synth/test_neuron_gres.py)


def test_compute_is_pinned_to_the_fsx_zone_and_waits_for_the_fsx_agent():
    # GIVEN a static FSx in us-west-2a
    from tests.charts.test_storage import STATIC
    template = unit(ComputeChart, storage=STATIC)["NodePool/t-gpu"]["spec"]["template"]["spec"]
    # THEN the pool's nodes start in that zone, tainted until the FSx CSI agent is ready on them
    zones = [r["values"] for r in template["requirements"] if r["key"] == "topology.kubernetes.io/zone"]
    assert zones == [["us-west-2a"]]
    assert template["startupTaints"] == [{"key": "fsx.csi.aws.com/agent-not-ready", "effect": "NoExecute"}]


def test_without_fsx_a_pool_is_neither_pinned_nor_waits_for_its_agent():
    # GIVEN the minimal spec (no shared file system)
    template = unit(ComputeChart)["NodePool/t-gpu"]["spec"]["template"]["spec"]
    # THEN no zone requirement and no FSx startup taint
    assert not [r for r in template["requirements"] if r["key"] == "topology.kubernetes.io/zone"]
    assert "fsx.csi.aws.com/agent-not-ready" not in str(template.get("startupTaints"))


def test_an_autoscaled_pool_stops_at_the_autoscale_max_and_only_drops_empty_nodes():
    # GIVEN a nodeset that scales with its queue up to 8 nodes
    pool = unit(ComputeChart, nodeset={"autoscale": {"min": 0, "max": 8}},
                autoscaling={"prometheusAddress": "http://prom:9090"})["NodePool/t-gpu"]["spec"]
    # THEN Karpenter never holds more than 8 and removes only empty nodes
    assert pool["limits"]["nodes"] == "8" and pool["disruption"]["consolidationPolicy"] == "WhenEmpty"
