"""Regenerate ``instances.csv`` from Karpenter's instance-type reference page.

Why generated: a hand-written list of 45 types refused every other EC2 type. Karpenter publishes,
per type, the labels it puts on nodes and the allocatable it assumes before launch (AL2023, default
kubelet), i.e. exactly the figures our sizing must agree with. Re-run it when Karpenter is bumped::

    python -m slurmgen.catalog.generate karpenter-instance-types-v1.14.1.md

The page is aws/karpenter-provider-aws ``website/content/en/docs/reference/instance-types.md``
(generated there by ``hack/docs/instancetypes_gen``). Only the csv is committed: the 1.3 MB page
is research material, and the header records its file name, Karpenter version and sha256, so a
reviewer can tell which page the data came from and the deep test can compare with a fresh parse.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

from .catalog import COLUMNS, DEFAULT_CSV_NAME, EFA_RESOURCE, NEURON, parse_catalog

_TYPE_RE = re.compile(r"^### `([^`]+)`\n", re.M)
_ROW_RE = re.compile(r"^ \|([^|]+)\|([^|]*)\|$", re.M)
_VERSION_RE = re.compile(r"v(\d+\.\d+\.\d+)")
K = "karpenter.k8s.aws/"
# Karpenter's own extended resources (types.go computeCapacity); the first one present wins.
_DEVICE_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu", "habana.ai/gaudi", NEURON)
# The page gives no memory for Neuron devices: GiB per chip from the Neuron hardware docs
# (awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/).
NEURON_DEVICE_MEMORY_MIB = {"inferentia": 8 * 1024, "inferentia2": 32 * 1024, "trainium": 32 * 1024,
                            "trainium2": 96 * 1024}


class SourceError(ValueError):
    """The reference page does not have the shape this parser knows; names the type and the field."""


def parse_reference(text: str) -> Iterator[tuple[str, dict[str, str]]]:
    """(instance type, {label or resource: value}) for every ``### `type` `` section, in page order."""
    parts = _TYPE_RE.split(text)
    for index in range(1, len(parts), 2):
        yield parts[index], dict(_ROW_RE.findall(parts[index + 1]))


def _quantity(name: str, field: str, value: str | None, unit: str) -> int:
    """A Karpenter quantity such as ``15890m`` or ``240830Mi`` in the unit the csv stores."""
    if value is None or not re.fullmatch(rf"\d+{unit}", value):
        raise SourceError(f"{name}: {field} must look like 123{unit}, got {value!r}")
    return int(value[: len(value) - len(unit)])


def _int(name: str, field: str, value: str | None, default: int | None = None) -> int:
    if value is None and default is not None:
        return default
    if value is None or not value.isascii() or not value.isdigit():
        raise SourceError(f"{name}: {field} must be a whole number, got {value!r}")
    return int(value)


def row_for(name: str, facts: Mapping[str, str]) -> dict[str, str]:
    """One csv row from one type's labels and resources.

    An accelerator is recorded only where Karpenter advertises a device resource: g6f/gr6f
    (fractional L4, gpu-count 0) and dl2q (Qualcomm, no device plugin resource) carry GPU or
    accelerator labels but nothing a pod can request, so they are CPU-only here.
    """
    resource = next((r for r in _DEVICE_RESOURCES if _int(name, r, facts.get(r), 0) > 0), "")
    count = _int(name, resource, facts.get(resource)) if resource else 0
    model = manufacturer = ""
    device_memory = 0
    source = "karpenter"
    if resource == NEURON:
        model = facts.get(K + "instance-accelerator-name", "")
        manufacturer = facts.get(K + "instance-accelerator-manufacturer", "")
        device_memory = NEURON_DEVICE_MEMORY_MIB.get(model, 0)
        source = "karpenter+neuron-docs" if device_memory else source
    elif resource:
        model = facts.get(K + "instance-gpu-name", "")
        manufacturer = facts.get(K + "instance-gpu-manufacturer", "")
        device_memory = _int(name, "instance-gpu-memory", facts.get(K + "instance-gpu-memory"), 0)
        gpu_count = _int(name, "instance-gpu-count", facts.get(K + "instance-gpu-count"), count)
        if gpu_count != count:
            raise SourceError(f"{name}: {resource} is {count} but instance-gpu-count is {gpu_count}")
    arch = facts.get("kubernetes.io/arch", "")
    cells = {
        "instance_type": name,
        "vcpu": str(_int(name, "instance-cpu", facts.get(K + "instance-cpu"))),
        "memory_mib": str(_int(name, "instance-memory", facts.get(K + "instance-memory"))),
        "arch": arch,
        "max_pods": str(_int(name, "pods", facts.get("pods"))),
        "accelerator_resource": resource,
        "accelerator_count": str(count),
        "accelerator_model": model,
        "accelerator_memory_mib": str(device_memory),
        "efa_max": str(_int(name, EFA_RESOURCE, facts.get(EFA_RESOURCE), 0)),
        "local_nvme_gb": str(_int(name, "instance-local-nvme", facts.get(K + "instance-local-nvme"), 0)),
        "accelerator_manufacturer": manufacturer,
        "neuron_cores": str(_int(name, "aws.amazon.com/neuroncore", facts.get("aws.amazon.com/neuroncore"), 0)),
        "karpenter_cpu_m": str(_quantity(name, "cpu", facts.get("cpu"), "m")),
        "karpenter_memory_mi": str(_quantity(name, "memory", facts.get("memory"), "Mi")),
        "source": source,
    }
    return cells


