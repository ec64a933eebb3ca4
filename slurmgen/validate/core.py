"""Core Kubernetes kinds, validated with kubernetes-validate's bundled *strict* schemas.

`kubernetes_validate.validate()` re-reads the 1.3 MB `_definitions.json` and builds a new
validator on every call (about 8 ms per document).  Here the definitions of one Kubernetes
version are read once, registered with `referencing`, and one jsonschema validator per
kind (or per sub-schema) is built lazily and cached.

The per-kind files (`vX-local-strict/<kind>-<group>-<version>.json`) are the same
definitions as `_definitions.json#/$defs/<name>` (checked for 1.34: they differ only by an
`enum` on apiVersion/kind and by `$ref` spelling), so kinds are indexed straight from the
definitions' `x-kubernetes-group-version-kind`, which also avoids guessing file names.

Every schema is compiled twice (`Schema`): jsonschema-rs, a compiled validator about 50x
faster, answers "valid?" first; jsonschema judges every object that answer does not pass and
writes the messages.  Rendered objects are almost always valid, so validation costs about
what the fast answer costs, and every problem is still found and worded by jsonschema.

This module also holds the small helpers shared by the CRD and Slinky validators:
the format checker, and `schema_issues()` which turns jsonschema errors into
`(path, message)` pairs.
"""

from __future__ import annotations

import base64
import binascii
import importlib.resources
import json
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Callable, TypeAlias

import jsonschema
from jsonschema.protocols import Validator as JsonValidator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from .patterns import RUST_END, go_pattern

__all__ = [
    "DEFAULT_KUBERNETES_VERSION",
    "DEFINITIONS_URI",
    "OBJECT_META",
    "CONTAINER",
    "CONTAINER_UNNAMED",
    "POD_SPEC",
    "POD_SPEC_NO_CONTAINERS",
    "SERVICE_SPEC",
    "PERSISTENT_VOLUME_CLAIM",
    "FORMAT_CHECKER",
    "CoreSchemas",
    "Schema",
    "Issue",
    "PathPart",
    "SchemaUnavailable",
    "definition_ref",
    "schema_issues",
    "supported_versions",
]

DEFAULT_KUBERNETES_VERSION = "1.34"

#: `$id` of `_definitions.json`; every bundled `$ref` resolves against it.
DEFINITIONS_URI = "https://kubernetes.io/api/_definitions.json"

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
CONTAINER = "io.k8s.api.core.v1.Container"
POD_SPEC = "io.k8s.api.core.v1.PodSpec"
SERVICE_SPEC = "io.k8s.api.core.v1.ServiceSpec"
PERSISTENT_VOLUME_CLAIM = "io.k8s.api.core.v1.PersistentVolumeClaim"
#: Derived definitions added to the registry: a Slinky ContainerWrapper is merged onto a
#: container the operator names itself, and Slinky's `template.spec` has no containers.
CONTAINER_UNNAMED = "slurmgen.Container.nameOptional"
POD_SPEC_NO_CONTAINERS = "slurmgen.PodSpec.containersOptional"

_SCHEMA_ROOT = "kubernetes-json-schema"
_STRICT_DIR = re.compile(r"^v(\d+)\.(\d+)\.(\d+)-local-strict$")
_MAX_MESSAGE = 300
_FORMAT_MESSAGES = {
    "date-time": "is not an RFC 3339 date-time",
    "int32": "is out of range for int32",
    "int64": "is out of range for int64",
    "byte": "is not base64 (format 'byte')",
}

PathPart: TypeAlias = str | int
#: One validation finding: a path inside the validated object and a message.
Issue: TypeAlias = tuple[tuple[PathPart, ...], str]


class SchemaUnavailable(RuntimeError):
    """The schemas needed to validate cannot be loaded (missing dir, bad version, ...)."""


# --------------------------------------------------------------------------- formats
#: Formats that are cheap to check and that the API server (or the Go decoder) rejects.
#: Every other `format` (int-or-string, double, uri, ...) is an annotation only.
FORMAT_CHECKER = jsonschema.FormatChecker(formats=())

