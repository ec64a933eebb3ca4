"""Node labeler: each bridged node gets `slinky.slurm.net/slurm-nodename=<its slurmd's Slurm node name>`.

slurm-bridge v1.2.1 maps Slurm node names to Kubernetes nodes through that label, else by equal
names (internal/controller/node/utils/utils.go GetSlurmNodeName; docs/quickstart.md, "Matching
NodeNames"). Our Slurm nodes are named after their slurmd pod's hostname (`<nodeset>-<n>`; the node
name's first DNS label in DaemonSet mode), never after an EKS node's name
(`ip-10-0-1-23.<region>.compute.internal`), so without the label the bridge can neither bind a pod
to the node Slurm allocated (slurmbridge.go slurmToKubeNodes) nor taint the node it manages.

Runs in the cluster as a one-replica Deployment (Python 3 standard library only; mounted from a
ConfigMap with its JSON config). Every `interval` seconds it lists the slurmd pods of the bridged
nodesets and the nodes of their NodePools, and patches the label where it differs: set to the pod's
hostname (the Slurm node name: slurm-operator v1.2.1 starts slurmd with `-Z`, named by its host),
removed from a node no slurmd pod is bound to any more.
"""

from __future__ import annotations

import json
import ssl
import sys
import time
import urllib.parse
import urllib.request
from typing import Any

SA = "/var/run/secrets/kubernetes.io/serviceaccount"
Obj = dict[str, Any]


def slurm_names(pods: list[Obj]) -> dict[str, str]:
    """{Kubernetes node: Slurm node name} of the slurmd pods bound to a node and not being deleted."""
    out: dict[str, str] = {}
    for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
        node = pod.get("spec", {}).get("nodeName")
        if not node or pod["metadata"].get("deletionTimestamp"):
            continue
        out[node] = pod["spec"].get("hostname") or pod["metadata"]["name"]
    return out


def desired(nodes: list[Obj], pods: list[Obj], label: str) -> dict[str, str | None]:
    """{node: label value, or None to remove it} for every node whose label must change."""
    names = slurm_names(pods)
    changes: dict[str, str | None] = {}
    for node in nodes:
        name = node["metadata"]["name"]
        current = node["metadata"].get("labels", {}).get(label)
        want = names.get(name)
        if current != want:
            changes[name] = want
    return changes


def _request(method: str, path: str, body: Obj | None = None) -> Any:
    token = open(f"{SA}/token", encoding="utf-8").read().strip()
    req = urllib.request.Request(
        f"https://kubernetes.default.svc{path}", method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/merge-patch+json"})
    with urllib.request.urlopen(req, context=ssl.create_default_context(cafile=f"{SA}/ca.crt"), timeout=30) as r:
        return json.load(r)


def reconcile(cfg: Obj) -> None:
    """One round: the bridged NodePools' nodes against the slurmd pods of the bridged nodesets."""
    pods_selector = urllib.parse.quote(cfg["podSelector"])
    pods = _request("GET", f"/api/v1/namespaces/{cfg['namespace']}/pods?labelSelector={pods_selector}")["items"]
    nodes_selector = urllib.parse.quote(f"{cfg['poolLabel']} in ({','.join(cfg['pools'])})")
    nodes = _request("GET", f"/api/v1/nodes?labelSelector={nodes_selector}")["items"]
    for name, value in sorted(desired(nodes, pods, cfg["nodeLabel"]).items()):
        print(f"{name}: {cfg['nodeLabel']} -> {value!r}", flush=True)
        _request("PATCH", f"/api/v1/nodes/{urllib.parse.quote(name)}",
                 {"metadata": {"labels": {cfg["nodeLabel"]: value}}})


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
