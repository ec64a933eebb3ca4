"""The real-daemon site, started once per test run and shared by every deep test that needs it."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from ..conftest import skip_or_fail
from . import harness


@pytest.fixture(scope="session")
def slurm_site():
    """MariaDB and slurmdbd on loopback; skip (or, with SLURMGEN_REQUIRE_SHARED=1, fail) without them."""
    why = harness.missing()
    if why:
        skip_or_fail(why)
    harness.prepare_machine()
    # not under pytest's basetemp (0700): slurm, the SlurmUser, must reach its files
    root = Path(tempfile.mkdtemp(prefix="slurmgen-deep-"))
    root.chmod(0o755)
    site = harness.Site(root)
    try:
        site.start_mariadb()
        site.start_slurmdbd(harness.render(harness.SPECS / "example.yaml").files["slurmdbd.conf"])
        yield site
    finally:
        site.close()
        if not os.environ.get("SLURMGEN_KEEP_DEEP"):  # set it to read the daemons' logs afterwards
            shutil.rmtree(root, ignore_errors=True)
