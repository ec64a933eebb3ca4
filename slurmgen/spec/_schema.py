"""JSON Schema checks for a spec and the defaults the schema declares.

The schema file is the single place where the spec's shape and its defaults live; this module
turns jsonschema's errors into one-line messages a platform engineer can act on.
"""

from __future__ import annotations

import copy
import difflib
import json
import re
from functools import lru_cache
from importlib import resources
from typing import Any, Iterator

from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError

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


def _is_integer(_checker: Any, instance: Any) -> bool:
    """An int, never a float: JSON Schema counts 4.0 as an integer, and a float spec value renders
    as '4.0' (replicas, '128.0' CPUs, '524288.0Mi'): a spurious change in review and a wrong Slurm line."""
    return isinstance(instance, int) and not isinstance(instance, bool)


# Draft 2020-12 with `type: integer` meaning a YAML integer, for every integer field at once.
_StrictValidator = validators.extend(
    Draft202012Validator, type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer))


@lru_cache(maxsize=1)
def _validator() -> Draft202012Validator:
    # The schema itself is checked against the 2020-12 meta-schema by the tests, not on every run.
    return _StrictValidator(schema())


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


def check(instance: Any) -> Iterator[tuple[str, str]]:
    """Yield (field path, message) for every schema violation, in a stable order."""
    errors = sorted(_validator().iter_errors(instance), key=lambda e: (_path_key(e.absolute_path), e.validator))
    for err in errors:
        yield from _explain(err)


def failed_sections(instance: Any) -> frozenset[str]:
    """Top-level keys with a schema error (a missing required section counts); '*' when the top level itself is wrong.

    Cross-field rules skip the sections named here: their data is not what the rules may assume."""
    failed: set[str] = set()
    for err in _validator().iter_errors(instance):
        if err.absolute_path:
            failed.add(str(err.absolute_path[0]))
        elif err.validator == "required":
            failed.update(re.findall(r"'([^']+)' is a required property", err.message))
        elif err.validator != "additionalProperties":  # an unknown top-level key is read by no rule
            failed.add("*")
    return frozenset(failed)


def _path_key(path: Any) -> tuple[str, ...]:
    return tuple(f"{p:08d}" if isinstance(p, int) else str(p) for p in path)


def _explain(err: ValidationError) -> Iterator[tuple[str, str]]:
    path = list(err.absolute_path)
    kind = err.validator
    if kind == "additionalProperties" and isinstance(err.instance, dict):
        allowed = sorted(err.schema.get("properties", {}))
        for key in sorted(set(err.instance) - set(allowed), key=str):
            yield dotted([*path, key]), _unknown_key(str(key), allowed)
        return
    if kind == "required":
        missing = re.findall(r"'([^']+)' is a required property", err.message)
        yield dotted(path), f"missing required key '{missing[0] if missing else err.message}'"
        return
    if kind in ("minProperties", "maxProperties") and err.schema.get("writeOnly"):  # a secret's place: one source
        yield dotted(path), f"name exactly one of {', '.join(sorted(err.schema.get('properties', {})))}"
        return
    if kind == "type" and err.schema.get("writeOnly"):  # a secret's place: never echo what was written there
        yield dotted(path), f"expected {_type_name(err.validator_value)} naming where the secret is; the value itself never goes in the spec (not shown)"
        return
    if kind == "type":
        fix = ""
        if isinstance(err.instance, float) and err.instance.is_integer() and "integer" in str(err.validator_value):
            fix = f"; write {int(err.instance)} (a float renders as {err.instance!r} in the output)"
        yield dotted(path), f"expected {_type_name(err.validator_value)}, got {_describe(err.instance)}{fix}"
        return
    if kind == "enum":
        choices = ", ".join(repr(c) for c in err.validator_value)
        yield dotted(path), f"{_describe(err.instance)} is not allowed; use one of {choices}"
        return
    if kind == "pattern":
        hint = _pattern_hints().get(err.validator_value, f"must match {err.validator_value}")
        yield dotted(path), f"{short(err.instance)} {hint}"
        return
    if kind == "maxLength":
        yield dotted(path), f"{short(err.instance)} is {len(err.instance)} characters long; at most {err.validator_value} allowed"
        return
    if kind == "minItems":
        yield dotted(path), f"needs at least {err.validator_value} item(s)"
        return
    if kind == "uniqueItems":
        yield dotted(path), "has duplicate items"
        return
    if kind == "propertyNames":
        yield dotted(path), f"key {short(err.instance)} is not allowed here"
        return
    if kind == "oneOf":
        keys = [b["required"][0] for b in err.validator_value if list(b) == ["required"]]
        if keys and len(keys) == len(err.validator_value):
            yield dotted(path), f"set exactly one of {' or '.join(repr(k) for k in keys)}"
        else:
            yield dotted(path), f"{_describe(err.instance)} must be a single word or an integer"
        return
    yield dotted(path), err.message


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
    text = repr(value)
    return text if len(text) <= SHORT else f"{text[:SHORT]}…"


def with_defaults(instance: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of a *valid* instance with every schema default filled in, recursively."""
    return _fill(copy.deepcopy(instance), schema())


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if ref and ref.startswith("#/$defs/"):
        target = dict(schema()["$defs"][ref.split("/")[-1]])
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
