"""EC2 instance catalog: the hardware facts sizing needs, kept in a one-line-per-type csv.

The packaged ``instances.csv`` is generated from Karpenter's instance-type reference
(``python -m slurmgen.catalog.generate``), so every EC2 type Karpenter knows is known here, with
Karpenter's own allocatable estimate beside it. A site adds or corrects types in
``clusters/instance-types.csv`` (same header; optional columns may be left out), which the
pipeline loads beside the specs and passes down explicitly. Loading is strict: a typo in a
hardware figure silently mis-sizes every slurmd pod, so malformed rows fail with file:line.
"""

from __future__ import annotations

import csv
import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from .._input import UnreadableFile, read_text

Arch = Literal["amd64", "arm64"]

COLUMNS: tuple[str, ...] = (
    "instance_type",
    "vcpu",
    "memory_mib",
    "arch",
    "max_pods",
    "accelerator_resource",
    "accelerator_count",
    "accelerator_model",
    "accelerator_memory_mib",
    "efa_max",
    "local_nvme_gb",
    "accelerator_manufacturer",
    "neuron_cores",
    "karpenter_cpu_m",
    "karpenter_memory_mi",
    "source",
)
# A site csv may leave these out (an older 12-column file stays valid); missing means 0 / unknown.
OPTIONAL_COLUMNS: frozenset[str] = frozenset(
    {"accelerator_manufacturer", "neuron_cores", "karpenter_cpu_m", "karpenter_memory_mi"}
)
KARPENTER_VERSION = "1.14.1"  # the reference instances.csv is generated from (its header says so too)
SITE_CSV_NAME = "instance-types.csv"  # beside the specs: clusters/instance-types.csv
SITE_CSV_MAX_BYTES = 4 * 1024 * 1024  # the packaged catalog of every EC2 type is ~100 KiB
ARCHES: tuple[Arch, ...] = ("amd64", "arm64")
NVIDIA_GPU = "nvidia.com/gpu"
NEURON = "aws.amazon.com/neuron"
EFA_RESOURCE = "vpc.amazonaws.com/efa"
# Extended resource names Karpenter and the device plugins know (reference §2.7); a closed set
# catches typos such as "nvidia.com/gpus" that would otherwise leave pods Pending forever.
ACCELERATOR_RESOURCES: frozenset[str] = frozenset(
    {NVIDIA_GPU, NEURON, "aws.amazon.com/neuroncore", "amd.com/gpu", "habana.ai/gaudi"}
)
_REQUIRED_POSITIVE = ("vcpu", "memory_mib", "max_pods")
_OPTIONAL_INTS = ("accelerator_count", "accelerator_memory_mib", "efa_max", "local_nvme_gb", "neuron_cores",
                  "karpenter_cpu_m", "karpenter_memory_mi")
_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9.-]*$")
_INT_RE = re.compile(r"[0-9]+")  # ASCII only: str.isdigit() accepts "²", which int() rejects
_MODEL_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
DEFAULT_CSV_NAME = "instances.csv"


class CatalogError(ValueError):
    """A catalog csv is malformed; the message names file:line and the offending cell."""


@dataclass(frozen=True)
class InstanceType:
    """One EC2 instance type as the scheduler and Slurm need to see it."""

    instance_type: str
    vcpu: int
    memory_mib: int
    arch: Arch
    max_pods: int
    accelerator_resource: str
    accelerator_count: int
    accelerator_model: str
    accelerator_memory_mib: int
    efa_max: int
    local_nvme_gb: int
    source: str
    accelerator_manufacturer: str = ""
    neuron_cores: int = 0
    karpenter_cpu_m: int = 0  # Karpenter's own allocatable estimate; 0 = not known (site rows)
    karpenter_memory_mi: int = 0

    @property
    def name(self) -> str:
        """Short alias: most callers think of the type by its EC2 name."""
        return self.instance_type

    @property
    def family(self) -> str:
        """EC2 family (``p5``, ``p6-b200``) — what Karpenter's instance-family label matches."""
        return self.instance_type.split(".", 1)[0]

    @property
    def has_accelerator(self) -> bool:
        """True when pods must request an extended resource to get the devices."""
        return self.accelerator_count > 0

    @property
    def is_nvidia(self) -> bool:
        """NVIDIA GPUs: typed ``gpu`` GRES, AutoDetect=nvidia (Neuron: untyped, see sizing.slurm_node_conf)."""
        return self.accelerator_resource == NVIDIA_GPU

    @property
    def is_neuron(self) -> bool:
        """Neuron types need the Neuron AMI/device plugin rather than the NVIDIA stack."""
        return self.accelerator_resource == NEURON

    @property
    def has_efa(self) -> bool:
        """True when the EFA device plugin advertises vpc.amazonaws.com/efa on this type."""
        return self.efa_max > 0

    @property
    def has_nvme(self) -> bool:
        """True when instance-store NVMe exists (worth a RAID0 for scratch / container images)."""
        return self.local_nvme_gb > 0

    @property
    def memory_gib(self) -> float:
        """Memory in GiB, for humans reading reports."""
        return self.memory_mib / 1024


