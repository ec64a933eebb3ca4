"""The rehearsal's fixtures: the built upstream programs, and one API server for the session.

Without Go or the Go module proxy the tests skip, saying why; SLURMGEN_REQUIRE_REHEARSAL=1 (CI)
turns that skip into a failure. A build that fails once the modules are there is a failure always.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REQUIRE_REHEARSAL = os.environ.get("SLURMGEN_REQUIRE_REHEARSAL") == "1"


def say(message: str) -> None:
    print(f"rehearse: {message}", file=sys.stderr, flush=True)


@pytest.fixture(scope="session")
def bin_dir() -> Path:
    """The folder of the built etcd, kube-apiserver and rehearse-keys (built now when missing)."""
    from rehearse import build

    from tests.conftest import USER_ENVIRON

    try:  # the programs `make rehearse-build` built, in the user's cache (the tests' own cache is private)
        return build.build(root=build.cache_root(USER_ENVIRON))
    except build.GoUnavailable as exc:
        reason = f"rehearsal: needs Go and the Go module proxy: {exc}"
        if REQUIRE_REHEARSAL:
            pytest.fail(f"{reason}; SLURMGEN_REQUIRE_REHEARSAL=1 forbids skipping it")
        pytest.skip(reason)


@pytest.fixture(scope="session")
def server(bin_dir):
    """One running etcd + kube-apiserver with the vendored CRDs installed, for the whole session."""
    from rehearse import cluster, crds

    with cluster.api_server(bin_dir, say) as running:
        crds.install(running.client, crds.load())
        yield running
