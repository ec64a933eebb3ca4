"""Node labeler: EKS network topology labels -> the Slinky annotation `topology.slinky.slurm.net/spec`.

Runs in the cluster as a one-replica Deployment (Python 3 standard library only; mounted from a
ConfigMap with its JSON config). Every `interval` seconds it lists the nodes of the topology
NodePools and patches the annotation where it differs; slurm-operator v1.2.1 watches Node
annotations (internal/controller/nodeset/eventhandler/eventhandler_node.go) and copies the value
to the Slurm node (nodeset_sync.go syncSlurmTopology -> UpdateNodeTopology).

Tree: `<topology>:<root>:<layer-1>:<layer-2>:<layer-3>[:<layer-4>]`; Slurm creates the switches
below the declared root on the fly (slurm-26-05-1-1 src/plugins/topology/tree/topology_tree.c,
topology_p_add_rm_node). Block: Slurm only accepts blocks the file declares (topology_block.c), so
topology.yaml declares slots and this script assigns each node one (assign_blocks): slots fill from
the first, since Slurm forms larger blocks only from aligned groups of slots; nodes that share the
domain label (by default the nearest EC2 network node) share a slot, past its size if need be; a
labeled node is never moved. The assignment lives in the annotations themselves: a restart keeps it.
"""

from __future__ import annotations

import json
import ssl
import sys
import time
import urllib.parse
import urllib.request
from typing import Any, Iterable

SA = "/var/run/secrets/kubernetes.io/serviceaccount"
Node = dict[str, Any]


def tree_unit(labels: dict[str, str], tree: dict[str, Any]) -> str | None:
    """`<root>:<l1>:<l2>:<l3>…` from the layer labels present from layer 1 down; None without the first three."""
    path: list[str] = []
    for key in tree["layers"]:
        if key not in labels:
            break
        path.append(labels[key])
    return ":".join([tree["root"], *path]) if len(path) >= 3 else None


def assign_blocks(nodes: Iterable[tuple[str, str | None, str | None]], slots: list[str],
                  size: int) -> dict[str, str]:
    """{node: slot} for (node, domain, current slot) triples, deterministic in node name order.

    Slurm's topology/block places a job of n nodes in one aligned group of 2^k base blocks (a pair is
    b0+b1 or b2+b3, never b1+b2; _get_block_level and eval_nodes_block in
    src/plugins/topology/block/eval_nodes_block.c at slurm-26-05-3-1), and counts every node of a
    base block, however many it holds. So: a labeled node keeps its declared slot (jobs pending or
    running on it depend on it: a relabel leaves them BadConstraints for good); a domain's new nodes
    join its own slot, past `size` if need be, rather than open another; a new domain tops up the
    first partly filled slot, else opens the first empty one. Filled this way, slots are used from b0
    on, all full but the last, so a job of any size up to the node count fits; holes that departed
    nodes leave are filled first. Nodes without a domain get none.
    """
    members: dict[str, list[str]] = {s: [] for s in slots}  # slot -> the domain of each of its nodes
    result: dict[str, str] = {}
    new: dict[str, list[str]] = {}
    for node, domain, current in sorted(nodes, key=lambda t: t[0]):
        if not domain:
            continue
        if current in members:
            result[node] = current
            members[current].append(domain)
        else:
            new.setdefault(domain, []).append(node)
    # Domains already placed first (they only go to their own slots), then the largest: it gets a
    # slot of its own, and the small ones after it share the next.
    known = {d for doms in members.values() for d in doms}
    for domain in sorted(new, key=lambda d: (d not in known, -len(new[d]), d)):
        for node in new[domain]:
            slot = _pick_slot(slots, members, domain, size)
            result[node] = slot
            members[slot].append(domain)
    return result


def _pick_slot(slots: list[str], members: dict[str, list[str]], domain: str, size: int) -> str:
    """The slot for one new node of `domain`: its own with room, its own, a partly filled one, an
    empty one, each lowest index first; with more nodes than slots, the emptiest."""
    own = [s for s in slots if domain in members[s]]
    choices = ([s for s in own if len(members[s]) < size], own,
               [s for s in slots if 0 < len(members[s]) < size], [s for s in slots if not members[s]])
    for choice in choices:
        if choice:
            return choice[0]
    return min(slots, key=lambda s: len(members[s]))


def _current_unit(annotation: str | None, topology: str) -> str | None:
    for item in (annotation or "").split(","):
        name, _, unit = item.partition(":")
        if name == topology and unit:
            return unit
    return None


def desired(nodes: list[Node], cfg: dict[str, Any]) -> dict[str, str]:
    """{node name: annotation value} for every listed node ("" = no topology)."""
    ann, pool_label = cfg["annotation"], cfg["poolLabel"]
    parts: dict[str, list[str]] = {n["metadata"]["name"]: [] for n in nodes}
    tree = cfg.get("tree")
    for node in nodes:
        labels = node["metadata"].get("labels", {})
        if tree and labels.get(pool_label) in tree["pools"]:
            unit = tree_unit(labels, tree)
            if unit:
                parts[node["metadata"]["name"]].append(f"{tree['topology']}:{unit}")
    for block in cfg.get("blocks", []):
        members = [n for n in nodes if n["metadata"].get("labels", {}).get(pool_label) in block["pools"]]
        triples = [(n["metadata"]["name"], n["metadata"].get("labels", {}).get(block["domainLabel"]),
                    _current_unit(n["metadata"].get("annotations", {}).get(ann), block["topology"]))
                   for n in members]
        for name, slot in assign_blocks(triples, block["slots"], block["size"]).items():
            parts[name].append(f"{block['topology']}:{slot}")
    return {name: ",".join(p) for name, p in parts.items()}


def _request(method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    token = open(f"{SA}/token", encoding="utf-8").read().strip()
    req = urllib.request.Request(
        f"https://kubernetes.default.svc{path}", method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/merge-patch+json"})
    with urllib.request.urlopen(req, context=ssl.create_default_context(cafile=f"{SA}/ca.crt"), timeout=30) as r:
        return json.load(r)


def reconcile(cfg: dict[str, Any]) -> None:
    """One round: every node of the cluster's NodePools (so a node whose nodeset left the topologies
    loses its annotation), patched only where the value differs."""
    pools = cfg["pools"]
    selector = urllib.parse.quote(f"{cfg['poolLabel']} in ({','.join(pools)})")
    nodes = _request("GET", f"/api/v1/nodes?labelSelector={selector}")["items"]
    for name, value in sorted(desired(nodes, cfg).items()):
        node = next(n for n in nodes if n["metadata"]["name"] == name)
        current = node["metadata"].get("annotations", {}).get(cfg["annotation"], "")
        if current != value:
            print(f"{name}: {cfg['annotation']} {current!r} -> {value!r}", flush=True)
            _request("PATCH", f"/api/v1/nodes/{urllib.parse.quote(name)}",
                     {"metadata": {"annotations": {cfg["annotation"]: value or None}}})


def main(argv: list[str]) -> int:
    cfg = json.loads(open(argv[1], encoding="utf-8").read())
    while True:
        try:
            reconcile(cfg)
        except Exception as err:  # keep running: the next round retries
            print(f"error: {err}", file=sys.stderr, flush=True)
        time.sleep(cfg["interval"])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
