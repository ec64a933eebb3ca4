"""The jsonschema-rs pre-check (core.Schema) never passes what jsonschema would reject.

Validation asks jsonschema-rs first and skips jsonschema when it says valid; that is only safe if
the pre-check is never more lenient. Proven here on every object of the committed examples
(`dist/`), each mutated the ways a generator bug or a schema drift would (unknown fields, wrong
types, missing fields, out-of-range numbers, strings that break patterns, enums and formats,
emptied or duplicated lists): the problems found with the pre-check on equal, line for line, those
found by jsonschema alone.
"""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any, Iterator

import pytest

from slurmgen.validate import Validator
from slurmgen.validate.core import CoreSchemas, Schema, schema_issues
from slurmgen.validate.vendored import VendoredCrds

REPO = Path(__file__).resolve().parents[2]
#: every object the tests' example specs render to (not the repository's dist/, which a fork replaces)
OBJECTS = [obj for cluster in __import__("slurmgen.pipeline").pipeline.run(
    sorted(p for p in (REPO / "tests" / "specs").glob("*.yaml") if not p.name.startswith("_"))).clusters
    for obj in cluster.files.values()]
MUTATIONS_PER_OBJECT = 12

#: Strings that break the usual constraints: empty (minLength), upper case and underscores (DNS
#: names), too long (maxLength), not base64 (format byte), a bad date-time, a trailing newline
#: (a pattern's `$`), digits only, a quantity with a bad suffix.
BAD_STRINGS = ["", "UPPER_and_under", "x" * 300, "not base64 !", "2026-13-45T25:61:00Z", "abc\n", "12345",
               "10Gx", "-leading-dash", "a" * 64,
               # characters the regex engines class differently (Unicode spaces and digits, line
               # separators): Go's ASCII classes must be what both engines apply
               "0\x1c0 * * * *", "0\x850 * *", "0\ufeff0 * * *", "1\xa0Gi", "٣", "a\rb", "a\u2028b", "@every \x1c1h"]
BAD_NUMBERS = [-1, 0, 2**31, -(2**31) - 1, 2**63, 1.5, 10**20]


@pytest.fixture(scope="module")
def engines() -> tuple[Validator, Validator]:
    """(pre-check then judge, judge alone) on the same vendored CRDs."""
    crds = VendoredCrds.load()
    return Validator(crds, CoreSchemas()), Validator(crds, CoreSchemas(precheck=False))


