"""On-demand EC2 prices for the PR summary's cost lines: (region, instance type) -> USD per hour.

Why: a GPU cluster's cost is decided by the replicas and ceilings a PR changes, and nobody reviews a
number they never see. The packaged ``prices.csv`` is extracted from Karpenter v1.14.1's generated
price table (``python -m slurmgen.catalog.generate_prices``; its header names the source, the date
and the regions). A site adds its regions or negotiated prices in ``clusters/prices.csv`` beside the
specs (same header; its rows win), found the way ``clusters/instance-types.csv`` is.

Only on-demand list prices are known here: spot prices vary by the hour and reserved capacity
(ODCR, Capacity Blocks) is paid when reserved, so both are named as such, never priced; a region
or type without a row has "no price", never an estimate.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..errors import UserError
from .catalog import data_lines, read_site_csv


COLUMNS: tuple[str, ...] = ("region", "instance_type", "usd_per_hour")
DEFAULT_CSV_NAME = "prices.csv"
SITE_CSV_NAME = "prices.csv"  # beside the specs: clusters/prices.csv
_REGION_RE = re.compile(r"^[a-z]{2}(-[a-z]+)+-[0-9]+$")
_TYPE_RE = re.compile(r"^[a-z0-9][a-z0-9.-]*$")
_PRICE_RE = re.compile(r"^[0-9]+(\.[0-9]+)?$")


class PriceError(UserError):
    """A price csv is malformed; the message names file:line, the cell and the fix."""


@dataclass(frozen=True)
class Prices:
    """(region, type) -> USD/h, with where the table came from (shown beside every cost line)."""

    table: Mapping[tuple[str, str], float]
    origin: str  # e.g. "Karpenter v1.14.1 on-demand prices (2026-07-06)" or "+ clusters/prices.csv"

    def on_demand(self, region: str, instance_type: str) -> float | None:
        """The hourly on-demand price, or None: no row is "no price", never a guess."""
        return self.table.get((region, instance_type))

    def regions(self) -> tuple[str, ...]:
        return tuple(sorted({region for region, _ in self.table}))


def parse_prices(text: str, origin: str) -> dict[tuple[str, str], float]:
    """Every row of a price csv, validated: a typo in a price would mislead every review."""
    lines = data_lines(text)
    first = next(lines, None)
    if first is None or tuple(c.strip() for c in first[1].split(",")) != COLUMNS:
        where = f"{origin}:{first[0]}" if first else origin
        raise PriceError(f"{where}: the header must be {','.join(COLUMNS)}")
    out: dict[tuple[str, str], float] = {}
    seen: dict[tuple[str, str], int] = {}
    for lineno, line in lines:
        where = f"{origin}:{lineno}"
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(COLUMNS):
            raise PriceError(f"{where}: expected {len(COLUMNS)} cells ({','.join(COLUMNS)}), got {len(cells)}")
        region, itype, price = cells
        if not _REGION_RE.match(region):
            raise PriceError(f"{where}: region must look like us-east-1, got {region!r}")
        if not _TYPE_RE.match(itype):
            raise PriceError(f"{where}: instance_type must look like p5.48xlarge, got {itype!r}")
        if not _PRICE_RE.match(price):
            raise PriceError(f"{where}: usd_per_hour must be a number such as 55.04, got {price!r}")
        key = (region, itype)
        if key in seen:
            raise PriceError(f"{where}: duplicate row {region},{itype} (first on line {seen[key]}); keep one")
        seen[key] = lineno
        out[key] = float(price)
    return out


def default_prices_text() -> str:
    return resources.files(__package__).joinpath(DEFAULT_CSV_NAME).read_text(encoding="utf-8")


def _source_note(text: str) -> str:
    """'Karpenter v1.14.1, generated 2026-07-06' from the packaged csv's header comment."""
    found = re.search(r"^#\s+summary:\s+(.+)$", text, re.M)
    return found.group(1).strip() if found else DEFAULT_CSV_NAME


@functools.lru_cache(maxsize=1)
def _default() -> Prices:
    text = default_prices_text()
    return Prices(parse_prices(text, DEFAULT_CSV_NAME), _source_note(text))


def load_prices(extra: Path | None = None) -> Prices:
    """The packaged prices, overlaid by a site csv (its rows win)."""
    base = _default()
    if extra is None:
        return base
    text = read_site_csv(Path(extra), "prices", "list only the site's own prices", PriceError)
    site = parse_prices(text, str(extra))
    return Prices({**base.table, **site}, f"{base.origin}; {extra.name} for {len(site)} row(s)")


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
