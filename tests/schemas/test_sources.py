"""Provenance of the CRD schemas: the pinned list, verification, download, and the refresh of vendored/.

Most tests use a small pinned list of synthetic CRD files (`pinned`), so they need nothing beside
the checkout; the deep tests compare with the real upstream files in ../shared/crds.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
from pathlib import Path

import pytest

from slurmgen.maintain import crd_schemas
from slurmgen.maintain.crd_schemas import FetchError, fetch, refresh, verify_dir
from slurmgen.verify.schemas import SchemaUnavailable, Validator, vendored
from slurmgen.verify.schemas.pins import CrdSource, load_sources
from slurmgen.verify.schemas.vendored import INDEX_FILE, VENDORED_DIR, VendoredCrds

from tests.conftest import REPO, SHARED_CRDS, need_shared

COMMIT = "0123456789abcdef0123456789abcdef01234567"
WIDGET = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Cluster
  names: {kind: Widget, plural: widgets}
  versions:
  - name: v2
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, description: dropped, properties: {size: {type: integer}}}
  - {name: v1, served: false, storage: false, schema: {openAPIV3Schema: {type: object}}}
"""
GADGET = WIDGET.replace("Widget", "Gadget").replace("widgets", "gadgets").replace("Cluster", "Namespaced")


@pytest.fixture
def pinned(tmp_path: Path) -> tuple[Path, tuple[CrdSource, ...]]:
    """An upstream dir of two synthetic CRD files and the pinned list that matches it."""
    upstream = tmp_path / "upstream"
    found = []
    for path, text in (("example/widgets.yaml", WIDGET), ("example/gadgets.yaml", GADGET)):
        (upstream / path).parent.mkdir(parents=True, exist_ok=True)
        (upstream / path).write_text(text)
        found.append(CrdSource(
            path=path, url=f"https://example.invalid/o/r/{COMMIT}/{path}",
            sha256=hashlib.sha256(text.encode()).hexdigest(), repository="https://example.invalid/o/r",
            tag="v1.0.0", commit=COMMIT,
        ))  # fmt: skip
    return upstream, tuple(found)


class FakeOpener:
    """Serves files of a local dir by their pinned URL, optionally corrupting some."""

    def __init__(self, upstream: Path, pins: tuple[CrdSource, ...], corrupt: frozenset[str] = frozenset()) -> None:
        self.by_url = {source.url: upstream / source.path for source in pins}
        self.corrupt = corrupt
        self.calls: list[str] = []

    def __call__(self, url: str, timeout: float) -> io.BytesIO:
        self.calls.append(url)
        data = self.by_url[url].read_bytes()
        if any(url.endswith(name) for name in self.corrupt):
            data = data.replace(b"type: integer", b"type: string", 1)
        return io.BytesIO(data)


