"""Allocatable matches Karpenter's estimate exactly, and slurmd pods use (almost) all of it, never more."""

from __future__ import annotations

import dataclasses
import re

import pytest

from slurmgen.catalog.catalog import InstanceType, load_catalog
from slurmgen.catalog.sizing import (
    DEFAULT_RESERVE,
    Allocatable,
    DaemonSetReserve,
    PodShape,
    SizingError,
    allocatable,
    format_node_conf,
    kube_reserved_cpu_m,
    lookup,
    pod_resources,
    slurm_node_conf,
)

CATALOG = load_catalog()

# argocd-karpenter-fsx-nlb.md §2.6: (type, vCPU, mem GiB, maxPods, Karpenter alloc CPU, Karpenter alloc mem)
SECTION_2_6 = [
    ("m6i.xlarge", 4, 16, 58, "3920m", "14162Mi"),
    ("m7i.xlarge", 4, 16, 58, "3920m", "14162Mi"),
    ("m7i.2xlarge", 8, 32, 58, "7910m", "29317Mi"),
    ("g5.12xlarge", 48, 192, 737, "47810m", "173400Mi"),
    ("g6e.48xlarge", 192, 1536, 492, "191450m", "1449132Mi"),
    ("p4d.24xlarge", 96, 1152, 737, "95690m", "1082712Mi"),
    ("p5.48xlarge", 192, 2048, 100, "191450m", "1938410Mi"),
    ("p5en.48xlarge", 192, 2048, 198, "191450m", "1937332Mi"),
    ("p6-b200.48xlarge", 192, 2048, 198, "191450m", "1937332Mi"),
    ("trn2.48xlarge", 192, 2048, 100, "191450m", "1938410Mi"),
]


def cpu_type(vcpu: int, memory_mib: int, max_pods: int, arch: str = "amd64") -> InstanceType:
    """A synthetic CPU-only type, for formula edges the catalog does not contain."""
    it = InstanceType("t.test", vcpu, memory_mib, "amd64", max_pods, "", 0, "", 0, 0, 0, "test")
    return dataclasses.replace(it, arch=arch)


@pytest.mark.parametrize(("name", "vcpu", "mem_gib", "max_pods", "cpu", "memory"), SECTION_2_6)
def test_allocatable_equals_the_section_2_6_table(
    name: str, vcpu: int, mem_gib: int, max_pods: int, cpu: str, memory: str
) -> None:
    # given a type from the §2.6 table
    it = CATALOG[name]
    assert (it.vcpu, it.memory_mib, it.max_pods) == (vcpu, mem_gib * 1024, max_pods)
    # when its allocatable is estimated
    alloc = allocatable(it)
    # then CPU and memory are exactly Karpenter's figures
    assert (f"{alloc.cpu_m}m", f"{alloc.memory_mi}Mi") == (cpu, memory)


def test_allocatable_equals_karpenters_figure_for_every_catalog_type() -> None:
    # given every catalog type with Karpenter's own allocatable estimate beside it (1,336 types, 374 arm64)
    types = [CATALOG[name] for name in CATALOG]
    assert all(it.karpenter_cpu_m and it.karpenter_memory_mi for it in types)
    assert sum(it.arch == "arm64" for it in types) > 300
    # when each is estimated with our formula, then both figures match to the unit, arm64 included
    wrong = [(it.instance_type, allocatable(it).cpu_m, allocatable(it).memory_mi, it.karpenter_cpu_m,
              it.karpenter_memory_mi) for it in types
             if (allocatable(it).cpu_m, allocatable(it).memory_mi) != (it.karpenter_cpu_m, it.karpenter_memory_mi)]
    assert wrong == []


def test_allocatable_carries_devices_and_pods() -> None:
    # given p5.48xlarge, then allocatable also reports its GPUs, EFA and pod limit
    assert allocatable(CATALOG["p5.48xlarge"]) == Allocatable(191450, 1938410, 8, 32, 100)


@pytest.mark.parametrize(("vcpu", "reserved"), [(1, 60), (2, 70), (3, 75), (4, 80), (5, 82), (6, 85), (192, 550)])
def test_kube_reserved_cpu_follows_the_range_formula_for_any_size(vcpu: int, reserved: int) -> None:
    # given any vCPU count (including < 4 and odd counts), then ranges 6%/1%/0.5%/0.25% apply, floored per range
    assert kube_reserved_cpu_m(vcpu) == reserved


