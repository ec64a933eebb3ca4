"""One way to emit a Kubernetes object from a chart: explicit name, explicit namespace, body by JSON patch.

cdk8s in Python cannot take `spec`/`data` as constructor arguments (cdk8s-core#2570), and its auto
names carry hash suffixes; every object here is created through `emit`, so both are handled once.
"""

from __future__ import annotations

from typing import Any, Mapping

from cdk8s import ApiObject, ApiObjectMetadata, JsonPatch
from constructs import Construct

from slurmgen.kube.vocabulary import MANAGED_BY, SYNC_WAVE


def emit(
    scope: Construct,
    *,
    api_version: str,
    kind: str,
    name: str,
    namespace: str | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    finalizers: list[str] | None = None,
    body: Mapping[str, Any] | None = None,
) -> None:
    """Create one ApiObject named exactly `name`; `body` holds the top-level fields after metadata,
    each added with one JSON patch (cdk8s's public API: ApiObject, JsonPatch.add, add_json_patch)."""
    construct_id = f"{kind}-{namespace or '_'}-{name}"
    labels = {**MANAGED_BY, **(labels or {})}
    obj = ApiObject(scope, construct_id, api_version=api_version, kind=kind, metadata=ApiObjectMetadata(
        name=name, namespace=namespace, labels=labels, annotations=dict(annotations) if annotations else None,
        finalizers=list(finalizers) if finalizers else None))
    for key, value in (body or {}).items():
        obj.add_json_patch(JsonPatch.add(f"/{key}", _plain(value)))
    _record(scope, api_version, kind, namespace)


def _record(scope: Construct, api_version: str, kind: str, namespace: str | None) -> None:
    """Remember what a chart emitted on the Python side: reading it back through jsii costs a round trip per field."""
    emitted = getattr(scope, "emitted", None)
    if emitted is not None:
        emitted.append((api_version, kind, namespace))


def _plain(value: Any) -> Any:
    """Drop None values and sort keys, so the YAML shows only what was meant, in a stable order."""
    if isinstance(value, Mapping):
        return {str(k): _plain(value[k]) for k in sorted(value, key=str) if value[k] is not None}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def wave(n: int, **extra: str) -> dict[str, str]:
    """Annotations putting an object in Argo CD sync wave `n` (annotation values are strings)."""
    return {SYNC_WAVE: str(n), **extra}
