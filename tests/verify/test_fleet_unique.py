"""What must be unique across the fleet (verify/collisions.TABLE), as data: tests/cases/fleet/<case>/.

Each case folder is copied in as a repository's `clusters/` (see its README.md); some of it is
rendered, the rest is only read, as a render of some of `clusters/` does.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import slurmgen.cli as cli
from slurmgen.cli import main
from slurmgen.verify import collisions
from tests.spec_builder import spec_text
from tests.conftest import REPO, TESTS

CASES = sorted(p for p in (TESTS / "cases" / "fleet").iterdir() if p.is_dir())


def directives(case: Path, name: str) -> list[str]:
    prefix = f"# {name}: "
    return [line[len(prefix):] for line in (case / "expect.txt").read_text().splitlines() if line.startswith(prefix)]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_fleet_case(case, tmp_path, capsys, monkeypatch):
    # GIVEN the case as the repository's clusters/ folder
    repo = tmp_path / "repo"
    clusters = repo / "clusters"
    shutil.copytree(case, clusters, ignore=shutil.ignore_patterns("expect.txt", "README.md"))
    monkeypatch.setattr(cli, "REPO", repo)
    rendered = directives(case, "render") or [p.name for p in cli.cluster_files(clusters)]
    status = int((directives(case, "status") or ["2"])[0])
    expected = [line.replace("CLUSTERS/", f"{clusters}/") for line in directives(case, "expect")]
    out = tmp_path / "dist"
    # WHEN some of it is rendered
    args = [arg for name in rendered for arg in ("--spec", str(clusters / name))]
    rc = main([*args, "--out", str(out)])
    # THEN exactly the expected lines and status; on a refusal nothing is written
    assert capsys.readouterr().err.splitlines() == expected
    assert rc == status
    assert out.exists() == (status == 0)


def test_there_are_fleet_cases_for_every_row():
    # every row of the table has a case that trips it
    shown = "\n".join(line for case in CASES for line in directives(case, "expect"))
    for row in collisions.TABLE:
        assert row.shared in shown, row.what


def test_specs_outside_clusters_are_not_compared_with_clusters(tmp_path, monkeypatch):
    # GIVEN a repository whose clusters/ holds a spec, and a spec kept elsewhere
    repo = tmp_path / "repo"
    (repo / "clusters").mkdir(parents=True)
    (repo / "clusters" / "a.yaml").write_text(spec_text(name="a"))
    (repo / "clusters" / "_shared.yaml").write_text("schemaVersion: 1\n")
    elsewhere = tmp_path / "b.yaml"
    elsewhere.write_text(spec_text(name="b"))
    monkeypatch.setattr(cli, "REPO", repo)
    # WHEN/THEN: the spec elsewhere forms a fleet of its own; a spec of clusters/ gets the others (no `_` file)
    assert cli.fleet_files([elsewhere]) == []
    (repo / "clusters" / "c.yaml").write_text(spec_text(name="c"))
    assert cli.fleet_files([repo / "clusters" / "a.yaml"]) == [repo / "clusters" / "c.yaml"]
    assert cli.fleet_files([repo / "clusters" / "a.yaml", repo / "clusters" / "c.yaml"]) == []


def test_every_row_is_in_the_guarantees():
    text = (REPO / "docs" / "guarantees.md").read_text()
    for row in collisions.TABLE:
        assert f"| {row.what} | {row.scope} |" in text, row.what
