"""Synth-time checks on the effective slurm.conf (and cgroup.conf, slurmdbd.conf) the operator will write.

A CR can be valid against its schema and still give slurmctld a file it rejects or misreads: a
key set twice, a key the operator owns overridden, a partition naming a NodeSet that does not
exist yet at the sync wave the Controller arrives, cgroup constraints without task/cgroup, a QoS
the policy does not create, a default memory larger than a node. Each problem is one line,
`<cluster>/<file>: <field>: <what is wrong>` (`errors.Problem`, its `check` one of CHECKS).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from ..catalog.catalog import load_catalog
from ..errors import Problem, lines
from ..catalog.sizing import threads_per_core
from ..kube.vocabulary import INSTANCE_TYPE_LABEL, SYNC_OPTIONS, SYNC_WAVE
from ..slurmconf.operator import Effective, Tree, Unresolved, controllers, effective, nodesets_for, parse_conf_kv, slurm_nodeset_name
from ..slurmconf.parse import Entity, parse, tokens
from ..kube.documents import load_document

Obj = dict[str, Any]

CHECKS = ("operator-build", "duplicate-key", "operator-owned-key", "partition-nodes", "partition-topology",
          "task-plugin", "partition-qos", "default-memory")
TOPOLOGY_YAML = "topology.yaml"
NO_TOPOLOGY_FILE = ("default",)  # topology_g_init without topology.yaml: one context, "default" (topology.c)

# Checks that fire on today's examples until the slurmconf branch (charts/slurm_cluster.py) merges:
# - task-plugin: cgroup.conf constrains cores/RAM/devices but slurm.conf sets no TaskPlugin;
# - partition-nodes: Controller extraConf partitions (e.g. example `backfill` Nodes=spot) name
#   NodeSets that only arrive at wave 3, after the Controller (wave 2).
# The merger empties this set; tests/slurmconf/test_slurmconf.py then expects no problem on the examples.

HOOK = "argocd.argoproj.io/hook"
UNIT = "slurm/"  # the Argo CD Application whose objects make slurm.conf

# slurmdbd.conf keys accounting_config.go:buildSlurmdbdConf@v1.2.1 writes itself.
DBD_OWNED = ("DbdHost", "DbdPort", "SlurmUser", "AuthType", "AuthAltTypes", "StorageType", "StorageHost",
             "StoragePort", "StorageUser", "StorageLoc", "StoragePass", "LogFile")
CONSTRAINTS = ("ConstrainCores", "ConstrainRAMSpace", "ConstrainDevices", "ConstrainSwapSpace")


def blocking(problems: Iterable[Problem]) -> list[str]:
    """The lines that fail synth: one per problem."""
    return lines(problems)


# -- sync waves ----------------------------------------------------------------------------------

def _wave(obj: Obj) -> int:
    return int(obj["metadata"].get("annotations", {}).get(SYNC_WAVE, "0"))


def _ident(obj: Obj) -> tuple[str, str, str]:
    meta = obj["metadata"]
    return obj["kind"], str(meta.get("namespace")), meta["name"]


def _unit(tree: Tree) -> dict[tuple[str, str, str], tuple[str, Obj]]:
    return {_ident(o): (rel, o) for rel, o in tree.items()
            if rel.startswith(UNIT) and HOOK not in o["metadata"].get("annotations", {})}


def _prune_last(obj: Obj) -> bool:
    options = obj["metadata"].get("annotations", {}).get(SYNC_OPTIONS, "")
    return "PruneLast=true" in (o.strip() for o in str(options).split(","))


def prune_waves(waves: Mapping[Any, int]) -> dict[Any, int]:
    """Argo CD prunes in reverse wave order by swapping the prune waves symmetrically
    (argoproj/gitops-engine pkg/sync/sync_context.go, `reorder waves for pruning tasks`)."""
    unique = sorted(set(waves.values()))
    swap = dict(zip(unique, reversed(unique), strict=True))
    return {key: swap[w] for key, w in waves.items()}


def sync_states(base: Tree, head: Tree) -> list[tuple[int, dict[str, Obj]]]:
    """The Slurm Application's objects after each sync wave of the change base -> head (base empty:
    the first install): objects of waves <= w are applied, removed ones pruned at their prune wave.
    Ordering inside one wave is not modelled (Argo CD applies a wave as one batch)."""
    old, new = _unit(base), _unit(head)
    applied = {i: _wave(o) for i, (_, o) in new.items() if old.get(i, (None, None))[1] != o}
    pruned = prune_waves({i: _wave(o) for i, (_, o) in old.items() if i not in new})
    # PruneLast on the live object (the base's): pruned after every wave (gitops-engine v3.5.1
    # pkg/sync/sync_context.go, "for pruneLast tasks, modify the wave to sync phase last wave of tasks + 1").
    last = max([_wave(o) for _, o in (*old.values(), *new.values())], default=0) + 1
    pruned.update({i: last for i in pruned if _prune_last(old[i][1])})
    states = []
    for w in sorted(set(applied.values()) | set(pruned.values())):
        state: dict[str, Obj] = {}
        for i in sorted(set(old) | set(new)):
            if i in new and applied.get(i, w) <= w:
                rel, obj = new[i]
            elif i in old and not (i in pruned and pruned[i] <= w):
                rel, obj = old[i]
            else:
                continue
            state[rel] = obj
        states.append((w, state))
    return states


def topology_names(files: Mapping[str, str]) -> tuple[str, ...]:
    """The topologies a partition's Topology= may name: topology.yaml's (SchedMD/slurm slurm-26-05-1-1
    src/interfaces/topology.c topology_g_init), or only `default` when the file is absent."""
    text = files.get(TOPOLOGY_YAML)
    if text is None:
        return NO_TOPOLOGY_FILE
    items = load_document(text) or []  # bounded: under --check the text is dist/'s
    return tuple(str(i["topology"]) for i in items if isinstance(i, dict) and "topology" in i)


def _partition_topology(cluster: str, state: Tree, eff: Effective, w: int, scenario: str,
                        seen: set[tuple[str, str]]) -> list[Problem]:
    """Every partition's Topology= names a topology of topology.yaml in this state: slurmctld exits on
    one that does not ("Invalid partition topology", src/slurmctld/read_config.c; set_part_topology_idx,
    partition_mgr.c, slurm-26-05-1-1). An empty Topology= is the cluster default."""
    names = topology_names(eff.files)
    problems = []
    for name, entities in parse(eff.slurm.text).partitions.items():
        topo = entities[-1].get("Topology") or ""
        if not topo or topo in names or (name, topo) in seen:
            continue
        seen.add((name, topo))
        where, fld = _partition_origin(cluster, state, eff, entities[-1])
        have = (f"{TOPOLOGY_YAML} declares {', '.join(names)}" if names != NO_TOPOLOGY_FILE
                else f"no {TOPOLOGY_YAML} is mounted (only the topology 'default' exists)")
        problems.append(Problem(
            where, fld,
            f"PartitionName={name} Topology={topo}: no topology {topo} after wave {w} of {scenario} ({have}); "
            "slurmctld exits on a partition naming an unknown topology (Invalid partition topology)",
            fix="make the partition flat in one commit, then remove the partition or its topology in the next",
            check="partition-topology"))
    return problems


def wave_problems(cluster: str, base: Tree, head: Tree) -> list[Problem]:
    """Every partition's Nodes= names a NodeSet, and its Topology= a topology, that exist after every
    wave of the change. slurmctld rejects a partition naming an unknown node or NodeSet (read_config),
    and the operator rewrites slurm.conf from the NodeSets present (buildNodeSetConf)."""
    scenario = "the first install" if not _unit(base) else "this change"
    head_nodesets = {slurm_nodeset_name(o): (_wave(o), o["metadata"]["name"])
                     for o in head.values() if o.get("kind") == "NodeSet"}
    seen: set[tuple[str, str]] = set()
    seen_topology: set[tuple[str, str]] = set()
    problems: list[Problem] = []
    for w, state in sync_states(base, head):
        try:
            eff = effective(state)
        except Unresolved as err:
            problems.append(Problem(f"{cluster}/{UNIT}", "sync waves",
                                    f"at wave {w} of {scenario} the operator cannot build slurm.conf: {err}", check="operator-build"))
            continue
        if eff is None:
            continue
        problems += _partition_topology(cluster, state, eff, w, scenario, seen_topology)
        conf = parse(eff.slurm.text)
        for name, entities in conf.partitions.items():
            for member in (entities[-1].get("Nodes") or "").split(","):
                if member in ("", "ALL") or member in conf.nodesets or (name, member) in seen:
                    continue
                seen.add((name, member))
                later = head_nodesets.get(member)
                why = (f"NodeSet {later[1]} arrives at wave {later[0]}" if later else
                       "no NodeSet of that name is rendered")
                problems.append(Problem(
                    f"{cluster}/{eff.controller}", "spec.extraConf",
                    f"PartitionName={name} Nodes={member}: no NodeSet {member} in slurm.conf after wave {w} "
                    f"of {scenario} ({why}); slurmctld rejects a partition naming an unknown node",
                    check="partition-nodes"))
    return problems


# -- checks on one effective configuration -------------------------------------------------------

def _duplicates(where: str, fld: str, pairs: Iterable[tuple[str, str]], what: str) -> list[Problem]:
    values: dict[str, list[str]] = {}
    names: dict[str, str] = {}
    for key, value in pairs:
        values.setdefault(key.lower(), []).append(value)
        names.setdefault(key.lower(), key)
    return [Problem(where, fld, f"{what}{names[k]} is set twice with different values "
                                                 f"({', '.join(v)}); only one can hold", check="duplicate-key")
            for k, v in values.items() if len(set(v)) > 1]


def _partition_origin(cluster: str, tree: Tree, eff: Effective, entity: Entity) -> tuple[str, str]:
    """The file and field a partition line comes from: a NodeSet's own partition, or our extraConf."""
    if entity.line in (line.strip() for line in eff.slurm.nodeset_lines):
        for rel, obj in sorted(tree.items()):
            if obj.get("kind") == "NodeSet" and slurm_nodeset_name(obj) == entity.name:
                return f"{cluster}/{rel}", "spec.partition.config"
    return f"{cluster}/{eff.controller}", "spec.extraConf"