def _nodes(value: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    yield path, value
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _nodes(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _nodes(child, (*path, index))


def _parent(obj: Any, path: tuple) -> Any:
    for part in path[:-1]:
        obj = obj[part]
    return obj


def mutate(obj: dict, rng: random.Random) -> dict:
    """A copy of `obj` with one random change below its top level."""
    out = copy.deepcopy(obj)
    nodes = [(path, value) for path, value in _nodes(out) if path]
    path, value = rng.choice(nodes)
    parent, key = _parent(out, path), path[-1]
    move = rng.randrange(6)
    if move == 0 and isinstance(value, dict):
        value[rng.choice(["zz", "nmae", "spec", "metadata", "replicas"])] = rng.choice([1, "x", {}, [], None])
    elif move == 1 and isinstance(parent, dict):
        del parent[key]  # may remove a required field
    elif move == 2 and isinstance(value, str):
        parent[key] = rng.choice(BAD_STRINGS)
    elif move == 3 and isinstance(value, (int, float)) and not isinstance(value, bool):
        parent[key] = rng.choice(BAD_NUMBERS)
    elif move == 4 and isinstance(value, list) and value:
        parent[key] = rng.choice([[], [*value, value[0]], value[0]])  # empty, duplicate, not a list
    else:
        # another type: a string where a number was, a list where a map was, ...
        options = [1, "1", True, None, [], {}, 1.5]
        parent[key] = rng.choice([o for o in options if type(o) is not type(value)])
    return out


def test_examples_are_valid_and_every_kind_has_a_precheck(engines: tuple[Validator, Validator]) -> None:
    # given every object of the committed examples / when validated with the pre-check on
    fast, _ = engines
    assert len(OBJECTS) > 100
    assert fast.validate_all(OBJECTS) == []
    # then each kind went through a compiled pre-check (a schema jsonschema-rs could not compile
    # would silently make that kind ~50x slower to validate)
    routes = {(o["apiVersion"], o["kind"]): fast._route(o["apiVersion"], o["kind"]) for o in OBJECTS}
    missing = sorted(f"{api} {kind}" for (api, kind), route in routes.items()
                     if not isinstance(route, Schema) or route.precheck is None)
    assert missing == []
    core = fast.core
    assert all(s.precheck is not None for s in (core.container_unnamed, core.pod_spec, core.service_spec,
                                                core.persistent_volume_claim))


@pytest.mark.parametrize("seed", range(4))
def test_precheck_finds_what_jsonschema_finds(engines: tuple[Validator, Validator], seed: int) -> None:
    # given every example object, mutated MUTATIONS_PER_OBJECT / 4 times per seed
    fast, judge = engines
    rng = random.Random(seed)
    rejected = 0
    for obj in OBJECTS:
        for _ in range(MUTATIONS_PER_OBJECT // 4):
            bad = mutate(obj, rng)
            # when validated with the pre-check and by jsonschema alone
            expected = [str(p) for p in judge.validate(bad)]
            # then the findings are the same, line for line
            assert [str(p) for p in fast.validate(bad)] == expected, bad
            rejected += bool(expected)
    # and the mutations do break objects (a test of the pre-check needs invalid input)
    assert rejected > len(OBJECTS) * (MUTATIONS_PER_OBJECT // 4) // 3


def test_precheck_only_ever_skips_the_judge(engines: tuple[Validator, Validator]) -> None:
    # given a container with an unknown field, and one the pre-check cannot read (an int key)
    core = engines[0].core
    typo = {"image": "x", "imagePullPolice": "Always"}
    odd = {"image": "x", 1: "y"}
    # when / then the pre-check does not pass them and the judge's words are reported
    assert not core.container_unnamed.passes(typo)
    assert schema_issues(core.container_unnamed, typo) == [
        (("imagePullPolice",), "Additional properties are not allowed ('imagePullPolice' was unexpected)")]
    assert not core.container_unnamed.passes(odd)
    assert schema_issues(core.container_unnamed, odd) != []
    # and a valid one passes without the judge
    assert core.container_unnamed.passes({"image": "x"})


@pytest.mark.parametrize(("schema", "good", "bad"), [
    # the CRD's Go pattern: `$` ends the text, a trailing newline does not match
    ({"type": "string", "pattern": "^a\\Z", "x-go-pattern": "^a$"}, "a", "a\n"),
    # Go's \s is ASCII: a file separator is not a space for it (nor, then, for either engine)
    ({"type": "string", "pattern": "^[^\\t\\n\\f\\r ]+\\Z", "x-go-pattern": "^[^\\s]+$"}, "a\x1cb", "a b"),
    # our format checks, not jsonschema-rs's own
    ({"type": "string", "format": "byte"}, "aGVsbG8=", "hello!"),
    ({"type": "integer", "format": "int32"}, 2**31 - 1, 2**31),
    ({"type": "string", "format": "date-time"}, "2026-12-01T18:00:00Z", "2026-12-01 18:00"),
])
def test_precheck_patterns_and_formats(schema: dict, good: Any, bad: Any) -> None:
    # given a schema with a translated pattern or a checked format / when compiled for both engines
    checked = CoreSchemas().validator_for(schema)
    # then the pre-check agrees with the judge on both values
    assert checked.precheck is not None
    assert checked.passes(good) and schema_issues(checked, good) == []
    assert not checked.passes(bad) and schema_issues(checked, bad) != []


def test_the_precheck_is_set_up_only_once_enough_checks_were_judged(monkeypatch):
    # GIVEN a fresh set of core schemas that sets up its pre-check after 3 checks
    from slurmgen.validate import core as core_module

    monkeypatch.setattr(core_module, "PRECHECK_AFTER", 3)
    core = CoreSchemas()
    container = {"image": "x"}
    # WHEN a container is checked four times
    answers = [core.container_unnamed.passes(container) for _ in range(4)]
    # THEN the first three go to the judge alone (no pre-check yet), the fourth passes the pre-check
    assert answers == [False, False, False, True]
    assert schema_issues(core.container_unnamed, container) == []
    # and a pre-check asked for is compiled at once, also on another fresh set
    assert CoreSchemas().pod_spec.precheck is not None


def test_two_threads_asking_for_the_precheck_compile_it_once():
    # GIVEN a schema whose pre-check takes a while to compile, asked for from two threads at once
    import threading
    import time

    from slurmgen.validate.core import Schema

    calls = []

    def compile_slowly():
        calls.append(1)
        time.sleep(0.2)
        return "compiled"

    schema = Schema(CoreSchemas().container_unnamed.explain, compile_slowly)
    seen = []
    threads = [threading.Thread(target=lambda: seen.append(schema.precheck)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # THEN it was compiled once and both got it
    assert calls == [1] and seen == ["compiled", "compiled"]


def test_a_precheck_that_fails_to_compile_leaves_the_judge_alone():
    # GIVEN a schema whose pre-check raises while compiling
    from slurmgen.validate.core import Schema

    def broken():
        raise RuntimeError("boom")

    schema = Schema(CoreSchemas().container_unnamed.explain, broken)
    # WHEN used / THEN no pre-check, no error, and the judge decides
    assert schema.precheck is None and not schema.passes({"image": "x"})
    assert schema_issues(schema, {"image": "x"}) == []
