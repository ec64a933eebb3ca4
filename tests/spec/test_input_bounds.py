"""Inputs that cannot be data files (a FIFO, a device, a file over the size cap) and the bounded reader's limits.

Every one must end in exit 2 with one line, quickly, and never block or read without a cap.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from slurmgen.cli import main
from slurmgen.spec import _yaml
from slurmgen.spec._text import unsafe_values
from slurmgen.spec.loader import parse_text
from slurmgen.spec.errors import SpecError
from tests.conftest import REPO

GOOD = """schemaVersion: 1
name: t
aws: {region: us-west-2, eksClusterName: eks}
gitops: {repoURL: "https://github.com/o/r.git"}
nodesets: [{name: gpu, instanceType: g5.xlarge}]
partitions: [{name: gpu, nodesets: [gpu]}]
"""


def run_spec(path, tmp_path, capsys) -> tuple[int, list[str], float]:
    start = time.monotonic()
    rc = main(["--spec", str(path), "--out", str(tmp_path / "out")])
    return rc, capsys.readouterr().err.splitlines(), time.monotonic() - start


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
def test_a_fifo_is_refused_without_blocking(tmp_path, capsys):
    # GIVEN a FIFO nobody writes to (opening it for reading would block forever)
    fifo = tmp_path / "spec.yaml"
    os.mkfifo(fifo)
    # WHEN it is passed as a spec
    rc, err, took = run_spec(fifo, tmp_path, capsys)
    # THEN one line, exit 2, at once
    assert (rc, err) == (2, [f"{fifo}: is a FIFO, not a regular file; pass a file"])
    assert took < 10


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_dev_zero_is_refused_not_read(tmp_path, capsys):
    rc, err, _ = run_spec("/dev/zero", tmp_path, capsys)
    assert (rc, err) == (2, ["/dev/zero: is a character device, not a regular file; pass a file"])


def test_a_file_over_the_size_cap_is_refused(tmp_path, capsys):
    # GIVEN a regular file one byte over the cap (a comment, so only the size is wrong)
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * _yaml.MAX_BYTES + b"\n")
    rc, err, _ = run_spec(big, tmp_path, capsys)
    assert rc == 2
    assert err == [f"{big}: larger than 1024 KiB; a spec is a few KiB, split shared parts into files named in extends:"]


def test_an_alias_used_a_few_times_is_still_fine():
    # GIVEN a spec that shares one small mapping through an anchor (legitimate YAML)
    text = """schemaVersion: 1
