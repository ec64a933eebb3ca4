"""Custom resources, validated against the upstream CRD schemas, strictly.

`kubectl apply` asks the API server for strict field validation: a field that the CRD's
structural schema would prune is an error.  A CRD's `openAPIV3Schema` is OpenAPI 3.0 with
Kubernetes extensions, not JSON Schema, so `to_strict_schema()` translates it:

- every object node of the structural schema that has no `additionalProperties` and is
  not `x-kubernetes-preserve-unknown-fields: true` gets `additionalProperties: false`,
  including `type: object` nodes without `properties` (the API server prunes every field
  there too).  Nodes under `allOf`/`anyOf`/`oneOf`/`not` stay open: in a structural schema
  they only add value checks, and closing them would reject the sibling fields;
- `nullable: true` allows null (also in `enum`);
- `x-kubernetes-int-or-string: true` means integer or string;
- `x-kubernetes-list-type: set` means unique items;
- OpenAPI 3.0 boolean `exclusiveMinimum`/`exclusiveMaximum` become JSON Schema numbers;
- Go (RE2) patterns: spelled with Go's meaning for Rust's regex (`patterns.go_pattern`: end of
  text, ASCII classes, the dot), the CRD's own spelling kept as `x-go-pattern` for messages;
- `metadata` at the top is replaced by the caller's ObjectMeta schema (the CRD only says
  `type: object` there; the API server validates ObjectMeta itself);
- kept: type, properties, items, required, enum, pattern, format, min/max*, multipleOf.

Not checked: CEL rules (`x-kubernetes-validations`) cannot be evaluated without a CEL
engine, so cross-field rules such as Slinky's "slurmKeyRef is required unless external"
are skipped; neither are `x-kubernetes-list-type: map` key uniqueness nor defaults.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..._input import UnreadableFile, read_bytes
from ...kube.documents import load_documents
from .core import SchemaUnavailable
from .patterns import compiles, go_pattern

__all__ = [
    "FALLBACK_METADATA", "CrdIndex", "CrdVersion", "go_pattern", "strict_body", "to_strict_schema", "with_metadata",
]

_SUFFIXES = (".yaml", ".yml", ".json")
CRD_MAX_BYTES = 16 * 1024 * 1024  # upstream CRDs are up to a few MiB (kube-prometheus-stack's, Karpenter's)
_CRD_API_VERSION = "apiextensions.k8s.io/v1"
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml is ~5x faster on 6 MB

#: Used for `metadata` when the caller has no core ObjectMeta schema at hand.
FALLBACK_METADATA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string"},
        "generateName": {"type": "string"},
        "namespace": {"type": "string"},
        "labels": {"type": ["object", "null"], "additionalProperties": {"type": "string"}},
        "annotations": {"type": ["object", "null"], "additionalProperties": {"type": "string"}},
        "finalizers": {"type": ["array", "null"], "items": {"type": "string"}},
        "ownerReferences": {"type": ["array", "null"], "items": {"type": "object"}},
    },
}

_KEPT = frozenset(
    {
        "type", "required", "enum", "format", "multipleOf", "uniqueItems",
        "minimum", "maximum", "minLength", "maxLength",
        "minItems", "maxItems", "minProperties", "maxProperties",
    }
)  # fmt: skip
_JUNCTORS = ("allOf", "anyOf", "oneOf")
_INT_OR_STRING = [{"type": "integer"}, {"type": "string"}]


@dataclass(frozen=True)
class CrdVersion:
    """One version of one CRD, as found on disk (its schema is parsed on first use)."""

    group: str
    version: str
    kind: str
    scope: str
    served: bool
    source: Path

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"


class CrdIndex:
    """Every CRD version found under a directory, by (apiVersion, kind).

    Used for `--crd-dir` (CRD YAML other than the vendored schemas); `vendored.VendoredCrds`
    offers the same interface over the pre-converted files.
    Loading only scans the YAML event stream for group, kind, scope and versions (about
    0.15 s for the 6 MB of pinned CRDs, against 0.5 s to build them all as Python objects);
    a file is fully parsed the first time one of its kinds is validated.
    """

    def __init__(self, root: Path, versions: list[CrdVersion]) -> None:
        self.root = root
        #: Where the schemas come from, for "is its CRD in ...?" messages.
        self.where = str(root)
        self._all: dict[tuple[str, str], CrdVersion] = {}
        self._documents: dict[Path, list[Any]] = {}
        for crd in versions:
            key = (crd.api_version, crd.kind)
            if key in self._all:
                raise SchemaUnavailable(
                    f"{crd.api_version} {crd.kind} is defined twice: in "
                    f"{self._all[key].source} and in {crd.source}"
                )
            self._all[key] = crd

    @classmethod
    def load(cls, crd_dir: Path | str) -> CrdIndex:
        """Index every `*.yaml`/`*.yml`/`*.json` below `crd_dir`; non-CRD documents are ignored."""
        root = Path(crd_dir)
        if not root.is_dir():
            raise SchemaUnavailable(f"CRD directory {root} does not exist")
        versions = [crd for path in _crd_files(root) for crd in _scan_crd_file(path)]
        if not versions:
            raise SchemaUnavailable(f"no CustomResourceDefinition found under {root}")
        return cls(root, versions)

    def __len__(self) -> int:
        return len(self._all)

    def __iter__(self) -> Iterator[CrdVersion]:
        return iter(self._all.values())

    def get(self, api_version: str, kind: str) -> CrdVersion | None:
        """The served CRD version for an object, or None."""
        crd = self._all.get((api_version, kind))
        return crd if crd is not None and crd.served else None

    def versions_of(self, group: str, kind: str) -> list[CrdVersion]:
        """All known versions of a group/kind, to explain a wrong or unserved apiVersion."""
        return [crd for crd in self._all.values() if crd.group == group and crd.kind == kind]

    def strict_body(self, crd: CrdVersion) -> dict[str, Any]:
        """The strict schema of one CRD version, `metadata` left open for `with_metadata`."""
        return strict_body(self.openapi(crd))

    def openapi(self, crd: CrdVersion) -> Mapping[str, Any]:
        """The raw `openAPIV3Schema` of one CRD version (its file is parsed once, then cached)."""
        documents = self._documents.get(crd.source)
        if documents is None:
            documents = self._documents[crd.source] = _parse_file(crd.source)
        for document in documents:
            spec = document.get("spec") if isinstance(document, Mapping) else None
            if not isinstance(spec, Mapping) or document.get("kind") != "CustomResourceDefinition":
                continue
            if spec.get("group") != crd.group or spec.get("names", {}).get("kind") != crd.kind:
                continue
            for entry in spec.get("versions", ()):
                schema = (entry.get("schema") or {}).get("openAPIV3Schema")
                if entry.get("name") == crd.version and isinstance(schema, Mapping):
                    return schema
        raise SchemaUnavailable(f"{crd.source}: no openAPIV3Schema for {crd.api_version} {crd.kind}")


def _crd_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.suffix in _SUFFIXES and p.is_file())


def _parse_file(path: Path) -> list[Any]:
    """All YAML documents of a file (JSON is YAML too)."""
    return _parse(path, _read(path))


def _parse(path: Path, data: bytes) -> list[Any]:
    try:
        return [doc for doc in load_documents(data.decode("utf-8")) if doc is not None]  # bounded (--crd-dir)
    except (UnicodeDecodeError, yaml.YAMLError) as error:
        raise SchemaUnavailable(f"cannot read CRD file {path}: {error}") from error


def _read(path: Path) -> bytes:
    """A --crd-dir file, bounded (the largest upstream CRD is a few hundred KiB)."""
    try:
        return read_bytes(path, max_bytes=CRD_MAX_BYTES, advice="not a CRD file", follow_links=True)
    except (OSError, UnreadableFile) as error:
        raise SchemaUnavailable(f"cannot read CRD file {path}: {error}") from error


# Paths recorded by the scan; `None` stands for any index of the `versions` list.
_HEADER_PATHS = frozenset(
    {
        ("apiVersion",), ("kind",), ("spec", "group"), ("spec", "scope"), ("spec", "names", "kind"),
        ("spec", "versions", None, "name"), ("spec", "versions", None, "served"),
    }
)  # fmt: skip


def _scan_crd_file(path: Path) -> list[CrdVersion]:
    return _scan_crd_bytes(path, _read(path))


def _scan_crd_bytes(path: Path, data: bytes) -> list[CrdVersion]:
    """The CRD versions of a file, read from the YAML event stream without building objects."""
    try:
        headers = _scan_headers(yaml.parse(data.decode("utf-8"), Loader=_Loader))
    except (UnicodeDecodeError, yaml.YAMLError) as error:
        raise SchemaUnavailable(f"cannot read CRD file {path}: {error}") from error
    found: list[CrdVersion] = []
    for header in headers:
        if header.get(("kind",)) != "CustomResourceDefinition":
            continue
        if header.get(("apiVersion",)) != _CRD_API_VERSION:
            raise SchemaUnavailable(
                f"{path}: only {_CRD_API_VERSION} CRDs are supported, not {header.get(('apiVersion',))}"
            )
        versions: dict[int, dict[str, str]] = header.get("versions", {})
        for index in sorted(versions):
            entry = versions[index]
            try:
                found.append(
                    CrdVersion(
                        group=header[("spec", "group")],
                        version=entry["name"],
                        kind=header[("spec", "names", "kind")],
                        scope=header.get(("spec", "scope"), "Namespaced"),
                        served=entry.get("served") in ("true", "True", "TRUE"),
                        source=path,
                    )
                )
            except KeyError as error:
                raise SchemaUnavailable(f"{path}: CRD without {error.args[0]}") from error
    return found


def _scan_headers(events: Iterator[yaml.Event]) -> list[dict[Any, Any]]:
    """One dict per document: `_HEADER_PATHS` -> scalar, plus `versions` by list index."""
    headers: list[dict[Any, Any]] = []
    header: dict[Any, Any] = {}
    # One frame per open collection: [is_mapping, current key or list index, expecting a key]
    stack: list[list[Any]] = []
    for event in events:
        if isinstance(event, yaml.ScalarEvent):
            if stack and stack[-1][0] and stack[-1][2]:
                stack[-1][1], stack[-1][2] = event.value, False
                continue
            if len(stack) <= 4:
                _record(header, stack, event.value)
            _next_item(stack)
        elif isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            stack.append([isinstance(event, yaml.MappingStartEvent), 0, True])
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            stack.pop()
            _next_item(stack)
        elif isinstance(event, yaml.AliasEvent):
            _next_item(stack)
        elif isinstance(event, yaml.DocumentEndEvent):
            headers.append(header)
            header = {}
    return headers


def _next_item(stack: list[list[Any]]) -> None:
    if stack:
        if stack[-1][0]:
            stack[-1][2] = True  # a mapping value is done: a key comes next
        else:
            stack[-1][1] += 1  # a list item is done: the next index comes next


def _record(header: dict[Any, Any], stack: list[list[Any]], value: str) -> None:
    path = tuple(frame[1] for frame in stack)
    generic = tuple(None if not frame[0] else frame[1] for frame in stack)
    if generic not in _HEADER_PATHS:
        return
    if generic[:2] == ("spec", "versions"):
        header.setdefault("versions", {}).setdefault(path[2], {})[generic[3]] = value
    else:
        header[generic] = value


# --------------------------------------------------------------------------- conversion
def to_strict_schema(
    openapi: Mapping[str, Any], *, metadata: Mapping[str, Any] = FALLBACK_METADATA
) -> dict[str, Any]:
    """A strict JSON Schema (draft 2020-12) for a whole object of one CRD version."""
    return with_metadata(strict_body(openapi), metadata)


def strict_body(openapi: Mapping[str, Any]) -> dict[str, Any]:
    """`to_strict_schema` with `metadata: {}` as a placeholder: the form that is vendored.

    The ObjectMeta schema is a `$ref` into the core schemas of the run's Kubernetes version, so
    it is filled in at load time (`with_metadata`); the key keeps its place in `properties`.
    """
    schema = _convert(openapi, closed=True)
    properties = schema.setdefault("properties", {})
    properties["apiVersion"] = {"type": "string"}
    properties["kind"] = {"type": "string"}
    properties["metadata"] = {}
    schema["type"] = "object"
    schema.setdefault("additionalProperties", False)
    return schema


def with_metadata(body: Mapping[str, Any], metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a strict body whose `metadata` is `metadata` (the body is not changed)."""
    return {**body, "properties": {**body["properties"], "metadata": dict(metadata)}}


