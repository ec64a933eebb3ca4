"""Right-size slurmd pods to what Karpenter believes a node can hold.

Karpenter picks an instance by comparing pod requests with its *pre-launch estimate* of the
node's allocatable (AL2023, default kubelet). If the slurmd pod asks for more than that, Karpenter
never launches the type; if it asks for much less, GPUs sit next to idle CPU and memory. So the
slurmd pod is sized from the very same formula (reference argocd-karpenter-fsx-nlb.md §2.6),
minus a reserve for the DaemonSets that share the node. Accelerators and EFA carry equal limits;
CPU and memory are requests only (see PodShape.limits), and Slurm is kept inside them by
CoreSpecCount (or CPUs on split nodes) and RealMemory (slurm_node_conf).
"""

from __future__ import annotations

import re

import difflib
from collections.abc import Mapping
from dataclasses import dataclass

from slurmgen.catalog.catalog import EFA_RESOURCE, KARPENTER_VERSION, SITE_CSV_NAME, InstanceType

# nodeadm / Karpenter constants (reference §2.6).
# kube-reserved CPU: basis points charged on each millicore range [start, end).
KUBE_RESERVED_CPU_RANGES: tuple[tuple[int, int | None, int], ...] = (
    (0, 1000, 600),  # 6% of the 1st core
    (1000, 2000, 100),  # 1% of the 2nd core
    (2000, 4000, 50),  # 0.5% of cores 3-4
    (4000, None, 25),  # 0.25% of every core above 4
)
KUBE_RESERVED_MEMORY_PER_POD_MI = 11
KUBE_RESERVED_MEMORY_BASE_MI = 255
EVICTION_HARD_MEMORY_MI = 100
VM_MEMORY_OVERHEAD_PER_MILLE = 75  # VM_MEMORY_OVERHEAD_PERCENT = 0.075
ARM64_VM_OVERHEAD_MI = 64
CPU_GRANULARITY_M = 10  # requests are floored to 10m: readable figures, at most 9m lost per pod
# Slurm must not hand jobs the whole container limit: slurmd/slurmstepd live in the same cgroup,
# and an OOM there kills slurmd (node DOWN) instead of failing one job.
SLURM_MEMORY_HEADROOM_MIN_MI = 256
SLURM_MEMORY_HEADROOM_MAX_MI = 4096
SLURM_MEMORY_HEADROOM_PER_MILLE = 10  # 1% of the pod limit, clamped to [256 Mi, 4 Gi]
# Below this a slurmd pod registers but can run nothing useful (RealMemory would be ~700 MB after
# slurmd's own headroom): refuse the type with a clear message instead of rendering a useless node.
MIN_SLURMD_MEMORY_MI = 1024


class SizingError(ValueError):
    """The requested pod shape cannot be built on this instance type; message is user-facing.

    ``field`` is the nodeset key (or ``compute.`` path) the message is about, so the spec rule can
    point at it without parsing the message.
    """

    def __init__(self, message: str, field: str = "instanceType") -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Allocatable:
    """Node allocatable as Karpenter estimates it before launch (AL2023, default kubelet)."""

    cpu_m: int
    memory_mi: int
    accelerators: int
    efa: int
    pods: int


