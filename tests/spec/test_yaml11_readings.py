"""The spec reader refuses a plain scalar exactly when PyYAML (YAML 1.1) reads it as a number or boolean
that a YAML 1.2 reader, and a person, reads otherwise; never what PyYAML itself reads as text.

The oracle is PyYAML: yaml.safe_load gives the YAML 1.1 value, and the forms YAML 1.1 misreads are
stated here from its type pages (https://yaml.org/type/int.html, float.html, bool.html): base 60
(`1:30`), `_` separators, `0b` binary, a signed or `_` hex, octal with a leading 0 (`010`), and the
words yes/no/on/off.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from slurmgen.spec import parse_text
from slurmgen.spec._yaml import YamlSyntaxError, load_yaml
from tests.spec_builder import named, spec_text

WORDS = st.sampled_from(["yes", "Yes", "YES", "yEs", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF", "y",
                         "n", "true", "False", "TRUE", "null", "Null", "~", ".inf", "-.Inf", "+.INF", ".nan", ".NaN",
                         "nan", "inf", "0", "-0", "+0", "00", "007", "08", "010", "0x1F", "-0x1F", "0b11", "1_000",
                         ".5", "-.5", "1e3", "1.0e+3", "1.", "1:30", "04:00:00", "08:00:00", "1:30:00", "04:00:00.5"])
# Strings shaped like YAML 1.1 numbers: signs, 0x/0o/0b prefixes, `_`, colons, dots and exponents.
SHAPED = st.from_regex(r"[-+]?(0[xob])?[0-9a-fA-F_]{0,4}(:[0-9]{1,2}){0,3}(\.[0-9_]{0,3})?([eE][-+]?[0-9]{1,2})?",
                       fullmatch=True)
SCALARS = st.one_of(WORDS, SHAPED, st.text(alphabet="0123456789_:.+-eExXobB", min_size=1, max_size=10))


def yaml11_value(plain: str) -> Any:
    """PyYAML's reading of `plain` as a mapping value; skips what is not one plain scalar, or no value."""
    events = list(yaml.parse(f"k: {plain}\n")) if _parses(f"k: {plain}\n") else []
    scalars = [e for e in events if isinstance(e, yaml.ScalarEvent)]
    assume(len(scalars) == 2 and scalars[1].style is None and scalars[1].value == plain)
    try:
        return yaml.safe_load(f"k: {plain}\n")["k"]
    except ValueError:  # `._` resolves as a float Python cannot build: the loader reports it otherwise
        assume(False)


def _parses(text: str) -> bool:
    try:
        list(yaml.parse(text))
    except yaml.YAMLError:
        return False
    return True


def misread(plain: str, value: Any) -> bool:
    """Whether YAML 1.1 reads `plain` as `value` where YAML 1.2 reads text or another value."""
    body = plain.lstrip("+-")
    if isinstance(value, bool):
        return plain.lower() in {"yes", "no", "on", "off"}
    if not isinstance(value, (int, float)):
        return False
    octal = isinstance(value, int) and body[:1] == "0" and body.isdigit() and int(plain, 10) != value
    signed_hex = body.startswith("0x") and body != plain
    return ":" in plain or "_" in plain or body.startswith("0b") or signed_hex or octal


def refusal(plain: str) -> str | None:
    """The reader's refusal of `k: plain` on account of YAML 1.1, or None when it reads it."""
    try:
        load_yaml(f"k: {plain}\n")
    except YamlSyntaxError as err:
        assert "reads as the YAML 1.1" in str(err), str(err)
        return str(err)
    return None


