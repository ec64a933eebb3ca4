"""Seconds per step of a run (`--timings`), shared by the pipeline, the workers and the command line."""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator


@dataclass
class Stopwatch:
    """Seconds per step of a run, summed when a step runs several times (checks run per cluster).

    The dict is shared on purpose: the caller's Result, a worker's report and the CLI's write step
    add to the same one, in the order the steps first ran."""

    timings: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def timer(self, step: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timings[step] = self.timings.get(step, 0.0) + time.perf_counter() - start

    def lines(self) -> list[str]:
        total = sum(self.timings.values()) or 1.0
        return [f"{step:>10}: {secs * 1000:8.1f} ms ({secs / total:5.1%})" for step, secs in self.timings.items()]
