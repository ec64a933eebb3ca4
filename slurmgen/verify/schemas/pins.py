"""The pinned upstream CRD files the vendored schemas were made from (`crd_sources.json`, beside this module).

Each entry names a file's path in a CRD dir, its raw URL at the pinned commit (tag for Slinky), the
repository, tag and commit, and the sha256 of the exact bytes. Synth never reads the upstream files: it
uses the strict schemas generated from them into `vendored/`. `vendored.problems` checks that folder
against these pins; the maintenance command `python -m slurmgen.maintain.crd_schemas` regenerates it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

__all__ = ["SOURCES_FILE", "CrdSource", "load_sources"]

SOURCES_FILE = Path(__file__).with_name("crd_sources.json")


@dataclass(frozen=True)
class CrdSource:
    path: str  # relative to the CRD dir, POSIX separators
    url: str
    sha256: str
    repository: str = ""
    tag: str = ""
    commit: str = ""

    def provenance(self) -> dict[str, str]:
        """What a vendored schema records about the upstream file it was made from."""
        return {"path": self.path, "url": self.url, "repository": self.repository, "tag": self.tag,
                "commit": self.commit, "sha256": self.sha256}


def load_sources(sources_file: Path = SOURCES_FILE) -> tuple[CrdSource, ...]:
    """The pinned file list; paths are checked to stay inside the CRD dir."""
    document = json.loads(sources_file.read_text(encoding="utf-8"))
    sources = tuple(
        CrdSource(path=entry["path"], url=entry["url"], sha256=entry["sha256"].lower(),
                  repository=entry.get("repository", ""), tag=entry.get("tag", ""), commit=entry.get("commit", ""))
        for entry in document["files"]
    )
    for source in sources:
        parts = PurePosixPath(source.path).parts
        if PurePosixPath(source.path).is_absolute() or ".." in parts or not parts:
            raise ValueError(f"{sources_file}: unsafe path {source.path!r}")
        if not re.fullmatch(r"[0-9a-f]{64}", source.sha256):
            raise ValueError(f"{sources_file}: {source.path}: sha256 is not 64 hex digits")
    return sources
