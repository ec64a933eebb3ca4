"""Neuron devices are Slurm GRES: counted on the node, detected by gpu/nrt, fenced by ConstrainDevices.

Upstream (SchedMD/slurm @ slurm-26-05-3-1): gres.conf.5 documents `AutoDetect=nrt` ("AWS
Trainium/Inferentia") and node-specific AutoDetect lines; src/plugins/gpu/nrt/gpu_nrt.c reports
one `gpu` GRES per /dev/neuron<N> with the sysfs device name as its type.
"""

from __future__ import annotations

from typing import Any

import pytest

from slurmgen.synth.build import render
from slurmgen.spec import SpecError, parse_text
from slurmgen.review.explain import explain
from tests.spec_builder import spec_text

TRN2 = {"name": "trn2", "instanceType": "trn2.48xlarge"}
NEURON = {"name": "neuron", "nodesets": ["trn2"]}


def neuron_spec(*, nodeset: dict[str, Any] | None = None, **top: Any) -> str:
    """The minimal spec in us-east-1 with one trn2 nodeset in partition `neuron`; `top` replaces sections."""
    return spec_text(nodeset=nodeset, **{"aws": {"region": "us-east-1"}, "nodesets": [TRN2], "partitions": [NEURON], **top})


NEURON_ONLY = neuron_spec()
MIXED = neuron_spec(nodesets=[TRN2, {"name": "gpu", "instanceType": "g5.xlarge"}],
                    partitions=[NEURON, {"name": "gpu", "nodesets": ["gpu"]}])


def files(text: str) -> dict:
    [cluster] = render([parse_text("t.yaml", text)])
    return dict(cluster.files)


def worker(tree: dict, nodeset: str) -> dict:
    return tree[f"slurm/nodeset-slurm-worker-{nodeset}.yaml"]["spec"]


def controller_conf(tree: dict) -> list[str]:
    return tree["slurm/controller-slurm.yaml"]["spec"]["extraConf"].splitlines()


def test_neuron_nodes_declare_their_devices_as_gpu_gres():
    tree = files(NEURON_ONLY)
    # THEN each trn2 slurmd offers its 16 Neuron devices as an untyped gpu count (the type is the driver's)
    assert "Gres=gpu:16" in worker(tree, "trn2")["extraConf"].split()
    # AND slurmctld loads the gpu GRES plugin and accounts its use
    assert {"GresTypes=gpu", "AccountingStorageTRES=gres/gpu"} <= set(controller_conf(tree))


def test_gres_conf_detects_neuron_devices_on_the_neuron_nodes_only():
    # GIVEN a cluster with a Neuron nodeset beside an NVIDIA one
    tree = files(MIXED)
    # THEN --explain gres.conf shows NVIDIA detection for all and nrt for the trn2 nodes (node-specific wins)
    text = explain({"t": tree}, "gres.conf", "t")
    assert text.splitlines() == ["AutoDetect=nvidia", "NodeName=trn2-[0-9999] AutoDetect=nrt"]


def test_a_neuron_only_cluster_gets_a_gres_conf_too():
    tree = files(NEURON_ONLY)
    assert explain({"t": tree}, "gres.conf", "t").splitlines() == ["NodeName=trn2-[0-9999] AutoDetect=nrt"]


def test_scaling_a_neuron_nodeset_leaves_gres_conf_unchanged():
    # gres.conf is hashed into the Controller pod: a replica change must not restart slurmctld
    small = files(NEURON_ONLY)
    large = files(neuron_spec(nodeset={"replicas": 40}))
    key = "slurm/configmap-slurm-gres-conf.yaml"
    assert small[key] == large[key]


def test_splitting_a_neuron_node_between_pods_is_refused():
    # sysfs lists every device of the node, not the pod's share: Slurm would bind devices the pod lacks
    with pytest.raises(SpecError) as err:
        parse_text("t.yaml", neuron_spec(nodeset={"gpusPerPod": 8}))
    [line] = [str(p) for p in err.value.problems]
    assert "gpusPerPod" in line and "would split it" in line and "omit gpusPerPod" in line, line
