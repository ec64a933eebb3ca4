"""Regenerate ``prices.csv`` from Karpenter's generated on-demand price tables (data only).

Karpenter ships, as a fallback for before its pricing API call answers, the on-demand Linux prices
it last fetched from the AWS Price List API (tenancy Shared, capacitystatus Used, no pre-installed
software; aws/karpenter-provider-aws pkg/providers/pricing/pricing.go at v1.14.1). Those tables are
public and dated; this script reads the numbers out of them and writes a csv, nothing else::

    git -C karpenter-provider-aws show v1.14.1:pkg/providers/pricing/zz_generated.pricing_aws.go > aws.go
    git -C karpenter-provider-aws show v1.14.1:pkg/providers/pricing/zz_generated.pricing_aws_us_gov.go > gov.go
    python -m slurmgen.catalog.generate_prices --karpenter v1.14.1 aws.go gov.go > slurmgen/catalog/prices.csv

The China table (zz_generated.pricing_aws_cn.go) is in CNY and refused: every figure here is USD.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from pathlib import Path

from .pricing import COLUMNS, DEFAULT_CSV_NAME, parse_prices

_GENERATED = re.compile(r"^// generated at (\S+) for ", re.M)
_VAR = re.compile(r"^var (InitialOnDemandPrices\w*) = ", re.M)
_REGION = re.compile(r'^\t"([a-z0-9-]+)": \{$', re.M)
_PAIR = re.compile(r'"([a-z0-9][a-z0-9.-]*)":\s*([0-9]+\.[0-9]+)')


class SourceError(ValueError):
    """The file is not one of Karpenter's generated price tables, or holds non-USD prices."""


def extract(text: str, name: str) -> tuple[str, dict[tuple[str, str], str]]:
    """(generation date, {(region, type): price}) of one generated Go file."""
    when, var = _GENERATED.search(text), _VAR.search(text)
    if not when or not var:
        raise SourceError(f"{name}: no '// generated at' line or InitialOnDemandPrices table; is it "
                          "pkg/providers/pricing/zz_generated.pricing_aws*.go?")
    if var.group(1).endswith("CN"):
        raise SourceError(f"{name}: the China table is in CNY; prices.csv holds USD only")
    rows: dict[tuple[str, str], str] = {}
    starts = list(_REGION.finditer(text))
    if not starts:
        raise SourceError(f"{name}: no region block found")
    for index, start in enumerate(starts):
        end = starts[index + 1].start() if index + 1 < len(starts) else len(text)
        for itype, price in _PAIR.findall(text[start.end():end]):
            rows[(start.group(1), itype)] = f"{float(price):.6f}".rstrip("0").rstrip(".")
    return when.group(1)[:10], rows


def render(sources: list[tuple[str, str]], karpenter: str) -> str:
    """The csv text for (file name, text) sources, with a header a reviewer can trace."""
    rows: dict[tuple[str, str], str] = {}
    dates: list[str] = []
    digests: list[str] = []
    for name, text in sources:
        date, found = extract(text, name)
        dates.append(f"{name} {date}")
        digests.append(f"#   sha256:    {hashlib.sha256(text.encode()).hexdigest()}  {name}")
        rows |= found
    regions = sorted({region for region, _ in rows})
    newest = max(d.rsplit(" ", 1)[1] for d in dates)
    header = [
        "# On-demand EC2 prices for slurmgen's PR summary: GENERATED, do not edit by hand.",
        "#   generator: python -m slurmgen.catalog.generate_prices --karpenter VERSION FILE...",
        f"#   source:    aws/karpenter-provider-aws {karpenter} pkg/providers/pricing/zz_generated.pricing_aws*.go",
        f"#   generated: {'; '.join(dates)} (by Karpenter, from the AWS Price List API)",
        *digests,
        f"#   regions:   {', '.join(regions)}",
        f"#   rows:      {len(rows)}",
        f"#   summary:   Karpenter {karpenter} on-demand list prices ({newest})",
        "# What a price is: USD per hour, on-demand, Linux, shared tenancy (bare metal: dedicated), no",
        "# pre-installed software. Not included: EBS, data transfer, FSx, the EKS fee, Savings Plans or",
        "# discounts. Other regions and corrections: clusters/prices.csv beside the specs (same header).",
        ",".join(COLUMNS),
    ]
    body = [f"{region},{itype},{price}" for (region, itype), price in sorted(rows.items())]
    text = "\n".join(header + body) + "\n"
    parse_prices(text, DEFAULT_CSV_NAME)  # what we write, we can read
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--karpenter", required=True, help="the Karpenter tag the files are from, e.g. v1.14.1")
    parser.add_argument("sources", nargs="+", type=Path, help="zz_generated.pricing_aws*.go files")
    args = parser.parse_args(argv)
    try:
        sys.stdout.write(render([(p.name, p.read_text(encoding="utf-8")) for p in args.sources], args.karpenter))
    except (OSError, SourceError) as err:
        print(err, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
