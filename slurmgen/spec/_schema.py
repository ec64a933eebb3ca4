"""JSON Schema checks for a spec and the defaults the schema declares.

The schema file is the single place where the spec's shape and its defaults live; this module
turns the schema engine's errors into one-line messages a platform engineer can act on.

One engine for every schema in the project: jsonschema-rs (as slurmgen/verify/schemas/core.py),
compiled once. What Python's jsonschema gave for free is rebuilt here: the failing subschema
(`_Error.schema`, found by the error's schema path), the keyword and its value, a strict integer
type, and the order of the errors.
"""

from __future__ import annotations

import copy
import difflib
import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Callable, Iterator, Sequence

import jsonschema_rs

from . import secrets_scan
from .errors import dotted

SCHEMA_FILE = "cluster.schema.json"

# Human descriptions of the reusable patterns, so an error says what is allowed, not a regex.
_PATTERN_HINTS = {
    "dnsLabel": "must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit",
    "dnsSubdomain": "must be a DNS subdomain: lowercase letters, digits, '-' and '.'",
    "slurmName": "must start with a lowercase letter and use only lowercase letters, digits, '-' and '_' (at most 32)",
    "imageRef": "must be a full image reference with a pinned tag or digest, e.g. ghcr.io/org/image:1.2.3 ('latest' is refused)",
    "quantity": "must be a Kubernetes quantity such as 4Gi or 500Mi",
    "duration": "must be a duration such as 30s, 5m or 1h",
    "confLine": "must be one slurm.conf line of the form Key=Value",
    "cidr": "must be a CIDR block such as 10.0.0.0/16",
    "zone": ("must be an availability zone name such as us-west-2a, not a zone ID (usw2-az1): NodePools select on "
             "topology.kubernetes.io/zone, which holds the name"),
}


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    """The cluster spec schema, read once from the package."""
    text = resources.files(__package__).joinpath(SCHEMA_FILE).read_text(encoding="utf-8")
    return json.loads(text)


# A keyword of the engine's copy of the schema only, beside each `type` naming "integer".
_STRICT_INTEGER = "x-slurmgen-strict-integer"


class _StrictInteger:
    """`type: integer` means a YAML integer: JSON Schema (and jsonschema-rs) count 4.0 as an integer,
    and a float spec value renders as '4.0' (replicas, '128.0' CPUs, '524288.0Mi'): a spurious
    change in review and a wrong Slurm line. A float with a fraction already fails `type`."""

    def __init__(self, parent: dict[str, Any], value: Any, schema_path: list[str | int]) -> None:
        self.number_allowed = "number" in _types(parent.get("type"))

    def validate(self, instance: Any) -> None:
        """Raise for an integral float where only an integer is allowed."""
        if isinstance(instance, float) and instance.is_integer() and not self.number_allowed:
            raise ValueError("a float is not an integer")


def _types(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _for_engine(node: Any) -> Any:
    """A copy of the schema with the strict-integer keyword beside every integer `type`."""
    if isinstance(node, list):
        return [_for_engine(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _for_engine(sub) for name, sub in value.items()}
        else:
            out[key] = value if key in _DATA_KEYWORDS else _for_engine(value)
    if "integer" in _types(node.get("type")):
        out[_STRICT_INTEGER] = True
    return out


# Keywords whose value maps names to schemas, and keywords whose value is instance data.
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "dependentSchemas"})
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})


