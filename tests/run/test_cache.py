"""The render cache: a hit is the same bytes as a render, any input change misses, bad entries are ignored."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from slurmgen.run import cache
from slurmgen.verify import collisions
from slurmgen.cli import main
from slurmgen.verify.guards import destructive_changes
from slurmgen.write.output import read_tree
from slurmgen.run.pipeline import run
from slurmgen.verify.slurm_files import blocking, wave_problems
from tests.conftest import EXAMPLES, SPECS
from tests.spec_builder import variant


@pytest.fixture
def cache_root(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("SLURMGEN_CACHE_DIR", str(root))
    return root


def _specs(tmp_path: Path) -> list[Path]:
    """A copy of the example specs (with their shared files), free to edit."""
    folder = tmp_path / "clusters"
    shutil.copytree(SPECS, folder)
    return sorted(p for p in folder.glob("*.yaml") if not p.name.startswith("_"))


def test_a_hit_is_byte_identical_to_a_render(cache_root):
    # GIVEN the examples rendered without the cache
    fresh = run(EXAMPLES)
    # WHEN rendered with it twice (the first run fills it, the second reads it)
    miss = run(EXAMPLES, use_cache=True)
    hit = run(EXAMPLES, use_cache=True)
    # THEN the first rendered everything, the second nothing, and all three are the same bytes and objects
    names = {c.spec.name for c in fresh.clusters}
    assert miss.cached == frozenset() and hit.cached == names
    assert "render" not in hit.timings
    assert hit.rendered_texts == miss.rendered_texts == fresh.rendered_texts
    assert [dict(c.files) for c in hit.clusters] == [dict(c.files) for c in fresh.clusters]
    assert [dict(c.plans) for c in hit.clusters] == [dict(c.plans) for c in fresh.clusters]


def test_an_edited_spec_misses_and_only_it_is_rendered(cache_root, tmp_path):
    # GIVEN a fleet in the cache
    specs = _specs(tmp_path)
    run(specs, use_cache=True)
    # WHEN one spec changes
    dev = next(p for p in specs if p.stem == "dev")
    dev.write_text(variant(dev.read_text(), aws={"eksClusterName": "xresearch-dev"}))
    again = run(specs, use_cache=True)
    # THEN that cluster is rendered (with the change) and the others come from the cache
    assert again.cached == {c.spec.name for c in again.clusters} - {"dev"}
    assert any("xresearch-dev" in t for t in again.rendered_texts["dev"].values())
    assert again.rendered_texts == run(specs).rendered_texts


def test_an_edited_extends_file_misses_for_the_clusters_using_it(cache_root, tmp_path):
    # GIVEN a fleet in the cache, whose dev and prod extend _research-fleet.yaml
    specs = _specs(tmp_path)
    run(specs, use_cache=True)
    shared = tmp_path / "clusters" / "_research-fleet.yaml"
    users = {p.stem for p in specs if "_research-fleet.yaml" in p.read_text()}
    assert users, "the examples no longer extend _research-fleet.yaml"
    # WHEN the shared file changes (a comment: the bytes, not the meaning, decide)
    shared.write_text(shared.read_text() + "\n# edited\n")
    again = run(specs, use_cache=True)
    # THEN exactly the clusters extending it are rendered again
    assert {c.spec.name for c in again.clusters} - again.cached == users


def test_a_check_on_a_hit_compares_the_cached_tree_with_dist(cache_root, tmp_path, capsys, dist_tree):
    # GIVEN the examples written with the cache filled
    out = tmp_path / "dist"
    args = [*sum((["--spec", str(p)] for p in EXAMPLES), []), "--out", str(out)]
    assert main(args) == 0
    assert main([*args, "--check"]) == 0
    # WHEN a rendered file is edited by hand
    victim = sorted((out / "example").rglob("*.yaml"))[0]
    victim.write_text(victim.read_text() + "# hand edit\n")
    capsys.readouterr()
    # THEN --check on a full hit still finds the drift, and synth on a hit restores the file
    assert main([*args, "--check"]) == 1
    assert f"changed: {victim}" in capsys.readouterr().out
    assert main(args) == 0
    assert read_tree(out) == read_tree(dist_tree)


def test_an_unchanged_cluster_folder_is_not_rewritten(cache_root, tmp_path):
    # GIVEN a fleet written once
    specs = _specs(tmp_path)
    out = tmp_path / "dist"
    args = [*sum((["--spec", str(p)] for p in specs), []), "--out", str(out)]
    assert main(args) == 0
    inodes = {p.name: p.stat().st_ino for p in out.iterdir()}
    # WHEN one spec changes and synth runs again
    dev = next(p for p in specs if p.stem == "dev")
    dev.write_text(variant(dev.read_text(), aws={"eksClusterName": "xresearch-dev"}))
    assert main(args) == 0
    # THEN only that cluster's folder was replaced (the writer swaps in a new folder)
    replaced = {name for name, ino in inodes.items() if (out / name).stat().st_ino != ino}
    assert replaced == {"dev"}


@pytest.mark.parametrize("damage", ["truncate", "flip_payload", "other_key", "other_format", "not_json"])
def test_a_corrupt_or_foreign_entry_is_ignored(cache_root, damage):
    # GIVEN the example in the cache
    spec = SPECS / "example.yaml"
    good = run([spec], use_cache=True)
    (entry,) = cache_root.glob("example-*.json")
    raw = entry.read_bytes()
    head, _, payload = raw.partition(b"\n")
    header = json.loads(head)
    # WHEN the entry is damaged, or replaced by another key's or another format's entry
    if damage == "truncate":
        entry.write_bytes(raw[: len(raw) // 2])
    elif damage == "flip_payload":
        entry.write_bytes(head + b"\n" + payload.replace(b"slurm", b"slurn", 1))
    elif damage == "other_key":
        entry.write_bytes(json.dumps({**header, "key": "0" * 64}).encode() + b"\n" + payload)
    elif damage == "other_format":
        entry.write_bytes(json.dumps({**header, "format": cache.FORMAT + 1}).encode() + b"\n" + payload)
    else:
        entry.write_bytes(b"\x00garbage")
    again = run([spec], use_cache=True)
    # THEN it is not used: the cluster is rendered again, the output is right, the entry is rewritten
    assert again.cached == frozenset()
    assert again.rendered_texts == good.rendered_texts
    assert run([spec], use_cache=True).cached == {"example"}


def test_no_cache_reads_and_writes_nothing(cache_root, tmp_path):
    # GIVEN an empty cache / WHEN synth runs with --no-cache / THEN the cache stays empty
    out = tmp_path / "dist"
    assert main(["--spec", str(SPECS / "example.yaml"), "--out", str(out), "--no-cache"]) == 0
    assert not cache_root.exists() or not any(cache_root.iterdir())


def test_the_cache_lives_outside_the_repository(monkeypatch, tmp_path):
    # GIVEN no explicit folder / WHEN XDG_CACHE_HOME is set, or not / THEN under it, or under ~/.cache
    monkeypatch.delenv("SLURMGEN_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "xdg" / "slurmgen" / "render"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_dir() == tmp_path / "home" / ".cache" / "slurmgen" / "render"


# ---------------------------------------------------------------------- every input is in the key
@pytest.fixture(scope="module")
def package_copy(tmp_path_factory) -> Path:
    """A copy of the generator's packages and the lock files, to change one file at a time."""
    root = tmp_path_factory.mktemp("gen")
    for package in cache.GENERATOR_PACKAGES:
        shutil.copytree(package, root / package.name, ignore=shutil.ignore_patterns("__pycache__"))
    for lock in cache.LOCK_FILES:
        shutil.copy(lock, root / lock.name)
    return root


