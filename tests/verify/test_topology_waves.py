"""A partition's topology can change at any sync wave without slurmctld meeting an unknown name (issue #16).

topology.yaml (ConfigMap, wave 0) is read at every slurmctld start; the Controller's config-files
hash restarts slurmctld at wave 2, while a NodeSet's own `PartitionName=` line (its
`partition.config`, wave 3) may still name the topology it used before. slurmctld exits on a
partition naming a topology the file does not declare ("Invalid partition topology",
src/slurmctld/read_config.c and set_part_topology_idx in partition_mgr.c, SchedMD/slurm
slurm-26-05-1-1), so the names must outlive every reference: `wave_problems` models the waves.
"""

from __future__ import annotations

import copy
from itertools import pairwise
from typing import Any

import pytest
import yaml

from slurmgen.synth.build import render
from slurmgen.verify.slurm_files import topology_names, wave_problems
from slurmgen.spec import parse_text
from tests.conftest import SPECS
from tests.spec_builder import DROP, Whole, by_name, variant

TOPO = "slurm/configmap-slurm-topology-conf.yaml"
H200 = "slurm/nodeset-slurm-worker-h200.yaml"
TRAINING = (SPECS / "training.yaml").read_text()
AS_BLOCK = {"h200": {"topology": {"type": "block", "blockSizes": [2]}}}
AS_FLAT = {"h200": {"topology": {"type": "flat"}}}
RESERVED_FLAT = {"reserved": {"topology": Whole(type="flat")}}  # not block any more: its blockSizes go too


def training(partitions: dict[str, Any], **top: Any) -> str:
    """training.yaml with its partitions changed by name (spec_builder.by_name) and `top` merged in."""
    return variant(TRAINING, partitions=by_name(yaml.safe_load(TRAINING)["partitions"], partitions), **top)


def files(text: str) -> dict:
    [cluster] = render([parse_text("training.yaml", text)])
    return copy.deepcopy(dict(cluster.files))


def own_partition(tree: dict) -> list[str]:
    return tree[H200]["spec"]["partition"]["config"].split()


def declared(tree: dict) -> list[str]:
    return [t["topology"] for t in yaml.safe_load(tree[TOPO]["data"]["topology.yaml"])]


@pytest.fixture(scope="module")
def as_tree() -> dict:
    return files(TRAINING)


@pytest.fixture(scope="module")
def as_block() -> dict:
    return files(training(AS_BLOCK))


def test_every_eligible_partition_declares_its_block_topology_whatever_type_it_uses(as_tree, as_block):
    # GIVEN training (h200 uses tree) and the same with h200 as a block partition
    # THEN both files declare the same names: tree, and block-<p> for every partition of topology nodesets
    # (backfill holds l4, which has no EC2 topology labels, so it has none; inference holds l40s, flat)
    names = ["flat", "tree", "block-train", "block-reserved", "block-h200", "block-neuron", "block-inference"]
    assert declared(as_tree) == names
    assert declared(as_block) == names
    # AND the partition names the one it uses
    assert "Topology=tree" in own_partition(as_tree)
    assert "Topology=block-h200" in own_partition(as_block)
    # AND an unused block topology has block sizes [1] (Slurm needs sizes), and the same slots as in use
    unused = yaml.safe_load(as_tree[TOPO]["data"]["topology.yaml"])[4]["block"]
    used = yaml.safe_load(as_block[TOPO]["data"]["topology.yaml"])[4]["block"]
    assert (unused["block_sizes"], used["block_sizes"]) == ([1], [2])
    assert unused["blocks"] == used["blocks"] == [{"block": f"h200-b{i}"} for i in range(4)]


def notes(tree: dict) -> dict[str, str]:
    """The comment line `# <name>: ...` right above a topology of topology.yaml, by topology name."""
    lines = tree[TOPO]["data"]["topology.yaml"].splitlines()
    named = {line.removeprefix("- topology: "): before for before, line in pairwise(lines)
             if line.startswith("- topology: ")}
    return {name: before for name, before in named.items() if before.startswith(f"# {name}: ")}


def test_a_topology_no_partition_names_carries_a_one_line_note_saying_why_it_is_declared(as_tree, as_block):
    # GIVEN training (train, h200 and neuron use tree, reserved a block), the same with h200 as a block
    # partition, and the same with every partition flat
    every_flat = files(training(RESERVED_FLAT, topology={"default": "flat"}))
    why = "kept so a partition can switch to or from it (slurmctld exits on a Topology= it lacks)"
    # THEN each declared topology no partition names has one comment line naming what is used instead
    assert notes(as_tree) == {**{f"block-{p}": f"# block-{p}: unused, partition {p} uses tree; {why}"
                                 for p in ("train", "h200", "neuron")},
                              "block-inference": f"# block-inference: unused, partition inference uses flat; {why}"}
    # AND a topology in use has none
    assert set(notes(as_block)) == {"block-train", "block-neuron", "block-inference"}
    assert notes(every_flat) == {"tree": f"# tree: unused, no partition names it; {why}",
                                 **{f"block-{p}": f"# block-{p}: unused, partition {p} uses flat; {why}"
                                    for p in ("train", "reserved", "h200", "neuron", "inference")}}
    # AND the names declared are the same either way (the notes are comments only)
    assert declared(every_flat) == declared(as_tree)