class Validator:
    """A schema compiled by jsonschema-rs with the strict integer type; errors come out as `_Error`s
    read against this schema (the spec's own values, the failing subschema)."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        # Patterns: the default engine (fancy-regex), for the lookahead of imageRef ("not latest").
        # Each spec pattern is a whole-string match: _text refuses line breaks before the schema runs.
        self._compiled = jsonschema_rs.Draft202012Validator(
            _for_engine(root), keywords={_STRICT_INTEGER: _StrictInteger})

    def is_valid(self, instance: Any) -> bool:
        """Whether `instance` has no schema error."""
        return bool(self._compiled.is_valid(_json_proxy(instance)))

    def iter_errors(self, instance: Any) -> Iterator[_Error]:
        """Every violation, in the engine's order."""
        for err in self._compiled.iter_errors(_json_proxy(instance)):
            yield self._error(err, instance)

    def _error(self, err: jsonschema_rs.ValidationError, instance: Any) -> _Error:
        kind = err.kind
        path = tuple(err.instance_path)
        if isinstance(kind, jsonschema_rs.ValidationErrorKind.PropertyNames):
            # A key refused by `propertyNames` is checked as a value, at its mapping's path.
            inner = kind.error
            node = self._subschema(inner.schema_path[:-1])
            keyword = str(inner.schema_path[-1])
            return _Error(path, keyword, node.get(keyword), node, inner.instance)
        node = self._subschema(err.schema_path[:-1])
        keyword = str(err.schema_path[-1])
        if keyword == _STRICT_INTEGER:
            keyword = "type"
        missing = kind.property if isinstance(kind, jsonschema_rs.ValidationErrorKind.Required) else ""
        secret = keyword == "type" and self._write_only(err.evaluation_path)
        return _Error(path, keyword, node.get(keyword), node, _at(instance, path), missing, secret)

    def _subschema(self, schema_path: list[str | int]) -> dict[str, Any]:
        """The schema node at a schema path (jsonschema-rs gives where the keyword is written:
        `$defs/secretKeyRef/type`, not the `$ref`s the evaluation went through)."""
        node: Any = self.root
        for step in schema_path:
            node = node[step]
        return node if isinstance(node, dict) else {}

    def _write_only(self, evaluation_path: list[str | int]) -> bool:
        """Whether the check went through a `writeOnly` node: `bindPassword: {secret: "hunter2"}` fails
        the `type` of $defs/secretKeyRef, which is not writeOnly, but its place in the spec is."""
        node: Any = self.root
        for step in evaluation_path[:-1]:  # the last step is the keyword itself
            if isinstance(node, dict) and node.get("writeOnly"):
                return True
            node = _json_pointer(self.root, node["$ref"]) if step == "$ref" else node[step]
        return isinstance(node, dict) and bool(node.get("writeOnly"))


def _json_pointer(root: dict[str, Any], ref: str) -> Any:
    """The node a local `$ref` (`#/$defs/name`) names."""
    node: Any = root
    for step in ref.removeprefix("#/").split("/"):
        node = node[step.replace("~1", "/").replace("~0", "~")]
    return node


@lru_cache(maxsize=1)
def _validator() -> Validator:
    # The schema itself is checked against the 2020-12 meta-schema by the tests, not on every run.
    return Validator(schema())


# Hints for patterns written inline (not a $def), keyed by the pattern itself.
_NO_GLOB = ("with no whitespace, ',' or glob characters (* ? [ ] { } ! \\): Argo CD matches the AppProject's "
            "sourceRepos and destinations as globs (argo-cd v3.5.1 util/glob, gobwas/glob)")
_INLINE_HINTS = {
    r"^(https://|ssh://|git@)[^\s*?\[\]{}!\\,]+$": f"must be a https://, ssh:// or git@ URL {_NO_GLOB}",
    r"^https://[^\s*?\[\]{}!\\,]+$": f"must be a https:// URL {_NO_GLOB}",
    r"^[A-Za-z0-9_.:/=+@-]+$": "must be an AWS tag value without spaces or ',': letters, digits and _ . : / = + @ -",
    r"^[A-Za-z0-9_.:/=+@ -]+$": "must be a subnet ID or Name tag: letters, digits, spaces and _ . : / = + @ - (no ',')",
    r"^(([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$":
        "must be a Kubernetes taint key such as example.com/gpu (or empty)",
    r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$": "must be a Kubernetes label value: letters, digits, '-', '_', '.' (at most 63)",
    # directory.adminGroups: `id -nG` separates group names with spaces (charts/policy.py)
    r"^[a-zA-Z0-9_.-]+$": "must be a directory group name without spaces: letters, digits, '_', '.', '-'",
    r"^[A-Za-z0-9_][A-Za-z0-9._/+-]*$": "must be a branch, tag or commit: letters, digits, '.', '_', '/', '+', '-', not starting with '-' or '.'",
    r"^/[A-Za-z0-9._/-]*[A-Za-z0-9._-]$": "must be an absolute path: '/', then letters, digits, '.', '_', '-' and '/'",
    # policy.users: one case rule end to end (charts/directory.py, case_sensitive)
    r"^[a-z_][a-z0-9_.-]{0,31}$": ("must be a lowercase login name (a-z, 0-9, '_', '.', '-'; at most 32; not starting "
                                   "with a digit, '.' or '-'): slurmdbd stores user names lowercased (PreserveCaseUser "
                                   "unset), and sssd reports directory names lowercased (case_sensitive = false)"),
}