def data_lines(text: str) -> Iterator[tuple[int, str]]:
    """Yield (1-based line number, line) for non-blank, non-comment lines so errors keep real line numbers
    (every csv of the catalog: instance types, prices)."""
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            yield lineno, line


def _int_cell(where: str, column: str, raw: str, *, required: bool) -> int:
    """Parse one integer cell; empty optional cells mean 0 so CPU rows stay short."""
    value = raw.strip()
    if value == "" and not required:
        return 0
    shown = repr(raw) if len(raw) <= 40 else f"{raw[:20]!r}... ({len(raw)} characters)"
    if not _INT_RE.fullmatch(value):
        kind = "a positive" if required else "a non-negative"
        raise CatalogError(f"{where}: {column} must be {kind} integer, got {shown}")
    # Before int(): Python refuses more than 4,300 digits (a traceback), and every cell reaches a
    # field of at most 32 bits (RealMemory, CPUs, Gres counts; the spec's own numbers stop there too).
    if len(value.lstrip("+0")) > len(str(CELL_MAX)) or int(value) > CELL_MAX:
        raise CatalogError(f"{where}: {column} is {shown}, above {CELL_MAX}; no instance type has that much")
    number = int(value)
    if required and number <= 0:
        raise CatalogError(f"{where}: {column} must be a positive integer, got {shown}")
    return number


CELL_MAX = 2 ** 32 - 2  # as spec._text.INT_MAX: Slurm's uint32 fields reserve 0xFFFFFFFF


def _check_accelerator(where: str, resource: str, count: int, model: str) -> None:
    """Reject half-described accelerators: a count without a resource can never be requested."""
    if resource and resource not in ACCELERATOR_RESOURCES:
        known = ", ".join(sorted(ACCELERATOR_RESOURCES))
        raise CatalogError(f"{where}: accelerator_resource {resource!r} is not one of {known}")
    if count > 0 and not resource:
        raise CatalogError(f"{where}: accelerator_count is {count} but accelerator_resource is empty")
    if resource and count == 0:
        raise CatalogError(f"{where}: accelerator_resource is {resource} but accelerator_count is 0")
    if model and not resource:
        raise CatalogError(f"{where}: accelerator_model is {model!r} but accelerator_resource is empty")
    if model and not _MODEL_RE.match(model):
        raise CatalogError(
            f"{where}: accelerator_model must be lowercase [a-z0-9_-] (a Slurm GRES type), got {model!r}"
        )


def _parse_row(where: str, columns: tuple[str, ...], cells: list[str]) -> InstanceType:
    """Turn one csv row into an InstanceType, validating every cell."""
    if len(cells) != len(columns):
        raise CatalogError(f"{where}: expected {len(columns)} columns ({','.join(columns)}), got {len(cells)}")
    row = dict.fromkeys(OPTIONAL_COLUMNS, "") | {column: cell.strip() for column, cell in zip(columns, cells, strict=True)}
    name = row["instance_type"]
    if not _NAME_RE.match(name):
        raise CatalogError(f"{where}: instance_type must look like an EC2 name (e.g. p5.48xlarge), got {name!r}")
    ints = {c: _int_cell(where, c, row[c], required=True) for c in _REQUIRED_POSITIVE}
    ints |= {c: _int_cell(where, c, row[c], required=False) for c in _OPTIONAL_INTS}
    arch = row["arch"]
    if arch not in ARCHES:
        raise CatalogError(f"{where}: arch must be one of {', '.join(ARCHES)}, got {arch!r}")
    _check_accelerator(where, row["accelerator_resource"], ints["accelerator_count"], row["accelerator_model"])
    maker = row["accelerator_manufacturer"]
    if maker and not _MODEL_RE.match(maker):
        raise CatalogError(f"{where}: accelerator_manufacturer must be lowercase [a-z0-9_-], got {maker!r}")
    return InstanceType(
        instance_type=name,
        arch=arch,  # type: ignore[arg-type]  # narrowed by the membership check above
        accelerator_resource=row["accelerator_resource"],
        accelerator_model=row["accelerator_model"],
        accelerator_manufacturer=maker,
        source=row["source"],
        **ints,
    )


