"""Where slurmgen keeps what it may rebuild: the render cache (run/) and pulled charts (review/preview/)."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache_root() -> Path:
    """`slurmgen` under `$XDG_CACHE_HOME` (default `~/.cache`): the one root of our caches.

    A relative `$XDG_CACHE_HOME` is ignored (the XDG Base Directory spec: "If an implementation
    encounters a relative path in any of these variables it should consider the path invalid"),
    else the cache would land in whatever folder synth runs from, the repository included."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "slurmgen"
