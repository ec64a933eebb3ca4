"""Regenerate ``network_cards.csv`` from Karpenter's generated VPC limits table (data only).

Karpenter ships, per instance type, the network cards EC2 DescribeInstanceTypes reports
(aws/karpenter-provider-aws pkg/providers/instancetype/zz_generated.vpclimits.go, `NetworkCards`).
This script reads the card count of every multi-card type out of it and writes a csv::

    git -C karpenter-provider-aws show v1.14.1:pkg/providers/instancetype/zz_generated.vpclimits.go > vpclimits.go
    python -m slurmgen.catalog.generate_network_cards --karpenter v1.14.1 vpclimits.go \
        > slurmgen/catalog/network_cards.csv

The table lacks some types (hpc*, trn2, *.metal-*xl in v1.14.1): those get no EFA layout (efa_layout.py)
unless ``network_cards_overrides.csv`` gives their count with a citation. Karpenter stays the primary
source: the script names, on stderr, each override the new table now covers, to be dropped.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from pathlib import Path
from typing import Mapping

from .efa_layout import (NETWORK_CARDS_CSV, NETWORK_CARDS_OVERRIDES_CSV, CardOverride, card_overrides,
                         parse_network_cards)

_TYPE = re.compile(r'^\t"([a-z0-9][a-z0-9.-]*)": \{$', re.M)
_CARD = re.compile(r"^\t+NetworkCardIndex:\s+\d+,$", re.M)


def extract(text: str, name: str) -> dict[str, int]:
    """{type: network cards} for the types with more than one card."""
    starts = list(_TYPE.finditer(text))
    if "type VPCLimits struct" not in text or not starts:
        raise ValueError(f"{name}: no VPCLimits table; is it pkg/providers/instancetype/zz_generated.vpclimits.go?")
    cards: dict[str, int] = {}
    for index, start in enumerate(starts):
        end = starts[index + 1].start() if index + 1 < len(starts) else len(text)
        count = len(_CARD.findall(text[start.end():end]))
        if count > 1:
            cards[start.group(1)] = count
    return cards


def render(name: str, text: str, karpenter: str) -> str:
    cards = extract(text, name)
    header = [
        "# Network cards of multi-card EC2 types, for the EFA interface layout: GENERATED, do not edit by hand.",
        "#   generator: python -m slurmgen.catalog.generate_network_cards --karpenter VERSION FILE",
        f"#   source:    aws/karpenter-provider-aws {karpenter} pkg/providers/instancetype/zz_generated.vpclimits.go",
        f"#   sha256:    {hashlib.sha256(text.encode()).hexdigest()}  {name}",
        f"#   rows:      {len(cards)}",
        "# A type not listed has one card or is not in the source; either way it gets no layout.",
        "instance_type,network_cards",
    ]
    out = "\n".join(header + [f"{t},{n}" for t, n in sorted(cards.items())]) + "\n"
    parse_network_cards(out, NETWORK_CARDS_CSV)  # what we write, we can read
    return out


def covered_overrides(cards: Mapping[str, int], overrides: Mapping[str, CardOverride]) -> list[str]:
    """One line per override the Karpenter table now has: it no longer applies and should go."""
    return [f"{NETWORK_CARDS_OVERRIDES_CSV}: {name} is now in Karpenter's table ({cards[name]} cards, override "
            f"{o.network_cards}); drop the row" for name, o in sorted(overrides.items()) if name in cards]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--karpenter", required=True, help="the Karpenter tag the file is from, e.g. v1.14.1")
    parser.add_argument("source", type=Path, help="zz_generated.vpclimits.go")
    args = parser.parse_args(argv)
    try:
        text = args.source.read_text(encoding="utf-8")
        sys.stdout.write(render(args.source.name, text, args.karpenter))
        for line in covered_overrides(extract(text, args.source.name), card_overrides()):
            print(line, file=sys.stderr)
    except (OSError, ValueError) as err:
        print(err, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
