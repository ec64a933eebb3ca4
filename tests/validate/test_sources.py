"""Provenance of the CRD files: pinned list, verification, fetching into a cache."""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path

import pytest

from slurmgen.validate import SchemaUnavailable, Validator
from slurmgen.validate import sources
from slurmgen.validate.sources import FetchError, default_crd_dir, fetch, load_sources, verify_dir

from tests.conftest import CRDS as CRD_DIR


class FakeOpener:
    """Serves the local copies of the pinned files by URL, optionally corrupting some."""

    def __init__(self, corrupt: set[str] = frozenset()) -> None:
        self.by_url = {source.url: CRD_DIR / source.path for source in load_sources()}
        self.corrupt = corrupt
        self.calls: list[str] = []

    def __call__(self, url: str, timeout: float) -> io.BytesIO:
        self.calls.append(url)
        data = self.by_url[url].read_bytes()
        if any(url.endswith(name) for name in self.corrupt):
            data = data.replace(b"type: object", b"type: array", 1)
        return io.BytesIO(data)


@pytest.fixture
def crd_copy(tmp_path: Path) -> Path:
    target = tmp_path / "crds"
    shutil.copytree(CRD_DIR, target)
    return target


def cache_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


# --------------------------------------------------------------------------- the pinned list
def test_pinned_list_matches_shared_crds_and_sources_md() -> None:
    # given crd_sources.json, the shared CRD dir and SOURCES.md
    pinned = load_sources()
    listed = dict(re.findall(r"^\s+- (\S+\.yaml)\s+([0-9a-f]{64})$", (CRD_DIR / "SOURCES.md").read_text(), re.M))
    # when compared
    on_disk = sorted(p.relative_to(CRD_DIR).as_posix() for p in CRD_DIR.rglob("*.yaml"))
    # then every file is pinned once, with the hash SOURCES.md gives, and the dir verifies
    assert sorted(source.path for source in pinned) == on_disk
    assert {Path(source.path).name: source.sha256 for source in pinned} == listed
    assert verify_dir(CRD_DIR) == []


def test_urls_point_at_pinned_raw_files() -> None:
    # given the pinned list / when each URL is parsed / then it is a raw file at a commit or tag
    shape = re.compile(r"^https://raw\.githubusercontent\.com/[\w.-]+/[\w.-]+/([0-9a-f]{40}|v\d+\.\d+\.\d+)/\S+\.yaml$")
    for source in load_sources():
        assert shape.match(source.url), source.url
        assert source.url.endswith("/" + Path(source.path).name)
    slinky = [s.url for s in load_sources() if s.path.startswith("slinky/")]
    assert all("/SlinkyProject/slurm-operator/v1.2.1/config/crd/bases/" in url for url in slinky)


# --------------------------------------------------------------------------- verify_dir
def test_verify_dir_reports_one_changed_byte(crd_copy: Path) -> None:
    # given a copy of the CRD dir where one byte of one file changed
    target = crd_copy / "keda" / "keda.sh_scaledobjects.yaml"
    data = bytearray(target.read_bytes())
    data[100] ^= 0x01
    target.write_bytes(bytes(data))
    # when the dir is verified
    problems = verify_dir(crd_copy)
    # then exactly that file is reported, with both hashes
    assert len(problems) == 1
    assert problems[0].startswith("keda/keda.sh_scaledobjects.yaml: sha256 ")
    assert "expected af35555862a83933b074af14ad439c4b4ceabaf4daa3e9338e9b23e36d308d80" in problems[0]


def test_verify_dir_reports_missing_but_allows_extra_files(crd_copy: Path) -> None:
    # given a copy with one file removed and one extra file added
    (crd_copy / "argocd" / "appproject-crd.yaml").unlink()
    (crd_copy / "extra").mkdir()
    (crd_copy / "extra" / "notes.yaml").write_text("# not pinned\n")
    # when verified
    problems = verify_dir(crd_copy)
    # then only the missing file is a problem
    assert problems == [
        "argocd/appproject-crd.yaml: missing (pinned: "
        "https://raw.githubusercontent.com/argoproj/argo-cd/109ca7ca71139e514114499d294a492e7910a965/manifests/crds/appproject-crd.yaml)"
    ]


def test_validator_refuses_a_tampered_dir(crd_copy: Path) -> None:
    # given a copy where one CRD was edited
    target = crd_copy / "slinky" / "v1.2.1" / "slinky.slurm.net_nodesets.yaml"
    target.write_bytes(target.read_bytes() + b"\n")
    # when / then creating a validator fails and names the file; verify=False overrides
    with pytest.raises(SchemaUnavailable, match=r"slinky/v1.2.1/slinky.slurm.net_nodesets.yaml: sha256"):
        Validator.create(crd_copy)
    assert len(Validator.create(crd_copy, verify=False).crds) == 28


def test_validator_accepts_extra_crds(crd_copy: Path) -> None:
    # given the pinned files plus one extra (unpinned) CRD
    (crd_copy / "extra.yaml").write_text(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
        "spec: {group: example.com, scope: Namespaced, names: {kind: Widget}, versions: "
        "[{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]}\n"
    )
    # when a validator is created / then the extra kind is known too
    validator = Validator.create(crd_copy)
    assert validator.crds.get("example.com/v1", "Widget") is not None


def test_verify_dir_on_a_missing_dir(tmp_path: Path) -> None:
    # given no dir / when verified / then one plain problem
    assert verify_dir(tmp_path / "nope") == [f"{tmp_path / 'nope'}: not a directory"]