@settings(max_examples=1500, deadline=None)
@given(SCALARS)
@example("04:00:00")
@example("08:00:00")
@example("1:30")
@example("010")
@example("yes")
@example("0x1F")
def test_refused_exactly_when_yaml11_misreads_a_number_or_boolean(plain):
    # GIVEN a plain scalar and PyYAML's (YAML 1.1) value for it
    value = yaml11_value(plain)
    # WHEN the spec reader reads it as a mapping value
    message = refusal(plain)
    # THEN it is refused exactly when YAML 1.1 reads a number or boolean YAML 1.2 reads otherwise:
    # never what PyYAML reads as text
    assert (message is not None) == misread(plain, value), (plain, value, message)
    assert message is None or not isinstance(value, str)
    # AND the refusal shows PyYAML's value and says to quote it
    if message is not None:
        shown = str(value).lower() if isinstance(value, bool) else repr(value)
        assert f": {plain} reads as the YAML 1.1 " in message and f" {shown} (" in message
        assert f'quote it: k: "{plain}"' in message


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(alphabet="0123456789:,._-+eE yesnoYESNO", max_size=40),
                 st.text(st.characters(exclude_categories=("Cs",)), max_size=40)))
@example("04:00:00")
@example("1,000,000,000,000,000,000,000,000")
def test_what_yaml_safe_dump_writes_is_read_back(text):
    # GIVEN any string, written by yaml.safe_dump (which quotes only what YAML 1.1 reads as no string)
    dumped = yaml.safe_dump({"k": text})
    # WHEN the spec reader reads it / THEN it gets the same string back, refused for nothing
    assert load_yaml(dumped) == {"k": text}


def test_a_spec_written_by_yaml_safe_dump_with_a_leading_zero_duration_is_accepted():
    # GIVEN a spec written by yaml.safe_dump with maxTime "04:00:00" (it writes the value unquoted)
    text = spec_text(partitions=named({"gpu": {"maxTime": "04:00:00"}}))
    assert "maxTime: 04:00:00\n" in text
    # WHEN it is loaded / THEN it is accepted and the partition's limit is the string, unchanged
    spec = parse_text("t.yaml", text)
    assert spec.partitions[0].max_time == "04:00:00"


@pytest.mark.parametrize(("text", "message"), [
    ("a:\n  - {b: x}\n  - {b: 0b11}\n",
     'line 3, column 9: a[1].b: 0b11 reads as the YAML 1.1 number 3 (0b makes it binary); quote it: b: "0b11", '
     "or write the number in decimal"),
    ("a: [x, 1:30]\n", 'line 1, column 8: a[1]: 1:30 reads as the YAML 1.1 number 90 (colons count in base 60); '
     'quote it: - "1:30"'),
    ("a: {010: x}\n", 'line 1, column 5: a.010: 010 reads as the YAML 1.1 number 8 (a leading 0 makes it octal); '
     'quote it: "010": ..., or write the number in decimal'),
    ("a: -0x1F\n", 'line 1, column 4: a: -0x1F reads as the YAML 1.1 number -31 (a sign or _ in a 0x number); '
     'quote it: a: "-0x1F", or write the number in decimal'),
    ("a: &n {b: 1}\nc: *n\nd: {e: Off}\n", "line 3, column 8: d.e: Off reads as the YAML 1.1 boolean false (YAML 1.1 "
     'booleans include yes, no, on and off); quote it: e: "Off", or write true or false'),
])
def test_a_refusal_names_the_field_and_the_quoted_spelling(text, message):
    # GIVEN a plain scalar YAML 1.1 misreads, in a list, as a key, after an alias / WHEN read
    with pytest.raises(YamlSyntaxError) as err:
        load_yaml(text)
    # THEN one line: its position, its field path, the YAML 1.1 value, why, and how to quote it
    assert str(err.value) == message


def test_the_property_oracle_knows_the_forms():
    # GIVEN the oracle above / THEN it states the brief's examples as YAML 1.1 defines them
    assert [misread(s, yaml.safe_load(f"k: {s}")["k"]) for s in ("1:30", "010", "1_000", "yes", "0b1")] == [True] * 5
    assert [misread(s, yaml.safe_load(f"k: {s}")["k"]) for s in ("04:00:00", "0x1F", ".5", "1e3", "007", "true")] == \
        [False] * 6
