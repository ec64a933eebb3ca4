"""Play a cluster's tree against the rehearsal API server: every object with server-side dry-run.

Schema, CEL rules, defaulting and admission all come from the real kube-apiserver; nothing is stored
(dryRun=All) except the namespaces the objects live in, which are created for real first (Argo CD's
CreateNamespace=true does so before it syncs).
"""

from __future__ import annotations

import json
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .client import APPLY_PATCH, ApiClient
from .tree import TreeObject, read_cluster

#: the field managers of Argo CD v3.5.1's server-side apply (common.ArgoCDSSAManager) and of kubectl's client-side apply
SSA_MANAGER = "argocd-controller"
CSA_MANAGER = "kubectl-client-side-apply"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


@dataclass(frozen=True)
class Resource:
    """Where a kind is served: its plural name and whether it is namespaced."""

    plural: str
    namespaced: bool


@dataclass
class Outcome:
    """What the API server said about one cluster's objects."""

    accepted: list[TreeObject] = field(default_factory=list)
    refused: list[tuple[TreeObject, str]] = field(default_factory=list)
    warnings: list[tuple[TreeObject, str]] = field(default_factory=list)
    seconds: float = 0.0


class Discovery:
    """kind -> Resource per apiVersion, read once from the API server's discovery documents."""

    def __init__(self, client: ApiClient) -> None:
        self._client = client
        self._seen: dict[str, dict[str, Resource] | None] = {}

    def resource(self, api_version: str, kind: str) -> Resource | None:
        if api_version not in self._seen:
            path = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
            reply = self._client.get(path)
            self._seen[api_version] = {r["kind"]: Resource(r["name"], bool(r["namespaced"]))
                                       for r in reply.body.get("resources", []) if "/" not in r["name"]} \
                if reply.ok else None
        kinds = self._seen[api_version]
        return kinds.get(kind) if kinds else None


def object_path(obj: TreeObject, res: Resource, namespace: str | None) -> str:
    """The collection URL of `obj`'s kind (in its namespace when namespaced)."""
    group = f"/api/{obj.api_version}" if "/" not in obj.api_version else f"/apis/{obj.api_version}"
    quoted = urllib.parse.quote
    return f"{group}/namespaces/{quoted(namespace)}/{res.plural}" if namespace else f"{group}/{res.plural}"


def ensure_namespaces(client: ApiClient, names: set[str]) -> None:
    """Create each namespace for real (the objects' dry-runs need them); one that exists is fine."""
    for name in sorted(names):
        reply = client.request("POST", "/api/v1/namespaces",
                               {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        if not reply.ok and reply.status != 409:
            raise RuntimeError(f"creating namespace {name}: {reply.message}")


def dry_run(client: ApiClient, obj: TreeObject, res: Resource) -> tuple[bool, str, list[str]]:
    """Apply one object with dryRun=All as Argo CD would: server-side apply, or kubectl's client-side
    apply of a new object (a create carrying the last-applied-configuration annotation)."""
    namespace = (obj.body.get("metadata", {}).get("namespace") or obj.default_namespace) if res.namespaced else None
    body: dict[str, Any] = json.loads(json.dumps(obj.body))
    if namespace:
        body["metadata"]["namespace"] = namespace
    collection = object_path(obj, res, namespace)
    query = {"dryRun": "All", "fieldValidation": "Strict" if obj.validate else "Ignore"}
    if obj.server_side:
        reply = client.request("PATCH", f"{collection}/{urllib.parse.quote(obj.name)}", body, content_type=APPLY_PATCH,
                               query={**query, "fieldManager": SSA_MANAGER, "force": "true"})
    else:
        annotations = body["metadata"].setdefault("annotations", {})
        annotations[LAST_APPLIED] = json.dumps(body, separators=(",", ":"), sort_keys=True) + "\n"
        reply = client.request("POST", collection, body, query={**query, "fieldManager": CSA_MANAGER})
    return reply.ok, reply.message, reply.warnings


def play(client: ApiClient, folder: Path, say, objects: list[TreeObject] | None = None) -> Outcome:
    """Every object of dist/<cluster>/ (`folder`, or its `objects` already read) dry-run against the
    server, refusals in its words."""
    started = time.monotonic()
    objects = read_cluster(folder) if objects is None else objects
    discovery = Discovery(client)
    kinds = {(o.api_version, o.kind): discovery.resource(o.api_version, o.kind) for o in objects}
    ensure_namespaces(client, {o.body.get("metadata", {}).get("namespace") or o.default_namespace
                               for o in objects if (res := kinds[(o.api_version, o.kind)]) and res.namespaced})
    say(f"{folder.name}: applying {len(objects)} objects with dryRun=All")
    outcome = Outcome()
    for obj in objects:
        res = kinds[(obj.api_version, obj.kind)]
        if res is None:
            outcome.refused.append((obj, f"the API server serves no {obj.kind} in {obj.api_version}: "
                                         "its CRD is not installed (vendor it under rehearse/crds/)"))
            continue
        ok, message, warnings = dry_run(client, obj, res)
        outcome.warnings += [(obj, w) for w in warnings]
        if ok:
            outcome.accepted.append(obj)
        else:
            outcome.refused.append((obj, message))
    outcome.seconds = time.monotonic() - started
    return outcome
