"""The first step of a run: which clusters will render, and the worker processes to render them.

Why a module of its own: it imports only the render cache and the process pool (~50 ms), not the
spec, model, chart and validation modules (~150 ms more), so the command line starts the workers
first and imports the rest while they start (each worker needs ~0.5 s to start its interpreter and
jsii kernel). `pipeline.run` does the same itself when it is called without a launch (tests,
library use).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from . import cache as render_cache, parallel
from ..catalog.catalog import site_catalog_path


@dataclass
class Launch:
    """What `pipeline.run` continues from: the cache keys, and the workers, already starting."""

    site_csv: Path | None  # the site instance-types.csv beside the specs (in the keys; workers load it)
    keys: dict[str, str]  # spec source -> cache key (empty with the cache off)
    likely: list[Path]  # spec files without a cache entry: what will render
    workers: parallel.Workers
    timings: dict[str, float] = field(default_factory=dict)  # "cache": seconds spent on the keys


def site_csvs(spec_paths: Sequence[Path]) -> list[Path]:
    """Every site `instance-types.csv` beside the specs, sorted (pipeline.site_catalog refuses two)."""
    return sorted({p for p in (site_catalog_path(path.parent) for path in spec_paths) if p is not None})


def site_csv(spec_paths: Sequence[Path]) -> Path | None:
    """The site `instance-types.csv` the specs are rendered with."""
    found = site_csvs(spec_paths)
    return found[0] if found else None


def launch(spec_paths: Sequence[Path], *, use_cache: bool, own_catalog: bool = True,
           processes: int | None = None) -> Launch:
    """Cache keys of the specs (with `use_cache`), and the worker processes for the clusters that have
    no entry: as many as parallel.choose_processes allows (or `processes`), minus this one. A
    caller's own catalog (`own_catalog` False) is not in the key and cannot reach a worker: no
    worker then. The caller must enter and leave `launch.workers` (a context manager)."""
    csv = site_csv(spec_paths) if own_catalog else None
    keys: dict[str, str] = {}
    timings: dict[str, float] = {}
    if use_cache:
        start = time.perf_counter()
        shared = render_cache.generator_digest()
        options = render_cache.environment_options()
        for path in spec_paths:
            key = render_cache.cluster_key(path, shared, csv, options)
            if key:
                keys[str(path)] = key
        timings["cache"] = time.perf_counter() - start
    likely = [p for p in spec_paths if not (str(p) in keys and render_cache.exists(p.stem, keys[str(p)]))]
    wanted = processes if processes is not None else parallel.choose_processes(len(likely))
    extra = max(0, min(wanted, len(likely)) - 1) if own_catalog else 0
    return Launch(csv, keys, likely, parallel.Workers(extra, csv), timings)
