"""Regenerate ``prices.csv`` from pinned public price tables, or a site's from the AWS Price List API.

Every source is data a reviewer can fetch again and compare; this script reads the numbers out of it
and writes a csv, nothing else. Sources, in order of precedence (a later one only fills what an
earlier one lacks; where both have a row, the header counts how many agree):

* Karpenter's generated on-demand tables, the Linux prices it last fetched from the AWS Price List API
  (tenancy Shared, capacitystatus Used, no pre-installed software; bare metal: Dedicated;
  aws/karpenter-provider-aws pkg/providers/pricing/pricing.go at v1.14.1). us-east-1 and GovCloud::

    git -C karpenter-provider-aws show v1.14.1:pkg/providers/pricing/zz_generated.pricing_aws.go > aws.go
    git -C karpenter-provider-aws show v1.14.1:pkg/providers/pricing/zz_generated.pricing_aws_us_gov.go > gov.go

  The China table (zz_generated.pricing_aws_cn.go) is in CNY and refused: every figure here is USD.
* The SkyPilot catalog (skypilot-org/skypilot-catalog, ``catalogs/v7/aws/vms.csv`` at one commit):
  column Price per instance type, region and zone, from the AWS Price List bulk file of each region
  (OnDemand, Linux, no pre-installed software, CapacityStatus Used, tenancy Shared or Host;
  skypilot-org/skypilot sky/catalog/data_fetchers/fetch_aws.py). The file, or an excerpt of its lines
  with the columns InstanceType,Price,Region (others ignored; ``#`` lines skipped), is read; zones of
  one region must agree. Only the ``--types`` (default: every type in instances.csv) are kept.
* ``--price-list-api REGION,...``: the AWS Price List API itself (boto3, with the caller's
  credentials; boto3 is not a dependency of slurmgen: install it where this runs), with the filters
  Karpenter uses. For a platform team's CI, into the site table beside the specs::

    python -m slurmgen.catalog.generate_prices --price-list-api us-west-2,eu-west-1 > clusters/prices.csv

The packaged table::

    python -m slurmgen.catalog.generate_prices --karpenter v1.14.1 aws.go gov.go \\
        --skypilot-catalog 001367d22a0033fac286a8c71aeac7109e431bcb \\
        --skypilot-file slurmgen/catalog/sources/skypilot-aws-vms-001367d.csv > slurmgen/catalog/prices.csv
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .pricing import COLUMNS, DEFAULT_CSV_NAME, SOURCE_COLUMN, parse_prices

_GENERATED = re.compile(r"^// generated at (\S+) for ", re.M)
_VAR = re.compile(r"^var (InitialOnDemandPrices\w*) = ", re.M)
_REGION = re.compile(r'^\t"([a-z0-9-]+)": \{$', re.M)
_PAIR = re.compile(r'"([a-z0-9][a-z0-9.-]*)":\s*([0-9]+\.[0-9]+)')
_NUMBER = re.compile(r"^[0-9]+(\.[0-9]+)?$")
_COMMERCIAL = re.compile(r"^(?!us-gov-|cn-|us-iso)[a-z]{2}(-[a-z]+)+-[0-9]+$")


class SourceError(ValueError):
    """An input is not the table it claims to be, holds non-USD prices, or contradicts itself."""


@dataclass
class Source:
    """One table's rows and what a reviewer needs to find it again (shown in the csv header)."""

    key: str  # the csv's source cell, e.g. "karpenter"
    label: str  # shown beside every cost it prices, e.g. "Karpenter v1.14.1 on-demand list prices (2026-07-06)"
    notes: list[str]  # provenance lines for the header
    rows: dict[tuple[str, str], str] = field(default_factory=dict)  # (region, type) -> price text


def _price_text(raw: str) -> str:
    return f"{float(raw):.6f}".rstrip("0").rstrip(".")


def _digest(name: str, text: str) -> str:
    return f"sha256 {hashlib.sha256(text.encode()).hexdigest()}  {name}"