def key_problems(cluster: str, tree: Tree, eff: Effective) -> list[Problem]:
    """No key set twice with different values; no operator-owned key overridden by our extraConf."""
    ctl = f"{cluster}/{eff.controller}"
    problems: list[Problem] = []
    owned = {s.key.lower(): s for s in eff.slurm.operator if s.key not in eff.slurm.merge_keys}
    ours = parse(eff.slurm.extra_conf).settings  # global keys of our extraConf (partition lines apart)
    for key, value in ours:
        if key.lower() in owned:
            s = owned[key.lower()]
            problems.append(Problem(ctl, "spec.extraConf",
                                    f"{key}={value} overrides {s.key}={s.value}, which slurm-operator 1.2.1 writes "
                                    "itself (controller_config.go:buildSlurmConf)", fix="set it through the Controller instead",
                                    check="operator-owned-key"))
    problems += _duplicates(ctl, "spec.extraConf", [(k, v) for k, v in ours if k.lower() not in owned], "")
    conf = parse(eff.slurm.text)
    for name, entities in sorted(conf.partitions.items()):
        if len(entities) > 1:
            problems.append(Problem(ctl, "spec.extraConf",
                                    f"PartitionName={name} is defined {len(entities)} times (a NodeSet's own partition "
                                    "and the Controller's extraConf); slurmctld keeps one", check="duplicate-key"))
        for entity in entities:
            where, fld = _partition_origin(cluster, tree, eff, entity)
            problems += _duplicates(where, fld, entity.params, f"PartitionName={name}: ")
    for rel, obj in sorted(tree.items()):
        if obj.get("kind") == "NodeSet":
            pairs = [(k, v) for k, v in tokens(str(obj["spec"].get("extraConf") or ""))
                     if k.lower() not in ("feature", "features")]  # Features are merged on purpose
            problems += _duplicates(f"{cluster}/{rel}", "spec.extraConf", pairs, "")
        if obj.get("kind") == "Accounting":
            extra = parse_conf_kv(str(obj["spec"].get("extraConf") or ""))
            for key in DBD_OWNED:
                if key.lower() in extra:
                    problems.append(Problem(f"{cluster}/{rel}", "spec.extraConf",
                                            f"{key} is written by slurm-operator 1.2.1 itself "
                                            "(accounting_config.go:buildSlurmdbdConf)", fix="set it through the Accounting",
                                            check="operator-owned-key"))
    return problems