def _digest(root: Path) -> str:
    return cache.generator_digest([root / p.name for p in cache.GENERATOR_PACKAGES],
                                  [root / p.name for p in cache.LOCK_FILES])


@pytest.mark.parametrize("rel", [
    "slurmgen/cli.py",                                  # the generator's own source
    "charts/compute.py",                                # the constructs
    "apps/helm.py",                                     # the Argo CD layer (pinned charts)
    "charts/scripts/accounts-load.sh",                  # scripts the pods run
    "slurmgen/spec/cluster.schema.json",                # the spec schema and its defaults
    "slurmgen/verify/schemas/vendored/index.json",            # the vendored CRD schemas
    "slurmgen/verify/schemas/vendored/slinky.slurm.net_nodeset.json",
    "slurmgen/catalog/instances.csv",                   # the instance catalog
    "requirements.txt",                                 # pins cdk8s, jsii, jsonschema, PyYAML...
    "package-lock.json",                                # the npm lock file
])
def test_a_change_to_a_generator_input_changes_every_key(package_copy, rel):
    # GIVEN the digest every cluster key includes
    path = package_copy / rel
    assert path.is_file(), f"{rel} moved: update this list and cache.py"
    before, original = _digest(package_copy), path.read_bytes()
    try:
        # WHEN one byte is added to that file
        path.write_bytes(original + b" ")
        # THEN the digest differs
        assert _digest(package_copy) != before
    finally:
        path.write_bytes(original)
    assert _digest(package_copy) == before