name: t
aws: {region: us-west-2, eksClusterName: eks}
gitops: {repoURL: "https://github.com/o/r.git"}
nodesets: [{name: gpu, instanceType: g5.xlarge, zones: &z [us-west-2a]}]
compute: {zones: *z}
partitions: [{name: gpu, nodesets: [gpu]}]
"""
    # WHEN it is loaded THEN it loads
    assert parse_text("s.yaml", text).nodesets[0].zones == ("us-west-2a",)


def test_too_many_aliases_is_one_line():
    aliases = "\n".join(f"k{i}: *a" for i in range(_yaml.MAX_ALIASES + 1))
    with pytest.raises(_yaml.YamlSyntaxError, match=r"more than 100 aliases"):
        _yaml.load_yaml(f"a: &a x\n{aliases}\n")


def test_the_depth_cap_counts_levels_exactly():
    # GIVEN nesting exactly at the cap, and one level more
    at_cap = "[" * _yaml.MAX_DEPTH + "]" * _yaml.MAX_DEPTH
    over = "[" * (_yaml.MAX_DEPTH + 1) + "]" * (_yaml.MAX_DEPTH + 1)
    # THEN the first parses and the second is refused
    assert _yaml.load_yaml(at_cap) is not None
    with pytest.raises(_yaml.YamlSyntaxError, match="nested deeper than 32"):
        _yaml.load_yaml(over)


def test_a_long_quoted_digit_string_is_text_not_a_number():
    assert _yaml.load_yaml(f"a: '{'1' * 100}'") == {"a": "1" * 100}


def test_trailing_newline_passes_the_schema_pattern_but_not_the_central_check():
    # GIVEN a value that Python's `$` accepts ("gpu\n" matches ^[a-z]+$ with re.search)
    import re
    assert re.search(r"^[a-z]+$", "gpu\n")
    # THEN the central check refuses it, in a value and in a key
    assert list(unsafe_values({"slurm": {"clusterName": "gpu\n"}}))[0][0] == "slurm.clusterName"
    assert list(unsafe_values({"labels": {"a\tb": "x"}}))[0][0] == "labels"
    # AND whole files (sssdConf) may hold lines and tabs, but not a carriage return or NUL
    assert list(unsafe_values({"login": {"sssdConf": "[sssd]\n\tdomains = x\n"}})) == []
    assert list(unsafe_values({"login": {"sssdConf": "[sssd]\r\n"}}))


def test_extends_chain_deeper_than_the_cap_is_refused(tmp_path):
    # GIVEN _0 <- _1 <- ... a chain of shared files longer than the cap
    for i in range(6):
        (tmp_path / f"_{i}.yaml").write_text(f"extends: _{i + 1}.yaml\n" if i < 5 else "schemaVersion: 1\n")
    spec = tmp_path / "c.yaml"
    spec.write_text("extends: _0.yaml\n" + GOOD)
    from slurmgen.spec.loader import load_spec
    with pytest.raises(SpecError) as err:
        load_spec(spec)
    assert "more than 4 levels of extends" in str(err.value)


def _string_fields(node, path=(), defs=None):
    """(path, schema) for every string-typed field of the spec schema, $refs followed."""
    defs = defs if defs is not None else node["$defs"]
    if "$ref" in node:
        node = {**defs[node["$ref"].split("/")[-1]], **{k: v for k, v in node.items() if k != "$ref"}}
    types = node.get("type")
    if types == "string" or (isinstance(types, list) and "string" in types):
        yield path, node
    for key, sub in node.get("properties", {}).items():
        yield from _string_fields(sub, (*path, key), defs)
    for key in ("items", "additionalProperties", "propertyNames"):
        if isinstance(node.get(key), dict):
            yield from _string_fields({"type": "string", **node[key]} if key == "propertyNames" else node[key],
                                      (*path, f"<{key}>"), defs)
    for branch in node.get("oneOf", []) + node.get("anyOf", []):
        yield from _string_fields(branch, path, defs)


def test_every_string_field_is_a_whole_string_pattern_or_a_whole_file():
    # GIVEN every string field of the spec schema
    from slurmgen.spec import _schema
    from slurmgen.spec._text import MULTILINE
    fields = list(_string_fields(_schema.schema()))
    assert len(fields) > 80
    # THEN each is an enum, or a pattern anchored at both ends (the central check removes the
    # newline that `$` would accept), or one of the whole-file fields scanned for secrets instead
    free = {path for path, node in fields if "pattern" not in node and "enum" not in node}
    assert free == MULTILINE
    for path, node in fields:
        if "pattern" in node:
            assert node["pattern"].startswith("^") and node["pattern"].endswith("$"), path


def test_the_largest_accepted_file_is_refused_or_read_quickly():
    # GIVEN a file at the size cap made of as many values as fit (the worst case the caps allow)
    text = "a: [" + ",".join(["1"] * ((_yaml.MAX_BYTES - 10) // 2)) + "]\n"
    assert len(text) <= _yaml.MAX_BYTES
    # WHEN it is loaded
    start = time.monotonic()
    with pytest.raises(_yaml.YamlSyntaxError, match="more than 100,000 values"):
        _yaml.load_yaml(text)
    # THEN the event pass stops it early, within seconds even on a busy 2-core machine
    assert time.monotonic() - start < 10


def test_a_site_catalog_that_is_not_utf8_is_one_line(tmp_path, capsys):
    # GIVEN a valid spec with an instance-types.csv beside it holding a Latin-1 byte
    (tmp_path / "instance-types.csv").write_bytes(b"instance_type\n\xff\n")
    spec = tmp_path / "c.yaml"
    spec.write_text(GOOD)
    # WHEN it is rendered THEN exit 2 with one line naming the csv, no traceback
    rc, err, _ = run_spec(spec, tmp_path, capsys)
    assert (rc, err) == (2, [f"{tmp_path / 'instance-types.csv'}: is not UTF-8 text (byte 0xff at offset 14); "
                             "save it as UTF-8"])


def _levels(folder, names_per_level: list[list[str]]) -> None:
    """Shared files level by level: each file of a level extends the whole list of the next."""
    for depth, names in enumerate(names_per_level):
        below = names_per_level[depth + 1] if depth + 1 < len(names_per_level) else None
        for name in names:
            (folder / name).write_text(f"extends: {below}\n" if below else "schemaVersion: 1\n")


def test_an_extends_list_repeated_at_each_of_4_levels_finishes(tmp_path):
    # GIVEN one name repeated 40 times in the list of every level (40^4 reads without a bound)
    levels = [[f"_{level}.yaml"] for level in range(4)]
    _levels(tmp_path, levels)
    (tmp_path / "_0.yaml").write_text(f"extends: {['_1.yaml'] * 40}\n")
    spec = tmp_path / "c.yaml"
    spec.write_text(f"extends: {['_0.yaml'] * 40}\n" + GOOD)
    # WHEN it loads (in a child: the unbounded loader would never return) THEN one line, at once
    code = ("import sys; from pathlib import Path; from slurmgen.spec.loader import load_spec; "
            "from slurmgen.spec import SpecError\ntry:\n load_spec(Path(sys.argv[1]))\n"
            "except SpecError as err:\n print(err)")
    run = subprocess.run([sys.executable, "-c", code, str(spec)], capture_output=True, text=True, timeout=30,
                         cwd=REPO)
    assert run.stdout.startswith(f"{spec}")
    assert run.stdout.endswith(": extends[1]: _0.yaml is named twice in this list; name each file once\n")


def test_files_named_by_several_files_are_read_once(tmp_path, monkeypatch):
    # GIVEN four levels of four distinct files, each extending every file of the next level
    from slurmgen.spec import loader

    levels = [[f"_{level}{i}.yaml" for i in range(4)] for level in range(4)]
    _levels(tmp_path, levels)
    spec = tmp_path / "c.yaml"
    spec.write_text(f"extends: {levels[0]}\n" + GOOD)
    reads: list[str] = []
    real = loader.read_text
    monkeypatch.setattr(loader, "read_text", lambda path, **kw: (reads.append(path.name), real(path, **kw))[1])
    # WHEN it loads THEN each of the 16 files is read once (not 4 + 16 + 64 + 256 times)
    assert loader.load_spec(spec).name == "t"
    assert sorted(name for name in reads if name.startswith("_")) == sorted(n for names in levels for n in names)


def test_more_distinct_extends_files_than_the_cap_are_refused(tmp_path):
    levels = [[f"_{level}{i}.yaml" for i in range(5)] for level in range(4)]  # 20 files
    _levels(tmp_path, levels)
    spec = tmp_path / "c.yaml"
    spec.write_text(f"extends: {levels[0]}\n" + GOOD)
    from slurmgen.spec.loader import load_spec
    with pytest.raises(SpecError) as err:
        load_spec(spec)
    assert "more than 16 files pulled in through extends; merge the shared files" in str(err.value)
