"""EFA interfaces as `efa-only` on EC2NodeClass.spec.networkInterfaces (slurmgen/catalog/efa_layout.py).

The spec is tests/data/efa/layouts.yaml; the facts each case rests on are in its comment.
"""

from __future__ import annotations

from collections import Counter
from importlib import resources
from typing import Any

import pytest

from slurmgen.synth.build import render
from slurmgen.catalog.catalog import load_catalog
from slurmgen.catalog.efa_layout import (NETWORK_CARDS_CSV, CardOverride, card_overrides, efa_layout, network_cards,
                                         nodeset_efa_layout, parse_network_cards, parse_overrides)
from slurmgen.catalog.generate_network_cards import covered_overrides, extract
from slurmgen.spec import parse_text
from slurmgen.verify.schemas import Validator
from tests.conftest import TESTS

SPEC = TESTS / "data" / "efa" / "layouts.yaml"
EFA = "vpc.amazonaws.com/efa"


@pytest.fixture(scope="module")
def cluster():
    [rendered] = render([parse_text(str(SPEC), SPEC.read_text())])
    return rendered


def node_class(cluster, nodeset: str) -> dict[str, Any]:
    return cluster.files[f"compute/ec2nodeclass-t-{nodeset}.yaml"]


def interfaces(cluster, nodeset: str) -> list[tuple[int, int, str]] | None:
    found = node_class(cluster, nodeset)["spec"].get("networkInterfaces")
    if found is None:
        return None
    return [(ni["networkCardIndex"], ni["deviceIndex"], ni["interfaceType"]) for ni in found]


def slurmd_efa(cluster, nodeset: str) -> int:
    return int(cluster.files[f"slurm/nodeset-slurm-worker-{nodeset}.yaml"]["spec"]["slurmd"]["resources"]["limits"][EFA])


def test_p5_gets_an_ena_primary_and_one_efa_only_per_card(cluster):
    # GIVEN p5.48xlarge (32 network cards, all EFA-capable) with efa: true
    # WHEN rendered
    layout = interfaces(cluster, "p5")
    # THEN the primary is plain ENA at card 0 device 0, card 0 has an efa-only at device 1,
    # and every other card an efa-only at device 0
    assert layout == [(0, 0, "interface"), (0, 1, "efa-only")] + [(card, 0, "efa-only") for card in range(1, 32)]
    # AND the node advertises (one per efa-only, Karpenter types.go efas) what slurmd asks for
    assert sum(t == "efa-only" for _, _, t in layout) == slurmd_efa(cluster, "p5") == 32


def test_p6_b300_keeps_card_0_ena_only(cluster):
    # GIVEN p6-b300.48xlarge: 17 cards, card 0 supports ENA only, 16 EFA
    layout = interfaces(cluster, "b300")
    # THEN no efa-only on card 0; one on each of cards 1..16
    assert layout == [(0, 0, "interface")] + [(card, 0, "efa-only") for card in range(1, 17)]
    assert slurmd_efa(cluster, "b300") == 16


@pytest.mark.parametrize("nodeset, cards", [("trn2", 16), ("trn1", 8), ("trn1n", 16)])
def test_trainium_gets_an_ena_primary_and_one_efa_only_per_card(cluster, nodeset, cards):
    # GIVEN a Trainium type with as many network cards as EFA (trn2.48xlarge: 16 cards from the cited
    # override row, since Karpenter v1.14.1's table lacks it; trn1/trn1n from Karpenter's table)
    layout = interfaces(cluster, nodeset)
    # THEN the same layout as p5: ENA primary, efa-only beside it on card 0, one per other card,
    # so no EFA takes a subnet IP (without it Karpenter attaches one full `efa` ENI per card)
    assert layout == [(0, 0, "interface"), (0, 1, "efa-only")] + [(card, 0, "efa-only") for card in range(1, cards)]
    assert sum(t == "efa-only" for _, _, t in layout) == slurmd_efa(cluster, nodeset) == cards


def test_overrides_cite_a_source_and_never_shadow_karpenter():
    # GIVEN the hand-kept card counts beside the generated Karpenter table
    text = resources.files("slurmgen.catalog").joinpath(NETWORK_CARDS_CSV).read_text(encoding="utf-8")
    karpenter = parse_network_cards(text, NETWORK_CARDS_CSV)
    overrides = card_overrides()
    # THEN trn2.48xlarge is there with the VPC CNI table's 16 cards and its citation
    assert overrides["trn2.48xlarge"].network_cards == 16
    assert "vpc-cni-v1.23.0" in overrides["trn2.48xlarge"].source
    # AND no row names a type Karpenter's table has (Karpenter is the primary source: such a row is stale)
    assert sorted(set(overrides) & set(karpenter)) == []
    assert all(o.source for o in overrides.values())
    # AND the merged table carries both
    assert network_cards()["trn2.48xlarge"] == 16 and network_cards()["trn1n.32xlarge"] == 16


@pytest.mark.parametrize("text, error", [
    ("instance_type,network_cards\nx,2\n", "expected the header"),
    ("instance_type,network_cards,source\nx,2,\n", "bad row"),
    ("instance_type,network_cards,source\nx,1,somewhere\n", "bad row"),
    ("instance_type,network_cards,source\nx,2,a\nx,3,b\n", "listed twice"),
])
def test_an_override_without_a_source_or_with_a_bad_count_is_refused(text, error):
    with pytest.raises(ValueError, match=error):
        parse_overrides(text, "o.csv")


