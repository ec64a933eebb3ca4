"""The one number rule for text that spells a number: a Slurm duration, a TRES count, a Kubernetes
quantity or duration. Integers get their range from the schema (`maximum`, with the consumer's type
in `$comment`) and the loader's global range (_text); a text field's range is the schema's `x-range`:
its kind (how the consumer reads the text), the largest value the consumer's type holds, and that
consumer. A value past it is refused with the field, the value and the range, never handed to a
consumer that would wrap it (Slurm's `int` seconds), saturate it or refuse the whole file.

Each parser reads what the field's pattern allows and returns None for anything else: the schema
then reports the text itself.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any, Callable

_HUGE = 10 ** 60  # a run of more digits than any consumer type holds is simply too large (no int() of 5,000 digits)


def _int(digits: str) -> int:
    return _HUGE if len(digits) > 60 else int(digits)


_SLURM_TIME = re.compile(r"(?:([0-9]+)-)?([0-9]+)(?::([0-9]+))?(?::([0-9]+))?")


def slurm_seconds(text: str) -> int | None:
    """Seconds as Slurm's time_str2secs computes them (src/common/parse_time.c, slurm-26-05-3-1):
    `d-h:m:s`, `h:m:s`, `m:s` or bare minutes; None for UNLIMITED/INFINITE and other text."""
    match = _SLURM_TIME.fullmatch(text)
    if match is None:
        return None
    days, first, second, third = (_int(g) if g is not None else None for g in match.groups())
    if days is not None:
        return days * 86400 + (first or 0) * 3600 + (second or 0) * 60 + (third or 0)
    if third is not None:
        return (first or 0) * 3600 + (second or 0) * 60 + third
    return (first or 0) * 60 + (second or 0)  # minutes[:seconds]


_TRES = re.compile(r"([0-9]+)([KMGT]?)")


def tres_count(text: str) -> int | None:
    match = _TRES.fullmatch(text)
    return None if match is None else _int(match[1]) * 1024 ** ("KMGT".index(match[2]) + 1 if match[2] else 0)


_GO_UNITS = {"ns": 1, "us": 1000, "ms": 10 ** 6, "s": 10 ** 9, "m": 60 * 10 ** 9, "h": 3600 * 10 ** 9}
_GO_PART = re.compile(r"([0-9]+)(ns|us|ms|s|m|h)")


def go_nanoseconds(text: str) -> int | None:
    if text == "Never" or not re.fullmatch(r"(?:[0-9]+(?:ns|us|ms|s|m|h))+", text):
        return None
    return sum(_int(n) * _GO_UNITS[unit] for n, unit in _GO_PART.findall(text))


_QUANTITY = re.compile(r"([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P)?")
_FACTORS = {None: 1, "k": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9, "T": 10 ** 12, "P": 10 ** 15,
            "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50}


def quantity(text: str) -> int | None:
    match = _QUANTITY.fullmatch(text)
    if match is None:
        return None
    if len(match[1]) > 60:
        return _HUGE
    return int(Decimal(match[1]) * _FACTORS[match[2]])


def millicores(text: str) -> int | None:
    match = re.fullmatch(r"([0-9]+)(m?)", text)
    return None if match is None else _int(match[1]) * (1 if match[2] else 1000)


_PROMETHEUS_UNITS = {"h": 3600_000, "d": 86400_000, "w": 7 * 86400_000, "y": 365 * 86400_000}


def prometheus_milliseconds(text: str) -> int | None:
    match = re.fullmatch(r"([0-9]+)(h|d|w|y)", text)
    return None if match is None else _int(match[1]) * _PROMETHEUS_UNITS[match[2]]


def count(text: str) -> int | None:
    return _int(text) if text.isascii() and text.isdigit() else None


PARSERS: dict[str, tuple[Callable[[str], int | None], str]] = {
    "slurm-time": (slurm_seconds, "seconds"),
    "tres-count": (tres_count, ""),
    "go-duration": (go_nanoseconds, "nanoseconds"),
    "quantity": (quantity, ""),
    "quantity-milli": (millicores, "millicores"),
    "prometheus-duration": (prometheus_milliseconds, "milliseconds"),
    "count": (count, ""),
}


def slurm_time(seconds: int) -> str:
    days, rest = divmod(seconds, 86400)
    return f"{days}-{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"


def out_of_range(text: str, limits: dict[str, Any]) -> str | None:
    """Why `text` spells a number past its consumer's type (`limits`: the schema's x-range), or None."""
    parse, unit = PARSERS[limits["kind"]]
    value = parse(text)
    maximum = int(limits["max"])
    if value is None or value <= maximum:
        return None
    largest = f"{slurm_time(maximum)} ({maximum} seconds)" if limits["kind"] == "slurm-time" else (
        f"{maximum} {unit}".rstrip())
    return f"{text} is past the largest value its consumer holds; {limits['consumer']}: at most {largest}"