def test_a_new_generator_file_and_the_python_version_change_every_key(package_copy, monkeypatch):
    # GIVEN the digest / WHEN a module is added, or Python differs / THEN it changes
    before = _digest(package_copy)
    extra = package_copy / "charts" / "new_chart.py"
    extra.write_text("X = 1\n")
    try:
        assert _digest(package_copy) != before
    finally:
        extra.unlink()
    monkeypatch.setattr(sys, "version", sys.version + " other build")
    assert _digest(package_copy) != before


def test_a_change_to_a_cluster_input_changes_its_key(tmp_path):
    # GIVEN a spec extending a shared file, and a site instance-types.csv beside it
    (tmp_path / "_base.yaml").write_text("extends: _deeper.yaml\naws: {region: us-west-2}\n")
    (tmp_path / "_deeper.yaml").write_text("schemaVersion: 1\n")
    spec = tmp_path / "c.yaml"
    spec.write_text("extends: [_base.yaml]\nname: c\n")
    csv = tmp_path / "instance-types.csv"
    csv.write_text("a\n")

    def key() -> str | None:
        return cache.cluster_key(spec, "gen", csv, {})

    before = key()
    assert before is not None
    assert cache.extends_chain(spec) == [spec, tmp_path / "_base.yaml", tmp_path / "_deeper.yaml"]
    # WHEN each input changes in turn / THEN the key changes, and comes back when it is undone
    for path in (spec, tmp_path / "_base.yaml", tmp_path / "_deeper.yaml", csv):
        original = path.read_bytes()
        path.write_bytes(original + b"\n# edit\n")
        assert key() != before, path.name
        path.write_bytes(original)
        assert key() == before
    csv.unlink()
    assert key() != before  # the site csv removed
    assert cache.cluster_key(spec, "gen2", None, {}) != cache.cluster_key(spec, "gen", None, {})
    assert cache.cluster_key(spec, "gen", None, {"x": "1"}) != cache.cluster_key(spec, "gen", None, {})
    # and a chain that cannot be followed is not cached at all
    (tmp_path / "_deeper.yaml").unlink()
    assert key() is None


@pytest.mark.parametrize("key_text", ['"ext\\x65nds"', '"ext\\u0065nds"'])
def test_an_extends_key_spelt_with_escapes_is_followed_into_the_key(tmp_path, key_text):
    # GIVEN a spec whose `extends` key is a double-quoted YAML scalar with an escape (the loader
    # reads it as `extends`, but the word is nowhere in the text)
    (tmp_path / "_base.yaml").write_text("aws: {region: us-west-2}\n")
    spec = tmp_path / "c.yaml"
    spec.write_text(f"{key_text}: _base.yaml\nname: c\n")
    assert "extends" not in spec.read_text()
    # WHEN the chain is followed
    chain = cache.extends_chain(spec)
    # THEN the base file is in it, so an edit of it changes the cluster's key (no stale hit)
    assert chain == [spec, tmp_path / "_base.yaml"]
    before = cache.cluster_key(spec, "gen", None, {})
    (tmp_path / "_base.yaml").write_text("aws: {region: us-east-1}\n")
    assert cache.cluster_key(spec, "gen", None, {}) != before


