"""The summary's Mermaid picture of a cluster's compute (slurmgen/review/picture.py).

A small spec is rendered at base and head; the picture is checked against a golden file, line by line
where it matters, and against the subset of the Mermaid flowchart grammar it uses (no Mermaid parser is
installed: the published @mermaid-js/parser has no flowchart grammar, and `mermaid` itself needs a DOM).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from slurmgen.review.picture import CHANGED_ONLY, FULL, NONE, Element, Graph, label_text, mermaid, node_id
from slurmgen.review.summary import FULL_SUMMARY_AT, fit_comment, full_text, sections
from tests.conftest import TESTS, assert_golden
from tests.spec_builder import spec_text

GOLDEN = TESTS / "golden" / "picture"

BASE = {"nodesets": [{"name": "gpu", "instanceType": "g5.xlarge", "replicas": 2},
                     {"name": "cpu", "instanceType": "m7i.2xlarge", "replicas": 1}],
        "partitions": [{"name": "gpu", "nodesets": ["gpu"]}, {"name": "cpu", "nodesets": ["cpu"]}]}
# the change: gpu grows 2 -> 4 (max 2 -> 8), a spot L40S nodeset scales from 0 into partition gpu,
# and the cpu nodeset and its partition go
HEAD = {"nodesets": [{"name": "gpu", "instanceType": "g5.xlarge", "replicas": 4, "maxNodes": 8},
                     {"name": "l40s-spot", "instanceType": "g6e.12xlarge", "replicas": 0, "maxNodes": 4,
                      "capacityType": "spot"}],
        "partitions": [{"name": "gpu", "nodesets": ["gpu", "l40s-spot"]}]}


def render(tmp_path: Path, name: str, **spec: Any) -> dict[str, Any]:
    """One cluster's rendered tree {path: object} from the minimal spec with `spec` merged in."""
    from slurmgen.spec import parse_text
    from slurmgen.synth.build import render as synth
    path = tmp_path / f"{name}.yaml"
    path.write_text(spec_text(**spec))
    [cluster] = synth([parse_text(str(path), path.read_text())])
    return dict(cluster.files)


@pytest.fixture(scope="module")
def trees(tmp_path_factory) -> tuple[dict[str, Any], dict[str, Any]]:
    folder = tmp_path_factory.mktemp("picture")
    return render(folder, "base", **BASE), render(folder, "head", **HEAD)


def picture_of(text: str) -> list[str]:
    """The lines of the first ```mermaid block of a summary."""
    lines = text.split("\n")
    start = lines.index("```mermaid")
    return lines[start:lines.index("```", start) + 1]


# --- the subset of the flowchart grammar the picture writes ----------------------------------------

_ID = r"[A-Za-z][A-Za-z0-9_]*"
_LABEL = r'(?:[^"<>#&`]|#\d+;|<br/>)*'  # quoted: no quote, no raw HTML but <br/>, every # an entity code
_BOX = re.compile(rf'^    ({_ID})(?:\(\["{_LABEL}"\]\)|\["{_LABEL}"\]|\[\["{_LABEL}"\]\]|\("{_LABEL}"\))$')
_LINK = re.compile(rf"^    ({_ID}) (?:-->|==>|-\.->) ({_ID})$")
_CLASSDEF = re.compile(r"^    classDef (added|changed|removed) [a-z-]+:[^;,]+(?:,[a-z-]+:[^;,]+)*$")
_CLASS = re.compile(rf"^    class ({_ID}(?:,{_ID})*) (added|changed|removed)$")


def assert_valid_flowchart(lines: list[str]) -> None:
    """Each line is one statement of the subset: boxes declared once, before the links and classes that
    name them; classes defined before use; labels quoted with entity codes for Mermaid's own characters."""
    assert lines[:2] == ["```mermaid", "flowchart LR"] and lines[-1] == "```"
    boxes: set[str] = set()
    defined: set[str] = set()
    for line in lines[2:-1]:
        if m := _CLASSDEF.match(line):
            assert not boxes, f"classDef after the boxes: {line}"
            defined.add(m.group(1))
        elif m := _BOX.match(line):
            assert m.group(1) not in boxes, f"box declared twice: {line}"
            assert m.group(1) != "end", line  # a reserved word of the grammar
            boxes.add(m.group(1))
        elif m := _LINK.match(line):
            assert {m.group(1), m.group(2)} <= boxes, f"link to an undeclared box: {line}"
        elif m := _CLASS.match(line):
            assert set(m.group(1).split(",")) <= boxes and m.group(2) in defined, line
        else:
            raise AssertionError(f"not a statement of the picture's flowchart subset: {line!r}")


