"""slurm-bridge in words, for the summary and `--explain slurm.conf`: which namespaces' pods Slurm
schedules, into which partition, onto which nodesets (read from the rendered tree alone)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..kube.naming import NODESET_LABEL
from ..kube.vocabulary import NODEPOOL_LABEL
from ..plan.nodesets import BRIDGE_TAINT

Obj = dict[str, Any]
Tree = Mapping[str, Obj]


@dataclass(frozen=True)
class BridgeView:
    """What a rendered tree bridges: slurm-bridge's Application values and the NodeSets it may use."""

    version: str
    namespaces: tuple[str, ...]
    partition: str
    nodesets: tuple[str, ...]
    nodepools: tuple[str, ...]

    def sentence(self) -> str:
        ns = ", ".join(f"`{n}`" for n in self.namespaces)
        sets = ", ".join(f"`{n}`" for n in self.nodesets)
        return (f"Slurm schedules the Kubernetes pods of namespace(s) {ns} (slurm-bridge {self.version}) in partition "
                f"`{self.partition}`, onto nodeset(s) {sets} (NodePool(s) {', '.join(self.nodepools)}): "
                "a node runs native Slurm jobs or those pods, never both at once")


def _bridged(nodeset: Obj) -> bool:
    tolerations = nodeset["spec"].get("template", {}).get("spec", {}).get("tolerations", [])
    return BRIDGE_TAINT.toleration().as_dict() in tolerations


def bridge_view(tree: Tree) -> BridgeView | None:
    """The bridge a tree deploys, or None when it has no slurm-bridge Application."""
    app = next((o for o in tree.values() if o.get("kind") == "Application"
                and o["spec"]["source"].get("chart") == "slurm-bridge"), None)
    if app is None:
        return None
    values = app["spec"]["source"].get("helm", {}).get("valuesObject", {})
    sets = sorted((o["spec"]["template"]["metadata"]["labels"].get(NODESET_LABEL, o["metadata"]["name"]),
                   o["spec"]["template"]["spec"]["nodeSelector"].get(NODEPOOL_LABEL, "?"))
                  for o in tree.values() if o.get("kind") == "NodeSet" and _bridged(o))
    return BridgeView(version=str(app["spec"]["source"]["targetRevision"]),
                      namespaces=tuple(values.get("admission", {}).get("managedNamespaces", ())),
                      partition=str(values.get("schedulerConfig", {}).get("partition", "slurm-bridge")),
                      nodesets=tuple(s for s, _ in sets), nodepools=tuple(p for _, p in sets))


def bridge_lines(old: Tree, new: Tree) -> list[str]:
    """The summary's headline about the bridge: what it now does, when that changed."""
    was, now = bridge_view(old), bridge_view(new)
    if was == now:
        return []
    if now is None and was is not None:
        return [f"Slurm no longer schedules the Kubernetes pods of namespace(s) {', '.join(was.namespaces)} "
                "(slurm-bridge removed)"]
    return [now.sentence()] if now is not None else []


def explain_block(tree: Tree) -> str:
    """`--explain slurm.conf`'s comment on the bridged partition ('' without a bridge)."""
    view = bridge_view(tree)
    if view is None:
        return ""
    return "\n".join([
        "#", f"### BRIDGE: slurm-bridge {view.version} submits the Kubernetes pods of namespace(s) "
        f"{', '.join(view.namespaces)} as external jobs to PartitionName={view.partition} ###",
        f"# nodesets lent to those pods: {', '.join(view.nodesets)}; MCSPlugin=mcs/label keeps native jobs off a lent node",
    ]) + "\n"
