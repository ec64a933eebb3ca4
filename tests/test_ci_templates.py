"""The CI workflow and pre-commit hook shipped for a repository of specs: they run what they claim."""

from __future__ import annotations

import re

import yaml

from tests.conftest import REPO


def test_workflow_runs_tests_check_and_posts_the_summary():
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "slurmgen.yml").read_text())
    assert set(workflow[True]) >= {"pull_request", "push"}  # YAML 1.1 reads `on` as true
    steps = workflow["jobs"]["render"]["steps"]
    runs = [s.get("run", "") for s in steps]
    assert any(r.strip() == "make test" for r in runs)
    assert any(r.strip() == "make check" for r in runs)
    assert not any("slurmgen.validate.sources" in r for r in runs)  # the CRD schemas are vendored: nothing to fetch
    summary = next(s for s in steps if "--summary" in s.get("run", ""))
    assert "--base" in summary["run"] and summary["if"] == "github.event_name == 'pull_request'"
    assert any("gh pr comment" in r for r in runs)
    for step in steps:
        if "uses" in step:  # every action pinned to a full commit SHA
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", step["uses"]), step["uses"]
    assert workflow["permissions"] == {"contents": "read"}


def test_pre_commit_hook_resynthesizes():
    config = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())
    hooks = {h["id"]: h for repo in config["repos"] for h in repo["hooks"]}
    assert hooks["slurmgen-synth"]["entry"] == "make synth" and hooks["slurmgen-synth"]["pass_filenames"] is False
    assert re.search(hooks["slurmgen-synth"]["files"], "clusters/example.yaml")
    assert hooks["slurmgen-check"]["entry"] == "make check"


def test_make_targets_exist():
    makefile = (REPO / "Makefile").read_text()
    for target in ("install", "synth", "test", "check", "summary", "bench"):
        assert re.search(rf"^{target}:", makefile, re.M), target


def test_our_own_ci_calls_the_readme_test_command():
    ci = (REPO / ".ci" / "run").read_text()
    readme = (REPO / "README.md").read_text()
    assert "make test" in ci and "make test" in readme