def extract(text: str, name: str) -> tuple[str, dict[tuple[str, str], str]]:
    """(generation date, {(region, type): price}) of one of Karpenter's generated Go files."""
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
            rows[(start.group(1), itype)] = _price_text(price)
    return when.group(1)[:10], rows


def karpenter_source(files: list[tuple[str, str]], version: str) -> Source:
    """Karpenter's generated tables (name, text) at tag `version`."""
    rows: dict[tuple[str, str], str] = {}
    dates: list[str] = []
    for name, text in files:
        date, found = extract(text, name)
        dates.append(f"{name} {date}")
        rows |= found
    newest = max(d.rsplit(" ", 1)[1] for d in dates)
    return Source("karpenter", f"Karpenter {version} on-demand list prices ({newest})", [
        f"aws/karpenter-provider-aws {version} pkg/providers/pricing/zz_generated.pricing_aws*.go",
        f"generated: {'; '.join(dates)} (by Karpenter, from the AWS Price List API)",
        *[_digest(name, text) for name, text in files]], rows)


def skypilot_source(name: str, text: str, commit: str, types: Iterable[str]) -> Source:
    """Rows of a SkyPilot catalog vms.csv (or an excerpt of it) for `types` in commercial regions."""
    if not re.fullmatch(r"[0-9a-f]{40}", commit):
        raise SourceError(f"--skypilot-catalog: give the full 40-hex commit the file is from, got {commit!r}")
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    header = lines[0].split(",") if lines else []
    if not {"InstanceType", "Price", "Region"} <= set(header):
        raise SourceError(f"{name}: no InstanceType, Price and Region columns; is it catalogs/v7/aws/vms.csv?")
    at = {column: header.index(column) for column in ("InstanceType", "Price", "Region")}
    wanted = set(types)
    rows: dict[tuple[str, str], str] = {}
    for lineno, line in enumerate(lines[1:], start=2):
        cells = _csv_cells(line)
        itype, price, region = (cells[at[c]] if at[c] < len(cells) else "" for c in ("InstanceType", "Price", "Region"))
        if itype not in wanted or not _COMMERCIAL.match(region) or not _NUMBER.match(price) or float(price) <= 0:
            continue
        key, value = (region, itype), _price_text(price)
        if rows.get(key, value) != value:
            raise SourceError(f"{name}: data line {lineno}: {itype} in {region} costs {value}, another zone "
                              f"{rows[key]}; an on-demand list price is per region")
        rows[key] = value
    return Source("skypilot", f"SkyPilot catalog {commit[:7]} (AWS Price List, undated)", [
        f"skypilot-org/skypilot-catalog@{commit} catalogs/v7/aws/vms.csv, column Price",
        "(per region and zone; written by skypilot-org/skypilot sky/catalog/data_fetchers/fetch_aws.py from "
        "each region's AWS Price List file; the file carries no date)",
        _digest(name, text)], rows)


def _csv_cells(line: str) -> list[str]:
    """Cells of one vms.csv line: its GpuInfo cell is quoted and holds commas."""
    cells, cell, quoted = [], "", False
    for char in line:
        if char == '"':
            quoted = not quoted
        elif char == "," and not quoted:
            cells.append(cell)
            cell = ""
        else:
            cell += char
    return [*cells, cell]


class PricingClient(Protocol):
    """What this script uses of boto3's "pricing" client (a test passes a fake)."""

    def get_paginator(self, operation_name: str) -> Any: ...


# aws/karpenter-provider-aws pkg/providers/pricing/pricing.go at v1.14.1: the same filters, shared
# tenancy for virtual types, Dedicated for "Compute Instance (bare metal)".
_FILTERS = (("serviceCode", "AmazonEC2"), ("preInstalledSw", "NA"), ("operatingSystem", "Linux"),
            ("capacitystatus", "Used"), ("marketoption", "OnDemand"))
_FAMILIES = (("Shared", "Compute Instance"), ("Dedicated", "Compute Instance (bare metal)"))


