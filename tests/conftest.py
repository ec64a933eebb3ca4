"""Shared fixtures: the repository, the vendored chart defaults, renders of the examples, and the
switch for the optional deep tests that read upstream files beside the checkout (../shared)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: The tests' root: its data folders (data/, cases/, golden/, specs/) serve every stage's tests/<stage>/.
TESTS = REPO / "tests"
SHARED = REPO.parent / "shared"
#: The pinned upstream CRD YAML the vendored schemas are made from: only deep tests read it.
SHARED_CRDS = SHARED / "crds"
#: Default values of the pinned Helm charts, vendored for the tests (see its SOURCES.json).
CHARTS = TESTS / "data" / "charts"
#: CI sets it where ../shared exists, so a deep test cannot skip unnoticed there.
REQUIRE_SHARED = os.environ.get("SLURMGEN_REQUIRE_SHARED") == "1"
#: The tests' own cluster specs (the shapes of the shipped examples, copied): tests never read the
#: repository's clusters/ or dist/, which a fork replaces with its own.
SPECS = TESTS / "specs"
EXAMPLES = sorted(p for p in SPECS.glob("*.yaml") if not p.name.startswith("_"))
#: The rehearsal's tests (a real kube-apiserver, built with Go) are a suite of their own, not part of
#: `make test`: `make rehearse-test` sets SLURMGEN_REHEARSE_TESTS=1 to collect them.
collect_ignore = [] if os.environ.get("SLURMGEN_REHEARSE_TESTS") == "1" else ["rehearse"]

# The smallest valid spec: tests add to it what they exercise, as data with tests/spec_builder.spec_text
# (keep text edits for tests about the text: line numbers, key order, comments, YAML syntax).
MINIMAL_SPEC = """\
schemaVersion: 1
name: t
aws: {region: us-west-2, eksClusterName: eks}
gitops: {repoURL: "https://github.com/o/r.git"}
nodesets: [{name: gpu, instanceType: g5.xlarge}]
partitions: [{name: gpu, nodesets: [gpu]}]
"""


def running_venv() -> Path:
    """The virtual environment running these tests: the one `make install` built from requirements.txt."""
    if sys.prefix == sys.base_prefix:
        pytest.fail("the tests must run in the project's virtual environment (make test)")
    return Path(sys.prefix)


def assert_golden(text: str, golden: Path) -> None:
    """`text` is the reviewed file `golden`; with SLURMGEN_UPDATE_GOLDEN=1 the file is rewritten
    instead (review its diff before committing)."""
    if os.environ.get("SLURMGEN_UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text)
    assert text == golden.read_text()


def skip_or_fail(reason: str) -> None:
    """Skip an optional deep test, saying why; with SLURMGEN_REQUIRE_SHARED=1 (CI, where the deep
    tests must run) fail instead."""
    if REQUIRE_SHARED:
        pytest.fail(f"{reason}; SLURMGEN_REQUIRE_SHARED=1 forbids skipping it")
    pytest.skip(reason)


def need_shared(path: Path) -> Path:
    """`path` (under ../shared) for an optional deep test; skip (or fail, see skip_or_fail) when it is absent."""
    if not path.exists():
        skip_or_fail(f"deep test: needs {path} (upstream files beside the checkout), which is absent")
    return path


@pytest.fixture(scope="session")
def rendered():
    """Every example cluster, rendered and verified once per test session: {cluster name: RenderedCluster}."""
    from slurmgen.run.pipeline import run

    result = run(EXAMPLES)
    return {c.spec.name: c for c in result.clusters}


@pytest.fixture(scope="session")
def dist_tree(tmp_path_factory) -> Path:
    """The tests' specs rendered by the command line into a folder of the session's: what a
    repository's dist/ would hold for them (read-only; copy it to change it)."""
    from slurmgen.cli import main

    out = tmp_path_factory.mktemp("dist")
    assert main([*sum((["--spec", str(p)] for p in EXAMPLES), []), "--out", str(out), "--no-cache"]) == 0
    return out


@pytest.fixture(scope="session")
def example(rendered):
    """The embedded default cluster's files: {relative path: object}."""
    return rendered["example"].files


#: the environment the tests were started in, before _private_render_cache: where the user's own caches
#: are (the rehearsal's built programs are one: tests/rehearse/ reuse them rather than build them again)
USER_ENVIRON = dict(os.environ)


@pytest.fixture(scope="session", autouse=True)
def _private_render_cache(tmp_path_factory):
    """The caches of a test session are fresh folders, never the user's: the render cache
    (slurmgen/run/cache.py) and everything else under $XDG_CACHE_HOME/slurmgen (the chart archives a
    preview pulls, slurmgen/user_cache.py)."""
    private = {"SLURMGEN_CACHE_DIR": str(tmp_path_factory.mktemp("render-cache")),
               "XDG_CACHE_HOME": str(tmp_path_factory.mktemp("xdg-cache"))}
    before = {key: os.environ.get(key) for key in private}
    os.environ.update(private)
    yield
    for key, value in before.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def pytest_terminal_summary(terminalreporter) -> None:
    """After deep tests ran, list every place where their sandboxes and files still differ from the pods."""
    ran = [r for key in ("passed", "failed") for r in terminalreporter.stats.get(key, [])
           if getattr(r, "nodeid", "").startswith("tests/deep/") and r.when == "call"]
    if not ran:
        return
    from tests.deep.harness import LOCAL_CHANGES
    from tests.deep.sandbox import DIFFERENCES

    terminalreporter.write_sep("-", "where the deep tests still differ from a pod (tests/deep/sandbox.py, harness.py)")
    for what, why in [*DIFFERENCES.items(), *LOCAL_CHANGES.items()]:
        terminalreporter.write_line(f"{what}: {why}")