# --- a small change, drawn ---------------------------------------------------------------------------

def test_a_small_change_is_drawn_with_what_it_moves(trees):
    old, new = trees
    # WHEN the change is summarized
    [section] = sections({"t": old}, {"t": new})
    text = full_text([section])
    diagram = picture_of(text)
    # THEN the picture is the golden one, in the cluster's section before its tables
    assert_golden("\n".join(diagram) + "\n", GOLDEN / "small_change.mmd")
    assert text.index("```mermaid") < text.index("**Capacity**")
    assert_valid_flowchart(diagram)
    # AND the grown nodeset is marked changed, with its nodes and GPUs now and at the ceiling, before → after
    assert '    s_gpu["NodeSet gpu<br/>nodes: 2 → 4 now, 2 → 8 max<br/>A10G: 2 → 4 now, 2 → 8 max"]' in diagram
    # AND the new nodeset (a dash in its name: `_` in its id) is added, 0 now and 4 at the ceiling,
    # its new NodePool spot, its type with its GPUs per node, every new link thick
    assert '    s_l40s_spot["NodeSet l40s-spot<br/>nodes: 0 now, 4 max<br/>L40S: 0 now, 16 max"]' in diagram
    assert '    k_t_l40s_spot[["NodePool t-l40s-spot<br/>spot"]]' in diagram
    assert '    t_g6e_12xlarge("g6e.12xlarge<br/>4 × L40S per node")' in diagram
    assert {"    p_gpu ==> s_l40s_spot", "    s_l40s_spot ==> k_t_l40s_spot",
            "    k_t_l40s_spot ==> t_g6e_12xlarge"} <= set(diagram)
    # AND the partition gpu, which gains a member, is changed; what goes is removed, its links dotted
    assert "    class p_gpu,s_gpu changed" in diagram
    assert "    class p_cpu,s_cpu,k_t_cpu,t_m7i_2xlarge removed" in diagram
    assert {"    p_cpu -.-> s_cpu", "    s_cpu -.-> k_t_cpu", "    k_t_cpu -.-> t_m7i_2xlarge"} <= set(diagram)
    # AND what stays the same is plain: an unchanged link, no class
    assert "    s_gpu --> k_t_gpu" in diagram and "k_t_gpu," not in "".join(line for line in diagram if "class " in line)
    # AND a legend says what the marks mean
    assert "Green: added; amber: changed; red, dashed: removed." in text


def test_a_change_that_moves_no_compute_draws_nothing(trees, tmp_path):
    old, _new = trees
    # GIVEN only the login service changes
    head = render(tmp_path, "login", **BASE, login={"service": {"scheme": "internet-facing",
                                                                "sourceRanges": ["10.0.0.0/16"]}})
    # THEN the section has no picture (the same compute is no news)
    [section] = sections({"t": old}, {"t": head})
    assert section.picture is None and "```mermaid" not in full_text([section])
    # AND a removed cluster has none either (everything red says nothing more than its headline)
    [gone] = sections({"t": old}, {})
    assert gone.picture is None


# --- labels and ids -----------------------------------------------------------------------------------

def test_labels_escape_what_mermaid_or_html_would_read():
    # GIVEN names with Mermaid's and HTML's own characters
    assert label_text('a"b') == "a#34;b"
    assert label_text("x<y>&z") == "x#60;y#62;#38;z"
    assert label_text("#quot; and `md`") == "#35;quot; and #96;md#96;"  # no entity code slips through
    assert label_text("[a](b){c}|d") == "#91;a#93;#40;b#41;#123;c#125;#124;d"
    assert label_text("  two\nlines ") == "two lines"
    # WHEN they are drawn THEN each box's label is quoted and valid in the subset
    odd = Element("partition", 'a"b<c>#1;')
    diagram = mermaid(Graph({}, set()), Graph({("partition", odd.name): odd}, set()))
    assert diagram[3] == '    p_a_b_c__1_(["partition a#34;b#60;c#62;#35;1;"])'
    assert_valid_flowchart(diagram)


