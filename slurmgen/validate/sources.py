"""Provenance of the CRD schemas: where each file comes from, and its pinned sha256.

`crd_sources.json` (next to this module) lists every CRD file the validator relies on:
its path inside the CRD dir, the raw upstream URL at the pinned commit (tag for Slinky),
and the sha256 of the exact bytes (cross-checked against shared/crds/SOURCES.md).
A validator must not silently use other bytes, so `Validator.create` refuses a dir that
fails `verify_dir()`; extra files are allowed.

    python -m slurmgen.validate.sources fetch [--cache DIR]   # download + verify into a cache
    python -m slurmgen.validate.sources verify [DIR]          # check a dir (default: resolved)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

__all__ = [
    "CRD_DIR_ENV",
    "CRD_DIR_SEARCH_ORDER",
    "DEFAULT_CACHE_DIR",
    "SOURCES_FILE",
    "CrdSource",
    "FetchError",
    "default_crd_dir",
    "fetch",
    "load_sources",
    "main",
    "verify_dir",
]

SOURCES_FILE = Path(__file__).with_name("crd_sources.json")
CRD_DIR_ENV = "SLURMGEN_CRD_DIR"
#: The checkout's shared CRD dir: <repo>/../shared/crds (this file is <repo>/slurmgen/validate/).
SHARED_CRD_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "crds"
DEFAULT_CACHE_DIR = Path.home() / ".cache" / "slurmgen" / "crds"
#: Where `default_crd_dir()` looks; the first that applies wins.  The env var wins even if
#: the dir does not exist (an explicit choice should fail loudly, not fall through).
CRD_DIR_SEARCH_ORDER: tuple[str, ...] = (
    f"${CRD_DIR_ENV}",
    "<repo>/../shared/crds (if it is a directory)",
    "~/.cache/slurmgen/crds (filled by `python -m slurmgen.validate.sources fetch`)",
)
_TIMEOUT_SECONDS = 60
_CHUNK = 1 << 20

#: `opener(url, timeout=...)` returns a context manager whose `.read()` gives the body,
#: like `urllib.request.urlopen`.
Opener = Callable[..., Any]


class FetchError(RuntimeError):
    """A CRD file could not be downloaded, or its bytes are not the pinned ones."""


@dataclass(frozen=True)
class CrdSource:
    path: str  # relative to the CRD dir, POSIX separators
    url: str
    sha256: str


def load_sources(sources_file: Path = SOURCES_FILE) -> tuple[CrdSource, ...]:
    """The pinned file list; paths are checked to stay inside the CRD dir."""
    document = json.loads(sources_file.read_text(encoding="utf-8"))
    sources = tuple(
        CrdSource(path=entry["path"], url=entry["url"], sha256=entry["sha256"].lower())
        for entry in document["files"]
    )
    for source in sources:
        parts = PurePosixPath(source.path).parts
        if PurePosixPath(source.path).is_absolute() or ".." in parts or not parts:
            raise ValueError(f"{sources_file}: unsafe path {source.path!r}")
    return sources


def default_crd_dir() -> Path:
    """The CRD dir to use when none is given, following `CRD_DIR_SEARCH_ORDER`."""
    explicit = os.environ.get(CRD_DIR_ENV)
    if explicit:
        return Path(explicit).expanduser()
    if SHARED_CRD_DIR.is_dir():
        return SHARED_CRD_DIR
    return DEFAULT_CACHE_DIR


def verify_dir(crd_dir: Path | str) -> list[str]:
    """Problems of a CRD dir against the pinned list: missing files and sha256 mismatches."""
    root = Path(crd_dir)
    if not root.is_dir():
        return [f"{root}: not a directory"]
    problems = []
    for source in load_sources():
        target = root / source.path
        if not target.is_file():
            problems.append(f"{source.path}: missing (pinned: {source.url})")
            continue
        digest = _sha256_file(target)
        if digest != source.sha256:
            problems.append(
                f"{source.path}: sha256 {digest}, expected {source.sha256} (pinned: {source.url})"
            )
    return problems


def fetch(cache_dir: Path | str | None = None, *, opener: Opener = urllib.request.urlopen) -> Path:
    """Download every pinned CRD file into `cache_dir`, verified; returns the dir.

    Files already present with the right hash are skipped.  Bytes are checked before they
    are written, and written atomically, so the cache never holds a partial or wrong file.
    All failures are collected and raised together as one `FetchError`.
    """
    root = Path(cache_dir) if cache_dir is not None else DEFAULT_CACHE_DIR
    failures = []
    for source in load_sources():
        target = root / source.path
        if target.is_file() and _sha256_file(target) == source.sha256:
            continue
        try:
            data = _download(opener, source.url)
        except (OSError, urllib.error.URLError, ValueError) as error:
            failures.append(f"{source.path}: download of {source.url} failed: {error}")
            continue
        digest = hashlib.sha256(data).hexdigest()
        if digest != source.sha256:
            failures.append(
                f"{source.path}: sha256 mismatch for {source.url}: "
                f"expected {source.sha256}, got {digest} ({len(data)} bytes); not written"
            )
            continue
        _write_atomic(target, data)
    if failures:
        listed = "\n".join(f"  - {failure}" for failure in failures)
        raise FetchError(f"could not fetch {len(failures)} CRD file(s) into {root}:\n{listed}")
    return root


def _download(opener: Opener, url: str) -> bytes:
    with opener(url, timeout=_TIMEOUT_SECONDS) as response:
        return response.read()


def _write_atomic(target: Path, data: bytes) -> None:
    """Write to a temp file in the same dir, then rename: readers see old or new, never half."""
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as temp:
            temp.write(data)
            temp.flush()
            os.fsync(temp.fileno())
        os.replace(temp_name, target)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


# --------------------------------------------------------------------------- CLI
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m slurmgen.validate.sources",
        description="Fetch or verify the pinned upstream CRD files used for validation.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    fetch_cmd = commands.add_parser("fetch", help="download and verify into a cache dir")
    fetch_cmd.add_argument("--cache", type=Path, default=DEFAULT_CACHE_DIR, help=f"default: {DEFAULT_CACHE_DIR}")
    verify_cmd = commands.add_parser("verify", help="check a CRD dir against the pinned sha256 list")
    verify_cmd.add_argument("dir", nargs="?", type=Path, help="default: " + " -> ".join(CRD_DIR_SEARCH_ORDER))
    args = parser.parse_args(argv)

    if args.command == "fetch":
        try:
            root = fetch(args.cache)
        except FetchError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        print(f"{len(load_sources())} CRD files verified in {root}")
        return 0

    root = args.dir if args.dir is not None else default_crd_dir()
    problems = verify_dir(root)
    if problems:
        listed = "\n".join(f"  - {problem}" for problem in problems)
        print(f"{root} does not match the pinned CRD files:\n{listed}", file=sys.stderr)
        return 1
    print(f"{len(load_sources())} CRD files match their pinned sha256 in {root}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