def files_under(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


# --------------------------------------------------------------------------- the pinned list
def test_urls_point_at_pinned_raw_files_with_their_provenance() -> None:
    # given the pinned list / when each entry is read / then it is a raw file at a commit or tag,
    # with its repository, tag and commit recorded
    shape = re.compile(r"^https://raw\.githubusercontent\.com/[\w.-]+/[\w.-]+/([0-9a-f]{40}|v\d+\.\d+\.\d+)/\S+\.yaml$")
    for source in load_sources():
        assert shape.match(source.url), source.url
        assert source.url.endswith("/" + Path(source.path).name)
        assert source.url.startswith(source.repository.replace("https://github.com/", "https://raw.githubusercontent.com/") + "/")
        assert re.fullmatch(r"[0-9a-f]{40}", source.commit), source.path
        assert re.fullmatch(r"v\d+\.\d+\.\d+", source.tag), source.path
    slinky = [s for s in load_sources() if s.path.startswith("slinky/")]
    assert len(slinky) == 6
    assert all("/SlinkyProject/slurm-operator/v1.2.1/config/crd/bases/" in s.url and s.tag == "v1.2.1" for s in slinky)


def test_pinned_list_matches_shared_crds_and_sources_md() -> None:
    # given (deep test) crd_sources.json, the upstream CRD dir beside the checkout and its SOURCES.md
    crd_dir = need_shared(SHARED_CRDS)
    pinned = load_sources()
    listed = dict(re.findall(r"^\s+- (\S+\.yaml)\s+([0-9a-f]{64})$", (crd_dir / "SOURCES.md").read_text(), re.M))
    # when compared
    on_disk = sorted(p.relative_to(crd_dir).as_posix() for p in crd_dir.rglob("*.yaml"))
    # then every file is pinned once, with the hash SOURCES.md gives, and the dir verifies
    assert sorted(source.path for source in pinned) == on_disk
    assert {Path(source.path).name: source.sha256 for source in pinned} == listed
    assert verify_dir(crd_dir) == []


def test_a_malformed_pin_is_refused(tmp_path: Path) -> None:
    # given a pinned list with a path escaping the CRD dir, then one with a short hash
    for entry, message in (({"path": "../x.yaml", "sha256": "0" * 64}, "unsafe path"),
                           ({"path": "x.yaml", "sha256": "abc"}, "sha256 is not 64 hex digits")):
        sources_file = tmp_path / "pins.json"
        sources_file.write_text(json.dumps({"files": [{"url": "https://example.invalid/x.yaml", **entry}]}))
        # when / then loading it fails and says why
        with pytest.raises(ValueError, match=message):
            load_sources(sources_file)


# --------------------------------------------------------------------------- verify_dir
def test_verify_dir_reports_one_changed_byte(pinned) -> None:
    # given an upstream dir where one byte of one file changed
    upstream, pins = pinned
    target = upstream / "example" / "gadgets.yaml"
    data = bytearray(target.read_bytes())
    data[100] ^= 0x01
    target.write_bytes(bytes(data))
    # when the dir is verified
    problems = verify_dir(upstream, pins)
    # then exactly that file is reported, with both hashes
    assert len(problems) == 1
    assert problems[0].startswith("example/gadgets.yaml: sha256 ")
    assert f"expected {pins[1].sha256}" in problems[0]


def test_verify_dir_reports_missing_but_allows_extra_files(pinned) -> None:
    # given a dir with one pinned file removed and one extra file added
    upstream, pins = pinned
    (upstream / "example" / "widgets.yaml").unlink()
    (upstream / "notes.yaml").write_text("# not pinned\n")
    # when verified / then only the missing file is a problem
    assert verify_dir(upstream, pins) == [f"example/widgets.yaml: missing (pinned: {pins[0].url})"]


def test_verify_dir_on_a_missing_dir(tmp_path: Path) -> None:
    # given no dir / when verified / then one plain problem
    assert verify_dir(tmp_path / "nope") == [f"{tmp_path / 'nope'}: not a directory"]


# --------------------------------------------------------------------------- fetch
def test_fetch_downloads_verifies_and_then_skips(pinned, tmp_path: Path) -> None:
    # given an empty target and an opener serving the pinned bytes
    upstream, pins = pinned
    target = tmp_path / "downloaded"
    opener = FakeOpener(upstream, pins)
    # when fetching
    result = fetch(target, sources=pins, opener=opener)
    # then every file is there with the right hash, and nothing else (no temp files)
    assert result == target
    assert verify_dir(target, pins) == []
    assert files_under(target) == ["example/gadgets.yaml", "example/widgets.yaml"]
    assert len(opener.calls) == 2
    # and a second fetch downloads nothing
    again = FakeOpener(upstream, pins)
    fetch(target, sources=pins, opener=again)
    assert again.calls == []


def test_fetch_with_corrupted_bytes_fails_and_leaves_nothing_of_that_file(pinned, tmp_path: Path) -> None:
    # given an opener whose bytes for one file are not the pinned ones
    upstream, pins = pinned
    target = tmp_path / "downloaded"
    # when fetching
    with pytest.raises(FetchError) as raised:
        fetch(target, sources=pins, opener=FakeOpener(upstream, pins, corrupt=frozenset({"widgets.yaml"})))
    # then the error names the file, the URL and the expected hash ...
    message = str(raised.value)
    assert "could not fetch 1 CRD file(s)" in message
    assert f"example/widgets.yaml: sha256 mismatch for {pins[0].url}: expected {pins[0].sha256}, got " in message
    # ... and nothing of that file (not even a temp file) is written
    assert files_under(target) == ["example/gadgets.yaml"]


def test_fetch_reports_network_errors(pinned, tmp_path: Path) -> None:
    # given an opener that cannot connect
    def offline(url: str, timeout: float) -> io.BytesIO:
        raise OSError("network is unreachable")

    # when / then every file is reported in one error
    with pytest.raises(FetchError, match=r"could not fetch 2 CRD file\(s\)(.|\n)*network is unreachable"):
        fetch(tmp_path / "downloaded", sources=pinned[1], opener=offline)


# --------------------------------------------------------------------------- refresh
def test_refresh_downloads_converts_and_records_provenance(pinned, tmp_path: Path) -> None:
    # given the pinned synthetic files served by URL
    upstream, pins = pinned
    target = tmp_path / "vendored"
    # when refreshing into a vendored dir
    files = refresh(target=target, sources=pins, opener=FakeOpener(upstream, pins))
    # then one strict JSON per CRD and the index are written, and nothing else
    assert sorted(files) == sorted(p.name for p in target.iterdir()) == [
        "example.com_gadget.json", "example.com_widget.json", INDEX_FILE]
    assert vendored.problems(pins, target) == []
    widget = json.loads((target / "example.com_widget.json").read_text())
    # each records its upstream file: url, repository, tag, commit, sha256
    assert widget["source"] == {"path": "example/widgets.yaml", "url": pins[0].url, "repository": "https://example.invalid/o/r",
                                "tag": "v1.0.0", "commit": COMMIT, "sha256": pins[0].sha256}
    # the served version carries the strict schema (descriptions dropped, objects closed); the unserved one none
    [v2, v1] = widget["versions"]
    assert v2["schema"]["properties"]["spec"] == {
        "type": "object", "properties": {"size": {"type": "integer"}}, "additionalProperties": False}
    assert v1 == {"name": "v1", "served": False}
    # and the index loads with the kinds' group, scope and served flags
    crds = VendoredCrds.load(target)
    assert [(c.api_version, c.kind, c.scope, c.served) for c in crds] == [
        ("example.com/v2", "Gadget", "Namespaced", True), ("example.com/v1", "Gadget", "Namespaced", False),
        ("example.com/v2", "Widget", "Cluster", True), ("example.com/v1", "Widget", "Cluster", False),
    ]


def test_refresh_from_a_tampered_dir_writes_nothing(pinned, tmp_path: Path) -> None:
    # given a vendored dir made from good files, then one upstream file edited
    upstream, pins = pinned
    target = tmp_path / "vendored"
    refresh(upstream, target=target, sources=pins)
    before = {name: (target / name).read_bytes() for name in files_under(target)}
    (upstream / "example" / "widgets.yaml").write_text(WIDGET + "# edited\n")
    # when refreshing from that dir
    with pytest.raises(FetchError, match=r"does not hold the pinned CRD files:\n  - example/widgets.yaml: sha256 "):
        refresh(upstream, target=target, sources=pins)
    # then the vendored dir is exactly as it was
    assert {name: (target / name).read_bytes() for name in files_under(target)} == before


def test_vendored_dir_matches_the_pins_and_its_index() -> None:
    # given the vendored dir in the package / when checked without the upstream files
    # then every pinned file is vendored with its pin, every file is listed with its sha256, none extra
    assert vendored.problems(load_sources()) == []
    assert len(list(VENDORED_DIR.glob("*.json"))) == 26  # 25 CRDs + index.json


def test_a_hand_edit_of_a_vendored_file_is_detected(tmp_path: Path) -> None:
    # given a copy of the vendored dir where one schema was edited and one file added
    copy = tmp_path / "vendored"
    shutil.copytree(VENDORED_DIR, copy)
    nodeset = copy / "slinky.slurm.net_nodeset.json"
    nodeset.write_text(nodeset.read_text().replace('"additionalProperties": false', '"additionalProperties": true', 1))
    (copy / "extra.json").write_text("{}")
    # when checked / then both are reported
    assert vendored.problems(load_sources(), copy) == [
        f"slinky.slurm.net_nodeset.json: sha256 differs from {INDEX_FILE} (edited by hand? run the refresh)",
        f"extra.json: not listed in {INDEX_FILE}",
    ]


def test_vendored_files_are_what_the_converter_makes_from_the_pinned_upstream_files(tmp_path: Path) -> None:
    # given (deep test) the pinned upstream CRD YAML beside the checkout
    crd_dir = need_shared(SHARED_CRDS)
    # when the refresh regenerates the vendored files from it into a scratch dir
    target = tmp_path / "vendored"
    refresh(crd_dir, target=target)
    # then they are byte for byte the committed ones: no file more, none less
    assert files_under(target) == files_under(VENDORED_DIR)
    for name in files_under(target):
        assert (target / name).read_bytes() == (VENDORED_DIR / name).read_bytes(), f"{name}: run the refresh"


def test_validation_with_the_vendored_schemas_equals_validation_with_the_upstream_yaml() -> None:
    # given (deep test) one bad NodeSet, validated with the vendored schemas and with --crd-dir upstream YAML
    crd_dir = need_shared(SHARED_CRDS)
    obj = {"apiVersion": "slinky.slurm.net/v1beta1", "kind": "NodeSet", "metadata": {"name": "n", "namespace": "slurm"},
           "spec": {"controllerRef": {"name": "slurm"}, "replicas": "2", "typo": 1}}
    # when both validate it
    vendored_lines = [str(p) for p in Validator.create().validate(obj)]
    upstream_lines = [str(p) for p in Validator.create(crd_dir).validate(obj)]
    # then they report the same problems
    assert vendored_lines == upstream_lines == [
        "NodeSet slurm/n: spec.logfile: required: the Slinky operator has no default image (set logfile.image)",
        "NodeSet slurm/n: spec.replicas: '2' is not of type 'integer'",
        "NodeSet slurm/n: spec.slurmd: required: the Slinky operator has no default image (set slurmd.image)",
        "NodeSet slurm/n: spec.typo: Additional properties are not allowed ('typo' was unexpected)",
    ]


# --------------------------------------------------------------------------- CLI
def test_cli_refresh_from_a_dir(pinned, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys) -> None:
    # given the synthetic pins and a scratch vendored dir in place of the package's
    upstream, pins = pinned
    monkeypatch.setattr(crd_schemas, "load_sources", lambda: pins)
    monkeypatch.setattr(vendored, "VENDORED_DIR", tmp_path / "vendored")
    # when `refresh --from DIR` runs / then it verifies, writes and says so
    assert crd_schemas.main(["refresh", "--from", str(upstream)]) == 0
    assert capsys.readouterr().out == f"2 CRD files verified; 3 files written to {tmp_path / 'vendored'}\n"
    assert vendored.problems(pins, tmp_path / "vendored") == []
    # and from a damaged dir it exits 1 naming the file, on stderr
    (upstream / "example" / "gadgets.yaml").write_text("x")
    assert crd_schemas.main(["refresh", "--from", str(upstream)]) == 1
    assert "example/gadgets.yaml: sha256" in capsys.readouterr().err


def test_cli_verify(pinned, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    # given a good dir / when verified from the CLI / then exit 0
    upstream, pins = pinned
    monkeypatch.setattr(crd_schemas, "load_sources", lambda: pins)
    assert crd_schemas.main(["verify", str(upstream)]) == 0
    assert "2 CRD files match" in capsys.readouterr().out
    # given a damaged dir / when verified / then exit 1 with the file named on stderr
    (upstream / "example" / "widgets.yaml").write_text("x")
    assert crd_schemas.main(["verify", str(upstream)]) == 1
    assert "example/widgets.yaml: sha256" in capsys.readouterr().err


# --------------------------------------------------------------------------- nothing outside the package
def test_the_package_never_looks_for_crds_or_charts_beside_the_checkout_or_in_a_cache() -> None:
    # given every source and data file of the package
    files = [p for p in (REPO / "slurmgen").rglob("*") if p.suffix in (".py", ".json", ".csv") and p.is_file()]
    # when searched for the former CRD and chart locations
    hits = [f"{p.relative_to(REPO)}: {word}" for p in files for word in ("shared/crds", "shared/charts",
            "SLURMGEN_CRD_DIR", ".cache/slurmgen", "parsed-crds") if word in p.read_text(encoding="utf-8")]
    # then none is mentioned: the vendored schemas are the only default
    assert hits == []


@pytest.mark.parametrize("argv", [["main.py", "--help"], ["-m", "slurmgen.maintain.crd_schemas", "refresh", "--help"]])
def test_help_texts_do_not_send_anyone_to_shared(argv: list[str]) -> None:
    # given the command lines a user reads / when their help is printed
    import subprocess
    import sys

    result = subprocess.run([sys.executable, *argv], cwd=REPO, capture_output=True, text=True, check=True, timeout=60)
    # then it describes the options without pointing at ../shared or a cache
    assert "--crd-dir" in result.stdout or "--from" in result.stdout
    assert "shared" not in result.stdout and ".cache" not in result.stdout


@pytest.mark.parametrize(("content", "message"), [
    (None, r"vendored CRD schemas unreadable: .*index\.json"),
    ("{not json", r"index\.json: not JSON .*run the refresh"),
    ('{"crds": [{"group": "x"}]}', r"index\.json: malformed .*run the refresh"),
])
def test_a_broken_vendored_dir_fails_with_one_plain_message(tmp_path: Path, content: str | None, message: str) -> None:
    # given a vendored dir whose index is missing, not JSON, or lacks fields
    if content is not None:
        (tmp_path / INDEX_FILE).write_text(content)
    # when / then loading it raises the validator's plain error (synth prints it and exits 2)
    with pytest.raises(SchemaUnavailable, match=message):
        VendoredCrds.load(tmp_path)


def test_build_refuses_bytes_that_are_not_the_pinned_ones(pinned) -> None:
    # given an upstream dir whose file changed after any earlier verification
    upstream, pins = pinned
    (upstream / "example" / "gadgets.yaml").write_text(GADGET.replace("integer", "string"))
    # when / then the converter itself refuses it, naming the file
    with pytest.raises(SchemaUnavailable, match=r"example/gadgets.yaml: sha256 is not the pinned "):
        vendored.build(upstream, pins)
