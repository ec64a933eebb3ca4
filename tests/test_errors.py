"""Error paths name list items as the user wrote them (slurmgen/spec/errors.name_keyed), centrally."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmgen.spec import parse_text
from slurmgen.spec.errors import SpecError, name_keyed

from .spec_builder import spec_text

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