def _convert(node: Mapping[str, Any], *, closed: bool) -> dict[str, Any]:
    """One OpenAPI node -> JSON Schema; `closed` is False below a junctor (allOf/anyOf/...)."""
    out = {key: value for key, value in node.items() if key in _KEPT}
    _convert_bounds(node, out)
    if isinstance(node.get("pattern"), str):
        _convert_pattern(node["pattern"], out)
    int_or_string = bool(node.get("x-kubernetes-int-or-string"))
    if int_or_string:
        out["type"] = ["integer", "string"]
    if "properties" in node:
        out["properties"] = {
            name: _convert(child, closed=closed) for name, child in node["properties"].items()
        }
    additional = node.get("additionalProperties")
    if isinstance(additional, Mapping):
        out["additionalProperties"] = _convert(additional, closed=closed)
    elif additional is not None:
        out["additionalProperties"] = bool(additional)
    elif closed and _is_closed_object(node):
        if node.get("x-kubernetes-embedded-resource"):
            _add_embedded_fields(out)
        out["additionalProperties"] = False
    if isinstance(node.get("items"), Mapping):
        out["items"] = _convert(node["items"], closed=closed)
    for junctor in _JUNCTORS:
        branches = node.get(junctor)
        if not branches or (junctor == "anyOf" and int_or_string and branches == _INT_OR_STRING):
            continue
        out[junctor] = [_convert(branch, closed=False) for branch in branches]
    if isinstance(node.get("not"), Mapping):
        out["not"] = _convert(node["not"], closed=False)
    if node.get("x-kubernetes-list-type") == "set":
        out["uniqueItems"] = True
    if node.get("nullable"):
        _allow_null(out)
    return out


