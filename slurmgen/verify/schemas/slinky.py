"""Checks for the schemaless parts of Slinky (slinky.slurm.net/v1beta1) custom resources.

Slinky's container, pod-template and service wrappers are stored as
`x-kubernetes-preserve-unknown-fields: true`, so the API server accepts any typo there
(config/crd/bases/slinky.slurm.net_nodesets.yaml and the other Slinky CRDs @ slurm-operator v1.2.1).
They have the shape of core types, so they are validated against the strict core schemas here:

- ContainerWrapper fields -> `io.k8s.api.core.v1.Container` with `name` optional
  (the operator merges them onto a container it names itself);
- every `spec.template.spec` -> `PodSpec` with `containers` optional;
- every `spec.service.spec` -> `ServiceSpec`;
- NodeSet `spec.volumeClaimTemplates[]` -> `PersistentVolumeClaim`.

The operator has no default images, so every wrapper must set `image`.  Two exceptions,
where the wrapper is not used: `Controller.spec.reconfigure` may be left out unless
`spec.inplaceReconfigure` is true, and an `external: true` Controller/Accounting runs no
pods at all.  A wrapper that is present must still set its image.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .core import CoreSchemas, Issue, Schema, schema_issues

__all__ = ["GROUP", "VERSION", "WRAPPERS", "check"]

GROUP = "slinky.slurm.net"
VERSION = "v1beta1"

#: ContainerWrapper fields of `spec`, per kind.
WRAPPERS: dict[str, tuple[str, ...]] = {
    "Controller": ("slurmctld", "reconfigure", "logfile"),
    "NodeSet": ("slurmd", "logfile"),
    "LoginSet": ("login", "initconf"),
    "RestApi": ("slurmrestd",),
    "Accounting": ("slurmdbd",),
}
_NO_IMAGE = "required: the Slinky operator has no default image"


def check(obj: Mapping[str, Any], core: CoreSchemas) -> list[Issue]:
    """Issues in the schemaless parts of one Slinky object (empty for other kinds)."""
    if obj.get("apiVersion") != f"{GROUP}/{VERSION}":
        return []
    kind = str(obj.get("kind"))
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return []  # a missing or mistyped spec is already reported by the CRD schema
    issues: list[Issue] = []
    for field in WRAPPERS.get(kind, ()):
        issues += _check_wrapper(spec, field, required=_wrapper_required(kind, spec, field), core=core)
    issues += _check_nested(spec, ("template", "spec"), core.pod_spec)
    issues += _check_nested(spec, ("service", "spec"), core.service_spec)
    if kind == "NodeSet":
        issues += _check_claim_templates(spec.get("volumeClaimTemplates"), core)
    return issues


def _wrapper_required(kind: str, spec: Mapping[str, Any], field: str) -> bool:
    if spec.get("external") is True:
        return False
    if kind == "Controller" and field == "reconfigure":
        return spec.get("inplaceReconfigure") is True
    return True


def _check_wrapper(
    spec: Mapping[str, Any], field: str, *, required: bool, core: CoreSchemas
) -> list[Issue]:
    path = ("spec", field)
    if field not in spec or spec[field] is None:
        return [(path, f"{_NO_IMAGE} (set {field}.image)")] if required else []
    container = spec[field]
    issues = schema_issues(core.container_unnamed, container, path)
    if isinstance(container, Mapping) and not container.get("image"):
        issues.append((path + ("image",), _NO_IMAGE))
    return issues


def _check_nested(
    spec: Mapping[str, Any], keys: tuple[str, str], schema: Schema
) -> list[Issue]:
    outer = spec.get(keys[0])
    if not isinstance(outer, Mapping) or outer.get(keys[1]) is None:
        return []
    return schema_issues(schema, outer[keys[1]], ("spec", *keys))


def _check_claim_templates(templates: Any, core: CoreSchemas) -> list[Issue]:
    if templates is None:
        return []
    path = ("spec", "volumeClaimTemplates")
    if not isinstance(templates, list):
        return [(path, f"{repr(templates)[:80]} is not of type 'array'")]
    issues: list[Issue] = []
    for index, claim in enumerate(templates):
        issues += schema_issues(core.persistent_volume_claim, claim, (*path, index))
    return issues
