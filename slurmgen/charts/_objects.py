"""One way to emit a Kubernetes object from a chart: explicit name, explicit namespace, body by JSON patch.

cdk8s in Python cannot take `spec`/`data` as constructor arguments (cdk8s-core#2570), and its auto
names carry hash suffixes; every object here is created through `emit`, so both are handled once.
"""

from __future__ import annotations

from typing import Any, Mapping

from cdk8s import ApiObject, ApiObjectMetadata, JsonPatch
from constructs import Construct

from .. import _jsii_channel
from ..vocabulary import MANAGED_BY, SYNC_WAVE


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
    """Create one ApiObject named exactly `name`; `body` holds the top-level fields after metadata.

    The same three kernel calls either way (create the ApiObject, `JsonPatch.add` per body field,
    `addJsonPatch`): straight over the direct channel when this process has it
    (`_jsii_channel.direct`: no proxy objects, one walk of the body), else through jsii's API.
    """
    construct_id = f"{kind}-{namespace or '_'}-{name}"
    labels = {**MANAGED_BY, **(labels or {})}
    for key, value in [*labels.items(), *(annotations or {}).items()]:
        if not isinstance(value, str):  # jsii refuses it as a struct field; the direct path must too
            raise TypeError(f"{kind} {name}: metadata value of {key!r} is {value!r}, not a string")
    send = _jsii_channel.direct()
    if send is None:
        obj = ApiObject(scope, construct_id, api_version=api_version, kind=kind, metadata=ApiObjectMetadata(
            name=name, namespace=namespace, labels=labels, annotations=dict(annotations) if annotations else None,
            finalizers=list(finalizers) if finalizers else None))
        for key, value in (body or {}).items():
            obj.add_json_patch(JsonPatch.add(f"/{key}", _plain(value)))
    else:
        metadata: dict[str, Any] = {"name": name, "labels": _wire(labels)}
        if namespace is not None:
            metadata["namespace"] = namespace
        if annotations:
            metadata["annotations"] = _wire(annotations)
        if finalizers:
            metadata["finalizers"] = list(finalizers)
        props = {"apiVersion": api_version, "kind": kind,
                 "metadata": {"$jsii.struct": {"fqn": "cdk8s.ApiObjectMetadata", "data": metadata}}}
        created = send({"api": "create", "fqn": "cdk8s.ApiObject", "overrides": [], "interfaces": [],
                        "args": [{"$jsii.byref": getattr(scope, "__jsii_ref__").ref}, construct_id,
                                 {"$jsii.struct": {"fqn": "cdk8s.ApiObjectProps", "data": props}}]})
        for key, value in (body or {}).items():
            patch = send({"api": "sinvoke", "fqn": "cdk8s.JsonPatch", "method": "add",
                          "args": [f"/{key}", _wire(value)]})["result"]
            send({"api": "invoke", "objref": created, "method": "addJsonPatch", "args": [patch]})
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


def _wire(value: Any) -> Any:
    """`_plain(value)` as jsii's protocol spells it for a JSON value: each map as `{"$jsii.map": ...}`."""
    if isinstance(value, Mapping):
        return {"$jsii.map": {str(k): _wire(value[k]) for k in sorted(value, key=str) if value[k] is not None}}
    if isinstance(value, (list, tuple)):
        return [_wire(v) for v in value]
    return value


def wave(n: int, **extra: str) -> dict[str, str]:
    """Annotations putting an object in Argo CD sync wave `n` (annotation values are strings)."""
    return {SYNC_WAVE: str(n), **extra}