def task_plugin_problems(cluster: str, eff: Effective) -> list[Problem]:
    """cgroup.conf Constrain*=yes is applied by task/cgroup only; Slurm's default TaskPlugin is
    task/none, so without it jobs are not confined to their cores, memory or GPUs."""
    cgroup = parse(eff.files.get("cgroup.conf", ""))
    if (cgroup.get("CgroupPlugin") or "").lower() == "disabled":
        return []
    on = [k for k in CONSTRAINTS if (cgroup.get(k) or "").lower() == "yes"]
    plugins = (parse(eff.slurm.text).get("TaskPlugin") or "").lower().split(",")
    if not on or "task/cgroup" in plugins:
        return []
    return [Problem(f"{cluster}/{eff.controller}", "spec.extraConf",
                    f"cgroup.conf sets {', '.join(f'{k}=yes' for k in on)} but slurm.conf has no TaskPlugin with "
                    "task/cgroup (default task/none): the constraints are never applied", check="task-plugin")]


def _policy_qos(tree: Tree) -> set[str] | None:
    names: set[str] = set()
    found = False
    for obj in tree.values():
        text = (obj.get("data") or {}).get("accounts.cfg") if obj.get("kind") == "ConfigMap" else None
        if text is None:
            continue
        found = True
        for line in str(text).splitlines():
            if line.startswith("QOS - '"):
                names.add(line.split("'")[1])
    return names if found else None


