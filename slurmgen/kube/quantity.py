"""Kubernetes quantities as numbers: one parser for the spec checks, the charts and the placement proof."""

from __future__ import annotations

import re

_NUMBER = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([A-Za-z]*)$")
_MEBIBYTES = {"": 1 / 2**20, "Ki": 1 / 1024, "Mi": 1, "Gi": 1024, "Ti": 1024**2, "Pi": 1024**3,
              "k": 1e3 / 2**20, "M": 1e6 / 2**20, "G": 1e9 / 2**20, "T": 1e12 / 2**20, "P": 1e15 / 2**20}


def cpu_millis(quantity: str) -> int:
    """`2` -> 2000, `250m` -> 250."""
    match = _NUMBER.match(str(quantity))
    if not match or match.group(2) not in ("", "m"):
        raise ValueError(f"unsupported CPU quantity {quantity!r}")
    value = float(match.group(1))
    return int(value if match.group(2) else value * 1000)


def memory_mib(quantity: str) -> float:
    """A memory quantity in MiB: `1Gi` -> 1024, `500M` -> 476.8..., `1048576` -> 1."""
    match = _NUMBER.match(str(quantity))
    if not match or match.group(2) not in _MEBIBYTES:
        raise ValueError(f"unsupported memory quantity {quantity!r}")
    return float(match.group(1)) * _MEBIBYTES[match.group(2)]
