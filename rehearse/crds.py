"""The upstream CustomResourceDefinitions the rendered tree needs, installed for real.

The files in rehearse/crds/ are the pinned upstream CRD files byte for byte (full schemas with their
CEL rules, defaults and scope): the same files, at the same paths, that
slurmgen/verify/schemas/crd_sources.json pins by url, commit and sha256. That list is their
provenance; each file is checked against its sha256 before it is installed, and
`python -m slurmgen.maintain.crd_schemas verify rehearse/crds` checks the folder. (The generator's
vendored schemas are a converted, strict form without CEL, so the rehearsal does not use them.)
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .client import ApiClient

CRD_DIR = Path(__file__).resolve().parent / "crds"
SOURCES = Path(__file__).resolve().parents[1] / "slurmgen" / "verify" / "schemas" / "crd_sources.json"
CRDS_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
#: libyaml's loader where PyYAML has it: the CRD files are 4 MB, ten times faster to read
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
#: installed whatever the tree holds: the bootstrap and the root Application are Argo CD's own kinds
ALWAYS = {("argoproj.io", "Application"), ("argoproj.io", "AppProject")}


class CrdError(RuntimeError):
    """A vendored CRD file is missing, altered, or refused by the API server."""


@dataclass(frozen=True)
class Crd:
    """One CRD object and where it came from (path in crd_sources.json, upstream tag)."""

    body: dict[str, Any]
    path: str
    tag: str

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])

    @property
    def group_kind(self) -> tuple[str, str]:
        return str(self.body["spec"]["group"]), str(self.body["spec"]["names"]["kind"])


def needed(crds: list[Crd], kinds: set[tuple[str, str]]) -> list[Crd]:
    """The CRDs of the (group, kind) pairs a tree holds, and Argo CD's own: no more to install."""
    return [crd for crd in crds if crd.group_kind in kinds | ALWAYS]


def load() -> list[Crd]:
    """Every vendored CRD, each file checked against the sha256 that crd_sources.json pins."""
    found: list[Crd] = []
    for entry in json.loads(SOURCES.read_text())["files"]:
        path = CRD_DIR / entry["path"]
        if not path.is_file():
            raise CrdError(f"{path}: missing (crd_sources.json pins it; copy the upstream file at {entry['url']})")
        raw = path.read_bytes()
        if hashlib.sha256(raw).hexdigest() != entry["sha256"]:
            raise CrdError(f"{path}: its sha256 is not the one crd_sources.json pins (restore the upstream file)")
        for doc in yaml.load_all(raw, Loader=LOADER):
            if doc and doc.get("kind") == "CustomResourceDefinition":
                found.append(Crd(doc, entry["path"], entry.get("tag", "")))
    return found


def install(client: ApiClient, crds: list[Crd], timeout: float = 60.0) -> None:
    """Create each CRD (not a dry-run: the tree's custom resources need them served) and wait until
    the API server reports every one Established."""
    for crd in crds:
        reply = client.request("POST", CRDS_PATH, crd.body)
        if not reply.ok and reply.status != 409:  # 409: already there (a second cluster on the same server)
            raise CrdError(f"rehearse/crds/{crd.path}: refused by kube-apiserver: {reply.message}")
    deadline = time.monotonic() + timeout
    waiting = {crd.name for crd in crds}
    while waiting:
        waiting = {name for name in waiting if not _established(client, name)}
        if waiting and time.monotonic() > deadline:
            raise CrdError(f"CRDs not Established after {timeout:.0f}s: {', '.join(sorted(waiting))}")
        if waiting:
            time.sleep(0.2)


def _established(client: ApiClient, name: str) -> bool:
    conditions = (client.get(f"{CRDS_PATH}/{name}").body.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)
