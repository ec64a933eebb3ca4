"""Proof, from the rendered objects alone, that every NodeSet's pods land on exactly their NodePool and fit.

This re-derives placement the way the scheduler and Karpenter would, instead of trusting the plan
that produced the objects: a hand edit of a chart, or a future change that lets the two drift,
fails synth here rather than leaving slurmd Pending on a real cluster.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from ..catalog.catalog import InstanceType
from ..catalog.sizing import DaemonSetReserve, allocatable
from ..kube.quantity import cpu_millis, memory_mib
from ..kube.scheduling import node_labels, selects, tolerates
from ..kube.vocabulary import INSTANCE_TYPE_LABEL

Obj = dict[str, Any]


def _fit(nodeset: Obj, pool: Obj, it: InstanceType, reserve: DaemonSetReserve) -> Iterator[str]:
    """Requests within the instance's allocatable (minus the DaemonSet reserve) for the pods a node holds."""
    requests = nodeset["spec"]["slurmd"].get("resources", {}).get("requests", {})
    # Without oversubscribeNode the operator's anti-affinity allows one slurmd per node.
    shared = nodeset["spec"].get("oversubscribeNode", False)
    accel = int(requests.get(it.accelerator_resource, 0)) if it.has_accelerator else 0
    per_node = it.accelerator_count // accel if shared and accel else 1
    alloc = allocatable(it)
    reserve_cpu_m, reserve_memory_mi = reserve.on(alloc)
    budget = {"cpu": alloc.cpu_m - reserve_cpu_m, "memory": alloc.memory_mi - reserve_memory_mi}
    used = {"cpu": cpu_millis(requests.get("cpu", "0")), "memory": memory_mib(requests.get("memory", "0"))}
    for res in ("cpu", "memory"):
        if used[res] * per_node > budget[res]:
            unit = "m" if res == "cpu" else "Mi"
            yield (f"{per_node} pod(s) requesting {res} {requests[res]} exceed {budget[res]}{unit} allocatable on "
                   f"{it.instance_type} after the DaemonSet reserve")
    for resource, amount in requests.items():
        if resource in ("cpu", "memory"):
            continue
        have = it.accelerator_count if resource == it.accelerator_resource else it.efa_max if resource == "vpc.amazonaws.com/efa" else 0
        if int(amount) * per_node > have:
            yield f"{per_node} pod(s) requesting {resource} {amount} exceed the {have} on {it.instance_type}"


def check_placement(files: Mapping[str, Obj], catalog: Mapping[str, InstanceType],
                    reserve: DaemonSetReserve) -> list[str]:
    """One line per NodeSet that would not land on exactly one NodePool, or would not fit it."""
    pools = {o["metadata"]["name"]: o for o in files.values() if o["kind"] == "NodePool"}
    problems: list[str] = []
    for rel, obj in files.items():
        if obj["kind"] != "NodeSet":
            continue
        pod = obj["spec"].get("template", {}).get("spec", {})
        selector: dict[str, str] = pod.get("nodeSelector", {})
        tolerations: list[Obj] = pod.get("tolerations", [])
        matches = [name for name, pool in sorted(pools.items()) if selects(None, selector, node_labels(pool))]
        if len(matches) != 1:
            problems.append(f"{rel}: nodeSelector {selector} matches {len(matches)} NodePools {matches}; exactly one is required")
            continue
        pool = pools[matches[0]]
        for taint in pool["spec"]["template"]["spec"].get("taints", []):
            if not tolerates(tolerations, taint):
                problems.append(f"{rel}: does not tolerate taint {taint['key']}:{taint['effect']} of NodePool {matches[0]}")
        types = [r["values"] for r in pool["spec"]["template"]["spec"]["requirements"]
                 if r["key"] == INSTANCE_TYPE_LABEL and r["operator"] == "In"]
        for type_name in (types[0] if types else []):
            if type_name not in catalog:
                problems.append(f"{rel}: NodePool {matches[0]} allows {type_name}, which is not in the instance catalog")
                continue
            problems += [f"{rel}: {p}" for p in _fit(obj, pool, catalog[type_name], reserve)]
    return problems
