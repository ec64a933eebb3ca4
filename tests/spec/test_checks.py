"""Cross-field rules run on the sections that passed the schema, and declare every section they read."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from slurmgen.spec import SpecError, loader, parse_text
from slurmgen.spec import _checks, _schema
from slurmgen.spec._checks import aws
from slurmgen.spec._yaml import decode, load_yaml

from tests.conftest import EXAMPLES, MINIMAL_SPEC
from tests.conftest import SPECS as SPEC_DIR
from tests.spec_builder import spec_data, spec_text
from tests.conftest import TESTS

BAD = sorted((TESTS / "cases" / "bad").glob("*.yaml"))


def _schema_valid_specs() -> list[tuple[str, dict]]:
    """Every example and every bad case that passes the schema, defaulted as the rules see it."""
    specs = []
    for path in [*EXAMPLES, *BAD]:
        try:
            data = load_yaml(decode(path.read_bytes()))
        except ValueError:  # not UTF-8, over a cap, invalid YAML: never reaches the rules
            continue
        if not isinstance(data, dict):
            continue
        if "extends" in data:
            try:
                data = loader._extend(path, data, (path.resolve(),))
            except SpecError:
                continue
        if not list(_schema.check(data)):
            specs.append((path.name, _schema.with_defaults(data)))
    return specs


SPECS = _schema_valid_specs()


def test_every_rule_declares_the_sections_it_reads():
    # GIVEN the spec layer's rules and the schema's top-level sections
    sections = set(_schema.schema()["properties"])
    # THEN each rule declares (@rule) only real sections
    for rule in _checks.RULES:
        assert rule.reads and set(rule.reads) <= sections, rule.__name__


@pytest.mark.parametrize("rule", _checks.RULES, ids=[r.__name__ for r in _checks.RULES])
def test_a_rule_needs_nothing_beyond_its_declared_sections(rule):
    assert len(SPECS) > 40
    for name, spec in SPECS:
        # GIVEN a schema-valid spec cut down to the sections the rule declares
        cut = {key: value for key, value in spec.items() if key in rule.reads}
        # WHEN the rule runs on it
        # THEN it finds exactly what it finds on the whole spec (a KeyError means its @rule sections are incomplete)
        assert list(rule(cut)) == list(rule(spec)), name


def test_a_schema_error_skips_only_the_rules_reading_that_section():
    # GIVEN a schema error in nodesets and a login problem the schema cannot see
    text = spec_text(nodeset={"replicas": "two"}, login={"service": {"sourceRanges": ["0.0.0.0/0"]}})
    # WHEN it is loaded
    with pytest.raises(SpecError) as err:
        parse_text("c.yaml", text)
    # THEN both are reported, the schema's first
    assert [p.path for p in err.value.problems] == ["nodesets[gpu].replicas", "login.service.sourceRanges[0]"]


def test_a_rule_from_another_layer_runs_only_on_a_schema_valid_spec():
    # GIVEN a rule registered from outside the spec layer (it declares no sections) that records its calls
    from slurmgen.rule import rule as declare
    calls = []

    @declare()
    def rule(spec):
        calls.append(spec["nodesets"][0]["replicas"])
        return iter(())

    rules = (*loader.rules_for(), rule)
    # WHEN a spec with a schema error anywhere is loaded, then a valid one
    with pytest.raises(SpecError):
        loader._load(Path("c.yaml"), spec_text(name="T"), rules)
    loader._load(Path("c.yaml"), MINIMAL_SPEC, rules)
    # THEN it ran once, on the valid spec
    assert calls == [1]


def test_failed_sections_name_the_top_level_keys_with_errors():
    # GIVEN a spec with a wrong type under compute and a missing required section
    raw = spec_data(compute={"zones": 5})
    raw["nodeset"] = raw.pop("nodesets")
    data = load_yaml(yaml.safe_dump(raw, sort_keys=False))
    # WHEN the failed sections are computed
    # THEN compute and the missing nodesets are named; the unknown 'nodeset' key is read by no rule
    assert _schema.failed_sections(data) == frozenset({"compute", "nodesets"})


@pytest.mark.parametrize(("zone", "region"), [
    ("us-east-1a", "us-east-1"), ("eu-central-1c", "eu-central-1"), ("us-gov-west-1a", "us-gov-west-1"),
    ("use1-az1", None),  # a zone ID names no region the same way; the schema refuses it anyway
])
def test_the_region_of_a_zone_name(zone, region):
    # GIVEN an availability zone name  WHEN its region is asked  THEN it is the name less its letter
    assert aws.zone_region(zone) == region


def test_garbage_anywhere_is_a_spec_error_never_a_crash():
    # GIVEN the example spec with one to three values replaced by values of the wrong shape (seeded)
    import copy
    import random

    import yaml

    import slurmgen.plan.nodesets  # noqa: F401 - registers the instance-catalog rule, as a real run does

    base = yaml.safe_load((SPEC_DIR / "example.yaml").read_text())

    def paths(node, at=()):
        yield at
        children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in children:
            yield from paths(value, (*at, key))

    every = [p for p in paths(base) if p]
    rng = random.Random(10)
    for _ in range(120):
        spec = copy.deepcopy(base)
        for at in rng.sample(every, rng.randint(1, 3)):
            parent = spec
            try:
                for key in at[:-1]:
                    parent = parent[key]
                parent[at[-1]] = rng.choice([5, "x", [], {}, None, [{"name": 1}], {"name": "a"}, True, "us-east-1a"])
            except (KeyError, IndexError, TypeError):
                pass  # an earlier replacement removed this path
        # WHEN it is loaded  THEN it either loads or raises SpecError (one line per problem), nothing else
        try:
            parse_text("f.yaml", yaml.safe_dump(spec))
        except SpecError as err:
            assert err.problems


# --- login exposure: counted on addresses, not strings ---

def _networks(*cidrs):
    import ipaddress
    return [ipaddress.ip_network(c) for c in cidrs]


def test_public_addresses_counts_the_union_minus_private_space():
    from slurmgen.spec._checks.access import public_addresses
    # GIVEN two halves of the address space: together the whole internet minus private/reserved space
    halves = public_addresses(_networks("0.0.0.0/1", "128.0.0.0/1"))
    assert halves == public_addresses(_networks("0.0.0.0/0"))
    assert 3_000_000_000 < halves < 2 ** 32
    # AND private, shared and documentation space is not public at all
    assert public_addresses(_networks("10.0.0.0/8", "100.64.0.0/10", "192.168.0.0/16")) == 0
    assert public_addresses(_networks("fc00::/7", "fe80::/10")) == 0
    # AND an overlap is counted once
    assert public_addresses(_networks("8.8.8.0/24", "8.8.8.0/25")) == 256
    # AND a public /16 with a private part inside counts only the public part
    assert public_addresses(_networks("198.51.0.0/16")) == 65536 - 256


def test_a_small_public_block_needs_no_opt_in_a_larger_one_does():
    # GIVEN an internet-facing NLB limited to one public /24 and a /32: within the small-block rule
    ok = parse_text("s.yaml", _spec_with_ranges("[8.8.8.0/24, 9.9.9.9/32]")).login.service.source_ranges
    assert ok == ("8.8.8.0/24", "9.9.9.9/32")
    # WHEN the /24 grows to a /23 THEN it is refused, naming the range
    with pytest.raises(SpecError) as err:
        parse_text("s.yaml", _spec_with_ranges("[8.8.8.0/23]"))
    assert [p.path for p in err.value.problems] == ["login.service.sourceRanges[0]"]
    # AND the opt-in accepts it
    assert parse_text("s.yaml", _spec_with_ranges("[8.8.8.0/23]", opt_in=True)).login.service.allow_public_ssh


def _spec_with_ranges(ranges: str, opt_in: bool = False) -> str:
    return ('schemaVersion: 1\nname: t\naws: {region: us-west-2, eksClusterName: eks}\n'
            'gitops: {repoURL: "https://github.com/o/r.git"}\n'
            'nodesets: [{name: gpu, instanceType: g5.xlarge}]\npartitions: [{name: gpu, nodesets: [gpu]}]\n'
            f'login: {{service: {{scheme: internet-facing, sourceRanges: {ranges}, allowPublicSsh: {str(opt_in).lower()}}}}}\n')


LAYER_RULES = [rule for rule in loader.rules_for() if rule not in _checks.RULES]


@pytest.mark.parametrize("rule", LAYER_RULES, ids=[r.__name__ for r in LAYER_RULES])
def test_the_catalogs_rules_declare_their_sections_and_need_nothing_beyond(rule):
    """Issue 21 item 3: the instance catalog's rule declared nothing, so any schema error hid an unknown type."""
    # GIVEN a rule of the catalog layer (instance fit, the Region's registry)
    reads = rule.reads
    # THEN it names the sections it reads, real ones
    assert reads and set(reads) <= set(_schema.schema()["properties"]), rule.__name__
    for name, spec in SPECS:
        # AND on a schema-valid spec cut down to them it finds what it finds on the whole spec
        cut = {key: value for key, value in spec.items() if key in reads}
        assert list(rule(cut)) == list(rule(spec)), name


def test_every_rule_of_every_layer_is_declared_one_way():
    # GIVEN the rules the loader runs: the spec's own, the catalog's, the Region's registry's, the model's
    from slurmgen.rule import Rule
    from slurmgen.spec import _model_rules
    rules = (*loader.rules_for(), *_model_rules.MODEL_RULES)
    # THEN each is declared with @rule (its sections on it), and no second registry of sections is left
    assert all(isinstance(rule, Rule) for rule in rules), [r for r in rules if not isinstance(r, Rule)]
    assert not hasattr(_checks, "READS")


def test_the_document_rules_are_split_by_topic():
    # GIVEN the package of the rules on the spec document
    from tests.conftest import REPO
    modules = sorted((REPO / "slurmgen" / "spec" / "_checks").glob("*.py"))
    # THEN it has one module per topic, each short enough to read at once, and every rule is in RULES
    assert len(modules) >= 8
    assert all(len(m.read_text().splitlines()) <= 300 for m in modules), [m.name for m in modules]
    declared = {name for m in modules for name in re.findall(r"^@rule\([^)]*\)\ndef (\w+)", m.read_text(), re.M)}
    assert declared == {r.__name__ for r in _checks.RULES} - {"pinned_images", "topology_rules"}
