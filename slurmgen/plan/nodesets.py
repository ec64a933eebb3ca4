"""The compute plan: everything derived from one nodeset that two charts must agree on.

The Slurm chart (NodeSet pod template, slurmd resources, Slurm node conf) and the compute chart
(Karpenter NodePool labels, taints, limits) both read the same NodeSetPlan, so a nodeSelector can
never miss its NodePool's labels and a pod can never ask for more than the node can allocate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ..kube import naming
from ..catalog.catalog import InstanceType, load_catalog
from ..catalog.mixed import fit
from ..catalog.sizing import DaemonSetReserve, PodShape, SizingError, format_node_conf, slurm_node_conf
from ..spec import ClusterSpec, NodeSetSpec
from ..spec.model import Toleration
from ..kube.vocabulary import INSTANCE_TYPE_LABEL, NODEPOOL_LABEL

CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
ARCH_LABEL = "kubernetes.io/arch"
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
# The label the NVIDIA device plugin chart (0.20.0 values.yaml `affinity`) selects GPU nodes by. The
# AL2023 NVIDIA AMI's nodeadm sets it only from kubelet 1.35 on, so our GPU NodePools set it themselves.
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"


@dataclass(frozen=True)
class Taint:
    key: str
    effect: str = "NoSchedule"
    value: str | None = None

    def as_dict(self) -> dict[str, str]:
        out = {"key": self.key, "effect": self.effect}
        if self.value is not None:
            out["value"] = self.value
        return out

    def toleration(self) -> Toleration:
        """The toleration that matches exactly this taint (Equal when it has a value)."""
        if self.value is None:
            return Toleration(key=self.key, operator="Exists", effect=self.effect)
        return Toleration(key=self.key, operator="Equal", value=self.value, effect=self.effect)


#: slurm-bridge's taint on every Kubernetes node whose Slurm node name it finds in Slurm
#: (slurm-bridge v1.2.1 internal/utils/taints.go TaintKeyBridgedNode, NoExecute, value: the scheduler's
#: name; internal/controller/node/node_sync.go syncTaint). Its scheduler adds the matching toleration
#: to the pods it schedules (slurmbridge.go PreEnqueue). Declared on the bridged NodePools up front,
#: so no pod that would be evicted lands there and --preview proves every node agent tolerates it;
#: the controller then finds it present (AddOrUpdateTaint changes nothing).
BRIDGE_SCHEDULER = "slurm-bridge-scheduler"  # the chart's fixed name (templates/scheduler/_scheduler.tpl @ v1.2.1)
BRIDGE_TAINT = Taint(key="slinky.slurm.net/managed-node", effect="NoExecute", value=BRIDGE_SCHEDULER)
#: What a bridged nodeset's slurmd pod asks of Kubernetes: slurmd itself. The node's CPUs, memory and
#: accelerators stay free in Kubernetes' books for the pods slurm-bridge binds there (its scheduler
#: profile runs NodeResourcesFit, templates/scheduler/configmap.yaml @ v1.2.1); Slurm's books are the
#: node's CPUs= and RealMemory= written explicitly (slurm_conf), and Slurm lends the node to one kind
#: of work at a time (MCS, charts/slurm_cluster.py BRIDGE_MCS).
BRIDGED_SLURMD_REQUESTS = {"cpu": "250m", "memory": "512Mi"}


@dataclass(frozen=True)
class NodeSetPlan:
    nodeset: NodeSetSpec
    instance: InstanceType  # the first type: arch, vCPUs and accelerators are those of every type
    shape: PodShape  # fits every type (the smallest of each resource)
    nodepool: str
    taints: tuple[Taint, ...]
    instances: tuple[InstanceType, ...] = ()  # every type the NodePool allows, spec order; () = (instance,)
    bridged: bool = False  # slurm-bridge may bind Kubernetes pods to these nodes (spec.bridge)

    @property
    def types(self) -> tuple[InstanceType, ...]:
        """Every instance type Karpenter may launch for this nodeset."""
        return self.instances or (self.instance,)

    @property
    def max_nodes(self) -> int:
        """The ceiling the NodePool limits are derived from: maxNodes, else what the replicas (or the autoscale max) need."""
        return self.nodeset.max_nodes or self.nodeset.ceiling

    @property
    def node_selector(self) -> dict[str, str]:
        """What the slurmd pods select: only labels Karpenter puts on every node of the NodePool.

        With a list of types the pod selects the NodePool, not one type: the pool's own requirement
        holds the list, and a selector on one type would leave the others unused.
        """
        selector = {NODEPOOL_LABEL: self.nodepool}
        if len(self.types) == 1:
            selector[INSTANCE_TYPE_LABEL] = self.instance.instance_type
        selector[CAPACITY_TYPE_LABEL] = self.nodeset.capacity_type
        return selector

    def node_labels(self, ami_family: str) -> dict[str, str]:
        """Labels the NodePool puts on its nodes for node agents (not for slurmd's selector).

        NVIDIA nodes on AL2023 carry `nvidia.com/gpu.present=true` whatever the Kubernetes version,
        so the NVIDIA device plugin lands on them. Bottlerocket runs its own plugin: no label, so a
        second plugin installed by hand cannot land there too.
        """
        if self.instance.is_nvidia and ami_family != "bottlerocket":
            return {GPU_PRESENT_LABEL: "true"}
        return {}

    def slurmd_requests(self) -> dict[str, str]:
        """The slurmd pod's resource requests: the whole node's share, or slurmd's own on a bridged nodeset.

        Bridged: no accelerator (the container sees every GPU through NVIDIA_VISIBLE_DEVICES=all,
        charts/slurm_cluster.py), EFA kept (bridged pods rarely use it; slurmd's jobs do).
        """
        if not self.bridged:
            return self.shape.requests()
        out = dict(BRIDGED_SLURMD_REQUESTS)
        out.update({k: v for k, v in self.shape.requests().items()
                    if k not in ("cpu", "memory", self.shape.accelerator_resource)})
        return out

    def slurmd_limits(self) -> dict[str, str]:
        """Limits equal to the extended resources requested (the API requires it), none for CPU/memory."""
        return {k: v for k, v in self.slurmd_requests().items() if k not in ("cpu", "memory")}

    @property
    def tolerations(self) -> tuple[Toleration, ...]:
        return tuple(t.toleration() for t in self.taints)

    @property
    def slurm_conf(self) -> str:
        """slurmd --conf tokens: Features, Gres/CPUs/RealMemory from sizing, then the user's extras."""
        conf: dict[str, str] = {}
        features = extra_features(self.nodeset.name, self.nodeset.features)
        if features:
            conf["Features"] = ",".join(features)
        conf.update(slurm_node_conf(self.instance, self.shape))
        extras = dict(self.nodeset.extra_slurmd_conf)
        if "CpuSpecList" in extras:
            conf.pop("CoreSpecCount", None)  # Slurm refuses a node that sets both
        conf.update(extras)
        return format_node_conf(conf)


def extra_features(nodeset: str, features: tuple[str, ...]) -> tuple[str, ...]:
    """The features to pass besides the nodeset's own name, each once, in the spec's order.

    The operator always puts the nodeset name first and appends ours after a comma without
    deduplicating (slurm-operator v1.2.1 internal/builder/workerbuilder/worker_app.go,
    slurmdConfArgs), so `features: [spot]` on nodeset `spot` would become `Features=spot,spot`.
    """
    seen = {nodeset}
    out: list[str] = []
    for feature in features:
        if feature not in seen:
            seen.add(feature)
            out.append(feature)
    return tuple(out)


COMPUTE_TAINT = "slurmgen.dev/compute"


def _taints(it: InstanceType) -> tuple[Taint, ...]:
    """Keep other workloads off Slurm nodes, so `WhenEmpty` can release them once the jobs are gone.

    Accelerator nodes use the well-known taint (nvidia.com/gpu, aws.amazon.com/neuron) that device
    plugins already tolerate; CPU-only nodes get our own key, tolerated by the DaemonSets we deploy.
    """
    return (Taint(key=it.accelerator_resource if it.has_accelerator else COMPUTE_TAINT),)


def reserve_of(spec: ClusterSpec) -> DaemonSetReserve:
    c = spec.compute
    return DaemonSetReserve(cpu_m=c.reserve_cpu_m, memory_mi=c.reserve_memory_mi, percent=c.reserve_percent)


def plan_nodeset(spec: ClusterSpec, ns: NodeSetSpec, catalog: Mapping[str, InstanceType]) -> NodeSetPlan:
    """Size one nodeset; raises SizingError (a user-facing message) when it cannot fit."""
    sized = fit(catalog, ns.instance_types, efa=ns.efa, allow_mixed=ns.allow_mixed_types,
                gpus_per_pod=ns.gpus_per_pod, reserve=reserve_of(spec))
    if sized.shape is None:  # the spec rule (catalog/rules.py) refused it already, with every problem
        field, message = sized.problems[0]
        raise SizingError(message, field)
    types, shape = sized.types, sized.shape
    it = types[0]
    bridged = spec.bridged(ns.name)
    return NodeSetPlan(nodeset=ns, instance=it, shape=shape, nodepool=naming.nodepool(spec.name, ns.name),
                       taints=_taints(it) + ((BRIDGE_TAINT,) if bridged else ()),
                       instances=types if len(types) > 1 else (), bridged=bridged)


def plan_cluster(spec: ClusterSpec, catalog: Mapping[str, InstanceType] | None = None) -> dict[str, NodeSetPlan]:
    """Plans for every nodeset of a cluster, keyed by nodeset name, in spec order."""
    catalog = catalog if catalog is not None else load_catalog()
    return {ns.name: plan_nodeset(spec, ns, catalog) for ns in spec.nodesets}
