"""Integer spec fields take YAML integers only: JSON Schema counts 4.0 as an integer, and a float
renders as '4.0', '128.0' or '524288.0Mi' (a spurious change in review, a wrong Slurm line)."""

from __future__ import annotations

from typing import Any, Iterator

import pytest

from slurmgen.spec import SpecError, parse_text
from slurmgen.spec import _schema
from tests.conftest import MINIMAL_SPEC
from tests.spec_builder import spec_text


def integer_nodes(node: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every subschema whose type admits an integer, with where it sits in the schema."""
    if isinstance(node, dict):
        kind = node.get("type")
        if kind == "integer" or (isinstance(kind, list) and "integer" in kind):
            yield path, node
        for key, sub in node.items():
            yield from integer_nodes(sub, f"{path}/{key}")
    elif isinstance(node, list):
        for index, sub in enumerate(node):
            yield from integer_nodes(sub, f"{path}/{index}")


INTEGER_NODES = list(integer_nodes(_schema.schema()))


def test_the_schema_has_the_integer_fields_this_test_walks():
    assert len(INTEGER_NODES) >= 25  # replicas, maxNodes, sizeGiB, port, fairshare, priority, ...


@pytest.mark.parametrize("where,node", INTEGER_NODES, ids=[p for p, _ in INTEGER_NODES])
def test_every_integer_field_refuses_a_float_with_an_integral_value(where, node):
    # GIVEN one integer field of the spec schema, validated the way the loader validates a spec
    validator = type(_schema._validator())({"$defs": _schema.schema()["$defs"], **node})
    value = max(node.get("minimum", 4), 4)
    # THEN the integer passes its type check and the same number written as a float does not
    assert not [e for e in validator.iter_errors(value) if e.validator == "type"], where
    assert not validator.is_valid(float(value)), where


def load_problems(text: str) -> list[str]:
    with pytest.raises(SpecError) as err:
        parse_text("t.yaml", text)
    return [str(p) for p in err.value.problems]


def test_float_replicas_is_one_clear_line_naming_the_field_and_the_fix():
    # GIVEN a nodeset with `replicas: 4.0`
    text = spec_text(nodeset={"replicas": 4.0})
    # THEN the spec is refused with one line naming the field and what to write instead
    [line] = load_problems(text)
    assert "t.yaml" in line and "nodesets[gpu].replicas" in line and "write 4" in line, line


def test_float_in_another_section_is_refused_too():
    # GIVEN an integer field outside nodesets (FSx size) written as a float
    text = MINIMAL_SPEC + "storage: {fsx: {enabled: true, sizeGiB: 1200.0}}\n"
    lines = load_problems(text)
    assert any("storage.fsx.sizeGiB" in line and "write 1200" in line for line in lines), lines


def test_integer_replicas_still_load():
    spec = parse_text("t.yaml", spec_text(nodeset={"replicas": 4}))
    assert spec.nodesets[0].replicas == 4 and isinstance(spec.nodesets[0].replicas, int)