@pytest.mark.parametrize("direction", ["block->tree", "tree->block"])
def test_switching_a_nodeset_partition_between_block_and_tree_is_safe_at_every_wave(as_tree, as_block, direction):
    # GIVEN h200 (its line is the NodeSet's own partition, wave 3) WHEN it switches topology type
    base, head = (as_block, as_tree) if direction == "block->tree" else (as_tree, as_block)
    assert own_partition(base) != own_partition(head)
    # THEN no wave of the change leaves a partition naming an undeclared topology
    assert wave_problems("training", base, head) == []


def test_switching_to_flat_and_back_is_safe(as_tree, as_block):
    # GIVEN h200 set to flat: its line carries no Topology= (flat is the cluster default)
    flat = files(training(AS_FLAT))
    assert not [t for t in own_partition(flat) if t.startswith("Topology=")]
    # THEN every switch among block, tree and flat is safe
    for base, head in ((as_block, flat), (flat, as_block), (as_tree, flat), (flat, as_tree)):
        assert wave_problems("training", base, head) == []


def test_install_is_safe(as_block):
    assert wave_problems("training", {}, as_block) == []


def test_a_topology_that_disappears_while_a_nodeset_still_names_it_is_reported(as_tree, as_block):
    # GIVEN the switch block -> tree as the former generator rendered it: block-h200 declared only
    # while h200 used it
    head = copy.deepcopy(as_tree)
    text = head[TOPO]["data"]["topology.yaml"]
    start = text.index("- topology: block-h200\n")
    end = text.index("- topology: block-neuron\n")
    head[TOPO]["data"]["topology.yaml"] = text[:start] + text[end:]
    assert "block-h200" not in topology_names({"topology.yaml": head[TOPO]["data"]["topology.yaml"]})
    # WHEN the waves are modelled
    lines = [str(p) for p in wave_problems("training", as_block, head)]
    # THEN the NodeSet's own partition is reported once, at the first wave the name is gone (wave 0:
    # the ConfigMap), though slurmctld only restarts at wave 2 and the NodeSet only changes at wave 3
    assert lines == [
        "training/slurm/nodeset-slurm-worker-h200.yaml: spec.partition.config: PartitionName=h200 "
        "Topology=block-h200: no topology block-h200 after wave 0 of this change (topology.yaml declares "
        "flat, tree, block-train, block-reserved, block-neuron, block-inference); slurmctld exits on a partition naming an "
        "unknown topology (Invalid partition topology); make the partition flat in one commit, then remove the "
        "partition or its topology in the next"]


def test_a_controller_partition_naming_an_undeclared_topology_is_reported_at_install(as_tree):
    # GIVEN a hand-made tree whose Controller partition names a topology topology.yaml lacks
    head = copy.deepcopy(as_tree)
    ctl = head["slurm/controller-slurm.yaml"]["spec"]
    ctl["extraConf"] = ctl["extraConf"].replace("Topology=block-reserved", "Topology=block-nowhere")
    problems = wave_problems("training", {}, head)
    # THEN it is reported on the Controller's extraConf
    assert [(p.check, p.where, p.path) for p in problems] == [
        ("partition-topology", "training/slurm/controller-slurm.yaml", "spec.extraConf")]
    assert "PartitionName=reserved Topology=block-nowhere: no topology block-nowhere" in problems[0].what


def test_topology_off_in_one_commit_is_reported_and_in_two_commits_is_safe(as_tree):
    # GIVEN training with topology on, and the spec without the topology section
    off = files(training({"reserved": {"topology": DROP}}, topology=DROP))
    assert TOPO not in off
    # WHEN it is turned off in one commit THEN the NodeSet's own partition still names tree at wave 2,
    # when the Controller stops mounting topology.yaml and slurmctld restarts: reported
    problems = wave_problems("training", as_tree, off)
    assert [(p.check, p.where) for p in problems] == [
        ("partition-topology", "training/slurm/nodeset-slurm-worker-h200.yaml")]
    assert "Topology=tree: no topology tree after wave 2 of this change (no topology.yaml is mounted" \
        in problems[0].what
    # WHEN first every partition is made flat (topology still on), then topology is turned off
    flat = files(training(RESERVED_FLAT, topology={"default": "flat"}))
    # THEN both steps are safe
    assert wave_problems("training", as_tree, flat) == []
    assert wave_problems("training", flat, off) == []


def test_removing_a_block_partition_in_one_commit_is_reported_and_after_making_it_flat_is_safe(as_tree):
    # GIVEN training WHEN the block partition `reserved` (a Controller line, wave 2) is removed in one commit
    gone = files(training({"reserved": DROP}))
    # THEN block-reserved leaves topology.yaml at wave 0 while the old Controller still names it: reported
    problems = wave_problems("training", as_tree, gone)
    assert [(p.check, p.where, p.path) for p in problems] == [
        ("partition-topology", "training/slurm/controller-slurm.yaml", "spec.extraConf")]
    assert "PartitionName=reserved Topology=block-reserved: no topology block-reserved after wave 0" in problems[0].what
    # AND made flat first (block-reserved still declared: it is eligible), then removed, both steps are safe
    flat = files(training(RESERVED_FLAT))
    assert "block-reserved" in declared(flat)
    assert wave_problems("training", as_tree, flat) == []
    assert wave_problems("training", flat, gone) == []
