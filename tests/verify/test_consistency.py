"""The synth-time placement proof: a NodeSet that would not land on exactly its NodePool, or not fit, fails."""

from __future__ import annotations

import copy

from slurmgen.catalog.catalog import load_catalog
from slurmgen.catalog.sizing import DaemonSetReserve
from slurmgen.verify.consistency import check_placement
from slurmgen.kube.quantity import cpu_millis, memory_mib

RESERVE = DaemonSetReserve()


def mutate(files, path, fn):
    files = copy.deepcopy(dict(files))
    fn(files[path])
    return files


def test_rendered_examples_are_consistent(rendered):
    for cluster in rendered.values():
        assert check_placement(cluster.files, load_catalog(), RESERVE) == []


def test_selector_missing_the_pool_label_is_caught(example):
    files = mutate(example, "slurm/nodeset-slurm-worker-slinky.yaml",
                   lambda o: o["spec"]["template"]["spec"]["nodeSelector"].update({"karpenter.sh/nodepool": "g5-nvidia"}))
    [problem] = check_placement(files, load_catalog(), RESERVE)
    assert problem.startswith("slurm/nodeset-slurm-worker-slinky.yaml: nodeSelector")
    assert "matches 0 NodePools" in problem


def test_selector_matching_two_pools_is_caught(example):
    def loosen(o):
        del o["spec"]["template"]["spec"]["nodeSelector"]["karpenter.sh/nodepool"]
        del o["spec"]["template"]["spec"]["nodeSelector"]["node.kubernetes.io/instance-type"]
        o["spec"]["template"]["spec"]["nodeSelector"]["karpenter.sh/capacity-type"] = "on-demand"
    files = mutate(example, "slurm/nodeset-slurm-worker-slinky.yaml", loosen)
    files = mutate(files, "compute/nodepool-example-spot.yaml",
                   lambda o: o["spec"]["template"]["spec"]["requirements"][1].update({"values": ["on-demand"]}))
    problems = check_placement(files, load_catalog(), RESERVE)
    assert any("matches 2 NodePools" in p for p in problems)


def test_missing_toleration_is_caught(example):
    files = mutate(example, "slurm/nodeset-slurm-worker-slinky.yaml",
                   lambda o: o["spec"]["template"]["spec"].update({"tolerations": []}))
    assert check_placement(files, load_catalog(), RESERVE) == [
        "slurm/nodeset-slurm-worker-slinky.yaml: does not tolerate taint nvidia.com/gpu:NoSchedule of NodePool example-slinky"]


def test_request_above_allocatable_is_caught(example):
    def grow(o):
        o["spec"]["slurmd"]["resources"]["requests"]["cpu"] = "32"
        o["spec"]["slurmd"]["resources"]["requests"]["nvidia.com/gpu"] = "2"
    files = mutate(example, "slurm/nodeset-slurm-worker-slinky.yaml", grow)
    problems = check_placement(files, load_catalog(), RESERVE)
    assert any("requesting cpu 32 exceed 31531m allocatable on g5.8xlarge after the DaemonSet reserve" in p
               for p in problems)
    assert any("requesting nvidia.com/gpu 2 exceed the 1 on g5.8xlarge" in p for p in problems)


def test_quantities():
    assert cpu_millis("2") == 2000 and cpu_millis("250m") == 250
    assert memory_mib("1Gi") == 1024 and memory_mib("512Mi") == 512 and memory_mib("4.5Gi") == 4608