@dataclass(frozen=True)
class DaemonSetReserve:
    """CPU/memory left on every node for DaemonSets, subtracted before sizing slurmd.

    Defaults: the larger of 190m CPU / 640 Mi and 1 % of the node's allocatable.
    - CPU is what DaemonSets *request* (the scheduler only sums requests). On this platform that is
      roughly kube-proxy 100m + VPC CNI aws-node 25m (+25m network-policy agent) + EFA plugin 10m
      + FSx CSI node 10m (its pinned chart's default); the NVIDIA device plugin, node-exporter and
      Pod Identity agent request nothing by default. ~170m, so 190m leaves a little slack on small
      nodes, and the 1 % share (1.9 cores on a 192-vCPU node) covers add-ons such as CloudWatch or
      node-monitoring agents on the big ones. Slurm is held to the request in whole cores
      (CoreSpecCount, see slurm_node_conf), so the reserve and kubelet's share stay free of jobs. Confirm with
      `kubectl describe node` on a first node and raise it (compute.daemonSetReserve) if needed.
    - Memory covers what those agents actually *use* (~300-400 Mi working set together), not just
      their requests (~20 Mi): slurmd's jobs, held to RealMemory, would otherwise push the node into
      memory pressure and get the agents evicted.
    - 190m is also the largest 10m step that keeps slurmd >= 90% of allocatable CPU on 2-vCPU types
      (m6i.large: 1930m allocatable). Raise it if you add DaemonSets (e.g. dcgm-exporter ~ 500 Mi)
      and accept the lower ratio on the smallest types, or set explicit requests on the DaemonSets so
      their sum stays inside the reserve.
    """

    cpu_m: int = 190
    memory_mi: int = 640
    percent: int = 1

    def __post_init__(self) -> None:
        """A negative reserve would size slurmd above allocatable; refuse it up front."""
        if self.cpu_m < 0 or self.memory_mi < 0 or not 0 <= self.percent < 100:
            raise SizingError(f"DaemonSet reserve must not be negative, got {self.cpu_m}m CPU / {self.memory_mi}Mi "
                              f"/ {self.percent}%", "compute.daemonSetReserve")

    def on(self, alloc: "Allocatable") -> tuple[int, int]:
        """(CPU m, memory Mi) kept free on a node with this allocatable: the fixed floor or the share."""
        return (max(self.cpu_m, -(-alloc.cpu_m * self.percent // 100)),
                max(self.memory_mi, -(-alloc.memory_mi * self.percent // 100)))


DEFAULT_RESERVE = DaemonSetReserve()


@dataclass(frozen=True)
class PodShape:
    """Resources of a NodeSet's slurmd pod on one instance type (one pod per instance)."""

    instance_type: str
    cpu_m: int
    memory_mi: int
    accelerators: int
    accelerator_resource: str
    efa: int

    def requests(self) -> dict[str, str]:
        """Kubernetes resource requests; all values are quantity strings (the API's own form)."""
        resources = {"cpu": f"{self.cpu_m}m", "memory": f"{self.memory_mi}Mi"}
        if self.accelerators:
            resources[self.accelerator_resource] = str(self.accelerators)
        if self.efa:
            resources[EFA_RESOURCE] = str(self.efa)
        return resources

    def limits(self) -> dict[str, str]:
        """Limits for the extended resources only (they must equal their requests); none for CPU/memory.

        Checked at the pinned versions: slurm-operator v1.2.1 passes limits as POD_CPUS/POD_MEMORY
        (internal/builder/workerbuilder/worker_app.go) and the 26.05 image's slurmd-entrypoint.sh
        turns them into CoreSpecCount/MemSpecLimit, adding `Topology=` only when the node has one; the
        empty `Topology=` of slurm-operator#261 comes from the operator's main branch after v1.2.1
        (slurmdConfArgs writes `Topology='"$SLINKY_TOPOLOGY"'`), so the next upgrade would bring it.
        Limits stay off anyway: Slurm's share is written explicitly instead (CoreSpecCount and
        RealMemory in slurm_node_conf, from the requests), so it does not depend on the entrypoint,
        and jobs are not CFS-throttled below what Slurm granted them.
        """
        return {k: v for k, v in self.requests().items() if k not in ("cpu", "memory")}


def kube_reserved_cpu_m(vcpu: int) -> int:
    """nodeadm's kube-reserved CPU for any vCPU count (range formula, floored per range like Karpenter)."""
    total_m = vcpu * 1000
    reserved = 0
    for start, end, basis_points in KUBE_RESERVED_CPU_RANGES:
        if total_m <= start:
            break
        span = (total_m if end is None else min(total_m, end)) - start
        reserved += span * basis_points // 10_000
    return reserved


def kube_reserved_memory_mi(max_pods: int) -> int:
    """nodeadm's kube-reserved memory: grows with max pods because each pod costs kubelet memory."""
    return KUBE_RESERVED_MEMORY_PER_POD_MI * max_pods + KUBE_RESERVED_MEMORY_BASE_MI


def vm_memory_overhead_mi(memory_mib: int, arch: str) -> int:
    """Karpenter's guess of memory the hypervisor/kernel hides from the node before it has seen one.

    Graviton's 64 MiB CMA reserve comes off first and the 7.5 % applies to what is left
    (aws/karpenter-provider-aws v1.14.1 pkg/providers/instancetype/types.go, memory()); checked
    against Karpenter's own figure for every arm64 type in the catalog (tests/catalog/test_sizing.py).
    """
    cma = ARM64_VM_OVERHEAD_MI if arch == "arm64" else 0
    return cma + -(-(memory_mib - cma) * VM_MEMORY_OVERHEAD_PER_MILLE // 1000)  # ceil without floats


def allocatable(it: InstanceType) -> Allocatable:
    """Karpenter's allocatable estimate: what its bin-packing compares pod requests against."""
    memory_mi = (
        it.memory_mib
        - vm_memory_overhead_mi(it.memory_mib, it.arch)
        - kube_reserved_memory_mi(it.max_pods)
        - EVICTION_HARD_MEMORY_MI
    )
    return Allocatable(
        cpu_m=it.vcpu * 1000 - kube_reserved_cpu_m(it.vcpu),
        memory_mi=memory_mi,
        accelerators=it.accelerator_count,
        efa=it.efa_max,
        pods=it.max_pods,
    )


def lookup(catalog: Mapping[str, InstanceType], name: str) -> InstanceType:
    """Find a type by EC2 name; otherwise say where to add it, and suggest the closest names."""
    key = name.strip()
    if key in catalog:
        return catalog[key]
    message = (f"unknown instance type {name!r}: not in the catalog (Karpenter v{KARPENTER_VERSION} reference); "
               f"add it to clusters/{SITE_CSV_NAME}")
    close = difflib.get_close_matches(key, list(catalog), n=3, cutoff=0.6)
    if close:
        message += f"; did you mean {', '.join(close)}?"
    raise SizingError(message)


#: Why a node is never split between slurmd pods (proven with real slurmd 26.05.3 in
#: tests/deep/test_real_slurm.py): a dynamic node takes its CPU count from `--conf` but maps its
#: abstract CPUs through the whole machine's CPU map (src/common/xcpuinfo.c xcpuinfo_abs_to_mac), so
#: two slurmd with CPUs=N each run their jobs on the same machine CPUs, and confined to cpusets of
#: their own the second one's jobs fail while its node stays IDLE. One slurmd per instance lets Slurm
#: share the node between jobs itself (cons_tres, ConstrainCores/ConstrainDevices).
ONE_SLURMD_PER_INSTANCE = ("one slurmd runs per instance: Slurm shares the node between jobs itself "
                           "(a job asks for --gpus/-c/--mem), and slurmd pods splitting one machine would run "
                           "their jobs on the same CPUs")


def _refuse_split(it: InstanceType, gpus_per_pod: int | None) -> None:
    """gpusPerPod may only say the node's own count (see ONE_SLURMD_PER_INSTANCE)."""
    if gpus_per_pod is None:
        return
    if gpus_per_pod < 1:
        raise SizingError(f"gpusPerPod must be at least 1, got {gpus_per_pod}", "gpusPerPod")
    if not it.has_accelerator:
        raise SizingError(f"{it.instance_type} has no accelerators; gpusPerPod is {gpus_per_pod}", "gpusPerPod")
    count, resource = it.accelerator_count, it.accelerator_resource
    if gpus_per_pod > count:
        raise SizingError(f"{it.instance_type} has {count} {resource}; gpusPerPod is {gpus_per_pod}", "gpusPerPod")
    if gpus_per_pod != count:
        raise SizingError(
            f"{it.instance_type} has {count} {resource}; gpusPerPod {gpus_per_pod} would split it: "
            f"{ONE_SLURMD_PER_INSTANCE}; omit gpusPerPod (or set {count})", "gpusPerPod")


def _efa(it: InstanceType, efa: bool) -> int:
    """EFA devices of the pod: all of the node's, or none."""
    if not efa:
        return 0
    if not it.has_efa:
        raise SizingError(f"EFA requested but {it.instance_type} has no EFA interfaces ({EFA_RESOURCE})", "efa")
    return it.efa_max


def _free(it: InstanceType, alloc: Allocatable, reserve: DaemonSetReserve) -> tuple[int, int]:
    """The pod's CPU (floored to 10m) and memory (Mi): allocatable less the DaemonSet reserve."""
    reserve_cpu_m, reserve_memory_mi = reserve.on(alloc)
    free_cpu_m = alloc.cpu_m - reserve_cpu_m
    free_memory_mi = alloc.memory_mi - reserve_memory_mi
    if free_cpu_m <= 0 or free_memory_mi <= 0:
        raise SizingError(
            f"{it.instance_type} is too small for a slurmd pod: the DaemonSet reserve ({reserve_cpu_m}m CPU, "
            f"{reserve_memory_mi}Mi) leaves nothing of its allocatable ({alloc.cpu_m}m CPU, {alloc.memory_mi}Mi); "
            "choose a larger type"
        )
    cpu_m = free_cpu_m // CPU_GRANULARITY_M * CPU_GRANULARITY_M
    if cpu_m < 1000:
        raise _too_small(it, f"{cpu_m}m CPU", f"{reserve_cpu_m}m", "Slurm needs at least one whole CPU per node")
    if free_memory_mi < MIN_SLURMD_MEMORY_MI:
        raise _too_small(it, f"{free_memory_mi}Mi", f"{reserve_memory_mi}Mi",
                         f"a Slurm node needs at least {MIN_SLURMD_MEMORY_MI}Mi")
    return cpu_m, free_memory_mi


def _too_small(it: InstanceType, left: str, reserve: str, need: str) -> SizingError:
    """The refusal when what the reserve leaves (`left`) is below what a Slurm node needs."""
    return SizingError(
        f"{it.instance_type} leaves {left} for slurmd after the DaemonSet reserve ({reserve}); {need}; "
        "choose a larger type", "instanceType")


def pod_resources(
    it: InstanceType,
    *,
    gpus_per_pod: int | None = None,
    efa: bool = False,
    reserve: DaemonSetReserve = DEFAULT_RESERVE,
) -> PodShape:
    """Size the one slurmd pod of a node: the whole node less the DaemonSet reserve.

    gpusPerPod is still read so a spec asking for a split gets one clear line (see
    ONE_SLURMD_PER_INSTANCE).
    """
    _refuse_split(it, gpus_per_pod)
    alloc = allocatable(it)
    efa_devices = _efa(it, efa)
    cpu_m, memory_mi = _free(it, alloc, reserve)
    return PodShape(
        instance_type=it.instance_type,
        cpu_m=cpu_m,
        memory_mi=memory_mi,
        accelerators=it.accelerator_count,
        accelerator_resource=it.accelerator_resource,
        efa=efa_devices,
    )


def slurm_real_memory_mb(shape: PodShape) -> int:
    """RealMemory Slurm may hand to jobs: the pod limit minus headroom for slurmd itself."""
    headroom = -(-shape.memory_mi * SLURM_MEMORY_HEADROOM_PER_MILLE // 1000)
    headroom = min(max(headroom, SLURM_MEMORY_HEADROOM_MIN_MI), SLURM_MEMORY_HEADROOM_MAX_MI)
    return max(shape.memory_mi - headroom, 1)


# EC2 families whose vCPUs are physical cores (SMT off): every HPC type, and the 4th/5th-gen AMD EPYC
# general-purpose families (EC2 user guide, "CPU options": "each vCPU is a physical core"). Karpenter's
# reference has no threads-per-core label, so this is the one hand-kept list.
_ONE_THREAD_FAMILY = re.compile(r"hpc\d+[a-z]*|[cmr][78]a")


def threads_per_core(it: InstanceType) -> int:
    """Hardware threads per core: 1 on Graviton and on the SMT-off families above, else 2.

    Wrong here means CoreSpecCount counts in the wrong unit: 2 on an SMT-off type would offer Slurm up
    to twice the cores the pod requested.
    """
    return 1 if it.arch == "arm64" or _ONE_THREAD_FAMILY.fullmatch(it.family) else 2


def slurm_cores(it: InstanceType, shape: PodShape) -> int:
    """Whole cores a whole-node slurmd may give to jobs: the pod's CPU request in cores, at least one.

    select/cons_tres with CR_Core_Memory allocates whole cores, so the request is floored to a core;
    the floor of one core is the only case where Slurm may use more than the request (2-vCPU types).
    """
    return max(1, shape.cpu_m // (1000 * threads_per_core(it)))


def slurm_cpus(it: InstanceType, shape: PodShape) -> int:
    """CPUs Slurm schedules on the node's slurmd: its cores' threads."""
    return slurm_cores(it, shape) * threads_per_core(it)


def slurm_node_conf(it: InstanceType, shape: PodShape) -> dict[str, str]:
    """Slurm's view of one slurmd pod, as ordered slurm.conf node keys (CPUs/CoreSpecCount, RealMemory, Gres).

    - CoreSpecCount: the cores beyond the pod's CPU request, reserved for the
      kubelet and the DaemonSets (with task/cgroup and ConstrainCores, jobs never run on them). The
      image's entrypoint would derive the same from a CPU *limit* (containers
      schedmd/slurm/26.05/ubuntu26.04 slurmd-entrypoint.sh, calculateCoreSpecCount), but only from a
      limit, which we do not set (see PodShape.limits); so it is written here from the request.
      A `CPUs=` below the detected count would need the socket/core layout to register cleanly.
    - RealMemory: in Slurm "MB" (MiB), slightly below the container limit (see slurm_real_memory_mb).
    - Gres: ``gpu:<model>:<n>`` for NVIDIA; ``gpu:<n>`` (n Neuron devices) for Trainium/Inferentia.
      Slurm 26.05 detects Neuron devices itself: gres.conf ``AutoDetect=nrt`` loads gpu/nrt
      (src/plugins/gpu/nrt/gpu_nrt.c @ slurm-26-05-3-1, built unconditionally, no library), which
      reads /sys/devices/virtual/neuron_device/neuron<N> and reports one GRES named ``gpu`` per
      device with File=/dev/neuron<N> and the sysfs device name as its type. The count is untyped
      because that type string comes from the driver at run time: an untyped slurm.conf count
      takes the detected records whatever their type (src/interfaces/gres.c _match_type). With
      File= known, ConstrainDevices fences each job to its own devices. Whole-node pods only:
      sysfs lists every device of the node, not the pod's share (see _pods_for_accelerators).
    """
    conf: dict[str, str] = {}
    spare = it.vcpu // threads_per_core(it) - slurm_cores(it, shape)
    if spare > 0:
        conf["CoreSpecCount"] = str(spare)
    conf["RealMemory"] = str(slurm_real_memory_mb(shape))
    if it.is_nvidia and shape.accelerators:
        model = f"{it.accelerator_model}:" if it.accelerator_model else ""
        conf["Gres"] = f"gpu:{model}{shape.accelerators}"
    elif it.is_neuron and shape.accelerators:
        conf["Gres"] = f"gpu:{shape.accelerators}"
    return conf


def format_node_conf(conf: Mapping[str, str]) -> str:
    """Render node keys as the space-separated ``Key=Value`` string slurmd --conf / extraConf expect."""
    return " ".join(f"{key}={value}" for key, value in conf.items())
