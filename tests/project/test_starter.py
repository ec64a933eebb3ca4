"""The annotated starter spec of the README's quick start renders in one pass, as a new user copies it."""

from __future__ import annotations

import shutil

from slurmgen.cli import main
from tests.conftest import REPO

STARTER = REPO / "docs" / "starter.yaml"


def test_the_starter_spec_renders_as_copied(tmp_path, capsys):
    # GIVEN the starter copied to clusters/mycluster.yaml, as the quick start says
    spec = tmp_path / "clusters" / "mycluster.yaml"
    spec.parent.mkdir()
    shutil.copy(STARTER, spec)
    # WHEN it is rendered
    code = main(["--spec", str(spec), "--out", str(tmp_path / "dist")])
    # THEN it renders without a problem, into dist/mycluster/
    assert code == 0, capsys.readouterr().err
    assert (tmp_path / "dist" / "mycluster" / "bootstrap" / "application-mycluster-root.yaml").is_file()


def test_every_value_a_user_must_set_is_marked():
    # GIVEN the starter's lines, THEN the site-specific ones say CHANGE (account, network, names)
    marked = [line for line in STARTER.read_text().splitlines() if "# CHANGE" in line]
    keys = {line.split(":")[0].strip(" -") for line in marked}
    assert {"name", "region", "eksClusterName", "repoURL", "nodeRole", "sourceRanges", "zone", "subnetId",
            "securityGroupIds", "fsxCsiController"} <= keys