def test_ids_are_mermaid_safe_and_unique_for_names_with_dashes_and_dots():
    taken: set[str] = set()
    # GIVEN names that differ only in dashes, dots and underscores
    ids = [node_id("type", name, taken) for name in ("g6e.12xlarge", "g6e-12xlarge", "g6e_12xlarge")]
    # THEN each id is letters, digits and `_`, and no two are the same
    assert ids == ["t_g6e_12xlarge", "t_g6e_12xlarge_2", "t_g6e_12xlarge_3"]
    assert node_id("nodeset", "end", taken) == "s_end"  # never the bare reserved word `end`


# --- the comment's size budget ------------------------------------------------------------------------

def test_the_picture_gives_way_first_when_the_comment_is_short(trees):
    from slurmgen.review.summary import _reserve
    old, new = trees
    [section] = sections({"t": old}, {"t": new})
    assert section.picture is not None
    whole, changed_only, note = ("\n".join(section.picture.lines(level)) for level in (FULL, CHANGED_ONLY, NONE))
    assert len(note) < len(changed_only) < len(whole)
    # the room everything takes in a shortened comment (headlines first, then details while they fit)
    budget = len(fit_comment([section], 10**6)) + 1 + _reserve(["t"])
    # WHEN the comment has that room THEN the picture is whole
    assert whole in fit_comment([section], budget)
    # WHEN it lacks room for the whole picture but not for its changed parts
    short = fit_comment([section], budget - (len(whole) - len(changed_only)))
    # THEN only the changed parts are drawn, said so, and every detail is still there
    assert changed_only in short and "_Only the changed parts and their links are drawn._" in short
    assert "s_gpu" in short and "t_g5_xlarge" not in short and "### Details of `t`" in short
    assert_valid_flowchart(picture_of(short))
    # WHEN one character less is there
    for shorter in (fit_comment([section], budget - (len(whole) - len(changed_only)) - 1),
                    fit_comment([section], budget - (len(whole) - len(note)))):
        # THEN a note takes the picture's place, saying where it is, and the details stay
        assert "```mermaid" not in shorter and "### Details of `t`" in shorter
        assert (f"_Picture of partitions → NodeSets → NodePools → instance types: left out to fit one comment; "
                f"{FULL_SUMMARY_AT}._") in shorter
    # WHEN not even the details fit without it THEN they are cut as before, the picture with them
    cut = fit_comment([section], budget - (len(whole) - len(note)) - 1)
    assert "### Details of `t`" not in cut and "_Details not shown here for 1 cluster(s): `t`" in cut
    # AND the full text always has the whole picture
    assert whole in full_text([section])


@pytest.mark.parametrize(("cap", "value"), [("PICTURE_MAX_CHARS", 200), ("PICTURE_MAX_LINKS", 5)])
def test_a_picture_beyond_its_own_cap_is_not_drawn(trees, monkeypatch, cap, value):
    from slurmgen.review import picture
    old, new = trees
    [section] = sections({"t": old}, {"t": new})
    assert section.picture is not None
    # GIVEN a cap below the changed parts' size or links (a cluster of hundreds of nodesets)
    monkeypatch.setattr(picture, cap, value)
    # THEN the full summary says it is too large rather than posting what Mermaid would refuse
    assert section.picture.lines(FULL)[0].startswith(
        "_Picture of partitions → NodeSets → NodePools → instance types: too large to draw; ")
    assert section.picture.lines(NONE)[0].startswith("_Picture of partitions → NodeSets → NodePools → instance "
                                                     "types: left out to fit one comment; ")


def test_every_example_change_of_the_summary_goldens_is_a_valid_flowchart():
    # GIVEN the summary goldens (the shipped examples' representative changes)
    for golden in sorted((TESTS / "golden" / "summary").glob("*.md")):
        text = golden.read_text()
        for start in [i for i, line in enumerate(text.split("\n")) if line == "```mermaid"]:
            lines = text.split("\n")
            # THEN every picture in them is in the subset
            assert_valid_flowchart(lines[start:lines.index("```", start) + 1])
