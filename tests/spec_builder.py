"""Test specs built as data: the minimal spec (tests/conftest.py) with the keys a test is about merged in.

A text replacement silently does nothing once the text it looks for changes, and the test then passes
without the behaviour it names; a merge cannot miss. Tests about the text itself (YAML line numbers,
key order, comments, syntax errors) keep writing text.
"""

from __future__ import annotations

from typing import Any, Final

import yaml

from tests.conftest import MINIMAL_SPEC


class _Drop:
    """The type of DROP (a distinct class so mypy and readers see it is no YAML value)."""

    def __repr__(self) -> str:
        return "DROP"


#: A value that removes its key: `spec_text(aws={"eksClusterName": DROP})`. Not None, since a test
#: may need an explicit YAML null.
DROP: Final = _Drop()


def merged(base: Any, change: Any) -> Any:
    """`change` over `base`: mappings merge key by key (DROP deletes), anything else (lists too) replaces."""
    if not (isinstance(base, dict) and isinstance(change, dict)):
        return change
    out = dict(base)
    for key, value in change.items():
        if value is DROP:
            out.pop(key, None)
        else:
            out[key] = merged(out.get(key), value)
    return out


def spec_data(*, nodeset: dict[str, Any] | None = None, **top: Any) -> dict[str, Any]:
    """The minimal spec as a dict with `top` merged in, then `nodeset` merged into nodesets[0]."""
    data: dict[str, Any] = merged(yaml.safe_load(MINIMAL_SPEC), top)
    if nodeset is not None:
        data["nodesets"] = [merged(data["nodesets"][0], nodeset), *data["nodesets"][1:]]
    return data


def spec_text(*, nodeset: dict[str, Any] | None = None, **top: Any) -> str:
    """spec_data as YAML in block style, one key per line (so an error's line number names one field)."""
    return yaml.safe_dump(spec_data(nodeset=nodeset, **top), sort_keys=False)


def nodeset_named(name: str) -> dict[str, Any]:
    """Top-level keys giving the minimal spec's one nodeset, and its partition, the name `name`."""
    return {"nodesets": [{"name": name, "instanceType": "g5.xlarge"}], "partitions": [{"name": name, "nodesets": [name]}]}
