"""ComputeChart alone: one EC2NodeClass and one NodePool per nodeset (charts/compute.py)."""

from __future__ import annotations

from pathlib import Path

import yaml

from charts.compute import ComputeChart
from tests.charts import unit
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
