"""Test specs built as data: the minimal spec (tests/conftest.py) with the keys a test is about merged in.

A text replacement silently does nothing once the text it looks for changes, and the test then passes
without the behaviour it names. A merge cannot miss: a misspelt key is added, and the schema refuses
unknown keys; by_name fails on a name no item has. Tests about the text itself (YAML line numbers,
key order, comments, syntax errors) keep writing text.
"""

from __future__ import annotations

from typing import Any, Callable, Final

import yaml

from tests.conftest import MINIMAL_SPEC


class _Drop:
    """The type of DROP (a distinct class so mypy and readers see it is no YAML value)."""

    def __repr__(self) -> str:
        return "DROP"


#: A value that removes its key: `spec_text(aws={"eksClusterName": DROP})`. Not None, since a test
#: may need an explicit YAML null.
DROP: Final = _Drop()


class Whole(dict[str, Any]):
    """A mapping that replaces the one at its key instead of merging into it:
    `directory={"tls": Whole(mode="none")}` leaves no key of the old tls behind."""


def merged(base: Any, change: Any) -> Any:
    """`change` over `base`: mappings merge key by key (DROP deletes), a function gets the old value and
    returns the new (see `named`), anything else (lists, Whole) replaces."""
    if callable(change):
        return change(base)
    if isinstance(change, Whole):
        return merged({}, dict(change))
    if not isinstance(change, dict):
        return change
    out = dict(base) if isinstance(base, dict) else {}
    for key, value in change.items():
        if value is DROP:
            out.pop(key, None)
        else:
            out[key] = merged(out.get(key), value)
    return out


def variant_data(base: str, *, nodeset: dict[str, Any] | None = None, **top: Any) -> dict[str, Any]:
    """The spec text `base` as a dict with `top` merged in, then `nodeset` merged into nodesets[0]."""
    data: dict[str, Any] = merged(yaml.safe_load(base), top)
    if nodeset is not None:
        data["nodesets"] = [merged(data["nodesets"][0], nodeset), *data["nodesets"][1:]]
    return data


def variant(base: str, *, nodeset: dict[str, Any] | None = None, **top: Any) -> str:
    """variant_data as YAML in block style, one key per line (so an error's line number names one field);
    the comments of `base` are not kept."""
    return yaml.safe_dump(variant_data(base, nodeset=nodeset, **top), sort_keys=False)


def spec_data(*, nodeset: dict[str, Any] | None = None, **top: Any) -> dict[str, Any]:
    """The minimal spec as a dict, changed as variant_data says."""
    return variant_data(MINIMAL_SPEC, nodeset=nodeset, **top)


def spec_text(*, nodeset: dict[str, Any] | None = None, **top: Any) -> str:
    """The minimal spec changed as variant_data says, as YAML."""
    return variant(MINIMAL_SPEC, nodeset=nodeset, **top)


def nodeset_named(name: str) -> dict[str, Any]:
    """Top-level keys giving the minimal spec's one nodeset, and its partition, the name `name`."""
    return {"nodesets": [{"name": name, "instanceType": "g5.xlarge"}], "partitions": [{"name": name, "nodesets": [name]}]}


def by_name(items: list[dict[str, Any]], changes: dict[str, Any]) -> list[dict[str, Any]]:
    """`items` (nodesets, partitions) with each change merged into the item of that name, DROP removing
    it; a name no item has fails, so a test cannot silently change nothing."""
    missing = set(changes) - {item["name"] for item in items}
    assert not missing, f"no item named {sorted(missing)}"
    return [merged(item, changes.get(item["name"], {})) for item in items if changes.get(item["name"]) is not DROP]


def named(changes: dict[str, Any]) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    """A change of a list of named items, as by_name does it: `spec_text(partitions=named({"gpu": DROP}))`."""
    return lambda items: by_name(items, changes)