@lru_cache(maxsize=1)
def _pattern_hints() -> dict[str, str]:
    defs = schema()["$defs"]
    hints = {defs[name]["pattern"]: hint for name, hint in _PATTERN_HINTS.items() if "pattern" in defs.get(name, {})}
    return {**_INLINE_HINTS, **hints}


def schema_version() -> int:
    """Newest spec format this generator reads."""
    return 1


Spelling = Callable[[str], "str | None"]  # how the file writes the scalar at a field path, when it does


def check(instance: Any, spelling: Spelling | None = None) -> Iterator[tuple[str, str]]:
    """Yield (field path, message) for every schema violation, in a stable order. `spelling` gives the
    text a field was written as (`1.30`, which reads as 1.3), for a fix that quotes it as written."""
    for err in _errors(instance):
        yield from _explain(err, spelling or (lambda path: None))


def field_types(path: Sequence[str | int]) -> frozenset[str] | None:
    """The JSON types the schema allows at a field path (keys and list indexes), through `$ref` and
    `oneOf`; None where it does not say (a key it does not know, a node without `type`)."""
    return _field_types(tuple(path))


@lru_cache(maxsize=4096)  # asked for every plain scalar a spec writes: the same few hundred paths
def _field_types(path: tuple[str | int, ...]) -> frozenset[str] | None:
    nodes: list[dict[str, Any]] = [schema()]
    for step in path:
        nodes = [child for node in nodes for variant in _variants(node) for child in _child(variant, step)]
    types = {t for node in nodes for variant in _variants(node) if "type" in variant for t in _types(variant["type"])}
    return frozenset(types) or None


def string_range(path: Sequence[str | int]) -> dict[str, Any] | None:
    """The `x-range` the schema gives a text field holding a number (a Slurm duration, a TRES count,
    a quantity): its kind, the largest value its consumer's type holds, and that consumer."""
    return _string_range(tuple(path))


@lru_cache(maxsize=4096)
def _string_range(path: tuple[str | int, ...]) -> dict[str, Any] | None:
    nodes: list[dict[str, Any]] = [schema()]
    for step in path:
        nodes = [child for node in nodes for variant in _variants(node) for child in _child(variant, step)]
    return next((variant["x-range"] for node in nodes for variant in _variants(node) if "x-range" in variant), None)


def text_only(path: Sequence[str | int]) -> bool:
    """Whether the schema allows only a string at `path`: a number written there wants quotes."""
    return field_types(path) == frozenset({"string"})


def _variants(node: dict[str, Any]) -> list[dict[str, Any]]:
    """`node` with its `$ref` resolved, and each of its `oneOf` branches."""
    node = _resolve(node)
    return [node, *(v for branch in node.get("oneOf", ()) if isinstance(branch, dict) for v in _variants(branch))]


def _child(node: dict[str, Any], step: str | int) -> list[dict[str, Any]]:
    if isinstance(step, int):
        items = node.get("items")
        return [items] if isinstance(items, dict) and node.get("type") in (None, "array") else []
    if step in node.get("properties", {}):
        return [node["properties"][step]]
    extra = node.get("additionalProperties")
    return [extra] if isinstance(extra, dict) else []


def failed_sections(instance: Any) -> frozenset[str]:
    """Top-level keys with a schema error (a missing required section counts); '*' when the top level itself is wrong.

    Cross-field rules skip the sections named here: their data is not what the rules may assume."""
    failed: set[str] = set()
    for err in _errors(instance):
        if err.path:
            failed.add(str(err.path[0]))
        elif err.validator == "required":
            failed.add(err.missing)
        elif err.validator != "additionalProperties":  # an unknown top-level key is read by no rule
            failed.add("*")
    return frozenset(failed)


@dataclass(frozen=True)
class _Error:
    """One schema violation as the messages need it: where (`path`), the keyword that failed and
    its value in the schema, the subschema holding it, and the value found (the spec's own)."""

    path: tuple[str | int, ...]
    validator: str  # the keyword that failed (jsonschema's name for it)
    value: Any  # the keyword's value in the schema
    schema: dict[str, Any]
    instance: Any
    missing: str = ""  # for `required`: the missing key
    secret: bool = False  # a `type` error in a secret's place (writeOnly): the value is never shown


