"""EFA network interface layout for an EC2NodeClass (`spec.networkInterfaces`, Karpenter v1.11+).

Without a layout, a pod asking for `vpc.amazonaws.com/efa` makes Karpenter v1.14.1 attach one full
`efa` ENI per EFA (pkg/providers/launchtemplate/launchtemplate.go generateNetworkInterfaces: card i,
device 0 or 1, interfaceType efa). Each takes a private IP (and prefixes) from the subnet: 32 per
p5.48xlarge node. With a layout Karpenter launches exactly the listed interfaces, whatever the pods
ask (same function; pkg/providers/instance/instance.go getEFACountForInstance), and the node
advertises as many `vpc.amazonaws.com/efa` as the layout has `efa-only` entries
(pkg/providers/instancetype/types.go efas). The CRD enum has only `interface` and `efa-only`, and a
CEL rule demands an `interface` at card 0 device 0 (pkg/apis/v1/ec2nodeclass.go NetworkInterfaces),
so the primary ENI is plain ENA and every EFA is an `efa-only` (no IP), as AWS now recommends
(EC2 user guide, efa-acc-inst-types: ENA primary; efa-only on card 0 device 1 if card 0 supports
EFA; efa-only on device 0 of each other card).

A layout is only worth it on a multi-card type: on a single-card type the full EFA is the primary
ENI itself (no extra IP), while a layout would add an efa-only ENI on card 0 and cost an ENI slot
(Karpenter subtracts efa-only ENIs on card 0 from max pods, types.go ENILimitedPods).

Which cards support EFA is not in our catalog; `network_cards.csv` holds the card count per type
(generate_network_cards.py, from Karpenter's own table), and `network_cards_overrides.csv` the few
multi-card types that table lacks, each row citing its source (trn2.48xlarge: 16 cards, per the
Amazon VPC CNI's DescribeInstanceTypes table; Karpenter v1.14.1 has no trn2 row, so without it the
type got Karpenter's default full-EFA ENIs, each taking subnet IPs). Two shapes are known: every card supports EFA (cards == EfaInfo
maximum, e.g. p5.48xlarge 32/32), or card 0 is ENA-only and the others are EFA-capable
(p6-b300.48xlarge 17 cards / 16 EFA, per AWS in aws/aws-parallelcluster#7143). Any other shape, or
a type whose card count we do not know, gets no layout: Karpenter's own per-type full-EFA ENIs stay.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from importlib import resources
from typing import Iterable, Mapping

from .catalog import InstanceType

NETWORK_CARDS_CSV = "network_cards.csv"
NETWORK_CARDS_OVERRIDES_CSV = "network_cards_overrides.csv"
INTERFACE = "interface"
EFA_ONLY = "efa-only"


@dataclass(frozen=True)
class NetworkInterface:
    """One `spec.networkInterfaces` entry of an EC2NodeClass."""

    card: int
    device: int
    interface_type: str

    def as_dict(self) -> dict[str, object]:
        return {"networkCardIndex": self.card, "deviceIndex": self.device, "interfaceType": self.interface_type}


Layout = tuple[NetworkInterface, ...]


def parse_network_cards(text: str, origin: str) -> dict[str, int]:
    """{instance type: network cards} from the generated csv (comment lines start with #)."""
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    if not lines or lines[0] != "instance_type,network_cards":
        raise ValueError(f"{origin}: expected the header 'instance_type,network_cards'")
    cards: dict[str, int] = {}
    for line in lines[1:]:
        name, _, count = line.partition(",")
        if not name or not count.isdigit() or int(count) < 1:
            raise ValueError(f"{origin}: bad row {line!r}")
        cards[name] = int(count)
    return cards


@dataclass(frozen=True)
class CardOverride:
    """A card count from outside Karpenter's table, with where it comes from."""

    network_cards: int
    source: str


def parse_overrides(text: str, origin: str) -> dict[str, CardOverride]:
    """{instance type: override} from the hand-kept csv; every row must cite its source."""
    rows = list(csv.reader(line for line in text.splitlines() if line and not line.startswith("#")))
    if not rows or rows[0] != ["instance_type", "network_cards", "source"]:
        raise ValueError(f"{origin}: expected the header 'instance_type,network_cards,source'")
    found: dict[str, CardOverride] = {}
    for row in rows[1:]:
        if len(row) != 3 or not row[0] or not row[1].isdigit() or int(row[1]) < 2 or not row[2].strip():
            raise ValueError(f"{origin}: bad row {','.join(row)!r}: instance type, cards (2 or more), source")
        if row[0] in found:
            raise ValueError(f"{origin}: {row[0]} is listed twice")
        found[row[0]] = CardOverride(int(row[1]), row[2].strip())
    return found


def _packaged(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=1)
def card_overrides() -> Mapping[str, CardOverride]:
    """The packaged overrides: types Karpenter's table lacks, each with its citation."""
    return parse_overrides(_packaged(NETWORK_CARDS_OVERRIDES_CSV), NETWORK_CARDS_OVERRIDES_CSV)


@functools.lru_cache(maxsize=1)
def network_cards() -> Mapping[str, int]:
    """Card counts of multi-card types (a type not listed: one card, or not known): Karpenter's table,
    then an override for a type it lacks (Karpenter wins where both have one)."""
    cards = parse_network_cards(_packaged(NETWORK_CARDS_CSV), NETWORK_CARDS_CSV)
    extra = {name: o.network_cards for name, o in card_overrides().items() if name not in cards}
    return {**cards, **extra}


def efa_layout(it: InstanceType, cards: Mapping[str, int] | None = None) -> Layout | None:
    """The layout giving `it` all its EFAs as efa-only interfaces, or None (keep Karpenter's default)."""
    count = (cards if cards is not None else network_cards()).get(it.instance_type)
    efa = it.efa_max
    if efa < 2 or count is None:
        return None
    primary = NetworkInterface(0, 0, INTERFACE)
    if count == efa:  # every card supports EFA: card 0 takes its efa-only beside the primary
        first = [NetworkInterface(0, 1, EFA_ONLY)]
        others = range(1, efa)
    elif count == efa + 1:  # card 0 is ENA-only (p6-b300): the EFAs are on cards 1..efa
        first = []
        others = range(1, efa + 1)
    else:
        return None
    return (primary, *first, *(NetworkInterface(card, 0, EFA_ONLY) for card in others))


def nodeset_efa_layout(types: Iterable[InstanceType], efa_request: int,
                       cards: Mapping[str, int] | None = None) -> Layout | None:
    """One layout for a NodeClass every type shares, or None when any type would not get the same one.

    A NodeClass has one `networkInterfaces` list for all the types of its NodePool; a layout fitting
    one type can name a card another lacks (Karpenter then drops that type: compatibility.go
    networkInterfaceCompatibility) or give it fewer EFAs than the slurmd pod asks. So the layout is
    only rendered when every type derives the same one and it advertises exactly `efa_request`.
    """
    if efa_request < 1:
        return None
    layouts = {efa_layout(it, cards) for it in types}
    if len(layouts) != 1:
        return None
    [layout] = layouts
    if layout is None or sum(ni.interface_type == EFA_ONLY for ni in layout) != efa_request:
        return None
    return layout
