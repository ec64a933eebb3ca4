"""The fake nodes a tree's pods land on: what kwok plays as kubelets in the sync stage.

A committed tree names its nodes in two ways, and each gives nodes here:
- **a Karpenter NodePool**: one node as Karpenter would launch it. Its labels are the NodePool's
  template labels, the first value of each `In` requirement and `karpenter.sh/nodepool`; its taints
  are the template's (startup taints left out: the agents that lift them are not played). Capacity
  comes from the instance catalog when it knows the type.
- **a nodeSelector no NodePool offers** (the EKS managed node group of the cluster's add-ons, which
  is not in the tree): one node per distinct selector found anywhere in the tree, pod templates and
  Helm values alike, labeled with it.
Every node carries kwok's annotation, so kwok (run with --manage-nodes-with-annotation-selector)
plays it and nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from slurmgen.catalog.catalog import InstanceType, load_catalog

from .tree import TreeObject

KWOK_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_SELECTOR = f"{KWOK_ANNOTATION}=fake"
ZONE = "topology.kubernetes.io/zone"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
#: a node of a type the catalog does not know (the add-on group's): room for every add-on's pods
DEFAULT_CAPACITY = {"cpu": "16", "memory": "64Gi", "pods": "110", "ephemeral-storage": "200Gi"}


def node_selectors(value: Any) -> Iterator[dict[str, str]]:
    """Every `nodeSelector` mapping under `value` (pod specs and Helm values alike)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "nodeSelector" and isinstance(item, dict) and item:
                yield {str(k): str(v) for k, v in item.items()}
            else:
                yield from node_selectors(item)
    elif isinstance(value, list):
        for item in value:
            yield from node_selectors(item)


def _nodepool_labels(pool: dict[str, Any]) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """The labels and taints of a node launched for `pool`."""
    template = (pool.get("spec") or {}).get("template") or {}
    labels = {str(k): str(v) for k, v in ((template.get("metadata") or {}).get("labels") or {}).items()}
    for req in (template.get("spec") or {}).get("requirements") or []:
        if req.get("operator") == "In" and req.get("values"):
            labels.setdefault(str(req["key"]), str(req["values"][0]))
    labels["karpenter.sh/nodepool"] = str(pool["metadata"]["name"])
    labels.setdefault("karpenter.sh/capacity-type", "on-demand")
    return labels, list((template.get("spec") or {}).get("taints") or [])


def _satisfies(labels: dict[str, str], selector: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def _capacity(instance: InstanceType | None) -> dict[str, str]:
    """What the node reports: the type's CPUs, memory and pods, and its accelerators and EFA."""
    if instance is None:
        return dict(DEFAULT_CAPACITY)
    capacity = {"cpu": str(instance.vcpu), "memory": f"{instance.memory_mib}Mi",
                "pods": str(instance.max_pods or 110), "ephemeral-storage": "200Gi"}
    if instance.accelerator_resource and instance.accelerator_count:
        capacity[instance.accelerator_resource] = str(instance.accelerator_count)
    if instance.efa_max:
        capacity["vpc.amazonaws.com/efa"] = str(instance.efa_max)
    return capacity


def _name(stem: str, taken: set[str]) -> str:
    """A DNS-1123 node name from `stem`, unique among `taken`."""
    base = re.sub(r"[^a-z0-9-]+", "-", stem.lower()).strip("-")[:50] or "node"
    name, n = f"rehearse-{base}", 1
    while name in taken:
        n += 1
        name = f"rehearse-{base}-{n}"
    taken.add(name)
    return name


def _node(name: str, labels: dict[str, str], taints: list[dict[str, Any]], capacity: dict[str, str]) -> dict[str, Any]:
    labels = {"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", **labels, "kubernetes.io/hostname": name,
              "type": "kwok"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels, "annotations": {KWOK_ANNOTATION: "fake"}},
            "spec": {"taints": taints} if taints else {},
            "status": {"capacity": capacity, "allocatable": capacity}}


def fake_nodes(objects: Iterable[TreeObject]) -> list[dict[str, Any]]:
    """The Node objects for one tree: one per NodePool, then one per nodeSelector left unmet."""
    objects = list(objects)
    catalog = load_catalog()
    taken: set[str] = set()
    nodes = []
    for obj in objects:
        if obj.group_kind == ("karpenter.sh", "NodePool"):
            labels, taints = _nodepool_labels(obj.body)
            instance = catalog.get(labels.get(INSTANCE_TYPE, ""))
            nodes.append(_node(_name(obj.name, taken), labels, taints, _capacity(instance)))
    unmet: list[dict[str, str]] = []
    for obj in objects:
        for selector in node_selectors(obj.body.get("spec")):
            if not any(_satisfies(n["metadata"]["labels"], selector) for n in nodes) and selector not in unmet:
                unmet.append(selector)
                stem = selector.get("eks.amazonaws.com/nodegroup") or selector.get(INSTANCE_TYPE) or "addons"
                nodes.append(_node(_name(stem, taken), selector, [],
                                   _capacity(catalog.get(selector.get(INSTANCE_TYPE, "")))))
    return nodes