def _header(origin: str, lineno: int, header: str) -> tuple[str, ...]:
    """Columns by name, in the file's order: every required column once, optional ones may be absent."""
    columns = tuple(cell.strip() for cell in next(csv.reader([header])))
    required = [c for c in COLUMNS if c not in OPTIONAL_COLUMNS]
    unknown = [c for c in columns if c not in COLUMNS]
    missing = [c for c in required if c not in columns]
    repeated = sorted({c for c in columns if columns.count(c) > 1})
    if unknown or missing or repeated:
        what = "; ".join(filter(None, [
            f"unknown column(s) {', '.join(unknown)}" if unknown else "",
            f"missing column(s) {', '.join(missing)}" if missing else "",
            f"repeated column(s) {', '.join(repeated)}" if repeated else "",
        ]))
        raise CatalogError(f"{origin}:{lineno}: header must name the columns {','.join(COLUMNS)} "
                           f"({', '.join(sorted(OPTIONAL_COLUMNS))} optional): {what}")
    return columns


Row = tuple[str, str]  # (file:line for messages, the raw csv line)


def _index(text: str, origin: str) -> tuple[tuple[str, ...], dict[str, Row]]:
    """Header columns and name -> raw row, without parsing the rows: cheap enough for every synth."""
    lines = data_lines(text)
    header_line = next(lines, None)
    if header_line is None:
        raise CatalogError(f"{origin}: no header line; expected {','.join(COLUMNS)}")
    columns = _header(origin, *header_line)
    name_at = columns.index("instance_type")
    rows: dict[str, Row] = {}
    for lineno, line in lines:
        cells = line.split(",", name_at + 1) if '"' not in line else next(csv.reader([line]))
        name = cells[name_at].strip() if len(cells) > name_at else ""
        if name in rows:
            first = rows[name][0].rsplit(":", 1)[1]
            raise CatalogError(f"{origin}:{lineno}: duplicate instance_type {name} (first defined on line {first})")
        rows[name] = (f"{origin}:{lineno}", line)
    return columns, rows


def _parse_line(columns: tuple[str, ...], row: Row) -> InstanceType:
    where, line = row
    return _parse_row(where, columns, next(csv.reader([line])))


def parse_catalog(text: str, origin: str) -> dict[str, InstanceType]:
    """Parse and validate every row of catalog csv text; ``origin`` is the file name used in messages."""
    columns, rows = _index(text, origin)
    return {name: _parse_line(columns, row) for name, row in rows.items()}


class Catalog(Mapping[str, InstanceType]):
    """Read-only name -> InstanceType: packaged rows parse on first use, site rows (already parsed) win.

    Parsing all 1,300+ packaged rows costs ~50 ms, on every synth, for the handful a spec names;
    indexing them costs ~1 ms. The packaged file is validated whole by the tests instead.
    """

    def __init__(self, columns: tuple[str, ...], rows: Mapping[str, Row],
                 site: Mapping[str, InstanceType] | None = None, site_origin: str | None = None) -> None:
        self._columns = columns
        self._rows = rows
        self._parsed: dict[str, InstanceType] = dict(site or {})
        self._names = tuple(dict.fromkeys([*rows, *self._parsed]))
        self.site_origin = site_origin  # the site csv merged in, if any (for messages)

    def __getitem__(self, name: str) -> InstanceType:
        it = self._parsed.get(name)
        if it is None:
            it = self._parsed[name] = _parse_line(self._columns, self._rows[name])
        return it

    def __contains__(self, name: object) -> bool:
        return name in self._parsed or name in self._rows

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def default_catalog_text() -> str:
    """The packaged csv, read through importlib.resources so it also works from a wheel/zip."""
    return resources.files(__package__).joinpath(DEFAULT_CSV_NAME).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=1)
def _default_index() -> tuple[tuple[str, ...], Mapping[str, Row]]:
    """Index the packaged catalog once per process; it never changes at runtime."""
    columns, rows = _index(default_catalog_text(), DEFAULT_CSV_NAME)
    return columns, MappingProxyType(rows)


@functools.lru_cache(maxsize=1)
def _default_catalog() -> Catalog:
    return Catalog(*_default_index())


def read_site_csv(path: Path, what: str, advice: str, error: type[Exception]) -> str:
    """A site's csv beside the specs, bounded; a read problem is one `error` line naming the file."""
    try:
        return read_text(path, max_bytes=SITE_CSV_MAX_BYTES, advice=advice)
    except OSError as exc:
        raise error(f"{path}: cannot read {what}: {exc.strerror or exc}") from exc
    except UnreadableFile as exc:
        raise error(f"{path}: {exc}") from None


def load_catalog(extra: Path | None = None) -> Catalog:
    """Packaged catalog, optionally overlaid by a site csv of the same format (site rows win).

    The default one is shared through a cache; a site file is read and validated whole on each call.
    """
    if extra is None:
        return _default_catalog()
    text = read_site_csv(Path(extra), "instance catalog", "list only the site's own instance types", CatalogError)
    return Catalog(*_default_index(), site=parse_catalog(text, str(extra)), site_origin=str(extra))


def site_catalog_path(spec_dir: Path) -> Path | None:
    """``<spec folder>/instance-types.csv`` when it exists: the site's own types, beside its specs."""
    path = spec_dir / SITE_CSV_NAME
    return path if path.is_file() else None