# --------------------------------------------------------------------------- fetch
def test_fetch_downloads_verifies_and_then_skips(tmp_path: Path) -> None:
    # given an empty cache and an opener serving the pinned bytes
    cache = tmp_path / "cache"
    opener = FakeOpener()
    # when fetching
    result = fetch(cache, opener=opener)
    # then every file is there with the right hash, and nothing else (no temp files)
    assert result == cache
    assert verify_dir(cache) == []
    assert cache_files(cache) == sorted(source.path for source in load_sources())
    assert len(opener.calls) == 25
    # and a second fetch downloads nothing
    again = FakeOpener()
    fetch(cache, opener=again)
    assert again.calls == []


def test_fetch_replaces_a_file_with_a_wrong_hash(tmp_path: Path) -> None:
    # given a full cache where one file was damaged
    cache = fetch(tmp_path / "cache", opener=FakeOpener())
    damaged = cache / "keda" / "keda.sh_scaledobjects.yaml"
    damaged.write_text("garbage")
    opener = FakeOpener()
    # when fetching again
    fetch(cache, opener=opener)
    # then only that file is downloaded and it is correct again
    assert [url.rsplit("/", 1)[1] for url in opener.calls] == ["keda.sh_scaledobjects.yaml"]
    assert verify_dir(cache) == []


def test_fetch_with_corrupted_bytes_fails_and_leaves_nothing(tmp_path: Path) -> None:
    # given an opener whose bytes for one file are not the pinned ones
    cache = tmp_path / "cache"
    opener = FakeOpener(corrupt={"slinky.slurm.net_nodesets.yaml"})
    # when fetching
    with pytest.raises(FetchError) as raised:
        fetch(cache, opener=opener)
    # then the error names the file, the URL and both hashes ...
    message = str(raised.value)
    assert "could not fetch 1 CRD file(s)" in message
    assert "slinky/v1.2.1/slinky.slurm.net_nodesets.yaml: sha256 mismatch for https://raw.githubusercontent.com/SlinkyProject/slurm-operator/v1.2.1/config/crd/bases/slinky.slurm.net_nodesets.yaml" in message
    assert "expected 7ae218e2730770548bf7429bb8e3847187041e14584ef50b7f7b066257240b4d" in message
    # ... and nothing of that file (not even a temp file) is left in the cache
    files = cache_files(cache)
    assert not any("nodesets" in name for name in files)
    assert not any(name.endswith(".tmp") for name in files)
    nodesets_url = next(s.url for s in load_sources() if s.path == "slinky/v1.2.1/slinky.slurm.net_nodesets.yaml")
    assert verify_dir(cache) == [f"slinky/v1.2.1/slinky.slurm.net_nodesets.yaml: missing (pinned: {nodesets_url})"]


def test_fetch_with_everything_corrupted_leaves_an_empty_cache(tmp_path: Path) -> None:
    # given an opener that corrupts every file
    cache = tmp_path / "cache"
    opener = FakeOpener(corrupt={".yaml"})
    # when / then fetching fails and the cache holds no file at all
    with pytest.raises(FetchError, match="could not fetch 25 CRD file"):
        fetch(cache, opener=opener)
    assert not cache.exists() or cache_files(cache) == []


def test_fetch_reports_network_errors(tmp_path: Path) -> None:
    # given an opener that cannot connect
    def offline(url: str, timeout: float) -> io.BytesIO:
        raise OSError("network is unreachable")

    # when / then every file is reported in one error
    with pytest.raises(FetchError, match="download of https://raw.githubusercontent.com/.* failed: network is unreachable"):
        fetch(tmp_path / "cache", opener=offline)


# --------------------------------------------------------------------------- default dir + CLI
def test_default_crd_dir_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # given no env var: the checkout's shared dir wins
    monkeypatch.delenv(sources.CRD_DIR_ENV, raising=False)
    assert default_crd_dir() == CRD_DIR
    # given the env var: it wins, even over an existing shared dir
    monkeypatch.setenv(sources.CRD_DIR_ENV, str(tmp_path / "mine"))
    assert default_crd_dir() == tmp_path / "mine"
    # given neither: the user cache
    monkeypatch.delenv(sources.CRD_DIR_ENV)
    monkeypatch.setattr(sources, "SHARED_CRD_DIR", tmp_path / "absent")
    assert default_crd_dir() == sources.DEFAULT_CACHE_DIR == Path.home() / ".cache" / "slurmgen" / "crds"
    assert len(sources.CRD_DIR_SEARCH_ORDER) == 3


def test_cli_verify(crd_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # given a good dir / when verified from the CLI / then exit 0
    assert sources.main(["verify", str(crd_copy)]) == 0
    assert "25 CRD files match" in capsys.readouterr().out
    # given a damaged dir / when verified / then exit 1 with the file named on stderr
    (crd_copy / "keda" / "keda.sh_scaledobjects.yaml").write_text("x")
    assert sources.main(["verify", str(crd_copy)]) == 1
    assert "keda/keda.sh_scaledobjects.yaml: sha256" in capsys.readouterr().err


def test_cli_fetch_into_a_complete_cache_needs_no_network(crd_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # given a cache that already holds every pinned file
    # when `fetch --cache` runs (with the real opener, which must not be called)
    code = sources.main(["fetch", "--cache", str(crd_copy)])
    # then it succeeds
    assert code == 0
    assert f"25 CRD files verified in {crd_copy}" in capsys.readouterr().out
