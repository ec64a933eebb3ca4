"""yamltext writes exactly the bytes PyYAML writes (output.dump vs output.pyyaml_dump)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmgen import yamltext
from slurmgen.output import dump, pyyaml_dump
from slurmgen.pipeline import run
from tests.conftest import EXAMPLES

REPO = Path(__file__).resolve().parents[1]

#: Characters that change how PyYAML spells a string: indicators, comment and mapping marks,
#: quotes, digits and signs (numbers, dates, times), spaces and line breaks, and non-ASCII.
TRICKY = "aZ09 .:-_/@=+#,'\"!&*?|>%`[]{}~\n\t\r\\éü中\u2028\x85"
strings = st.one_of(
    st.text(alphabet=TRICKY, max_size=12),
    st.sampled_from(["true", "no", "On", "null", "~", "1.5", "0x1F", "1_000", "12:30", "2026-12-01", "=", "<<",
                     "-", "---", "...", "a: b", "a #b", " lead", "trail ", "x\n", "x\n\n", "\nx", "x \ny",
                     ".inf", "1e5", "+1", "0o17", "ghcr.io/slinky/slurmd:25.05@sha256:abc"]),
)
scalars = st.one_of(strings, st.integers(), st.booleans(), st.none())
trees = st.recursive(scalars, lambda children: st.one_of(
    st.lists(children, max_size=4), st.dictionaries(strings, children, max_size=4)), max_leaves=30)


def fresh() -> tuple[yamltext.Spelling, list[object]]:
    """A Spelling with nothing learned yet, and the objects it had to ask PyYAML about."""
    asked: list[object] = []

    def reference(obj: object) -> str:
        asked.append(obj)
        return pyyaml_dump(obj)
    return yamltext.Spelling(reference), asked


def test_every_example_object_is_written_as_pyyaml_writes_it(dist_tree):
    # GIVEN every object of the example clusters (rendered now, and as written by the command line)
    objects = [obj for cluster in run(EXAMPLES, processes=1).clusters for obj in cluster.files.values()]
    objects += [yaml.safe_load(p.read_text()) for p in sorted(dist_tree.rglob("*.yaml"))]
    assert len(objects) > 300
    # WHEN written by yamltext (through output.dump) / THEN the bytes are PyYAML's
    for obj in objects:
        assert dump(obj) == pyyaml_dump(obj)


def test_the_layout_is_written_here_and_pyyaml_is_asked_once_per_odd_string():
    # GIVEN an object like the rendered ones, and a Spelling that learned nothing yet
    spelling, asked = fresh()
    obj = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "slurm", "labels": {"app.kubernetes.io/name": "slurm"},
                        "annotations": {"argocd.argoproj.io/sync-wave": "-1"}},
           "data": {"slurm.conf": "ClusterName=a\nNodeName=b\n", "empty": "", "flag": "yes"},
           "list": [{"image": "ghcr.io/x/y:1.2", "args": ["--v", "2"]}, [], {}, None, True, 8]}
    # WHEN written twice
    first = yamltext.text(obj, spelling)
    second = yamltext.text(obj, spelling)
    # THEN both are PyYAML's bytes
    assert first == second == pyyaml_dump(obj)
    # and PyYAML was asked only about what is not plain (the literal block, "", "yes", "-1",
    # "2"), once each: not about the layout or plain names, and not again the second time
    assert sorted(str(a) for a in asked) == sorted(str({"k": v}) for v in
                                                  ["ClusterName=a\nNodeName=b\n", "", "yes", "-1", "--v", "2"])


@pytest.mark.parametrize("obj", [
    {"a": 1.5},                                  # a float: PyYAML's representer
    {"a": "kept\n\n"},                           # `|+`: libyaml ends the document with `...`
    {"a": " lead\nx"},                           # single quotes over two lines
    {"a": "x\u2028y"},                           # a line break other than \n
    {"k" * 130: 1},                              # a key PyYAML writes as `? key`
    {1: "a"},                                    # a key that is not a string
    ["not", "a", "map"], {},
])
def test_objects_outside_the_subset_are_written_by_pyyaml(obj):
    # GIVEN an object yamltext does not lay out itself / WHEN written / THEN PyYAML's bytes
    spelling, asked = fresh()
    assert yamltext.text(obj, spelling) == pyyaml_dump(obj)
    assert obj in asked  # the whole object went to PyYAML


def test_a_value_used_twice_is_written_twice_by_both():
    # GIVEN an object holding the same dict and list object twice (a chart may reuse a literal)
    shared_map, shared_list = {"k": "v"}, ["a", {"b": 1}]
    obj = {"one": shared_map, "two": shared_map, "three": shared_list, "four": [shared_list, shared_map]}
    # WHEN written / THEN each use is written out in full, the same bytes as PyYAML's, no anchor
    assert dump(obj) == pyyaml_dump(obj)
    assert "&id" not in dump(obj) and "*id" not in dump(obj)
    assert dump(obj).count("k: v") == 3


@settings(max_examples=400, deadline=None)
@given(trees.filter(lambda t: isinstance(t, dict)))
def test_random_trees_are_written_as_pyyaml_writes_them(tree):
    # GIVEN any map of strings, numbers, booleans, nulls, lists and maps
    # WHEN written by yamltext / THEN the bytes are PyYAML's
    spelling, _ = fresh()
    assert yamltext.text(tree, spelling) == pyyaml_dump(tree)


@settings(max_examples=600, deadline=None)
@given(strings)
def test_a_plain_looking_string_is_spelled_as_pyyaml_spells_it(value):
    # GIVEN any string, as a value, inside a list and as a key
    # WHEN written by yamltext / THEN PyYAML's bytes (the plain-string check never disagrees)
    for obj in ({"k": value}, {"k": [value, {"n": value}]}, {value: 1}):
        spelling, _ = fresh()
        assert yamltext.text(obj, spelling) == pyyaml_dump(obj)
