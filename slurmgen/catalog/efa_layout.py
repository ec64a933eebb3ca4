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
(generate_network_cards.py). Two shapes are known: every card supports EFA (cards == EfaInfo
maximum, e.g. p5.48xlarge 32/32), or card 0 is ENA-only and the others are EFA-capable
(p6-b300.48xlarge 17 cards / 16 EFA, per AWS in aws/aws-parallelcluster#7143). Any other shape, or
a type whose card count we do not know, gets no layout: Karpenter's own per-type full-EFA ENIs stay.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from typing import Iterable, Mapping

from .catalog import InstanceType

NETWORK_CARDS_CSV = "network_cards.csv"
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


@functools.lru_cache(maxsize=1)
def network_cards() -> Mapping[str, int]:
    """The packaged card counts of multi-card types (a type not listed: one card, or not known)."""
    text = resources.files(__package__).joinpath(NETWORK_CARDS_CSV).read_text(encoding="utf-8")
    return parse_network_cards(text, NETWORK_CARDS_CSV)


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
