"""The writer: deterministic bytes, one step from the old tree to the new, nothing stale left behind."""

from __future__ import annotations

import os
import stat

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmgen.write import output
from slurmgen.write.output import dump, read_tree, replace_dir


def test_dump_keeps_key_order_and_literal_blocks():
    text = dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},
                 "data": {"a.conf": "A=1\nB=2\n", "n": "8080", "yes": "yes"}})
    assert text.splitlines()[:3] == ["apiVersion: v1", "kind: ConfigMap", "metadata:"]
    assert "a.conf: |\n    A=1\n    B=2\n" in text
    assert "n: '8080'" in text and "'yes': 'yes'" in text  # strings stay strings


def test_a_value_used_twice_is_written_twice():
    # GIVEN an object holding the same dict and list object twice (a chart may reuse a literal)
    shared_map, shared_list = {"k": "v"}, ["a", {"b": 1}]
    obj = {"one": shared_map, "two": shared_map, "three": shared_list, "four": [shared_list, shared_map]}
    # WHEN written / THEN each use is written out in full, no `&id001` anchor or `*id001` alias
    text = dump(obj)
    assert "&id" not in text and "*id" not in text
    assert text.count("k: v") == 3


#: Characters that change how a string must be spelled: indicators, comment and mapping marks,
#: quotes, digits and signs (numbers, dates, times), spaces and line breaks, and non-ASCII.
TRICKY = "aZ09 .:-_/@=+#,'\"!&*?|>%`[]{}~\n\t\r\\éü中\u2028\x85"
STRINGS = st.one_of(
    st.text(alphabet=TRICKY, max_size=12),
    st.sampled_from(["true", "no", "On", "null", "~", "1.5", "0x1F", "1_000", "12:30", "2026-12-01", "=", "<<",
                     "-", "---", "...", "a: b", "a #b", " lead", "trail ", "x\n", "x\n\n", "\nx", "x \ny",
                     ".inf", "1e5", "+1", "0o17", "k" * 130]),
)
TREES = st.recursive(st.one_of(STRINGS, st.integers(), st.booleans(), st.none()), lambda children: st.one_of(
    st.lists(children, max_size=4), st.dictionaries(STRINGS, children, max_size=4)), max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(STRINGS, TREES, max_size=4))
def test_what_is_written_reads_back_as_the_same_object(obj):
    # GIVEN any map of strings (YAML 1.1 look-alikes of booleans, numbers and dates among them),
    # integers, booleans, nulls, lists and maps / WHEN written / THEN a YAML reader gets it back
    assert yaml.safe_load(dump(obj)) == obj


def test_replace_dir_removes_files_of_objects_that_are_gone(tmp_path):
    target = tmp_path / "example"
    replace_dir(target, {"slurm/a.yaml": {"k": 1}, "slurm/b.yaml": {"k": 2}})
    replace_dir(target, {"slurm/a.yaml": {"k": 3}})
    assert read_tree(target) == {"slurm/a.yaml": "k: 3\n"}
    assert [p.name for p in tmp_path.iterdir()] == ["example"]  # no staging folders left


def test_failure_mid_write_leaves_the_previous_tree_intact(tmp_path, monkeypatch):
    # GIVEN a previous render
    target = tmp_path / "example"
    replace_dir(target, {"slurm/a.yaml": {"k": 1}})
    before = read_tree(target)
    # WHEN writing the new tree fails after the first file
    calls = {"n": 0}
    real = output._write_file

    def flaky(path, text):
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError("disk full")
        return real(path, text)

    monkeypatch.setattr(output, "_write_file", flaky)
    with pytest.raises(OSError):
        replace_dir(target, {"slurm/a.yaml": {"k": 2}, "slurm/b.yaml": {"k": 3}})
    # THEN the old tree is untouched and no staging folder remains
    monkeypatch.undo()
    assert read_tree(target) == before
    assert [p.name for p in tmp_path.iterdir()] == ["example"]


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o755), (0o027, 0o750), (0o002, 0o775)])
def test_a_new_cluster_folder_honours_the_umask(tmp_path, umask, mode):
    """mkdtemp made the staging folder, and so dist/<cluster>/, 0700 whatever the umask (issue 21 item 7)."""
    old = os.umask(umask)
    try:
        # WHEN two clusters are written
        output.write_all(tmp_path / "dist", {"a": {"x.yaml": {"k": 1}}, "b": {"y/z.yaml": {"k": 2}}})
    finally:
        os.umask(old)
    # THEN their folders, like the folders and files inside, follow the umask as mkdir would
    for folder in ("a", "b", "b/y"):
        assert stat.S_IMODE((tmp_path / "dist" / folder).stat().st_mode) == mode, folder
    assert stat.S_IMODE((tmp_path / "dist" / "a" / "x.yaml").stat().st_mode) == 0o666 & ~umask


@pytest.mark.parametrize("rel", ["../escape.yaml", "/tmp/abs.yaml", "a/../../escape.yaml", "a//b.yaml", "./a.yaml"])
def test_write_tree_refuses_names_outside_its_folder(tmp_path, rel):
    # GIVEN a name that would leave the folder (a render cache entry can name anything)
    root = tmp_path / "a" / "b"
    root.mkdir(parents=True)
    # WHEN written THEN refused, one line, nothing written anywhere
    with pytest.raises(output.OutputError) as err:
        output.write_tree(root, {rel: "kind: ConfigMap\n"})
    assert len(err.value.lines) == 1 and "refusing to write" in err.value.lines[0]
    assert not (tmp_path / "a" / "escape.yaml").exists() and not (tmp_path / "escape.yaml").exists()


def test_write_tree_never_writes_through_a_link_in_its_folder(tmp_path):
    # GIVEN a link already where a file is to be written
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    root = tmp_path / "tree"
    root.mkdir()
    (root / "x.yaml").symlink_to(victim)
    # WHEN the tree is written THEN it fails and the link's target is untouched
    with pytest.raises(FileExistsError):
        output.write_tree(root, {"x.yaml": "kind: ConfigMap\n"})
    assert victim.read_text() == "precious\n"
