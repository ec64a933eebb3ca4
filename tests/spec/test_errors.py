"""Error paths name list items as the user wrote them (slurmgen/spec/errors.name_keyed), centrally."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmgen.spec import parse_text
from slurmgen.spec.errors import SpecError, name_keyed

from tests.spec_builder import spec_text

SPEC = {
    "nodesets": [{"name": "cpu"}, {"name": "gpu"}, {"name": "gpu"}, {"replicas": 1}, {"name": 7}, {"name": "12"},
                 {"name": "has space"}],
    "partitions": [{"name": "all", "nodesets": ["cpu", "gpu"]}],
    "metrics": {"serviceMonitor": {"labels": {"app.kubernetes.io/name": "x"}}},
    "policy": {"users": [{"name": "jane.doe"}]},
}


@pytest.mark.parametrize(("path", "shown"), [
    ("nodesets[0].replicas", "nodesets[cpu].replicas"),            # a unique name replaces the index
    ("nodesets[1].name", "nodesets[1].name"),                      # a duplicated name keeps the index
    ("nodesets[2].name", "nodesets[2].name"),
    ("nodesets[3].replicas", "nodesets[3].replicas"),              # no name at all
    ("nodesets[4].name", "nodesets[4].name"),                      # a name that is not a string
    ("nodesets[5]", "nodesets[5]"),                                # a name that would read as an index
    ("nodesets[6].name", "nodesets[6].name"),                      # a name that is not a plain word
    ("nodesets[9].zones", "nodesets[9].zones"),                    # an index the data does not have
    ("partitions[0].nodesets[1]", "partitions[all].nodesets[1]"),  # a list of strings keeps its index
    ("policy.users[0].defaultAccount", "policy.users[jane.doe].defaultAccount"),
    ("metrics.serviceMonitor.labels.app.kubernetes.io/name", "metrics.serviceMonitor.labels.app.kubernetes.io/name"),
    ("storage.fsx.zone", "storage.fsx.zone"),                      # a key the data lacks: shown as the rule wrote it
    ("", ""),
])
def test_index_paths_become_name_paths_only_where_the_name_identifies_the_item(path, shown):
    # GIVEN spec data with named, duplicated, unnamed and oddly named items
    # WHEN an index path is shown to the user
    # THEN unique plain names replace indexes and everything else is kept as written
    assert name_keyed(path, SPEC) == shown


def test_rules_yielding_index_paths_are_shown_name_keyed():
    # GIVEN a rule registered from outside the spec layer that yields an index path (as the catalog rule does)
    from slurmgen.spec import loader

    def rule(spec):
        yield "nodesets[1].instanceType", "not offered"

    text = spec_text(nodesets=[{"name": "gpu", "instanceType": "g5.xlarge"}, {"name": "big", "instanceType": "g5.2xlarge"}],
                     partitions=[{"name": "gpu", "nodesets": ["gpu", "big"]}])
    # WHEN the spec is loaded with that rule beside the spec layer's own
    with pytest.raises(SpecError) as err:
        loader._load(Path("c.yaml"), text, (*loader.rules_for(), rule))
    # THEN the formatter shows the item by its name
    assert [str(p) for p in err.value.problems] == ["c.yaml:12: nodesets[big].instanceType: not offered"]


def test_schema_errors_use_the_names_of_the_raw_spec():
    # GIVEN a nodeset whose replicas has the wrong type
    text = spec_text(nodeset={"replicas": "two"})
    # WHEN it is loaded
    with pytest.raises(SpecError) as err:
        parse_text("c.yaml", text)
    # THEN the line names the nodeset
    assert [str(p) for p in err.value.problems] == ["c.yaml:11: nodesets[gpu].replicas: expected an integer, got string 'two'"]


def test_each_problem_names_the_line_that_writes_its_field(tmp_path):
    """Issue 21 item 3: error lines read `FILE:LINE: path: message` where the file writes the field."""
    # GIVEN this text (the test is about its line numbers, so it is written out)
    text = """\
schemaVersion: 1
name: t
aws: {region: us-west-2, eksClusterName: eks}
gitops: {repoURL: "https://github.com/o/r.git"}
nodesets: [{name: gpu, instanceType: g5.nope}]
partitions: [{name: gpu, nodesets: [gpu]}]
metrics:
  serviceMonitor:
    labels: {app.kubernetes.io/name: 7}