def price_list_rows(client: PricingClient, region: str, types: Iterable[str]) -> dict[tuple[str, str], str]:
    """On-demand USD/h per type in `region` from the Price List API's GetProducts pages."""
    wanted, rows = set(types), {}
    for tenancy, family in _FAMILIES:
        filters = [{"Type": "TERM_MATCH", "Field": f, "Value": v}
                   for f, v in (("regionCode", region), *_FILTERS, ("tenancy", tenancy), ("productFamily", family))]
        pages = client.get_paginator("get_products").paginate(ServiceCode="AmazonEC2", Filters=filters)
        for page in pages:
            for item in page.get("PriceList", []):
                itype, usd = _on_demand_usd(json.loads(item) if isinstance(item, str) else item)
                if itype in wanted and usd is not None and float(usd) > 0:
                    rows[(region, itype)] = _price_text(usd)
    return rows


def _on_demand_usd(product: Mapping[str, Any]) -> tuple[str, str | None]:
    """(instance type, the one on-demand USD price) of one PriceList entry."""
    itype = str(product.get("product", {}).get("attributes", {}).get("instanceType", ""))
    for term in product.get("terms", {}).get("OnDemand", {}).values():
        for dimension in term.get("priceDimensions", {}).values():
            usd = dimension.get("pricePerUnit", {}).get("USD")
            if usd is not None and _NUMBER.match(str(usd)):
                return itype, str(usd)
    return itype, None


def price_list_source(client: PricingClient, regions: list[str], types: Iterable[str],
                      today: datetime.date) -> Source:
    """The Price List API's on-demand prices for `regions`, fetched `today`."""
    wanted = list(types)
    rows: dict[tuple[str, str], str] = {}
    for region in regions:
        found = price_list_rows(client, region, wanted)
        if not found:
            raise SourceError(f"--price-list-api: no on-demand Linux price for any catalog type in {region}; "
                              "is the region name right and the pricing:GetProducts permission granted?")
        rows |= found
    return Source("price-list-api", f"AWS Price List API ({today.isoformat()})", [
        f"pricing:GetProducts, AmazonEC2, regions {', '.join(regions)}, fetched {today.isoformat()}",
        "filters as aws/karpenter-provider-aws pkg/providers/pricing/pricing.go v1.14.1"], rows)


def merge(sources: list[Source]) -> tuple[dict[tuple[str, str], tuple[str, str]], list[str]]:
    """(region, type) -> (price, source key), earlier sources first; and one line per later source on
    the rows it shares with earlier ones (a disagreement is shown, never resolved silently)."""
    rows: dict[tuple[str, str], tuple[str, str]] = {}
    checks: list[str] = []
    for source in sources:
        shared = sorted(key for key in source.rows if key in rows)
        differ = [f"{r},{t} {rows[(r, t)][0]} vs {source.rows[(r, t)]}" for r, t in shared
                  if float(rows[(r, t)][0]) != float(source.rows[(r, t)])]
        if shared:
            checks.append(f"{source.key}: {len(shared)} row(s) also in an earlier source, {len(differ)} differ"
                          + (f" (kept the earlier: {'; '.join(differ[:5])})" if differ else ""))
        for key, price in source.rows.items():
            rows.setdefault(key, (price, source.key))
    return rows, checks


def render_sources(sources: list[Source], command: str) -> str:
    """The csv text, with a header that names every source, its label and how to fetch it again."""
    if not sources:
        raise SourceError("no source given: --karpenter FILES, --skypilot-file or --price-list-api")
    rows, checks = merge(sources)
    used = [s for s in sources if any(key == s.key for _, key in rows.values())]
    header = ["# On-demand EC2 prices for slurmgen's PR summary: GENERATED, do not edit by hand.",
              f"#   generator: {command}"]
    for source in used:
        header += [f"#   source {source.key}: {source.label}", *[f"#     {note}" for note in source.notes]]
    header += [f"#   cross-check: {line}" for line in checks]
    header += [
        f"#   regions:   {', '.join(sorted({region for region, _ in rows}))}",
        f"#   rows:      {len(rows)}",
        f"#   summary:   {' + '.join(s.label for s in used)}",
        "# What a price is: USD per hour, on-demand, Linux, shared tenancy (bare metal: dedicated), no",
        "# pre-installed software. Not included: EBS, data transfer, FSx, the EKS fee, Savings Plans or",
        "# discounts. Other regions and corrections: clusters/prices.csv beside the specs (same header).",
        ",".join((*COLUMNS, SOURCE_COLUMN)),
    ]
    body = [f"{region},{itype},{price},{key}" for (region, itype), (price, key) in sorted(rows.items())]
    text = "\n".join(header + body) + "\n"
    parse_prices(text, DEFAULT_CSV_NAME)  # what we write, we can read
    return text


