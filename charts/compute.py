"""Karpenter capacity for the Slurm compute nodes: one NodePool and one EC2NodeClass per nodeset.

One pool per nodeset (not per shape) keeps the mapping obvious in a diff and lets each nodeset
carry its own limits, zones and capacity reservation. Its labels, requirements and taints are taken
from the same NodeSetPlan as the NodeSet's nodeSelector and tolerations, so they cannot disagree.
Disruption never interrupts a job: only empty nodes are consolidated, slurmd pods carry
`karpenter.sh/do-not-disrupt`, and nodes do not expire unless the spec says so.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from constructs import Construct

from slurmgen.kube import naming
from slurmgen.kube import waves
from slurmgen.catalog.efa_layout import nodeset_efa_layout
from slurmgen.kube.vocabulary import INSTANCE_TYPE_LABEL
from slurmgen.plan.nodesets import ARCH_LABEL, CAPACITY_TYPE_LABEL, NodeSetPlan
from slurmgen.spec import ClusterSpec
from ._objects import emit, wave
from .storage import STARTUP_TAINT
from .unit import SyncSettings, UnitChart

ZONE_LABEL = "topology.kubernetes.io/zone"
OS_LABEL = "kubernetes.io/os"
CLUSTER_LABEL = "slurmgen.dev/cluster"
METADATA_OPTIONS = {"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled",
                    "httpPutResponseHopLimit": 1, "httpTokens": "required"}


class ComputeChart(UnitChart):
    unit = "compute"

    def __init__(self, scope: Construct, spec: ClusterSpec, plans: Mapping[str, NodeSetPlan]) -> None:
        # Cluster-scoped objects; the destination namespace only satisfies the AppProject.
        super().__init__(scope, spec, SyncSettings(wave=waves.INFRA, namespace=spec.namespace))
        for plan in plans.values():
            self._node_class(plan)
            self._node_pool(plan)

    def _labels(self, plan: NodeSetPlan) -> dict[str, str]:
        return {CLUSTER_LABEL: self.spec.name, naming.NODESET_LABEL: plan.nodeset.name}

    def _node_class(self, plan: NodeSetPlan) -> None:
        c = self.spec.compute
        discovery = [{"tags": {"karpenter.sh/discovery": c.discovery_tag}}]
        body: dict[str, Any] = {
            "role": c.node_role,
            "amiSelectorTerms": [{"alias": c.ami_alias}],
            "subnetSelectorTerms": discovery,
            "securityGroupSelectorTerms": discovery,
            "blockDeviceMappings": self._volumes(),
            "metadataOptions": METADATA_OPTIONS,
            "tags": self._labels(plan),
        }
        if all(it.has_nvme for it in plan.types):
            body["instanceStorePolicy"] = "RAID0"  # kubelet + images on local NVMe, not the root volume
        layout = nodeset_efa_layout(plan.types, plan.shape.efa)
        if layout is not None:  # EFAs as efa-only ENIs (no subnet IP each): see catalog/efa_layout.py
            body["networkInterfaces"] = [ni.as_dict() for ni in layout]
        if plan.nodeset.placement_group is not None:
            body["placementGroupSelector"] = placement_group_selector(plan.nodeset.placement_group)
        reservation = plan.nodeset.capacity_reservation
        if reservation is not None:
            terms = [{"id": i} for i in reservation.ids] if reservation.ids else [{"tags": dict(reservation.tags)}]
            body["capacityReservationSelectorTerms"] = terms
        emit(self, api_version="karpenter.k8s.aws/v1", kind="EC2NodeClass", name=plan.nodepool,
             labels=self._labels(plan), annotations=wave(0), body={"spec": body})

    def _volumes(self) -> list[dict[str, Any]]:
        c = self.spec.compute
        ebs = {"volumeSize": c.root_volume_size, "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True}
        if c.ami_family == "bottlerocket":  # OS volume + data volume that holds images and pods
            os_ebs = {**ebs, "volumeSize": "4Gi"}
            return [{"deviceName": "/dev/xvda", "ebs": os_ebs}, {"deviceName": "/dev/xvdb", "ebs": ebs}]
        return [{"deviceName": "/dev/xvda", "rootVolume": True, "ebs": ebs}]

    def _node_pool(self, plan: NodeSetPlan) -> None:
        c = self.spec.compute
        ns, it = plan.nodeset, plan.instance
        requirements = [
            {"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": [t.instance_type for t in plan.types]},
            {"key": CAPACITY_TYPE_LABEL, "operator": "In", "values": [ns.capacity_type]},
            {"key": ARCH_LABEL, "operator": "In", "values": [it.arch]},
            {"key": OS_LABEL, "operator": "In", "values": ["linux"]},
        ]
        zones = self.spec.pool_zones(plan.nodeset)
        if zones:
            requirements.append({"key": ZONE_LABEL, "operator": "In", "values": list(zones)})
        template_spec: dict[str, Any] = {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": plan.nodepool},
            "requirements": requirements,
            "taints": [t.as_dict() for t in plan.taints],
            # The FSx node plugin removes this once it can mount; Karpenter needs no toleration for it.
            "startupTaints": [STARTUP_TAINT] if self.spec.storage.fsx.enabled else None,
            "expireAfter": c.expire_after,
            "terminationGracePeriod": c.termination_grace_period,
        }
        body = {
            "template": {"metadata": {"labels": {**self._labels(plan), **plan.node_labels(c.ami_family)}},
                         "spec": template_spec},
            "disruption": {
                "consolidationPolicy": "WhenEmpty",
                "consolidateAfter": c.consolidate_after,
                "budgets": [{"nodes": c.disruption_budget}],
            },
            "limits": node_pool_limits(plan),
        }
        emit(self, api_version="karpenter.sh/v1", kind="NodePool", name=plan.nodepool,
             labels=self._labels(plan), annotations=wave(1), body={"spec": body})


def node_pool_limits(plan: NodeSetPlan) -> dict[str, str]:
    """Capacity of max_nodes instances: a typo in replicas cannot buy a fleet.

    With a list of types, each resource is counted on the largest type, so max_nodes nodes of any
    mix stay within the limits (Karpenter refuses a launch that would cross one).
    """
    types, n = plan.types, plan.max_nodes
    limits = {"nodes": str(n), "cpu": str(max(t.vcpu for t in types) * n),
              "memory": f"{max(t.memory_mib for t in types) * n}Mi"}
    it = plan.instance
    if it.has_accelerator:
        limits[it.accelerator_resource] = str(max(t.accelerator_count for t in types) * n)
    return limits


PLACEMENT_GROUP_ID = re.compile(r"^pg-[0-9a-z]+$")


def placement_group_selector(value: str) -> dict[str, str]:
    """EC2NodeClass `placementGroupSelector`: `{id}` for a pg-… id, else `{name}` (never both).

    Karpenter v1.14.1 (pkg/apis/v1/ec2nodeclass.go, PlacementGroupSelector) takes a name or an id
    matching `^pg-[0-9a-z]+$`, mutually exclusive (CEL rule), and only resolves an existing group
    (pkg/controllers/nodeclass/placementgroup.go: `PlacementGroupNotFound` otherwise, the nodeclass
    is not ready). It adds no zone requirement for a cluster group: the zone check is ours
    (spec/_model_rules.py placement_group_zone).
    """
    return {"id": value} if PLACEMENT_GROUP_ID.match(value) else {"name": value}