def qos_problems(cluster: str, tree: Tree, eff: Effective) -> list[Problem]:
    """Every partition QOS= / AllowQos= QoS is created by the policy (or is Slurm's own `normal`)."""
    policy = _policy_qos(tree)
    known = (policy or set()) | {"normal"}
    problems = []
    for name, entities in sorted(parse(eff.slurm.text).partitions.items()):
        for key in ("QOS", "AllowQos"):
            value = entities[-1].get(key)
            for qos in (value or "").split(","):
                if qos and qos.upper() != "ALL" and qos not in known:
                    where, fld = _partition_origin(cluster, tree, eff, entities[-1])
                    source = "the policy (accounts.cfg)" if policy is not None else "any policy (none is rendered)"
                    problems.append(Problem(where, fld,
                                            f"PartitionName={name} {key}={value}: QoS {qos} is not created by {source}", check="partition-qos"))
    return problems


def _node_facts(nodeset: Obj, conf: str) -> tuple[int | None, int, int | None]:
    """(RealMemory MB, GPUs, CPUs) a NodeSet's slurmd offers to jobs; CPUs from `CPUs=`, or the
    instance type's (what slurmd detects on a whole node) less the `CoreSpecCount` cores kept back."""
    facts = {k.lower(): v for k, v in tokens(conf)}
    memory = int(facts["realmemory"]) if facts.get("realmemory", "").isdigit() else None
    gpus = 0
    for gres in facts.get("gres", "").split(","):
        parts = gres.split(":")
        if parts[0] == "gpu" and parts[-1].isdigit() and len(parts) > 1:
            gpus += int(parts[-1])
    cpus = int(facts["cpus"]) if facts.get("cpus", "").isdigit() else None
    if cpus is None:
        itype = (nodeset.get("spec", {}).get("template", {}).get("spec", {}).get("nodeSelector") or {}).get(
            INSTANCE_TYPE_LABEL)
        it = load_catalog().get(itype or "")
        spec_cores = int(facts["corespeccount"]) if facts.get("corespeccount", "").isdigit() else 0
        cpus = it.vcpu - spec_cores * threads_per_core(it) if it else None
    return memory, gpus, cpus


def memory_problems(cluster: str, tree: Tree, eff: Effective) -> list[Problem]:
    """DefMemPerGPU x GPUs and DefMemPerCPU x CPUs of every node of the partition fit its RealMemory:
    otherwise a job asking for a whole node with default memory can never start there."""
    conf = parse(eff.slurm.text)
    nodesets = {slurm_nodeset_name(o): o for o in nodesets_for(tree, tree[eff.controller])}
    problems = []
    for name, entities in sorted(conf.partitions.items()):
        part: Entity = entities[-1]
        nodes = part.get("Nodes") or ""
        members = sorted(nodesets) if nodes == "ALL" else [m for m in nodes.split(",") if m in nodesets]
        for key, unit in (("DefMemPerGPU", "GPU"), ("DefMemPerCPU", "CPU")):
            value = part.get(key)
            if value is None or not value.isdigit():
                continue
            for member in members:
                memory, gpus, cpus = _node_facts(nodesets[member], eff.nodes.get(member, ""))
                count = gpus if unit == "GPU" else cpus
                if memory is None or not count or int(value) * count <= memory:
                    continue
                where, fld = _partition_origin(cluster, tree, eff, part)
                problems.append(Problem(where, fld,
                                        f"PartitionName={name} {key}={value} x {count} {unit}s of NodeSet {member} = "
                                        f"{int(value) * count} MB exceeds its RealMemory={memory}", check="default-memory"))
    return problems


def problems(cluster: str, tree: Tree) -> list[Problem]:
    """Every check on a rendered cluster, including the sync waves of its first install."""
    try:
        eff = effective(tree)
    except Unresolved as err:
        where = next(iter(controllers(tree).values()))[0]
        return [Problem(f"{cluster}/{where}", "spec.configFileRefs", str(err), check="operator-build")]
    if eff is None:
        return []
    return (key_problems(cluster, tree, eff) + task_plugin_problems(cluster, eff) + qos_problems(cluster, tree, eff)
            + memory_problems(cluster, tree, eff) + wave_problems(cluster, {}, tree))