_RFC3339 = re.compile(
    r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[Tt]([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)"
    r"(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)$"
)


@FORMAT_CHECKER.checks("date-time")
def _is_date_time(value: object) -> bool:
    return not isinstance(value, str) or _RFC3339.match(value) is not None


@FORMAT_CHECKER.checks("int32")
def _is_int32(value: object) -> bool:
    return not isinstance(value, int) or -(2**31) <= value < 2**31


@FORMAT_CHECKER.checks("int64")
def _is_int64(value: object) -> bool:
    return not isinstance(value, int) or -(2**63) <= value < 2**63


@FORMAT_CHECKER.checks("byte")
def _is_base64(value: object) -> bool:
    """Secret.data and friends must be base64: a plain string there is a common slip."""
    if not isinstance(value, str):
        return True
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


#: jsonschema-rs checks string formats with these functions (its own checks of these would differ),
#: and other formats it knows (uri, email, ...) too, which only makes it stricter: a value it
#: refuses is judged by jsonschema, which ignores them. It never calls a format function for a
#: number, so int32/int64 become bounds in its copy of the schema (for_precheck).
PRECHECK_FORMATS = {"date-time": _is_date_time, "byte": _is_base64}
_INT_BOUNDS = {"int32": {"minimum": -(2**31), "maximum": 2**31 - 1},
               "int64": {"minimum": -(2**63), "maximum": 2**63 - 1}}
#: Keywords whose values are instance data, not schemas: copied as they are.
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples", "example"})


# --------------------------------------------------------------------------- two engines
#: Schema checks judged by jsonschema alone before the pre-check is set up: importing jsonschema-rs
#: and converting the core definitions cost ~60 ms, which one cluster (75 objects, ~100 checks,
#: ~20 ms to judge) would not earn back; a fleet does within its second cluster.
PRECHECK_AFTER = 150
_COMPILING = threading.Lock()


class Schema:
    """One schema, compiled for two engines: a fast pre-check and the judge.

    The pre-check (jsonschema-rs) is asked first and only answers valid or not; whatever it does
    not pass, `explain` (jsonschema) validates again and its errors are the ones reported.  The
    pre-check is never more lenient than the judge (tests/validate/test_precheck.py mutates
    every example object to prove it), so skipping the judge on a pass loses nothing.  It is
    compiled when the run has judged PRECHECK_AFTER objects (`ready`), or when asked for
    (`precheck`); it stays None where jsonschema-rs cannot compile the schema: the judge does it all.
    """

    __slots__ = ("explain", "_compile", "_ready", "_precheck")

    def __init__(self, explain: JsonValidator, compile: Callable[[], Any] | None = None,
                 ready: Callable[[], bool] | None = None) -> None:
        self.explain = explain
        self._compile = compile
        self._ready = ready or (lambda: True)
        self._precheck: Any = None

    @property
    def precheck(self) -> Any:
        """The compiled pre-check (a jsonschema_rs validator), compiled now if it was not; or None.

        Two check threads may ask at once (the run validates in a pool): one compiles, under a
        lock; a schema that fails to compile (any error) simply has no pre-check."""
        if self._compile is not None:
            with _COMPILING:
                compile = self._compile
                if compile is not None:  # not compiled by another thread meanwhile
                    try:
                        self._precheck = compile()
                    except Exception:  # noqa: BLE001 - no pre-check: the judge does it all
                        self._precheck = None
                    self._compile = None
        return self._precheck

    def passes(self, instance: Any) -> bool:
        """True when the pre-check finds `instance` valid; False for anything else (also when
        it cannot read the instance, e.g. a non-string key, or is not set up yet): the judge then decides."""
        precheck = self._precheck
        if precheck is None:
            if self._compile is None or not self._ready():
                return False
            precheck = self.precheck
            if precheck is None:
                return False
        try:
            return bool(precheck.is_valid(instance))
        except Exception:  # any failure of the pre-check only means: ask the judge
            return False


def for_precheck(schema: Any) -> Any:
    """A copy of `schema` for jsonschema-rs, checking what jsonschema checks.

    - each CRD `pattern` translated from the CRD's own spelling (`x-go-pattern`) for Rust's regex
      engine, as it is for Python's `re` (patterns.go_pattern: Go's meaning in both);
    - `format: int32/int64` as bounds, added with `allOf` (kept beside any bounds of the node).
    """
    if isinstance(schema, dict):
        out = {key: value if key in _DATA_KEYWORDS else for_precheck(value) for key, value in schema.items()}
        if isinstance(schema.get("x-go-pattern"), str):
            out["pattern"] = go_pattern(schema["x-go-pattern"], RUST_END)
        bounds = _INT_BOUNDS.get(schema["format"]) if isinstance(schema.get("format"), str) else None
        if bounds is not None:
            out["allOf"] = [*out.get("allOf", ()), bounds]
        return out
    if isinstance(schema, list):
        return [for_precheck(value) for value in schema]
    return schema


# --------------------------------------------------------------------------- errors -> issues
def schema_issues(
    schema: Schema, instance: Any, prefix: tuple[PathPart, ...] = ()
) -> list[Issue]:
    """All errors of `instance`, with one issue per unexpected field (so the path names it)."""
    if schema.passes(instance):
        return []
    issues: list[Issue] = []
    for error in schema.explain.iter_errors(instance):
        path = prefix + tuple(error.absolute_path)
        if error.validator == "additionalProperties" and error.validator_value is False:
            extras = _unexpected_fields(error.instance, error.schema)
            if extras:
                issues.extend(
                    (path + (key,), f"Additional properties are not allowed ({key!r} was unexpected)")
                    for key in extras
                )
                continue
        issues.append((path, _message(error)))
    return issues


def _unexpected_fields(instance: Any, schema: Mapping[str, Any]) -> list[str]:
    if not isinstance(instance, Mapping) or "patternProperties" in schema:
        return []
    known = schema.get("properties", {})
    return sorted((key for key in instance if key not in known), key=str)


def _message(error: jsonschema.ValidationError) -> str:
    if error.validator == "pattern" and "x-go-pattern" in error.schema:
        # Show the pattern as the CRD spells it, not its Python translation.
        message = f"{error.instance!r} does not match {error.schema['x-go-pattern']!r}"
    elif error.validator == "format" and error.validator_value in _FORMAT_MESSAGES:
        message = f"{error.instance!r} {_FORMAT_MESSAGES[error.validator_value]}"
    else:
        message = error.message
    if len(message) > _MAX_MESSAGE:
        message = message[: _MAX_MESSAGE - 1] + "…"
    return message


def definition_ref(name: str) -> dict[str, str]:
    """A schema that points at one definition of the bundled `_definitions.json`."""
    return {"$ref": f"{DEFINITIONS_URI}#/$defs/{name}"}


# --------------------------------------------------------------------------- versions
def _schema_root() -> Path:
    root = importlib.resources.files("kubernetes_validate").joinpath(_SCHEMA_ROOT)
    return Path(str(root))


def supported_versions() -> list[str]:
    """Kubernetes minors with bundled strict schemas, oldest first (e.g. 1.25 ... 1.37)."""
    found = []
    for entry in _schema_root().iterdir():
        match = _STRICT_DIR.match(entry.name)
        if match and (entry / "_definitions.json").is_file():
            found.append((int(match[1]), int(match[2]), entry.name))
    return [f"{major}.{minor}" for major, minor, _ in sorted(found)]


def _parse_minor(version: str) -> tuple[int, int]:
    match = re.match(r"^v?(\d+)\.(\d+)(?:\.\d+)?$", version.strip())
    if not match:
        raise SchemaUnavailable(f"not a Kubernetes version: {version!r} (expected e.g. '1.34')")
    return int(match[1]), int(match[2])


def _resolve_version(version: str) -> str:
    """The newest bundled minor that is not newer than `version`, as kubernetes-validate does."""
    wanted = _parse_minor(version)
    available = supported_versions()
    usable = [v for v in available if _parse_minor(v) <= wanted]
    if not available or not usable or _parse_minor(available[-1]) < wanted:
        span = f"{available[0]}-{available[-1]}" if available else "none"
        raise SchemaUnavailable(
            f"kubernetes-validate has no strict schemas for Kubernetes {version} (bundled: {span})"
        )
    return usable[-1]


def _strict_dir(version: str) -> Path:
    for entry in _schema_root().iterdir():
        match = _STRICT_DIR.match(entry.name)
        if match and f"{match[1]}.{match[2]}" == version:
            return entry
    raise SchemaUnavailable(f"no strict schema directory for Kubernetes {version}")


def _without_required(schema: Mapping[str, Any], field: str) -> dict[str, Any]:
    copy = dict(schema)
    copy["required"] = [name for name in schema.get("required", ()) if name != field]
    if not copy["required"]:
        del copy["required"]
    return copy


# --------------------------------------------------------------------------- schemas
class CoreSchemas:
    """The strict core schemas of one Kubernetes version, loaded once, validators cached.

    `precheck=False` compiles every schema for jsonschema only (each object is then validated
    by the judge alone: slower, same findings; used by the tests that prove that).
    """

    def __init__(self, kubernetes_version: str = DEFAULT_KUBERNETES_VERSION, *, precheck: bool = True) -> None:
        self.version = _resolve_version(kubernetes_version)
        self.path = _strict_dir(self.version) / "_definitions.json"
        with self.path.open(encoding="utf-8") as handle:
            document = json.load(handle)
        definitions: dict[str, Any] = document["$defs"]
        definitions[CONTAINER_UNNAMED] = _without_required(definitions[CONTAINER], "name")
        definitions[POD_SPEC_NO_CONTAINERS] = _without_required(definitions[POD_SPEC], "containers")
        self.registry: Registry = Registry().with_resource(
            DEFINITIONS_URI, Resource.from_contents(document, default_specification=DRAFT202012)
        )
        self._definitions = definitions
        self._kinds = _index_kinds(definitions)
        self._validators: dict[str, Schema] = {}
        # The same documents for jsonschema-rs, converted when the first pre-check is compiled.
        self._document = document if precheck else None
        self._precheck_registry: Any = None
        self._judged = 0  # objects validated before the pre-check was set up (PRECHECK_AFTER)

    def definition(self, name: str) -> Schema:
        """A cached strict validator for one definition, e.g. `io.k8s.api.core.v1.PodSpec`."""
        validator = self._validators.get(name)
        if validator is None:
            if name not in self._definitions:
                raise KeyError(f"no definition {name!r} in {self.path}")
            validator = self.validator_for(definition_ref(name))
            self._validators[name] = validator
        return validator

    def validator_for(self, schema: Mapping[str, Any]) -> Schema:
        """A validator for any schema that may `$ref` the core definitions (used for CRDs)."""
        explain = jsonschema.Draft202012Validator(
            schema, registry=self.registry, format_checker=FORMAT_CHECKER
        )
        if self._document is None:
            return Schema(explain)
        return Schema(explain, lambda: self._compile_precheck(schema), self._precheck_ready)

    def _precheck_ready(self) -> bool:
        """Whether enough objects were judged alone for the pre-check to pay (PRECHECK_AFTER)."""
        self._judged += 1
        return self._judged > PRECHECK_AFTER

    def _compile_precheck(self, schema: Mapping[str, Any]) -> Any:
        """The jsonschema-rs validator of `schema`, or None (a schema it refuses)."""
        import jsonschema_rs  # here: a run that never needs a pre-check does not pay its import

        try:
            if self._precheck_registry is None:
                self._precheck_registry = jsonschema_rs.Registry([(DEFINITIONS_URI, for_precheck(self._document))])
            return jsonschema_rs.Draft202012Validator(
                for_precheck(schema), registry=self._precheck_registry, validate_formats=True,
                formats=PRECHECK_FORMATS,
            )
        except (jsonschema_rs.ValidationError, jsonschema_rs.ReferencingError, ValueError):
            return None  # e.g. a pattern Rust's regex does not take: jsonschema alone judges

    def kind(self, api_version: str, kind: str) -> Schema | None:
        """The validator of a top-level kind such as (`apps/v1`, `Deployment`), or None."""
        name = self._kinds.get((api_version, kind))
        return None if name is None else self.definition(name)

    # The sub-schemas Slinky's schemaless wrappers are checked against.
    @property
    def container(self) -> Schema:
        return self.definition(CONTAINER)

    @property
    def container_unnamed(self) -> Schema:
        return self.definition(CONTAINER_UNNAMED)

    @property
    def pod_spec(self) -> Schema:
        """PodSpec with `containers` optional (Slinky's `template.spec` carries none)."""
        return self.definition(POD_SPEC_NO_CONTAINERS)

    @property
    def service_spec(self) -> Schema:
        return self.definition(SERVICE_SPEC)

    @property
    def persistent_volume_claim(self) -> Schema:
        return self.definition(PERSISTENT_VOLUME_CLAIM)


def _index_kinds(definitions: Mapping[str, Any]) -> dict[tuple[str, str], str]:
    kinds: dict[tuple[str, str], str] = {}
    for name, schema in definitions.items():
        for gvk in schema.get("x-kubernetes-group-version-kind", ()):
            api_version = f"{gvk['group']}/{gvk['version']}" if gvk["group"] else gvk["version"]
            kinds.setdefault((api_version, gvk["kind"]), name)
    return kinds