def test_the_generator_names_overrides_karpenter_now_covers():
    overrides = {"trn2.48xlarge": CardOverride(16, "s"), "x.big": CardOverride(4, "s")}
    assert covered_overrides({"trn2.48xlarge": 16}, overrides) == [
        "network_cards_overrides.csv: trn2.48xlarge is now in Karpenter's table (16 cards, override 16); drop the row"]


@pytest.mark.parametrize("nodeset, why", [
    ("one", "single card: the full EFA is the primary ENI already; a layout would only cost a card-0 ENI slot"),
    ("noefa", "EFA not asked: a layout would attach EFAs to every node whatever the pods request"),
    ("unknown", "c8gn.metal-48xl's cards are not in network_cards.csv: one NodeClass cannot be proven right for both"),
])
def test_no_layout_where_it_cannot_be_proven_or_does_not_help(cluster, nodeset, why):
    # THEN Karpenter's default stays (full EFA ENIs per type, when the pod asks)
    assert interfaces(cluster, nodeset) is None, why


def test_types_sharing_one_layout_share_it(cluster):
    # GIVEN c6in.32xlarge and c6in.metal, 2 cards and 2 EFA each
    assert interfaces(cluster, "same") == [(0, 0, "interface"), (0, 1, "efa-only"), (1, 0, "efa-only")]
    assert slurmd_efa(cluster, "same") == 2


def test_rendered_layouts_pass_the_vendored_crd_schema_and_its_cel_rules(cluster):
    validator = Validator.create()
    checked = 0
    for nodeset in ("p5", "b300", "same", "trn2"):
        obj = node_class(cluster, nodeset)
        # THEN the vendored EC2NodeClass schema (Karpenter v1.14.1) accepts it
        assert validator.validate(obj) == [], nodeset
        layout = interfaces(cluster, nodeset)
        assert layout
        # AND the two CEL rules (pkg/apis/v1/ec2nodeclass.go NetworkInterfaces), which the schema
        # check cannot evaluate, hold: an `interface` at card 0 device 0; unique (card, device)
        # pairs; at most one efa-only per card
        assert (0, 0, "interface") in layout
        assert len({(c, d) for c, d, _ in layout}) == len(layout)
        assert max(Counter(c for c, _, t in layout if t == "efa-only").values()) == 1
        checked += 1
    assert checked == 4


def test_the_schema_check_does_see_the_field(cluster):
    # GIVEN a layout with a full `efa` interface, which the CRD enum (interface, efa-only) forbids
    obj = node_class(cluster, "p5")
    bad = {**obj, "spec": {**obj["spec"], "networkInterfaces": [
        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "efa"}]}}
    # THEN validation reports it, so the passing check above is not vacuous
    problems = [str(p) for p in Validator.create().validate(bad)]
    assert len(problems) == 1 and "networkInterfaces" in problems[0]


def test_a_card_count_of_no_known_shape_gets_no_layout():
    # GIVEN an EFA type with more cards than EFA + 1 (which card lacks EFA is then unknown)
    p5 = load_catalog()["p5.48xlarge"]
    # THEN no layout; with the true count the layout is there
    assert efa_layout(p5, {"p5.48xlarge": 34}) is None
    assert efa_layout(p5, {"p5.48xlarge": 32}) is not None
    # AND a layout advertising fewer EFAs than the pod requests is not rendered
    assert nodeset_efa_layout([p5], 31, {"p5.48xlarge": 32}) is None
    assert nodeset_efa_layout([p5], 32, {"p5.48xlarge": 32}) is not None


def test_packaged_card_counts_come_from_karpenter_v1_14_1():
    cards = network_cards()
    assert cards["p5.48xlarge"] == 32 and cards["p6-b300.48xlarge"] == 17 and cards["p4d.24xlarge"] == 4
    assert "c5n.18xlarge" not in cards  # one card: not listed


def test_generator_counts_the_cards_of_multi_card_types_only():
    # GIVEN a two-type excerpt in the shape of zz_generated.vpclimits.go
    text = (
        "type VPCLimits struct {\n}\n"
        "var Limits = map[string]*VPCLimits{\n"
        '\t"a.big": {\n\t\tDefaultNetworkCardIndex: 0,\n\t\tNetworkCards: []NetworkCard{\n'
        "\t\t\t{\n\t\t\t\tMaximumNetworkInterfaces: 2,\n\t\t\t\tNetworkCardIndex:         0,\n\t\t\t},\n"
        "\t\t\t{\n\t\t\t\tMaximumNetworkInterfaces: 2,\n\t\t\t\tNetworkCardIndex:         1,\n\t\t\t},\n"
        "\t\t},\n\t},\n"
        '\t"a.small": {\n\t\tDefaultNetworkCardIndex: 0,\n\t\tNetworkCards: []NetworkCard{\n'
        "\t\t\t{\n\t\t\t\tMaximumNetworkInterfaces: 3,\n\t\t\t\tNetworkCardIndex:         0,\n\t\t\t},\n"
        "\t\t},\n\t},\n}\n"
    )
    # THEN the two-card type is counted (DefaultNetworkCardIndex is not a card) and the one-card type left out
    assert extract(text, "vpclimits.go") == {"a.big": 2}