storage:
  fsx:
    enabled: true
"""
    # WHEN a spec with a wrong field, a label key holding dots and a missing key is loaded
    with pytest.raises(SpecError) as err:
        parse_text("c.yaml", text)
    lines = {p.path: p.line for p in err.value.problems}
    # THEN each names its own line: the key, the dotted key, and for a missing key its parent's
    assert lines["nodesets[gpu].instanceType"] == 5
    assert lines["metrics.serviceMonitor.labels.app.kubernetes.io/name"] == 9
    assert lines["storage.fsx.zone"] == 11
    assert "c.yaml:5: nodesets[gpu].instanceType: unknown instance type 'g5.nope'" in str(err.value)


def test_a_field_from_an_extended_file_gets_no_line_of_the_spec(tmp_path):
    # GIVEN a spec whose aws section comes from the file it extends, and a nodeset of its own
    (tmp_path / "_base.yaml").write_text("aws: {region: us-west-2, eksClusterName: eks}\nstorage: {fsx: {enabled: true}}\n")
    spec = tmp_path / "c.yaml"
    spec.write_text("""\
extends: _base.yaml
schemaVersion: 1
name: t
gitops: {repoURL: "https://github.com/o/r.git"}
nodesets: [{name: gpu, instanceType: g5.nope}]
partitions: [{name: gpu, nodesets: [gpu]}]
storage: {fsx: {mountPath: /fsx}}
""")
    from slurmgen.spec import load_spec
    with pytest.raises(SpecError) as err:
        load_spec(spec)
    lines = {p.path: p.line for p in err.value.problems}
    # THEN the spec's own field has its line; a missing FSx key does not borrow the spec's storage line,
    # since the file it extends may be where FSx was turned on
    assert lines["nodesets[gpu].instanceType"] == 5
    assert lines["storage.fsx.zone"] is None


def test_a_spec_file_name_with_terminal_escapes_is_printed_escaped(tmp_path, capsys):
    # GIVEN a spec whose file name holds an escape sequence (a PR can add any name under clusters/)
    from slurmgen.cli import main

    spec = tmp_path / "\x1b]0;pwned\x07t\u202e.yaml"
    spec.write_text("[]\n")
    # WHEN it is refused THEN the line shows the characters escaped, never raw
    assert main(["--spec", str(spec), "--out", str(tmp_path / "dist")]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and "\u202e" not in err
    assert "\\x1b]0;pwned\\x07t\\u202e.yaml: expected a mapping" in err


@pytest.mark.parametrize(("path", "types"), [
    (("aws", "accountId"), {"string"}),
    (("partitions", 0, "maxTime"), {"string"}),
    (("nodesets", 3, "extraSlurmdConf", "Weight"), {"string", "integer"}),  # through $ref and oneOf
    (("nodesets", 0, "replicas"), {"integer"}),
    (("aws", "noSuchKey"), None),
])
def test_field_types_follow_the_schema_through_refs_and_one_of(path, types):
    # GIVEN a field path / WHEN its types are looked up / THEN they are the schema's (None when it does not say)
    from slurmgen.spec._schema import field_types
    assert field_types(path) == (frozenset(types) if types else None)


@pytest.mark.parametrize(("seconds", "shown"), [(43200, "12:00:00"), (3600, "01:00:00"), (43200 * 60, "30-00:00:00"),
                                                (90061, "1-01:01:01")])
def test_slurm_durations_are_written_as_slurm_reads_them(seconds, shown):
    from slurmgen.spec._schema import slurm_duration
    assert slurm_duration(seconds) == shown


def test_a_leading_zero_number_is_refused_only_where_the_field_takes_only_text():
    # GIVEN 012345678901, which PyYAML reads as text and YAML 1.2 as the number 12345678901
    text = spec_text(aws={"accountId": "X"}, nodeset={"extraSlurmdConf": {"Weight": "Y"}})
    assert "accountId: X\n" in text and "Weight: Y\n" in text
    # WHEN it is a slurmd parameter (text or a number) THEN it is read as the text written
    spec = parse_text("c.yaml", text.replace("accountId: X", 'accountId: "111122223333"').replace("Y", "012345678901"))
    assert dict(spec.nodesets[0].extra_slurmd_conf) == {"Weight": "012345678901"}
    # WHEN it is the account ID (text only) THEN the line says to quote it
    with pytest.raises(SpecError) as err:
        parse_text("c.yaml", text.replace("X", "012345678901").replace("Y", "1"))
    assert [p.what.split("; ")[-1] for p in err.value.problems] == ['quote it: accountId: "012345678901"']


def test_the_plain_reader_without_field_types_reads_text_as_before():
    # GIVEN the reader as the render cache and tools use it (no schema) / WHEN it reads 012345678901
    from slurmgen.spec._yaml import load_yaml
    # THEN it is the text written
    assert load_yaml("accountId: 012345678901\n") == {"accountId": "012345678901"}


@pytest.mark.parametrize(("text", "message"), [
    ("a:\n  b: 1\n c: 2\n", "line 3, column 2: a.b: invalid YAML: did not find expected key; check the indentation "
                            "of line 3: it must line up with b (column 3), or with a (column 1)"),
    ("p:\n  - a: 1\n   - b: 2\n", "line 3, column 4: p[0].a: invalid YAML: did not find expected '-' indicator; check "
                                  "the indentation of line 3: it must line up with the '-' of the items above (column 3)"),
    ("p:\n  a: 1\n  - b: 2\n", "line 3, column 3: p.a: invalid YAML: did not find expected key; line 3 starts a list "
                               "item ('- ') among keys such as a; write it as a key, or make every entry a list item"),
    ("a:\n  b: 1\n...\n  c: 2\n", 'line 4, column 3: a.b: invalid YAML: did not find expected <document start>; the '
                                  '"..." on line 3 ends the YAML document, so nothing after it is read; remove that line'),
])
def test_a_syntax_error_names_the_last_field_read_and_the_likely_fix(text, message):
    # GIVEN text with a mis-indented key, a mis-indented list item, a list item among keys, a stray `...`
    from slurmgen.spec._yaml import YamlSyntaxError, load_yaml
    # WHEN a spec reader reads it / THEN one line: position, the last field before it, the parser's words, the hint
    with pytest.raises(YamlSyntaxError) as err:
        load_yaml(text)
    assert str(err.value) == message


def test_a_document_end_marker_at_the_end_is_harmless():
    # GIVEN `...` as the last line (the document ends where the file does) / THEN it is read
    from slurmgen.spec._yaml import load_yaml
    assert load_yaml("a: 1\n...\n") == {"a": 1}


def test_every_stage_reports_the_one_problem_type():
    # GIVEN a bad spec, an object the cluster would reject, and a slurm.conf key set twice
    from slurmgen.errors import Problem
    from slurmgen.verify.schemas import Validator
    from slurmgen.verify.slurm_files import _duplicates
    with pytest.raises(SpecError) as err:
        parse_text("c.yaml", "name: [\n")
    bad_object = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "dataz": {}}
    # WHEN each stage reports them
    found = [*err.value.problems, *Validator.create().validate(bad_object),
             *_duplicates("c/slurm/controller.yaml", "spec.extraConf", [("A", "1"), ("a", "2")], "")]
    # THEN every one is an errors.Problem, printed WHERE: PATH: WHAT
    assert [type(p) for p in found] == [Problem] * 3
    assert str(found[1]).startswith("ConfigMap x: ")
    assert str(found[2]) == "c/slurm/controller.yaml: spec.extraConf: A is set twice with different values (1, 2); only one can hold"
    assert found[2].check == "duplicate-key"


def test_a_problem_shows_its_fix_after_what_is_wrong():
    # GIVEN a problem whose fix is given apart from what is wrong, and one that says both in one sentence
    from slurmgen.errors import Problem
    apart = Problem("c/slurm/a.yaml", "spec.extraConf", "X=1 overrides X=2", fix="set it through the Controller instead")
    joined = Problem("c.yaml", "name", "too long; shorten it", line=3)
    # THEN both print as one line WHERE[:LINE]: PATH: WHAT; FIX, and `message` is the line without where
    assert str(apart) == "c/slurm/a.yaml: spec.extraConf: X=1 overrides X=2; set it through the Controller instead"
    assert apart.message == "X=1 overrides X=2; set it through the Controller instead"
    assert str(joined) == "c.yaml:3: name: too long; shorten it"
