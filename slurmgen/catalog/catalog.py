"""EC2 instance catalog: the hardware facts sizing needs, kept in a one-line-per-type csv.

The facts live in data (``instances.csv``) rather than code so a user adds an instance type by
adding one line, and every figure carries its ``source``. Loading is strict: a typo in a
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
    "source",
)
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
_OPTIONAL_INTS = ("accelerator_count", "accelerator_memory_mib", "efa_max", "local_nvme_gb")
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
        """NVIDIA GPUs get a Slurm ``gpu`` GRES; Neuron devices do not (see sizing.slurm_node_conf)."""
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


def _data_lines(text: str) -> Iterator[tuple[int, str]]:
    """Yield (1-based line number, line) for non-blank, non-comment lines so errors keep real line numbers."""
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            yield lineno, line


def _int_cell(where: str, column: str, raw: str, *, required: bool) -> int:
    """Parse one integer cell; empty optional cells mean 0 so CPU rows stay short."""
    value = raw.strip()
    if value == "" and not required:
        return 0
    if not _INT_RE.fullmatch(value):
        kind = "a positive" if required else "a non-negative"
        raise CatalogError(f"{where}: {column} must be {kind} integer, got {raw!r}")
    number = int(value)
    if required and number <= 0:
        raise CatalogError(f"{where}: {column} must be a positive integer, got {raw!r}")
    return number


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


def _parse_row(where: str, cells: list[str]) -> InstanceType:
    """Turn one csv row into an InstanceType, validating every cell."""
    if len(cells) != len(COLUMNS):
        raise CatalogError(f"{where}: expected {len(COLUMNS)} columns ({','.join(COLUMNS)}), got {len(cells)}")
    row = {column: cell.strip() for column, cell in zip(COLUMNS, cells)}
    name = row["instance_type"]
    if not _NAME_RE.match(name):
        raise CatalogError(f"{where}: instance_type must look like an EC2 name (e.g. p5.48xlarge), got {name!r}")
    ints = {c: _int_cell(where, c, row[c], required=True) for c in _REQUIRED_POSITIVE}
    ints |= {c: _int_cell(where, c, row[c], required=False) for c in _OPTIONAL_INTS}
    arch = row["arch"]
    if arch not in ARCHES:
        raise CatalogError(f"{where}: arch must be one of {', '.join(ARCHES)}, got {arch!r}")
    _check_accelerator(where, row["accelerator_resource"], ints["accelerator_count"], row["accelerator_model"])
    return InstanceType(
        instance_type=name,
        arch=arch,  # type: ignore[arg-type]  # narrowed by the membership check above
        accelerator_resource=row["accelerator_resource"],
        accelerator_model=row["accelerator_model"],
        source=row["source"],
        **ints,
    )


def parse_catalog(text: str, origin: str) -> dict[str, InstanceType]:
    """Parse catalog csv text; ``origin`` is the file name used in error messages."""
    lines = _data_lines(text)
    header_line = next(lines, None)
    if header_line is None:
        raise CatalogError(f"{origin}: no header line; expected {','.join(COLUMNS)}")
    lineno, header = header_line
    columns = tuple(cell.strip() for cell in next(csv.reader([header])))
    if columns != COLUMNS:
        raise CatalogError(f"{origin}:{lineno}: header must be {','.join(COLUMNS)}, got {','.join(columns)}")
    types: dict[str, InstanceType] = {}
    first_seen: dict[str, int] = {}
    for lineno, line in lines:
        where = f"{origin}:{lineno}"
        it = _parse_row(where, next(csv.reader([line])))
        if it.instance_type in types:
            first = first_seen[it.instance_type]
            raise CatalogError(f"{where}: duplicate instance_type {it.instance_type} (first defined on line {first})")
        types[it.instance_type] = it
        first_seen[it.instance_type] = lineno
    return types


def default_catalog_text() -> str:
    """The packaged csv, read through importlib.resources so it also works from a wheel/zip."""
    return resources.files(__package__).joinpath(DEFAULT_CSV_NAME).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=1)
def _default_catalog() -> Mapping[str, InstanceType]:
    """Parse the packaged catalog once per process; it never changes at runtime."""
    return MappingProxyType(parse_catalog(default_catalog_text(), DEFAULT_CSV_NAME))


def load_catalog(extra: Path | None = None) -> Mapping[str, InstanceType]:
    """Packaged catalog, optionally overlaid by a user csv of the same format (user rows win).

    Returns a read-only mapping because the default one is shared through the cache.
    """
    base = _default_catalog()
    if extra is None:
        return base
    try:
        text = Path(extra).read_text(encoding="utf-8")
    except OSError as exc:
        raise CatalogError(f"{extra}: cannot read instance catalog: {exc.strerror or exc}") from exc
    merged = dict(base)
    merged.update(parse_catalog(text, str(extra)))
    return MappingProxyType(merged)
