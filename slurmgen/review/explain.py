"""`main.py --explain FILE [--cluster NAME]`: the effective file, printed for a human reviewer."""

from __future__ import annotations

from typing import Mapping

from ..errors import UserError
from ..slurmconf.operator import SLURM_CONF, Tree, Unresolved, effective
from .bridge_words import explain_block

FILES = ("cgroup.conf", "gres.conf", "slurm.conf", "slurmdbd.conf", "topology.yaml")


class ExplainError(UserError):
    """One line for the user; exit status 2."""


def check_file(name: str) -> None:
    if name not in FILES:
        raise ExplainError(f"--explain: unknown file {name!r} (one of {', '.join(FILES)})")


def _nodes_block(nodes: Mapping[str, str]) -> str:
    """The node definitions slurmctld learns at run time, as comments so the output stays a valid file."""
    if not nodes:
        return ""
    lines = ["#", "### NODES: not in slurm.conf; each slurmd registers itself (slurmd -Z --conf, worker_app.go) ###"]
    lines += [f"# NodeSet={name}: {conf}" for name, conf in sorted(nodes.items())]
    return "\n".join(lines) + "\n"


def explain_one(cluster: str, tree: Tree, name: str) -> str:
    """The file as the operator will write it; slurm.conf gets the dynamic node lines as comments."""
    try:
        eff = effective(tree)
    except Unresolved as err:
        raise ExplainError(f"{cluster}: {name}: the operator cannot build it: {err}") from None
    if eff is None:
        raise ExplainError(f"{cluster}: {name}: no Controller is rendered")
    if name not in eff.files:
        why = {"gres.conf": "no configFileRefs ConfigMap carries it (no GPU or Neuron nodeset)",
               "slurmdbd.conf": "accounting is disabled",
               "topology.yaml": "topology is off (spec topology.enabled)"}.get(name, "nothing writes it")
        raise ExplainError(f"{cluster}: {name}: not written for this cluster: {why}")
    text = eff.files[name]
    return text + _nodes_block(eff.nodes) + explain_block(tree) if name == SLURM_CONF else text


def explain(trees: Mapping[str, Tree], name: str, cluster: str | None) -> str:
    """One cluster's file, or every cluster's under a `# ==> cluster: file <==` header."""
    check_file(name)
    if cluster is not None:
        if cluster not in trees:
            raise ExplainError(f"--cluster: no cluster {cluster!r} (rendered: {', '.join(sorted(trees))})")
        return explain_one(cluster, trees[cluster], name)
    if len(trees) == 1:
        only = next(iter(trees))
        return explain_one(only, trees[only], name)
    parts = []
    for each in sorted(trees):
        try:
            parts.append(f"# ==> {each}: {name} <==\n{explain_one(each, trees[each], name)}")
        except ExplainError as err:
            parts.append(f"# ==> {each}: {name} <==\n# {err}\n")
    return "\n".join(parts)
