"""Good input as data: every tests/cases/good/*.yaml loads, and its fields read as its `# expect:` lines say.

The counterpart of tests/spec/test_bad_specs.py for input a stricter reader might wrongly refuse (format in
tests/cases/good/README.md).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from slurmgen.spec import parse_text
from slurmgen.spec._yaml import load_yaml
from tests.conftest import TESTS

CASES = sorted((TESTS / "cases" / "good").glob("*.yaml"))
_STEP = re.compile(r"\[(\d+)\]|\.?([A-Za-z][A-Za-z0-9]*)")


def expectations(text: str) -> list[tuple[str, Any]]:
    """The (field path, value) pairs of the `# expect: PATH = JSON` lines."""
    pairs = [line[len("# expect: "):].split(" = ", 1) for line in text.splitlines() if line.startswith("# expect: ")]
    return [(path, json.loads(value)) for path, value in pairs]


def field(data: Any, path: str) -> Any:
    """The value at `path` (`partitions[0].maxTime`) of the loaded YAML."""
    for index, key in _STEP.findall(path):
        data = data[int(index)] if index else data[key]
    return data


def test_there_are_good_cases():
    assert len(CASES) >= 2


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_good_spec_loads_and_reads_as_expected(case):
    text = case.read_text(encoding="utf-8")
    expected = expectations(text)
    assert expected, f"{case.name} has no '# expect:' line"
    # GIVEN a spec a person or a script (yaml.safe_dump) may well write
    # WHEN it is read and loaded
    data = load_yaml(text)
    parse_text(str(case), text)  # raises on any problem (schema or checks)
    # THEN each expected field holds exactly the expected value and type (31 is an int, "1e3" a string)
    for path, value in expected:
        got = field(data, path)
        assert (type(got), got) == (type(value), value), path
