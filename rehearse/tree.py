"""A committed dist/<cluster>/ as Argo CD sees it: each object, the Application that syncs its
folder, and so its namespace and how Argo CD would apply it.

Argo CD v3.5.1 applies with `kubectl apply` logic (client-side, which writes the
last-applied-configuration annotation) unless the Application's syncOptions or the object's
`argocd.argoproj.io/sync-options` annotation say ServerSideApply=true (docs/user-guide/sync-options.md
at that tag). An object no Application syncs (bootstrap/, argocd/) is applied by hand with
`kubectl apply`, as docs/bootstrap.md says. Either way the API server checks fields strictly
(kubectl's and gitops-engine's default, pkg/utils/kube/resource_ops.go at v3.5.1: an unknown field
is an error) unless the sync option Validate=false, on the Application or the object, turns it off.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from slurmgen._input import RENDERED_MAX_BYTES, UnreadableFile, read_text
from slurmgen.kube.documents import DocumentError, load_documents

SYNC_OPTIONS = "argocd.argoproj.io/sync-options"


@dataclass(frozen=True)
class Owner:
    """An Application of the tree: the folder it syncs, its destination namespace, its sync options."""

    name: str
    path: PurePosixPath
    namespace: str
    server_side: bool
    validate: bool


@dataclass(frozen=True)
class TreeObject:
    """One object of the tree, with what its Application decides about it."""

    file: Path
    body: dict[str, Any]
    owner: str  # the Application syncing it, or "bootstrap (kubectl apply)"
    default_namespace: str  # for a namespaced object without metadata.namespace
    server_side: bool
    validate: bool  # fieldValidation=Strict; False with the sync option Validate=false

    @property
    def api_version(self) -> str:
        return str(self.body.get("apiVersion", ""))

    @property
    def kind(self) -> str:
        return str(self.body.get("kind", ""))

    @property
    def group_kind(self) -> tuple[str, str]:
        """(API group, kind): "" is the core group."""
        return (self.api_version.rpartition("/")[0], self.kind)

    @property
    def name(self) -> str:
        return str(self.body.get("metadata", {}).get("name", ""))

    @property
    def label(self) -> str:
        """`Kind namespace/name` for messages."""
        ns = self.body.get("metadata", {}).get("namespace")
        return f"{self.kind} {ns + '/' if ns else ''}{self.name}"


def read_cluster(folder: Path) -> list[TreeObject]:
    """Every object under `folder` (dist/<cluster>/), in file order, each with its owner's decisions.

    Read as every other reader of dist/ reads it: a regular file of bounded size (no link, FIFO or
    device), through the bounded YAML reader; UnreadableFile or DocumentError (one line) otherwise."""
    docs = [(path, doc) for path in sorted(folder.rglob("*.yaml")) for doc in _documents(path)
            if isinstance(doc, dict)]
    owners = [owner for _, doc in docs for owner in _owners(doc)]
    objects = []
    for path, doc in docs:
        owner = _owner_of(path.parent.relative_to(folder.parent), owners)
        words = _sync_options(doc)
        server_side = "ServerSideApply=true" in words or (
            "ServerSideApply=false" not in words and owner is not None and owner.server_side)
        validate = "Validate=false" not in words and (owner is None or owner.validate)
        objects.append(TreeObject(path, doc, owner.name if owner else "bootstrap (kubectl apply)",
                                  owner.namespace if owner else "default", server_side, validate))
    return objects


def _documents(path: Path) -> list[Any]:
    """The documents of one file; its error names the file."""
    try:
        return load_documents(read_text(path, max_bytes=RENDERED_MAX_BYTES, advice="no rendered object is that large"))
    except (DocumentError, UnreadableFile) as exc:
        raise type(exc)(f"{path}: {exc}") from None


def _owners(doc: dict[str, Any]) -> list[Owner]:
    """The folders an Application document syncs (one per source with a path)."""
    if doc.get("kind") != "Application" or not str(doc.get("apiVersion", "")).startswith("argoproj.io/"):
        return []
    spec = doc.get("spec") or {}
    sources = spec.get("sources") or [spec.get("source") or {}]
    options = (spec.get("syncPolicy") or {}).get("syncOptions") or []
    namespace = (spec.get("destination") or {}).get("namespace") or "default"
    return [Owner(doc["metadata"]["name"], PurePosixPath(src["path"]), namespace, "ServerSideApply=true" in options,
                  "Validate=false" not in options)
            for src in sources if src.get("path")]


def _owner_of(relative: Path, owners: list[Owner]) -> Owner | None:
    """The Application whose source path ends with `relative` (<cluster>/<folder>): the repository
    path is dist/<cluster>/<folder>, wherever the tree played here lies."""
    parts = PurePosixPath(relative.as_posix()).parts
    for owner in owners:
        if owner.path.parts[-len(parts):] == parts:
            return owner
    return None


def _sync_options(doc: dict[str, Any]) -> set[str]:
    """The object's own `argocd.argoproj.io/sync-options` words: they win over its Application's."""
    options = str(((doc.get("metadata") or {}).get("annotations") or {}).get(SYNC_OPTIONS, ""))
    return {w.strip() for w in options.split(",") if w.strip()}