def _csv_cell(value: str) -> str:
    return f'"{value}"' if "," in value or '"' in value else value


def render(text: str, *, file_name: str, version: str) -> str:
    """The whole csv (header comments with provenance, header, one sorted row per type)."""
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    rows = [row_for(name, facts) for name, facts in parse_reference(text)]
    if not rows:
        raise SourceError(f"{file_name}: no '### `type`' sections found; is this Karpenter's instance-types.md?")
    names = [r["instance_type"] for r in rows]
    if len(set(names)) != len(names):
        raise SourceError(f"{file_name}: an instance type appears twice")
    rows.sort(key=lambda r: _sort_key(r["instance_type"]))
    header = HEADER_TEMPLATE.format(file_name=file_name, version=version, sha256=digest, count=len(rows))
    lines = [header.rstrip("\n"), ",".join(COLUMNS)]
    lines += [",".join(_csv_cell(r[c]) for c in COLUMNS) for r in rows]
    return "\n".join(lines) + "\n"


_SIZE_RANK = {"nano": 0, "micro": 1, "small": 2, "medium": 3, "large": 4, "xlarge": 5}


def _sort_key(name: str) -> tuple[str, int, int, str]:
    """Family, then size as EC2 lists them (nano ... large, xlarge, 2xlarge ... 48xlarge, metal): readable diffs."""
    family, _, size = name.partition(".")
    if size in _SIZE_RANK:
        return family, 0, _SIZE_RANK[size], size
    number = re.fullmatch(r"(\d+)xlarge", size)
    if number:
        return family, 1, int(number.group(1)), size
    return family, 2, 0, size


HEADER_TEMPLATE = """\
# EC2 instance catalog for slurmgen: GENERATED, do not edit by hand.
#   generator: python -m slurmgen.catalog.generate SOURCE
#   source:    {file_name}
#   karpenter: v{version}
#   sha256:    {sha256}
#   types:     {count}
# Site-specific types or corrections go in clusters/instance-types.csv (same header; optional
# columns may be left out); its rows override these.
#
# Columns (empty numeric cell = 0):
#   instance_type          EC2 API name, e.g. p5.48xlarge
#   vcpu                   karpenter.k8s.aws/instance-cpu
#   memory_mib             karpenter.k8s.aws/instance-memory
#   arch                   kubernetes.io/arch (amd64 | arm64)
#   max_pods               Karpenter's `pods` resource (ENI-limited max pods)
#   accelerator_resource   the device resource Karpenter advertises (nvidia.com/gpu, amd.com/gpu,
#                          habana.ai/gaudi, aws.amazon.com/neuron); empty for CPU-only types
#   accelerator_count      devices of that resource per instance
#   accelerator_model      instance-gpu-name or instance-accelerator-name (Slurm GRES type: h100, a10g, l4, trainium2)
#   accelerator_memory_mib instance-gpu-memory per GPU; Neuron: GiB per chip from the Neuron docs * 1024
#   efa_max                Karpenter's vpc.amazonaws.com/efa resource
#   local_nvme_gb          karpenter.k8s.aws/instance-local-nvme (GB of instance store NVMe)
#   accelerator_manufacturer  instance-gpu-manufacturer or instance-accelerator-manufacturer
#   neuron_cores           Karpenter's aws.amazon.com/neuroncore resource
#   karpenter_cpu_m        Karpenter's allocatable CPU estimate (m), cross-checks sizing.allocatable
#   karpenter_memory_mi    Karpenter's allocatable memory estimate (Mi), cross-checks sizing.allocatable
#   source                 karpenter (the page above), +neuron-docs where Neuron device memory comes from the Neuron docs
# Types with GPU/accelerator labels but no device resource (g6f, gr6f fractional GPUs; dl2q Qualcomm)
# are CPU-only here: a pod cannot request their devices.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m slurmgen.catalog.generate", description=__doc__.split("\n")[0])
    parser.add_argument("source", type=Path, help="Karpenter's instance-types.md (e.g. karpenter-instance-types-v1.14.1.md)")
    parser.add_argument("--karpenter-version", help="default: the vX.Y.Z in the source file name")
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name(DEFAULT_CSV_NAME))
    args = parser.parse_args(argv)
    version = args.karpenter_version or (m.group(1) if (m := _VERSION_RE.search(args.source.name)) else None)
    if not version:
        print(f"{args.source}: no vX.Y.Z in the file name; pass --karpenter-version", file=sys.stderr)
        return 2
    try:
        text = args.source.read_text(encoding="utf-8")
        csv_text = render(text, file_name=args.source.name, version=version.lstrip("v"))
        count = len(parse_catalog(csv_text, str(args.out)))  # never write a file the loader would refuse
    except (OSError, ValueError) as err:
        print(f"{args.source}: {err}", file=sys.stderr)
        return 2
    args.out.write_text(csv_text, encoding="utf-8")
    print(f"wrote {count} types to {args.out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
