"""Maintenance: regenerate the vendored CRD schemas from the pinned upstream files, or check a dir of them.

Not part of a render: synth, `--check` and the tests read only `slurmgen/verify/schemas/vendored/`.
This command is the one that touches the network. It refuses any file whose sha256 is not the pinned
one (`slurmgen/verify/schemas/crd_sources.json`, read by `pins`), and writes nothing unless all match:

    python -m slurmgen.maintain.crd_schemas refresh [--from DIR]   # download (or read DIR), verify, regenerate
    python -m slurmgen.maintain.crd_schemas verify DIR             # check a dir of upstream CRD YAML
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from ..verify.schemas import vendored
from ..verify.schemas.core import SchemaUnavailable
from ..verify.schemas.pins import CrdSource, load_sources

__all__ = ["FetchError", "fetch", "main", "refresh", "verify_dir"]

_TIMEOUT_SECONDS = 60
_CHUNK = 1 << 20

#: `opener(url, timeout=...)` returns a context manager whose `.read()` gives the body,
#: like `urllib.request.urlopen`.
Opener = Callable[..., Any]


class FetchError(RuntimeError):
    """A CRD file could not be downloaded or read, or its bytes are not the pinned ones."""


def verify_dir(crd_dir: Path | str, sources: Iterable[CrdSource] | None = None) -> list[str]:
    """Problems of a CRD dir against the pinned list: missing files and sha256 mismatches."""
    root = Path(crd_dir)
    if not root.is_dir():
        return [f"{root}: not a directory"]
    problems = []
    for source in load_sources() if sources is None else sources:
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


def fetch(
    target_dir: Path | str,
    *,
    sources: Iterable[CrdSource] | None = None,
    opener: Opener = urllib.request.urlopen,
) -> Path:
    """Download every pinned CRD file into `target_dir`, verified; returns the dir.

    Files already present with the right hash are skipped.  Bytes are checked before they
    are written, and written atomically, so the dir never holds a partial or wrong file.
    All failures are collected and raised together as one `FetchError`.
    """
    root = Path(target_dir)
    failures = []
    for source in load_sources() if sources is None else sources:
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


def refresh(
    from_dir: Path | str | None = None,
    *,
    target: Path | None = None,
    sources: Sequence[CrdSource] | None = None,
    opener: Opener = urllib.request.urlopen,
) -> dict[str, bytes]:
    """Regenerate the vendored schemas from the pinned upstream files; returns what was written.

    The upstream files come from `from_dir` or are downloaded at their pinned URLs.  Every
    sha256 is checked first: on any mismatch nothing is written (`FetchError`).
    """
    pinned = load_sources() if sources is None else tuple(sources)
    destination = vendored.VENDORED_DIR if target is None else Path(target)
    with tempfile.TemporaryDirectory(prefix="slurmgen-crds-") as scratch:
        if from_dir is None:
            crd_dir = fetch(scratch, sources=pinned, opener=opener)
        else:
            crd_dir = Path(from_dir)
            problems = verify_dir(crd_dir, pinned)
            if problems:
                listed = "\n".join(f"  - {problem}" for problem in problems)
                raise FetchError(f"{crd_dir} does not hold the pinned CRD files:\n{listed}")
        files = vendored.build(crd_dir, pinned)
    vendored.write(files, destination)
    return files


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
        prog="python -m slurmgen.maintain.crd_schemas",
        description="Regenerate the vendored CRD schemas from the pinned upstream files, or verify a dir of them.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    refresh_cmd = commands.add_parser(
        "refresh", help="download the pinned files (or read --from DIR), verify every sha256, regenerate vendored/")
    refresh_cmd.add_argument("--from", dest="from_dir", type=Path, metavar="DIR",
                             help="a local copy of the upstream CRD files, laid out as the pinned paths")
    verify_cmd = commands.add_parser("verify", help="check a dir of upstream CRD YAML against the pinned sha256 list")
    verify_cmd.add_argument("dir", type=Path)
    args = parser.parse_args(argv)

    if args.command == "refresh":
        try:
            files = refresh(args.from_dir)
        except (FetchError, SchemaUnavailable) as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        print(f"{len(load_sources())} CRD files verified; {len(files)} files written to {vendored.VENDORED_DIR}")
        return 0

    problems = verify_dir(args.dir)
    if problems:
        listed = "\n".join(f"  - {problem}" for problem in problems)
        print(f"{args.dir} does not match the pinned CRD files:\n{listed}", file=sys.stderr)
        return 1
    print(f"{len(load_sources())} CRD files match their pinned sha256 in {args.dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
