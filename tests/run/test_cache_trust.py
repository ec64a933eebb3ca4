"""The render cache is trusted on a hit (no check runs again), so only entries this user's
slurmgen wrote are used: a private folder, an HMAC under a per-user key, names inside the cluster
folder (issue 23 A). Specs are the minimal one, in tmp_path."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import pytest

from slurmgen.run import cache
from slurmgen.cli import main
from slurmgen.write.output import read_tree
from tests.conftest import MINIMAL_SPEC


@pytest.fixture
def cache_root(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("SLURMGEN_CACHE_DIR", str(root))
    return root


@pytest.fixture
def spec(tmp_path) -> Path:
    path = tmp_path / "clusters" / "t.yaml"
    path.parent.mkdir()
    path.write_text(MINIMAL_SPEC)
    return path


def _forge(entry: Path, edit) -> None:
    """Edit an entry the way someone without the key can: change the payload, recompute every
    checksum field they can (a sha256 of the payload), keep the rest of the header."""
    head, _, payload = entry.read_bytes().partition(b"\n")
    header = json.loads(head)
    texts_part, _, rest = payload.partition(b"\n")
    spec_part, _, rest = rest.partition(b"\n")
    names_part, _, files_part = rest.partition(b"\n")
    texts, files = json.loads(texts_part), json.loads(files_part)
    edit(texts, files)
    payload = b"\n".join([json.dumps(texts).encode(), spec_part, names_part, json.dumps(files).encode()])
    header["sha256"] = hashlib.sha256(payload).hexdigest()
    entry.write_bytes(json.dumps(header).encode() + b"\n" + payload)


def _escaping(absolute: Path):
    def edit(texts: dict, files: dict) -> None:
        for rel in ("../../escaped.yaml", str(absolute)):
            texts[rel] = "kind: Escaped\n"
            files[rel] = {"kind": "Escaped"}
        first = next(iter(texts))
        texts[first] = texts[first] + "# edited, no check ran\n"
    return edit


@pytest.mark.parametrize("sign", [False, True], ids=["checksum-recomputed", "hmac-recomputed-with-the-key"])
def test_an_edited_entry_writes_nothing_outside_and_nothing_edited(cache_root, spec, tmp_path, sign):
    # GIVEN the cluster in the cache
    out = tmp_path / "work" / "dist"
    assert main(["--spec", str(spec), "--out", str(out)]) == 0
    fresh = read_tree(out)
    (entry,) = cache_root.glob("t-*.json")
    # WHEN the entry is edited to name files outside the cluster folder (checksum recomputed; with
    # `sign`, even a correct HMAC: names are checked on load whatever proves the entry)
    _forge(entry, _escaping(tmp_path / "absolute-escaped.yaml"))
    if sign:
        head, _, payload = entry.read_bytes().partition(b"\n")
        header = json.loads(head)
        key = (cache_root / cache.KEY_FILE).read_bytes()
        header["hmac"] = cache._mac(key, header["cluster"], header["key"], payload)
        entry.write_bytes(json.dumps(header).encode() + b"\n" + payload)
    assert main(["--spec", str(spec), "--out", str(out)]) == 0
    # THEN it is rendered again: nothing escaped, the tree is the checked render
    assert not (tmp_path / "work" / "escaped.yaml").exists() and not (out / "escaped.yaml").exists()
    assert not (tmp_path / "absolute-escaped.yaml").exists()
    assert read_tree(out) == fresh


def test_the_cache_folder_and_key_are_private(cache_root, spec, tmp_path):
    # GIVEN an existing cache folder group/world-writable (as an old version's umask made it)
    cache_root.mkdir(mode=0o777)
    os.chmod(cache_root, 0o777)
    # WHEN synth fills it
    assert main(["--spec", str(spec), "--out", str(tmp_path / "dist")]) == 0
    # THEN the folder is 0700 and the key 0600
    assert stat.S_IMODE(cache_root.stat().st_mode) == 0o700
    assert stat.S_IMODE((cache_root / cache.KEY_FILE).stat().st_mode) == 0o600
    assert list(cache_root.glob("t-*.json"))


def test_a_cache_folder_that_is_a_link_is_not_used(tmp_path, spec, monkeypatch):
    # GIVEN SLURMGEN_CACHE_DIR naming a link to another folder
    real = tmp_path / "elsewhere"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    monkeypatch.setenv("SLURMGEN_CACHE_DIR", str(tmp_path / "link"))
    # WHEN synth runs / THEN nothing is written through the link
    assert main(["--spec", str(spec), "--out", str(tmp_path / "dist")]) == 0
    assert list(real.iterdir()) == []


def test_a_key_that_is_a_link_is_not_trusted(cache_root, tmp_path):
    # GIVEN a private cache folder whose key is a link to a file someone else could write
    cache_root.mkdir(mode=0o700)
    other = tmp_path / "other-key"
    other.write_bytes(b"k" * 32)
    os.chmod(other, 0o600)
    (cache_root / cache.KEY_FILE).symlink_to(other)
    # THEN no key: nothing is stored or loaded
    assert cache._key(cache_root, create=True) is None


@pytest.mark.parametrize("value", ["relative/cache", "."])
def test_a_relative_cache_location_is_ignored(monkeypatch, value):
    # GIVEN XDG_CACHE_HOME / SLURMGEN_CACHE_DIR relative (it would put the cache in the repository)
    monkeypatch.delenv("SLURMGEN_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", value)
    # THEN the default under the home folder, an absolute path
    assert cache.cache_dir() == Path.home() / ".cache" / "slurmgen" / "render"
    monkeypatch.setenv("SLURMGEN_CACHE_DIR", value)
    assert cache.cache_dir().is_absolute()


@pytest.mark.parametrize("where", ["dist/cache", "dist", "dist/t/../cache", "link-to-dist/cache"])
def test_a_cache_inside_the_output_folder_is_refused_before_anything_is_written(tmp_path, monkeypatch, spec, capsys,
                                                                               where):
    # GIVEN a render cache placed inside the output folder (directly, through `..` or through a link)
    out = tmp_path / "dist"
    (tmp_path / "link-to-dist").symlink_to(out, target_is_directory=True)
    monkeypatch.setenv("SLURMGEN_CACHE_DIR", str(tmp_path / where))
    # WHEN synth runs
    rc = main(["--spec", str(spec), "--out", str(out)])
    # THEN exit 2 with one line naming both, and nothing was created: no key, no entry, no folder
    err = capsys.readouterr().err.splitlines()
    assert rc == 2 and len(err) == 1 and "overlap" in err[0] and "SLURMGEN_CACHE_DIR" in err[0]
    assert not os.path.lexists(out)


def test_a_cache_inside_the_repository_is_refused(tmp_path, monkeypatch, spec, capsys):
    # GIVEN SLURMGEN_CACHE_DIR inside the checkout (its key would be one `git add -A` from a commit)
    inside = cache.REPO / ".render-cache-test"
    monkeypatch.setenv("SLURMGEN_CACHE_DIR", str(inside))
    rc = main(["--spec", str(spec), "--out", str(tmp_path / "dist")])
    err = capsys.readouterr().err.splitlines()
    assert rc == 2 and len(err) == 1 and "inside the repository" in err[0]
    assert not os.path.lexists(inside) and not os.path.lexists(tmp_path / "dist")


def test_with_no_cache_the_cache_folder_is_not_judged(tmp_path, monkeypatch, spec):
    monkeypatch.setenv("SLURMGEN_CACHE_DIR", str(tmp_path / "dist" / "cache"))
    assert main(["--no-cache", "--spec", str(spec), "--out", str(tmp_path / "dist")]) == 0
    assert not os.path.lexists(tmp_path / "dist" / "cache")
