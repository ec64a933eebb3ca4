"""Block slot assignment of the topology labeler on uneven domains, as data (tests/cases/blocks/*.yaml,
format in its README.md): the exact slots, and which job sizes Slurm's block placement then accepts."""

from __future__ import annotations

import random

import pytest
import yaml

from charts import topology_labeler as lab
from tests.block_placement import fits
from tests.spec_builder import variant
from tests.conftest import TESTS

CASES = sorted((TESTS / "cases" / "blocks").glob("*.yaml"))


def parse_nodes(text: str) -> list[tuple[str, str | None, str | None]]:
    """`name:domain[@bK]` items -> (node, domain, current slot) triples."""
    triples: list[tuple[str, str | None, str | None]] = []
    for item in text.split():
        name, _, rest = item.partition(":")
        domain, _, current = rest.partition("@")
        triples.append((name, domain or None, current or None))
    return triples


def test_there_are_block_cases():
    assert len(CASES) >= 8


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_block_assignment(case):
    data = yaml.safe_load(case.read_text())
    slots = [f"b{i}" for i in range(data["slots"])]
    nodes = parse_nodes(data["nodes"])
    # WHEN the labeler assigns the case's nodes
    got = lab.assign_blocks(nodes, slots, data["sizes"][0])
    # THEN every node is where the case expects it
    expect = {node: slot for slot, names in data["expect"].items() for node in str(names or "").split()}
    assert {n: got.get(n, "none") for n, _, _ in nodes} == expect, data["why"]
    # AND Slurm's block placement accepts (and refuses) the case's job sizes on it
    counts = [sum(1 for s in got.values() if s == slot) for slot in slots]
    assert [n for n in data["fits"] if not fits(counts, data["sizes"], n)] == [], counts
    assert [n for n in data.get("rejects", []) if fits(counts, data["sizes"], n)] == [], counts


@pytest.mark.parametrize(("counts", "sizes", "accepted"), [
    # reproduced on slurmctld 26.05.3 (block_sizes [2, 4]): b0:2 b1:1 b2:1 refuses -N4 at submit
    ([2, 1, 1, 0], [2, 4], [1, 2, 3]),
    # one node per base block: only -N1
    ([1, 1, 1, 1], [2, 4], [1]),
    # two full base blocks that are no aligned pair refuse -N4; an over-full base block runs it
    ([2, 0, 2, 0], [2, 4], [1, 2]),
    ([4, 0, 0, 0], [2, 4], [1, 2, 3, 4]),
    # larger than the largest block size: the whole topology, at most ceil(n/4) pairs
    ([2, 2, 2, 0, 0, 0], [2, 4], [1, 2, 3, 4, 5, 6]),
    ([2, 0, 2, 0, 2, 0], [2, 4], [1, 2]),
])
def test_block_placement_model(counts, sizes, accepted):
    # GIVEN nodes per slot WHEN every job size up to the node count is tried THEN exactly these fit
    assert [n for n in range(1, sum(counts) + 1) if fits(counts, sizes, n)] == accepted


SIZES = ([1], [2], [4], [2, 4], [2, 8], [2, 4, 8], [1, 2, 4, 8], [3, 6])


@pytest.mark.parametrize("seed", range(300))
def test_nodes_arriving_in_rounds_leave_every_job_size_placeable(seed):
    # GIVEN a partition of up to 16 nodes over random uneven domains, its nodes arriving over rounds
    # of the labeler (each round sees the slots the previous ones gave)
    rng = random.Random(seed)
    sizes = rng.choice(SIZES)
    slots = [f"b{i}" for i in range(16)]
    arrivals = [f"d{d}" for d in range(rng.randint(1, 6)) for _ in range(rng.choice([1, 1, 1, 2, 3, 4, 5]))]
    rng.shuffle(arrivals)
    labels: dict[str, str] = {}
    domains = {f"n{i:02}": d for i, d in enumerate(arrivals)}
    cut = sorted(rng.sample(range(len(arrivals) + 1), k=min(3, len(arrivals) + 1)))
    for end in [*cut, len(arrivals)]:
        present = [(n, domains[n], labels.get(n)) for n in sorted(domains)[:end]]
        got = lab.assign_blocks(present, slots, sizes[0])
        # THEN no labeled node ever moves
        assert all(got[n] == s for n, s in labels.items() if n in got)
        labels.update(got)
    # AND every job size up to the node count fits Slurm's block placement
    counts = [sum(1 for s in labels.values() if s == slot) for slot in slots]
    assert [n for n in range(1, len(arrivals) + 1) if not fits(counts, sizes, n)] == [], (sizes, counts)


def test_a_layer_4_domain_label_is_accepted_on_types_labelled_with_four_layers():
    # GIVEN a block partition of p6-b200 nodes (EKS labels four network node layers) grouped by layer 4
    from slurmgen.spec import parse_text

    text = (TESTS / "cases" / "bad" / "topology_block_domain_layer_missing.yaml").read_text()
    ok = variant(text, nodeset={"instanceType": "p6-b200.48xlarge"})
    # WHEN loaded THEN it is valid, and the labeler groups by that label
    spec = parse_text("t.yaml", ok)
    assert spec.topology is not None and spec.topology.domain_label == "topology.k8s.aws/network-node-layer-4"
