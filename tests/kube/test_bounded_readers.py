"""Every YAML read is bounded (issue 23 E): the render cache's look for `extends`, files in dist/
(the guards, the summary's base, --check), --crd-dir schemas and a --preview chart folder end in
one line, never a traceback, a hang or unbounded memory."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

from slurmgen.verify import guards
from slurmgen.review.preview.charts import ChartLocator, HelmSource
from slurmgen.kube.documents import DocumentError, load_document, load_documents
from tests.conftest import REPO

BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
    for i in range(9))
DEEP = "extends: []\nk: " + "[" * 50_000 + "]" * 50_000 + "\n"  # 100 KB; libyaml's loader overflows the C stack


@pytest.mark.parametrize("text, what", [
    (BOMB, "values, counting each alias"),
    ("kind: X\nmetadata: {creationTimestamp: 2026-13-45}\n", "a value cannot be read"),
    ("n: " + "9" * 5000 + "\n", "a number of 5003 characters"[:14]),
    ("k: " + "[" * 300 + "]" * 300 + "\n", "nested deeper than 256"),
])
def test_a_document_past_the_bounds_is_one_yaml_error(text, what):
    with pytest.raises(DocumentError) as err:
        load_documents(text)
    assert isinstance(err.value, yaml.YAMLError) and what in str(err.value)


def test_a_rendered_file_is_read_with_bounds(tmp_path):
    # GIVEN a previous render whose file (a PR touched only dist/) holds an alias bomb / a bad timestamp
    for name, text in (("bomb.yaml", BOMB), ("time.yaml", "kind: X\napiVersion: v1\nmetadata: {name: x, "
                                                           "creationTimestamp: 2026-13-45}\n")):
        (tmp_path / name).write_text(text)
    # WHEN the guards read the tree THEN one line per file, no traceback
    with pytest.raises(guards.UnreadableTree) as err:
        guards.read_tree(tmp_path)
    assert [line.split(":")[0] for line in err.value.lines] == [str(tmp_path / "bomb.yaml"), str(tmp_path / "time.yaml")]


def test_the_cache_key_reads_extends_with_the_loaders_bounds(tmp_path):
    # GIVEN a spec that names extends and nests 50,000 levels deep (an unbounded load crashes the
    # process: in a child, so the old code fails this test instead of killing the run)
    spec = tmp_path / "t.yaml"
    spec.write_text(DEEP)
    code = f"from pathlib import Path; from slurmgen.run import cache; print(cache.extends_chain(Path({str(spec)!r})))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO)
    # THEN no key (the loader then reports the file), no crash
    assert (run.returncode, run.stdout) == (0, "None\n")


def test_crd_dir_schemas_are_read_with_bounds(tmp_path):
    from slurmgen.verify.schemas import crds
    from slurmgen.verify.schemas.core import SchemaUnavailable

    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB)
    with pytest.raises(SchemaUnavailable):
        crds._parse(path, path.read_bytes())


def _source() -> HelmSource:
    return HelmSource(application="t-x", repo_url="example.com/c", chart="x", version="1.0.0",
                      release_name="x", namespace="ns", values={})


@pytest.mark.parametrize("chart_yaml, why", [
    ("- just\n- a list\n", "Chart.yaml: not a mapping of chart fields"),
    ("name: [unclosed\n", "Chart.yaml: line 2, column 1: invalid YAML"),
    ("apiVersion: v2\nname: x\nversion: 1.0.0\ndependencies: [3]\n",
     "Chart.yaml: dependencies must be a list of mappings with a name"),
])
def test_a_malformed_chart_folder_is_one_line(tmp_path, monkeypatch, chart_yaml, why):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "Chart.yaml").write_text(chart_yaml)
    path, _notes, reason = ChartLocator(chart_dir=tmp_path, pull=False).locate(_source())
    assert path is None and why in reason and reason.endswith(", not cached, pull off")


def test_a_chart_folder_with_a_link_is_not_handed_to_helm(tmp_path, monkeypatch):
    # GIVEN a chart folder whose template is a link to /dev/zero (Helm's loader would read it forever)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = tmp_path / "x"
    (folder / "templates").mkdir(parents=True)
    (folder / "Chart.yaml").write_text("apiVersion: v2\nname: x\nversion: 1.0.0\n")
    os.symlink("/dev/zero", folder / "templates" / "zero.yaml")
    path, _notes, reason = ChartLocator(chart_dir=tmp_path, pull=False).locate(_source())
    assert path is None and f"{folder}/templates/zero.yaml is a symbolic link" in reason


def test_the_one_reader_keeps_a_bare_equals_a_string():
    assert load_document("k: =\n") == {"k": "="}


# --- issue 32, class 6: one bounded reader for every file read ------------------------------------

def _limited() -> None:
    """A child's address space capped at 1 GiB: an unbounded read fails the test, never the machine."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def _verify_argocd(argument: str, stdin=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-O", "main.py", "--verify-argocd", argument], stdin=stdin,
                          capture_output=True, text=True, timeout=30, cwd=REPO, preexec_fn=_limited)


@pytest.mark.parametrize("make, why", [
    (lambda tmp: "/dev/zero", "is a character device, not a regular file"),
    (lambda tmp: (os.mkfifo(tmp / "fifo"), str(tmp / "fifo"))[1], "is a FIFO, not a regular file"),
    (lambda tmp: ((tmp / "big.yaml").write_bytes(b"a: b\n" * 600_000), str(tmp / "big.yaml"))[1],
     "larger than 2048 KiB; argocd-cm is a ConfigMap"),
])
def test_verify_argocd_reads_a_bounded_regular_file(tmp_path, make, why):
    # GIVEN --verify-argocd on a device, a FIFO nobody writes, a 3 MB file
    source = make(tmp_path)
    # WHEN it runs THEN one line, exit 2, at once
    run = _verify_argocd(source)
    assert (run.returncode, run.stdout) == (2, "")
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"--verify-argocd: cannot read {source}: {why}")


def test_verify_argocd_reads_standard_input_with_a_bound():
    # GIVEN standard input that never ends
    with open("/dev/zero", "rb") as zero:
        run = _verify_argocd("-", stdin=zero)
    # THEN the read stops at the bound: one line, exit 2
    assert run.returncode == 2
    assert run.stderr.startswith("--verify-argocd: cannot read -: larger than 2048 KiB")


def test_a_large_file_in_a_rendered_tree_is_not_read(tmp_path):
    # GIVEN a previous render holding a 5 MiB YAML file (sparse: no disk) and a 5 MiB other file
    from slurmgen.write import output

    (tmp_path / "slurm").mkdir()
    for name in ("slurm/big.yaml", "big.bin"):
        with open(tmp_path / name, "wb") as handle:
            handle.truncate(5 * 1024 * 1024)
    # WHEN the guards read the tree THEN one line, by its size
    with pytest.raises(guards.UnreadableTree) as err:
        guards.read_tree(tmp_path)
    assert err.value.lines == [f"{tmp_path}/slurm/big.yaml: cannot read the previous render (larger than 4096 KiB; "
                               "no rendered object is that large); restore it (git checkout) or delete it, then run again"]
    # AND --check's reader holds a short marker for each, not their bytes
    texts = output.read_tree(tmp_path)
    assert texts == {"big.bin": "\0larger than 4096 KiB; not a rendered file\0",
                     "slurm/big.yaml": "\0larger than 4096 KiB; not a rendered file\0"}
