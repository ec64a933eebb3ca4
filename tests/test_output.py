"""The writer: deterministic bytes, one step from the old tree to the new, nothing stale left behind."""

from __future__ import annotations

import os
import stat

import pytest

from slurmgen import output
from slurmgen.output import dump, read_tree, replace_dir


def test_dump_keeps_key_order_and_literal_blocks():
    text = dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},
                 "data": {"a.conf": "A=1\nB=2\n", "n": "8080", "yes": "yes"}})
    assert text.splitlines()[:3] == ["apiVersion: v1", "kind: ConfigMap", "metadata:"]
    assert "a.conf: |\n    A=1\n    B=2\n" in text
    assert "n: '8080'" in text and "'yes': 'yes'" in text  # strings stay strings


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