def _errors(instance: Any) -> list[_Error]:
    """Every violation, sorted by path then keyword (a stable order for the same spec)."""
    return sorted(_validator().iter_errors(instance), key=lambda e: (_path_key(e.path), e.validator))


def _at(instance: Any, path: tuple[str | int, ...]) -> Any:
    """The spec's own value at `path` (not the engine's copy: a date or NaN as written)."""
    for step in path:
        instance = instance[step]
    return instance


def _json_proxy(value: Any) -> Any:
    """`value` with each leaf that is no JSON data (a YAML date, bytes, a set, NaN) as null.

    jsonschema-rs refuses such data; null stands in well: the spec schema allows null nowhere, so
    it fails every `type` and `enum` and no other keyword reads it, as Python's jsonschema treated
    a date. The message shows the spec's own value (`_at`)."""
    if isinstance(value, dict):
        return {key: _json_proxy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_json_proxy(item) for item in value]
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    return None


def _path_key(path: Any) -> tuple[str, ...]:
    return tuple(f"{p:08d}" if isinstance(p, int) else str(p) for p in path)


def _explain(err: _Error, spelling: Spelling) -> Iterator[tuple[str, str]]:
    path = list(err.path)
    kind = err.validator
    if kind == "additionalProperties" and isinstance(err.instance, dict):
        allowed = sorted(err.schema.get("properties", {}))
        for key in sorted(set(err.instance) - set(allowed), key=str):
            yield dotted([*path, key]), _unknown_key(str(key), allowed)
        return
    if kind == "required":
        yield dotted(path), f"missing required key '{err.missing}'"
        return
    if kind in ("minProperties", "maxProperties") and err.schema.get("writeOnly"):  # a secret's place: one source
        yield dotted(path), f"name exactly one of {', '.join(sorted(err.schema.get('properties', {})))}"
        return
    if kind == "type" and err.secret:  # a secret's place: never echo what was written there
        yield dotted(path), f"expected {_type_name(err.value)} naming where the secret is; the value itself never goes in the spec (not shown)"
        return
    if kind == "type" and _is_number(err.instance) and _types(err.value) == ["string"]:
        written = spelling(dotted(path)) or str(err.instance)
        yield dotted(path), f"expected a string, got {_describe(err.instance)}; {_quote_fix(path, written, err)}"
        return
    if kind == "type":
        fix = ""
        if isinstance(err.instance, float) and err.instance.is_integer() and "integer" in str(err.value):
            fix = f"; write {int(err.instance)} (a float renders as {err.instance!r} in the output)"
        yield dotted(path), f"expected {_type_name(err.value)}, got {_describe(err.instance)}{fix}"
        return
    if kind == "enum":
        choices = ", ".join(repr(c) for c in err.value)
        yield dotted(path), f"{_describe(err.instance)} is not allowed; use one of {choices}"
        return
    if kind == "pattern":
        hint = _pattern_hints().get(err.value, f"must match {err.value}")
        yield dotted(path), f"{short(err.instance)} {hint}"
        return
    if kind == "maxLength":
        yield dotted(path), f"{short(err.instance)} is {len(err.instance)} characters long; at most {err.value} allowed"
        return
    if kind == "minItems":
        yield dotted(path), f"needs at least {err.value} item(s)"
        return
    if kind == "uniqueItems":
        yield dotted(path), "has duplicate items"
        return
    if kind == "oneOf":
        keys = [b["required"][0] for b in err.value if list(b) == ["required"]]
        if keys and len(keys) == len(err.value):
            yield dotted(path), f"set exactly one of {' or '.join(repr(k) for k in keys)}"
        else:
            yield dotted(path), f"{_describe(err.instance)} must be a single word or an integer"
        return
    yield dotted(path), _message(err)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _quote_fix(path: list[str | int], written: str, err: _Error) -> str:
    """How to write a number where text is wanted: quoted as written; for a Slurm duration, the quoted
    duration meant, since Slurm reads a bare number as minutes (a maxTime of "43200" is 30 days)."""
    key = path[-1] if path else None
    field = "- " if isinstance(key, int) else f"{key}: " if key is not None else ""
    if not _is_slurm_duration(err.schema):
        return f'quote it: {field}"{written}"'
    if not isinstance(err.instance, int) or err.instance <= 0:
        return f'write a quoted duration [days-]hours:minutes:seconds, e.g. {field}"12:00:00"'
    minutes = ' (Slurm reads a bare number as minutes)' if re.fullmatch(err.schema.get("pattern", ""), "90") else ""
    return (f'write a quoted duration [days-]hours:minutes:seconds: {field}"{slurm_duration(err.instance)}" for '
            f'{err.instance} seconds, "{slurm_duration(err.instance * 60)}" for {err.instance} minutes{minutes}')


