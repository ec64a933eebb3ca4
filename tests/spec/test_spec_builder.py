"""The test-spec builder (tests/spec_builder.py): what each kind of change does to the minimal spec."""

from __future__ import annotations

import pytest
import yaml

from slurmgen.spec import parse_text
from tests.conftest import MINIMAL_SPEC
from tests.spec_builder import DROP, Whole, by_name, named, nodeset_named, spec_data, spec_text, variant


def test_no_change_is_the_minimal_spec_and_it_loads():
    assert yaml.safe_load(spec_text()) == yaml.safe_load(MINIMAL_SPEC)
    assert parse_text("t.yaml", spec_text()).name == "t"


def test_a_nodeset_field_merges_into_the_first_nodeset():
    data = spec_data(nodeset={"replicas": 3})
    assert data["nodesets"] == [{"name": "gpu", "instanceType": "g5.xlarge", "replicas": 3}]


def test_a_nodeset_field_merges_into_the_first_of_several():
    data = spec_data(nodesets=[{"name": "a", "instanceType": "g5.xlarge"}, {"name": "b", "instanceType": "m7i.large"}],
                     nodeset={"efa": True})
    assert data["nodesets"] == [{"name": "a", "instanceType": "g5.xlarge", "efa": True},
                                {"name": "b", "instanceType": "m7i.large"}]


def test_a_list_replaces_and_a_mapping_merges():
    data = spec_data(partitions=[{"name": "all", "nodesets": ["ALL"]}], aws={"region": "eu-west-1"})
    assert data["partitions"] == [{"name": "all", "nodesets": ["ALL"]}]
    assert data["aws"] == {"region": "eu-west-1", "eksClusterName": "eks"}


def test_a_new_top_level_section_is_added_after_the_others():
    data = spec_data(secrets={"mode": "precreated"})
    assert list(data)[-1] == "secrets" and data["secrets"] == {"mode": "precreated"}


def test_drop_removes_a_key_and_none_writes_null():
    data = spec_data(aws={"eksClusterName": DROP}, gitops=DROP, name=None)
    assert data["aws"] == {"region": "us-west-2"} and "gitops" not in data and data["name"] is None
    assert "gitops" not in spec_text(gitops=DROP) and "name: null" in spec_text(name=None)


def test_one_call_does_not_leak_into_the_next():
    spec_data(nodeset={"replicas": 9}, aws={"region": "eu-west-1"})
    assert spec_data() == yaml.safe_load(MINIMAL_SPEC)


def test_the_text_is_block_yaml_one_key_a_line():
    text = spec_text(nodeset={"replicas": 2})
    assert text.splitlines()[8:11] == ["- name: gpu", "  instanceType: g5.xlarge", "  replicas: 2"]


def test_nodeset_named_renames_the_nodeset_and_its_partition():
    data = spec_data(**nodeset_named("cpu"))
    assert [n["name"] for n in data["nodesets"]] == ["cpu"] and data["partitions"] == [{"name": "cpu", "nodesets": ["cpu"]}]


def test_a_variant_of_another_spec_changes_only_what_it_names():
    base = "# a comment\nname: x\ndirectory: {kind: ldap, tls: {verify: false}}\n"
    assert yaml.safe_load(variant(base, directory={"tls": DROP, "uris": ["ldap://h"]})) == {
        "name": "x", "directory": {"kind": "ldap", "uris": ["ldap://h"]}}


def test_a_whole_mapping_replaces_instead_of_merging():
    data = spec_data(aws=Whole(region="eu-west-1"), gitops={"targetRevision": "dev"})
    assert data["aws"] == {"region": "eu-west-1"}
    assert data["gitops"] == {"repoURL": "https://github.com/o/r.git", "targetRevision": "dev"}
    assert yaml.safe_dump(data) == yaml.safe_dump(yaml.safe_load(yaml.safe_dump(data)))  # plain dicts: dumpable
    nested = spec_data(login={"service": Whole(type="NodePort"), "x": DROP})
    assert nested["login"] == {"service": {"type": "NodePort"}} and type(nested["login"]["service"]) is dict


def test_by_name_changes_and_removes_items_and_refuses_a_name_it_lacks():
    items = [{"name": "a", "x": 1}, {"name": "b", "x": 2}, {"name": "c"}]
    assert by_name(items, {"a": {"x": 3}, "b": DROP}) == [{"name": "a", "x": 3}, {"name": "c"}]
    with pytest.raises(AssertionError, match="no item named"):
        by_name(items, {"z": {}})


def test_named_changes_a_list_by_item_name_inside_a_merge():
    data = spec_data(nodesets=named({"gpu": {"replicas": 2}}), partitions=lambda old: [*old, {"name": "x", "nodesets": ["gpu"]}])
    assert data["nodesets"] == [{"name": "gpu", "instanceType": "g5.xlarge", "replicas": 2}]
    assert [p["name"] for p in data["partitions"]] == ["gpu", "x"]