def test_arm64_takes_64_mib_off_before_the_vm_overhead() -> None:
    # given the same hardware as amd64 and arm64 (c7g.xlarge's: 4 vCPU, 8 GiB, 58 pods)
    amd, arm = cpu_type(4, 8192, 58), cpu_type(4, 8192, 58, arch="arm64")
    # when estimated, then arm64 loses 64 MiB minus the 7.5 % overhead no longer charged on them (ceil),
    # i.e. Karpenter's c7g.xlarge figure 6525Mi, and the same CPU
    assert allocatable(amd).memory_mi - allocatable(arm).memory_mi == 64 - 5
    assert allocatable(arm).memory_mi == CATALOG["c7g.xlarge"].karpenter_memory_mi == 6525
    assert allocatable(amd).cpu_m == allocatable(arm).cpu_m


def test_whole_node_gpu_pod_gets_every_device_and_all_but_the_reserve() -> None:
    # given p5.48xlarge sized as one slurmd per node with EFA
    shape = pod_resources(CATALOG["p5.48xlarge"], gpus_per_pod=None, efa=True, reserve=DEFAULT_RESERVE)
    # then the pod holds all 8 GPUs, all 32 EFA, and allocatable minus the reserve: on a big node the
    # 1 % share beats the fixed floor (1915m of 191450m CPU, 19385Mi of 1938410Mi), CPU floored to 10m
    assert shape == PodShape("p5.48xlarge", 189530, 1938410 - 19385, 8, "nvidia.com/gpu", 32)
    expected = {"cpu": "189530m", "memory": "1919025Mi", "nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"}
    assert shape.requests() == expected
    # and limits cover the extended resources only (no CPU/memory limit: Slinky 1.2.1, slurm-operator#261)
    assert shape.limits() == {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"}


def test_gpus_per_pod_equal_to_device_count_is_the_whole_node() -> None:
    # given gpusPerPod equal to the device count
    whole = pod_resources(CATALOG["g5.12xlarge"], gpus_per_pod=None, efa=True, reserve=DEFAULT_RESERVE)
    same = pod_resources(CATALOG["g5.12xlarge"], gpus_per_pod=4, efa=True, reserve=DEFAULT_RESERVE)
    # then it is the same shape as not splitting at all
    assert same == whole and same.accelerators == 4


@pytest.mark.parametrize("gpus", [1, 2, 4])
def test_a_node_is_never_split_between_slurmd_pods(gpus: int) -> None:
    # given p5.48xlarge (8 GPUs) asked for fewer GPUs per pod
    # then it is refused, saying why (Slurm shares the node itself; split slurmd share CPUs) and the fix
    with pytest.raises(SizingError, match=rf"p5.48xlarge has 8 nvidia.com/gpu; gpusPerPod {gpus} would split it: "
                       r"one slurmd runs per instance: .* omit gpusPerPod \(or set 8\)") as err:
        pod_resources(CATALOG["p5.48xlarge"], gpus_per_pod=gpus, efa=True, reserve=DEFAULT_RESERVE)
    assert err.value.field == "gpusPerPod"


def test_efa_off_requests_no_efa() -> None:
    # given an EFA-capable type sized with efa=False
    shape = pod_resources(CATALOG["p5.48xlarge"], gpus_per_pod=None, efa=False, reserve=DEFAULT_RESERVE)
    # then no EFA is requested, and every GPU is
    assert shape.efa == 0 and "vpc.amazonaws.com/efa" not in shape.requests()
    assert shape.accelerators == 8


def test_neuron_pod_requests_every_neuron_device_and_is_never_split() -> None:
    # given trn2.48xlarge with EFA, whole node: the pod requests all 16 Neuron devices and every EFA
    it = CATALOG["trn2.48xlarge"]
    shape = pod_resources(it, gpus_per_pod=None, efa=True, reserve=DEFAULT_RESERVE)
    assert shape.requests()["aws.amazon.com/neuron"] == str(it.accelerator_count)
    assert shape.efa == it.efa_max
    # when split into 4-device pods, then it is refused like every split
    with pytest.raises(SizingError, match="gpusPerPod 4 would split it"):
        pod_resources(it, gpus_per_pod=4, efa=True, reserve=DEFAULT_RESERVE)


def test_cpu_only_type_is_one_pod_with_cpu_and_memory() -> None:
    # given a CPU-only type, when sized, then one pod with only cpu and memory: all but the reserve
    it = CATALOG["m7i.8xlarge"]
    whole = pod_resources(it, gpus_per_pod=None, efa=False, reserve=DEFAULT_RESERVE)
    assert set(whole.requests()) == {"cpu", "memory"}
    alloc = allocatable(it)
    reserve_cpu, reserve_mem = DEFAULT_RESERVE.on(alloc)
    assert (whole.cpu_m, whole.memory_mi) == ((alloc.cpu_m - reserve_cpu) // 10 * 10, alloc.memory_mi - reserve_mem)


def test_custom_reserve_is_subtracted() -> None:
    # given a bigger reserve (e.g. dcgm-exporter added)
    reserve = DaemonSetReserve(cpu_m=500, memory_mi=1024, percent=0)
    # when sizing, then exactly that much more is left out
    shape = pod_resources(CATALOG["g5.12xlarge"], gpus_per_pod=None, efa=False, reserve=reserve)
    assert (shape.cpu_m, shape.memory_mi) == (47810 - 500, 173400 - 1024)
    # and the percentage wins on a node where it is larger than the fixed amounts
    share = pod_resources(CATALOG["g5.12xlarge"], gpus_per_pod=None, efa=False,
                          reserve=DaemonSetReserve(cpu_m=100, memory_mi=100, percent=2))
    assert (share.cpu_m, share.memory_mi) == ((47810 - 957) // 10 * 10, 173400 - 3468)


def test_slurm_node_conf_for_nvidia_gpus() -> None:
    # given p5.48xlarge
    it = CATALOG["p5.48xlarge"]
    whole = pod_resources(it, gpus_per_pod=None, efa=True, reserve=DEFAULT_RESERVE)
    # then the node reserves the cores beyond its 189.53-CPU request (96 cores - 94 = 2) and declares no
    # CPUs= (slurmd takes the machine's layout); RealMemory is 4 GiB (capped 1%) under the memory
    # request; Gres names the model
    assert whole.cpu_m == 189530
    assert slurm_node_conf(it, whole) == {"CoreSpecCount": "2", "RealMemory": str(1919025 - 4096),
                                          "Gres": "gpu:h100:8"}
    assert format_node_conf(slurm_node_conf(it, whole)) == f"CoreSpecCount=2 RealMemory={1919025 - 4096} Gres=gpu:h100:8"


def test_slurm_node_conf_small_cpu_and_neuron_types() -> None:
    # given a small CPU type and a Neuron type
    m6i, inf2 = CATALOG["m6i.large"], CATALOG["inf2.24xlarge"]
    m6i_shape = pod_resources(m6i, gpus_per_pod=None, efa=False, reserve=DEFAULT_RESERVE)
    inf2_shape = pod_resources(inf2, gpus_per_pod=None, efa=False, reserve=DEFAULT_RESERVE)
    # then the small type keeps the 256 MiB minimum headroom and has no Gres; m6i.large's one core
    # stays Slurm's (a node keeps at least one core), so it gets no CoreSpecCount
    assert slurm_node_conf(m6i, m6i_shape) == {"RealMemory": str(m6i_shape.memory_mi - 256)}
    inf2_conf = slurm_node_conf(inf2, inf2_shape)
    # and the Neuron type counts its devices as an untyped gpu GRES (gpu/nrt supplies the type)
    assert inf2_conf["Gres"] == f"gpu:{inf2.accelerator_count}"
    # and the 1% headroom applies between the bounds
    headroom = -(-inf2_shape.memory_mi // 100)
    assert inf2_conf["RealMemory"] == str(inf2_shape.memory_mi - headroom)


@pytest.mark.parametrize(
    ("name", "kwargs", "message"),
    [
        ("g5.8xlarge", {"gpus_per_pod": 2}, "g5.8xlarge has 1 nvidia.com/gpu; gpusPerPod is 2"),
        (
            "g5.48xlarge",
            {"gpus_per_pod": 3},
            "g5.48xlarge has 8 nvidia.com/gpu; gpusPerPod 3 would split it: one slurmd runs per instance: Slurm "
            "shares the node between jobs itself (a job asks for --gpus/-c/--mem), and slurmd pods splitting one "
            "machine would run their jobs on the same CPUs; omit gpusPerPod (or set 8)",
        ),
        ("g5.48xlarge", {"gpus_per_pod": 0}, "gpusPerPod must be at least 1, got 0"),
        ("m6i.xlarge", {"gpus_per_pod": 1}, "m6i.xlarge has no accelerators; gpusPerPod is 1"),
        (
            "g5.xlarge",
            {"efa": True},
            "EFA requested but g5.xlarge has no EFA interfaces (vpc.amazonaws.com/efa)",
        ),
        (
            "m6i.large",
            {"reserve": DaemonSetReserve(cpu_m=2000, memory_mi=640)},
            "m6i.large is too small for a slurmd pod: the DaemonSet reserve (2000m CPU, 640Mi) leaves nothing of "
            "its allocatable (1930m CPU, 6903Mi); choose a larger type",
        ),
        (
            "m6i.large",
            {"reserve": DaemonSetReserve(cpu_m=190, memory_mi=7000)},
            "m6i.large is too small for a slurmd pod: the DaemonSet reserve (190m CPU, 7000Mi) leaves nothing of "
            "its allocatable (1930m CPU, 6903Mi); choose a larger type",
        ),
    ],
)
def test_sizing_errors_are_user_facing(name: str, kwargs: dict[str, object], message: str) -> None:
    # given an impossible request, when sized, then the exact user-facing message is raised
    with pytest.raises(SizingError) as err:
        pod_resources(CATALOG[name], **kwargs)  # type: ignore[arg-type]
    assert str(err.value) == message


def test_negative_reserve_is_rejected() -> None:
    # given a negative reserve, then it is refused at construction
    with pytest.raises(SizingError, match=r"must not be negative, got -1m CPU / 0Mi"):
        DaemonSetReserve(cpu_m=-1, memory_mi=0)


def test_lookup_finds_types_and_suggests_close_names() -> None:
    # given the catalog, when a known name is looked up (with stray spaces), then it is returned
    assert lookup(CATALOG, " p5.48xlarge ") is CATALOG["p5.48xlarge"]
    # when a typo is looked up, then close matches are suggested
    with pytest.raises(SizingError) as err:
        lookup(CATALOG, "p5.48xlarg")
    where = "not in the catalog (Karpenter v1.14.1 reference); add it to clusters/instance-types.csv"
    suggestion = "did you mean p5.48xlarge, p5e.48xlarge, p5.4xlarge?"
    assert str(err.value) == f"unknown instance type 'p5.48xlarg': {where}; {suggestion}"
    # when nothing is close, then the user is still told where to add it
    with pytest.raises(SizingError) as err:
        lookup(CATALOG, "zz9")
    assert str(err.value) == f"unknown instance type 'zz9': {where}"


# The types the hand-written catalog had: each keeps the >= 90 % CPU/memory goal (bench/sizing_report.py).
FORMER_CATALOG = ("g5.xlarge", "g5.48xlarge", "g6.12xlarge", "g6e.48xlarge", "p4d.24xlarge", "p5.48xlarge",
                  "p5en.48xlarge", "p6-b200.48xlarge", "trn1.32xlarge", "trn2.48xlarge", "inf2.xlarge", "m6i.large",
                  "m7i.8xlarge")
TOO_SMALL = re.compile(r"^\S+ (is too small for a slurmd pod: .*|leaves \d+(m CPU|Mi) for slurmd after the "
                       r"DaemonSet reserve \(\d+(m|Mi)\); .* needs at least .*); choose a larger type$")


def _check_shape(it: InstanceType, shape: PodShape) -> None:
    """Requests within Karpenter's own allocatable once the reserve is added; devices shared exactly."""
    alloc = Allocatable(it.karpenter_cpu_m, it.karpenter_memory_mi, it.accelerator_count, it.efa_max, it.max_pods)
    reserve_cpu, reserve_mem = DEFAULT_RESERVE.on(alloc)
    assert shape.cpu_m + reserve_cpu <= alloc.cpu_m and shape.cpu_m >= 1000, it.instance_type
    assert shape.memory_mi + reserve_mem <= alloc.memory_mi and shape.memory_mi >= 1024, it.instance_type
    assert shape.accelerators == alloc.accelerators and shape.efa <= alloc.efa, it.instance_type
    assert shape.cpu_m % 10 == 0
    assert shape.limits() == {k: v for k, v in shape.requests().items() if k not in ("cpu", "memory")}


def test_every_catalog_type_sizes_to_a_valid_pod_or_is_refused_clearly() -> None:
    # given every one of the 1,336 catalog types and the default reserve
    refused: dict[str, str] = {}
    for name in CATALOG:
        it = CATALOG[name]
        # when the whole node is sized (with EFA where the type has it)
        try:
            whole = pod_resources(it, gpus_per_pod=None, efa=it.has_efa, reserve=DEFAULT_RESERVE)
        except SizingError as err:
            refused[name] = str(err)
            continue
        # then the pod fits Karpenter's allocatable and gets every device
        _check_shape(it, whole)
        assert whole.accelerators == it.accelerator_count and whole.efa == it.efa_max
        # and gpusPerPod equal to the node's count is the same pod
        if it.accelerator_count:
            assert pod_resources(it, gpus_per_pod=it.accelerator_count, efa=it.has_efa) == whole
    # then only the small types are refused (1 vCPU, or under ~2 GiB), each saying so and what to do
    assert {m for m in refused.values() if not TOO_SMALL.match(m)} == set()
    assert {"t3.nano", "t4g.nano", "a1.medium", "t3.small", "c1.medium"} <= set(refused)
    assert all(CATALOG[n].vcpu == 1 or CATALOG[n].memory_mib <= 2048 for n in refused)
    assert len(refused) == 56


@pytest.mark.parametrize("name", FORMER_CATALOG)
def test_former_catalog_types_meet_the_utilisation_goal(name: str) -> None:
    # given a type the hand-written catalog had, when the whole node is sized
    it = CATALOG[name]
    alloc = allocatable(it)
    whole = pod_resources(it, gpus_per_pod=None, efa=it.has_efa, reserve=DEFAULT_RESERVE)
    # then the slurmd pod uses >= 90% of allocatable CPU and memory
    assert whole.cpu_m >= 0.9 * alloc.cpu_m and whole.memory_mi >= 0.9 * alloc.memory_mi


@pytest.mark.parametrize(
    ("name", "kwargs", "message"),
    [
        ("c7i.48xlarge", {"gpus_per_pod": 2}, "c7i.48xlarge has no accelerators; gpusPerPod is 2"),
        ("t3.nano", {}, "t3.nano is too small for a slurmd pod: the DaemonSet reserve (190m CPU, 640Mi) leaves "
                        "nothing of its allocatable (1930m CPU, 74Mi); choose a larger type"),
        ("a1.medium", {}, "a1.medium leaves 750m CPU for slurmd after the DaemonSet reserve (190m); Slurm needs at "
                          "least one whole CPU per node; choose a larger type"),
        ("t3.small", {}, "t3.small leaves 778Mi for slurmd after the DaemonSet reserve (640Mi); a Slurm node needs "
                         "at least 1024Mi; choose a larger type"),
        ("m7i.xlarge", {"efa": True}, "EFA requested but m7i.xlarge has no EFA interfaces (vpc.amazonaws.com/efa)"),
    ],
)
def test_new_types_are_refused_with_the_field_to_fix(name: str, kwargs: dict[str, object], message: str) -> None:
    # given a request a catalog type cannot hold, when sized, then the message says why and what to change
    with pytest.raises(SizingError) as err:
        pod_resources(CATALOG[name], **kwargs)  # type: ignore[arg-type]
    assert str(err.value) == message
    assert err.value.field == {"gpus_per_pod": "gpusPerPod", "efa": "efa"}.get(next(iter(kwargs), ""), "instanceType")


@pytest.mark.parametrize(
    ("name", "resource", "count", "efa"),
    [("p5.4xlarge", "nvidia.com/gpu", 1, 1), ("g4dn.12xlarge", "nvidia.com/gpu", 4, 1),
     ("trn2.48xlarge", "aws.amazon.com/neuron", 16, 16), ("g4ad.16xlarge", "amd.com/gpu", 4, 0),
     ("dl1.24xlarge", "habana.ai/gaudi", 8, 4), ("c7g.16xlarge", "", 0, 1), ("hpc7a.96xlarge", "", 0, 2)],
)
def test_whole_node_sizing_covers_every_accelerator_kind(name: str, resource: str, count: int, efa: int) -> None:
    # given NVIDIA, Neuron, AMD, Habana, arm64 and HPC types, when sized whole-node with EFA where present
    shape = pod_resources(CATALOG[name], efa=efa > 0)
    # then the pod requests every device under the type's own resource name, and every EFA interface
    expected = {resource: str(count)} if resource else {}
    if efa:
        expected["vpc.amazonaws.com/efa"] = str(efa)
    assert shape.limits() == expected


def test_shapes_are_frozen() -> None:
    # given a computed shape, then it cannot be altered after the fact
    shape = pod_resources(CATALOG["g5.xlarge"], gpus_per_pod=None, efa=False, reserve=DEFAULT_RESERVE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        shape.cpu_m = 1  # type: ignore[misc]
