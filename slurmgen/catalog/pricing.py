"""On-demand EC2 prices for the PR summary's cost lines: (region, instance type) -> USD per hour.

Why: a GPU cluster's cost is decided by the replicas and ceilings a PR changes, and nobody reviews a
number they never see. The packaged ``prices.csv`` is generated (``python -m
slurmgen.catalog.generate_prices``) from pinned public tables: Karpenter v1.14.1's generated price
table (us-east-1, GovCloud) and an excerpt of the SkyPilot catalog at one commit (other commercial
regions, for the types the examples and the starter use). Each row names its source in the optional
``source`` column; the header's ``#   source KEY: LABEL`` lines say what a key is, and the summary
prints the label beside every cost. A site adds its regions or negotiated prices in
``clusters/prices.csv`` beside the specs (same columns, ``source`` optional; its rows win), found the
way ``clusters/instance-types.csv`` is; ``generate_prices --price-list-api`` writes such a file from
the AWS Price List API with the site's own credentials.

Only on-demand list prices are known here: spot prices vary by the hour and reserved capacity
(ODCR, Capacity Blocks) is paid when reserved, so both are named as such, never priced; a region
or type without a row has "no price", never an estimate.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from ..errors import UserError
from .catalog import data_lines, read_site_csv


COLUMNS: tuple[str, ...] = ("region", "instance_type", "usd_per_hour")
SOURCE_COLUMN = "source"  # optional 4th column: a key defined by a "#   source KEY: LABEL" header line
DEFAULT_CSV_NAME = "prices.csv"
SITE_CSV_NAME = "prices.csv"  # beside the specs: clusters/prices.csv
_REGION_RE = re.compile(r"^[a-z]{2}(-[a-z]+)+-[0-9]+$")
_TYPE_RE = re.compile(r"^[a-z0-9][a-z0-9.-]*$")
_PRICE_RE = re.compile(r"^[0-9]+(\.[0-9]+)?$")
_SOURCE_KEY_RE = re.compile(r"^[a-z0-9][a-z0-9.-]*$")
_SOURCE_LINE = re.compile(r"^#\s+source ([a-z0-9][a-z0-9.-]*):\s+(.+?)\s*$", re.M)


class PriceError(UserError):
    """A price csv is malformed; the message names file:line, the cell and the fix."""


@dataclass(frozen=True)
class Prices:
    """(region, type) -> USD/h, with where the table came from (shown beside every cost line)."""

    table: Mapping[tuple[str, str], float]
    origin: str  # e.g. "Karpenter v1.14.1 on-demand prices (2026-07-06)" or "+ clusters/prices.csv"
    # (region, type) -> the label of the table the row came from, shown beside the cost it prices
    sources: Mapping[tuple[str, str], str] = field(default_factory=dict)

    def on_demand(self, region: str, instance_type: str) -> float | None:
        """The hourly on-demand price, or None: no row is "no price", never a guess."""
        return self.table.get((region, instance_type))

    def source_of(self, region: str, instance_type: str) -> str | None:
        """Where the row came from ("Karpenter v1.14.1 ... (2026-07-06)"), or None without a row."""
        if (region, instance_type) not in self.table:
            return None
        return self.sources.get((region, instance_type), self.origin)

    def regions(self) -> tuple[str, ...]:
        return tuple(sorted({region for region, _ in self.table}))


def source_labels(text: str) -> dict[str, str]:
    """{key: label} from the "#   source KEY: LABEL" header lines (the keys rows may name)."""
    return {key: label for key, label in _SOURCE_LINE.findall(text)}


def parse_priced_rows(text: str, origin: str) -> dict[tuple[str, str], tuple[float, str | None]]:
    """Every row of a price csv, validated, as (region, type) -> (USD/h, source key or None): a typo in a
    price would mislead every review, and a key no header line defines would print as nothing."""
    lines = data_lines(text)
    first = next(lines, None)
    header = tuple(c.strip() for c in first[1].split(",")) if first else ()
    if header not in (COLUMNS, (*COLUMNS, SOURCE_COLUMN)):
        where = f"{origin}:{first[0]}" if first else origin
        raise PriceError(f"{where}: the header must be {','.join(COLUMNS)} (optionally ,{SOURCE_COLUMN})")
    labels = source_labels(text)
    out: dict[tuple[str, str], tuple[float, str | None]] = {}
    seen: dict[tuple[str, str], int] = {}
    for lineno, line in lines:
        where = f"{origin}:{lineno}"
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(header):
            raise PriceError(f"{where}: expected {len(header)} cells ({','.join(header)}), got {len(cells)}")
        region, itype, price = cells[:3]
        if not _REGION_RE.match(region):
            raise PriceError(f"{where}: region must look like us-east-1, got {region!r}")
        if not _TYPE_RE.match(itype):
            raise PriceError(f"{where}: instance_type must look like p5.48xlarge, got {itype!r}")
        if not _PRICE_RE.match(price):
            raise PriceError(f"{where}: usd_per_hour must be a number such as 55.04, got {price!r}")
        key = (region, itype)
        if key in seen:
            raise PriceError(f"{where}: duplicate row {region},{itype} (first on line {seen[key]}); keep one")
        source = cells[3] if len(cells) > 3 and cells[3] else None
        if source is not None and (not _SOURCE_KEY_RE.match(source) or source not in labels):
            raise PriceError(f"{where}: source {source!r} has no '#   source {source}: LABEL' header line; "
                             "add one or leave the cell empty")
        seen[key] = lineno
        out[key] = (float(price), source)
    return out


def parse_prices(text: str, origin: str) -> dict[tuple[str, str], float]:
    """(region, type) -> USD/h of a price csv, validated (see parse_priced_rows)."""
    return {key: usd for key, (usd, _) in parse_priced_rows(text, origin).items()}


def _prices(text: str, origin: str, fallback: str | None = None) -> Prices:
    """A parsed csv with each row's source label (rows without a source: `fallback`, by default
    "NAME for N row(s)")."""
    rows, labels = parse_priced_rows(text, origin), source_labels(text)
    fallback = fallback or f"{Path(origin).name} for {len(rows)} row(s)"
    return Prices({key: usd for key, (usd, _) in rows.items()}, fallback,
                  {key: labels[src] if src else fallback for key, (_, src) in rows.items()})


def default_prices_text() -> str:
    return resources.files(__package__).joinpath(DEFAULT_CSV_NAME).read_text(encoding="utf-8")


def _source_note(text: str) -> str:
    """'Karpenter v1.14.1, generated 2026-07-06' from the packaged csv's header comment."""
    found = re.search(r"^#\s+summary:\s+(.+)$", text, re.M)
    return found.group(1).strip() if found else DEFAULT_CSV_NAME


@functools.lru_cache(maxsize=1)
def _default() -> Prices:
    text = default_prices_text()
    return _prices(text, DEFAULT_CSV_NAME, _source_note(text))


def load_prices(extra: Path | None = None) -> Prices:
    """The packaged prices, overlaid by a site csv (its rows win)."""
    base = _default()
    if extra is None:
        return base
    text = read_site_csv(Path(extra), "prices", "list only the site's own prices", PriceError)
    site = _prices(text, str(extra))
    return Prices({**base.table, **site.table}, f"{base.origin}; {site.origin}",
                  {**base.sources, **site.sources})


def site_prices_path(spec_dir: Path) -> Path | None:
    """``<spec folder>/prices.csv`` when it exists."""
    path = spec_dir / SITE_CSV_NAME
    return path if path.is_file() else None


def site_prices(spec_paths: Sequence[Path]) -> Prices:
    """The prices for specs: packaged, plus the one prices.csv beside them (two differing are refused)."""
    found = sorted({p for p in (site_prices_path(s.parent) for s in spec_paths) if p is not None})
    if len(found) > 1:
        raise PriceError(f"{', '.join(map(str, found))}: specs from folders with different prices.csv; "
                         "summarize them in separate runs")
    return load_prices(found[0] if found else None)