def render(sources: list[tuple[str, str]], karpenter: str) -> str:
    """The csv of Karpenter's generated Go files (name, text) alone."""
    command = "python -m slurmgen.catalog.generate_prices --karpenter VERSION FILE..."
    return render_sources([karpenter_source(sources, karpenter)], command)


def catalog_types() -> list[str]:
    """Every instance type of the packaged catalog: the only ones a spec can name without a site csv."""
    from .catalog import load_catalog

    return sorted(load_catalog())


def _boto3_pricing_client() -> PricingClient:  # pragma: no cover - needs boto3 and credentials
    try:
        import boto3  # type: ignore[import-not-found]
    except ImportError as err:
        raise SourceError("--price-list-api needs boto3 (pip install boto3) and AWS credentials allowed "
                          "pricing:GetProducts; slurmgen itself never imports it") from err
    client: PricingClient = boto3.client("pricing", region_name="us-east-1")
    return client


def main(argv: list[str] | None = None, client: PricingClient | None = None,
         today: datetime.date | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--karpenter", help="the Karpenter tag the Go files are from, e.g. v1.14.1")
    parser.add_argument("sources", nargs="*", type=Path, help="zz_generated.pricing_aws*.go files")
    parser.add_argument("--skypilot-catalog", metavar="COMMIT", help="the skypilot-catalog commit of --skypilot-file")
    parser.add_argument("--skypilot-file", type=Path, help="catalogs/v7/aws/vms.csv at that commit, or an excerpt")
    parser.add_argument("--price-list-api", metavar="REGION,...", help="query the AWS Price List API (boto3)")
    parser.add_argument("--types", help="comma-separated instance types (default: every type in instances.csv)")
    args = parser.parse_args(argv)
    try:
        sources = _sources(args, client, today or datetime.date.today())
        sys.stdout.write(render_sources(sources, _command(argv if argv is not None else sys.argv[1:])))
    except (OSError, SourceError) as err:
        print(err, file=sys.stderr)
        return 2
    return 0


def _sources(args: argparse.Namespace, client: PricingClient | None, today: datetime.date) -> list[Source]:
    types = [t.strip() for t in args.types.split(",") if t.strip()] if args.types else catalog_types()
    sources: list[Source] = []
    if args.sources or args.karpenter:
        if not (args.sources and args.karpenter):
            raise SourceError("--karpenter VERSION and the zz_generated.pricing_aws*.go files go together")
        sources.append(karpenter_source([(p.name, p.read_text(encoding="utf-8")) for p in args.sources],
                                        args.karpenter))
    if args.skypilot_file or args.skypilot_catalog:
        if not (args.skypilot_file and args.skypilot_catalog):
            raise SourceError("--skypilot-catalog COMMIT and --skypilot-file FILE go together")
        text = args.skypilot_file.read_text(encoding="utf-8")
        sources.append(skypilot_source(args.skypilot_file.name, text, args.skypilot_catalog, types))
    if args.price_list_api:
        regions = [r.strip() for r in args.price_list_api.split(",") if r.strip()]
        api = price_list_source(client or _boto3_pricing_client(), regions, types, today)
        sources.insert(0, api)  # fresh prices from the site's own account win
    return sources


def _command(argv: list[str]) -> str:
    """The command line as given, with file paths reduced to their names (stable across machines)."""
    shown = [Path(a).name if "/" in a and not a.startswith("-") else a for a in argv]
    return " ".join(["python -m slurmgen.catalog.generate_prices", *shown])


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