def _is_slurm_duration(node: dict[str, Any]) -> bool:
    """Whether a string field takes a Slurm time ([days-]hours:minutes:seconds), judged by its pattern."""
    pattern = node.get("pattern")
    return isinstance(pattern, str) and all(re.fullmatch(pattern, t) for t in ("12:00:00", "2-00:00:00"))


def slurm_duration(seconds: int) -> str:
    """`seconds` as Slurm writes a time: [days-]hours:minutes:seconds (43200 is 12:00:00)."""
    days, rest = divmod(seconds, 86400)
    text = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{text}" if days else text


def _message(err: _Error) -> str:
    """The other keywords, worded as Python's jsonschema 4.26 worded them (values as Python writes them)."""
    value, limit = err.instance, err.value
    words = {
        "minimum": f"is less than the minimum of {limit!r}",
        "maximum": f"is greater than the maximum of {limit!r}",
        "minLength": "should be non-empty" if limit == 1 else "is too short",
        "minProperties": "should be non-empty" if limit == 1 else "does not have enough properties",
        "maxProperties": "is expected to be empty" if limit == 0 else "has too many properties",
    }
    consumer = err.schema.get("$comment") if err.validator == "maximum" else None
    return f"{value!r} {words.get(err.validator, f'fails {err.validator} {limit!r}')}" + (f" ({consumer})" if consumer else "")


def _unknown_key(key: str, allowed: list[str]) -> str:
    close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    if not close:
        close = [a for a in allowed if a.lower() == key.lower()]
    hint = f"; did you mean '{close[0]}'?" if close else f"; allowed keys: {', '.join(allowed)}"
    return f"unknown key{hint}"


def _type_name(value: Any) -> str:
    names = {"object": "a mapping", "array": "a list", "string": "a string", "integer": "an integer",
             "boolean": "true or false", "number": "a number", "null": "nothing"}
    if isinstance(value, list):
        return " or ".join(names.get(str(v), str(v)) for v in value)
    return names.get(value, str(value))


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if value is None:
        return "an empty value"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"string {short(value)}"
    return f"{type(value).__name__} {short(value)}"


SHORT = 80  # characters of a value echoed in a message: enough to recognise it, never a whole file


def short(value: Any) -> str:
    """repr() of a value, cut to SHORT characters, so one problem stays one readable line."""
    if isinstance(value, str) and not secrets_scan.shown_value(value):
        return secrets_scan.hidden(value)
    text = repr(value)
    return text if len(text) <= SHORT else f"{text[:SHORT]}…"


def with_defaults(instance: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of a *valid* instance with every schema default filled in, recursively."""
    return _fill(copy.deepcopy(instance), schema())


def default(path: Sequence[str | int]) -> Any:
    """The schema's `default` for the field at `path` (keys and list indexes), for a value the
    generator builds itself that must match what a spec would get; KeyError when there is none."""
    nodes: list[dict[str, Any]] = [schema()]
    for step in path:
        nodes = [_resolve(child) for node in nodes for child in _child(_resolve(node), step)]
    found = [node["default"] for node in nodes if "default" in node]
    if not found:
        raise KeyError(dotted(path))
    return copy.deepcopy(found[0])


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if ref and ref.startswith("#/$defs/"):
        target = dict(_json_pointer(schema(), ref))
        target.update({k: v for k, v in node.items() if k != "$ref"})
        return target
    return node


def _fill(value: Any, node: dict[str, Any]) -> Any:
    node = _resolve(node)
    if isinstance(value, dict):
        for key, sub in node.get("properties", {}).items():
            sub = _resolve(sub)
            if key not in value and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
            if key in value:
                value[key] = _fill(value[key], sub)
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        return [_fill(item, node["items"]) for item in value]
    return value