def test_an_unchanged_tree_has_nothing_for_the_guards_or_the_wave_check(rendered):
    # GIVEN each example, as if dist/ already held exactly its render (why synth skips them)
    for name, cluster in rendered.items():
        objects = dict(cluster.files)
        # WHEN the guards and the sync-wave check compare it with itself
        # THEN neither finds anything: skipping an unchanged tree loses no refusal
        assert destructive_changes(name, list(objects.values()), list(objects.values())) == []
        assert blocking(wave_problems(name, objects, objects)) == []


def test_a_folder_with_a_link_in_it_is_never_taken_as_unchanged(tmp_path):
    # GIVEN the example written, then one file replaced by a link to a copy with the very same bytes
    spec = SPECS / "example.yaml"
    out = tmp_path / "dist"
    assert main(["--spec", str(spec), "--out", str(out)]) == 0
    target = out / "example" / "apps" / "appproject-example.yaml"
    copy = tmp_path / "elsewhere.yaml"
    copy.write_bytes(target.read_bytes())
    target.unlink()
    target.symlink_to(copy)
    # WHEN the same render is compared with it
    result = run([spec], use_cache=True)
    # THEN the link reads as "not a file" (never followed), so the folder is judged and rewritten, not skipped
    assert not result.unchanged(out, result.clusters[0])
    assert result.changed_trees(out) == {"example": result.texts(result.clusters[0])}

def test_the_environment_that_changes_output_is_in_the_key():
    # GIVEN environments differing in a cdk8s switch, the Node.js jsii runs, or only the output folder
    base = {"HOME": "/h", "PATH": "/bin"}
    # WHEN reduced to the options of the key / THEN the first two count, the output folder does not
    assert cache.environment_options(base) == {}
    assert cache.environment_options({**base, "CDK8S_DISABLE_SORT": "1"}) == {"CDK8S_DISABLE_SORT": "1"}
    assert cache.environment_options({**base, "JSII_NODE": "/opt/node"}) == {"JSII_NODE": "/opt/node"}
    assert cache.environment_options({**base, "CDK8S_OUTDIR": "/tmp/x"}) == {}


def test_a_hit_decodes_its_objects_only_when_read(cache_root):
    # GIVEN the example in the cache
    spec = SPECS / "example.yaml"
    fresh = run([spec], use_cache=True)
    # WHEN read back
    (hit,) = run([spec], use_cache=True).clusters
    # THEN its objects are not decoded yet (the writer and --check need only the texts) ...
    assert isinstance(hit.files, cache.LazyObjects) and hit.files._objects is None
    assert len(hit.files) == len(fresh.clusters[0].files)
    # ... and once read they are the rendered objects, in the same order
    assert list(hit.files.items()) == list(fresh.clusters[0].files.items())


def test_a_hit_knows_the_names_it_shares_without_decoding_its_objects(cache_root):
    # GIVEN the examples in the cache
    fresh = run(EXAMPLES, use_cache=True)
    # WHEN read back
    hit = run(EXAMPLES, use_cache=True)
    # THEN each cluster's shared names (checked against every other cluster) are those of its
    # objects, and reading them decoded no object
    for cached, rendered in zip(hit.clusters, fresh.clusters, strict=True):
        assert cached.shared_names == collisions.keys(rendered.files) and cached.shared_names
        assert isinstance(cached.files, cache.LazyObjects) and cached.files._objects is None


def test_a_hit_is_built_from_the_checked_spec_data_without_checking_it_again(cache_root, monkeypatch):
    # GIVEN the example rendered once (a miss: its spec is checked and its data kept in the entry)
    from slurmgen.spec import loader

    spec = SPECS / "example.yaml"
    first = run([spec], use_cache=True)
    checked = []
    real = loader._validate
    monkeypatch.setattr(loader, "_validate", lambda *a, **k: checked.append(a[0]) or real(*a, **k))
    # WHEN it runs again on the same inputs
    second = run([spec], use_cache=True)
    # THEN the spec is not checked again, and the spec built from the entry is the one checked before
    assert checked == []
    assert second.cached == frozenset({"example"})
    assert second.clusters[0].spec == first.clusters[0].spec
    # AND an edit to the spec misses: that spec alone is checked again
    edited = cache_root.parent / "example.yaml"
    edited.write_text(variant(spec.read_text(), nodeset={"replicas": 3}))  # 4 before
    run([edited], use_cache=True)
    assert checked == [edited]