def _is_closed_object(node: Mapping[str, Any]) -> bool:
    if node.get("x-kubernetes-preserve-unknown-fields"):
        return False
    return node.get("type") == "object" or ("type" not in node and "properties" in node)


def _add_embedded_fields(out: dict[str, Any]) -> None:
    """An embedded resource implicitly allows apiVersion, kind and metadata."""
    properties = out.setdefault("properties", {})
    properties.setdefault("apiVersion", {"type": "string"})
    properties.setdefault("kind", {"type": "string"})
    properties.setdefault("metadata", {"type": "object"})


def _convert_bounds(node: Mapping[str, Any], out: dict[str, Any]) -> None:
    """OpenAPI 3.0 `exclusiveMaximum: true` + `maximum: n` is JSON Schema `exclusiveMaximum: n`."""
    for bound, exclusive in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        if node.get(exclusive) is True and bound in out:
            out[exclusive] = out.pop(bound)


def _convert_pattern(pattern: str, out: dict[str, Any]) -> None:
    spelled = go_pattern(pattern)
    if not compiles(spelled):
        return  # an RE2 construct Rust's regex lacks: skip the check rather than fail the run
    out["pattern"] = spelled
    if spelled != pattern:
        out["x-go-pattern"] = pattern  # the CRD's own spelling, for error messages


def _allow_null(out: dict[str, Any]) -> None:
    kind = out.get("type")
    if isinstance(kind, str):
        out["type"] = [kind, "null"]
    elif isinstance(kind, list) and "null" not in kind:
        out["type"] = [*kind, "null"]
    if "enum" in out and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
