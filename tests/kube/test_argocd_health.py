"""The Argo CD health checks (slurmgen/kube/lua/), run with Lua 5.1 as Argo CD v3.5.1 runs them.

Each case in tests/data/argocd/health/ is a live object (status as slurm-operator v1.2.1 writes
it, or as a later operator might) and the health it must get.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from slurmgen.kube.health import CHECKS, SLINKY_GROUP, HealthCheck
from slurmgen.review import argocd_settings
from slurmgen.spec import parse_text
from slurmgen.synth.build import render
from tests.argocd_lua import run_check
from tests.spec_builder import spec_text
from tests.conftest import TESTS

CASES = TESTS / "data" / "argocd" / "health"
SLINKY_KINDS = ("Accounting", "Controller", "RestApi", "LoginSet", "NodeSet")


def case(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def check_for(obj: dict) -> HealthCheck:
    group = obj["apiVersion"].split("/")[0]
    [check] = [c for c in CHECKS if (c.group, c.kind) == (group, obj["kind"])]
    return check


@pytest.mark.parametrize("path", sorted(CASES.glob("*.yaml")), ids=lambda p: p.stem)
def test_each_check_gives_the_expected_health(path):
    # GIVEN a live object and the health it must get
    data = case(path)
    # WHEN its kind's check runs as Argo CD runs it (global obj, the returned table is the health)
    health = run_check(check_for(data["object"]).lua, data["object"])
    # THEN status and message are the expected ones
    assert health["status"] == data["expect"]["status"], (path.name, health)
    assert health["message"] == data["expect"]["message"], (path.name, health)


@pytest.mark.parametrize("kind", SLINKY_KINDS)
def test_every_slinky_kind_has_a_healthy_a_progressing_a_degraded_and_a_status_less_case(kind):
    # GIVEN the cases of one kind
    cases = [case(p) for p in sorted(CASES.glob("*.yaml"))]
    mine = [c for c in cases if c["object"]["kind"] == kind]
    # THEN they cover the three outcomes and an object the operator has not written a status for
    assert {c["expect"]["status"] for c in mine} >= {"Healthy", "Progressing", "Degraded"}, kind
    assert any("status" not in c["object"] for c in mine), kind


def test_there_is_one_check_per_slinky_kind_one_for_applications_and_one_for_crds():
    assert [(c.group, c.kind) for c in CHECKS] == [("argoproj.io", "Application"),
                                                   ("apiextensions.k8s.io", "CustomResourceDefinition"),
                                                   *((SLINKY_GROUP, k) for k in SLINKY_KINDS)]
    assert [c.key for c in CHECKS][2] == "resource.customizations.health.slinky.slurm.net_Accounting"


def test_every_slinky_kind_the_generator_renders_has_a_check():
    # GIVEN a cluster with login nodes and a nodeset, rendered
    [cluster] = render([parse_text("t.yaml", spec_text())])
    kinds = {obj["kind"] for obj in cluster.files.values()
             if isinstance(obj, dict) and str(obj.get("apiVersion", "")).startswith(SLINKY_GROUP + "/")}
    # THEN each of its slinky.slurm.net kinds has a health check (else its wave would not wait)
    assert kinds >= {"Controller", "NodeSet"}
    assert kinds <= {c.kind for c in CHECKS if c.group == SLINKY_GROUP}


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.kind)
def test_no_check_needs_a_library_argo_cd_does_not_load(check):
    # GIVEN an object with every field the checks read missing (metadata only)
    obj = {"apiVersion": f"{check.group}/v1", "kind": check.kind, "metadata": {"name": "x", "generation": 1}}
    # WHEN run in the sandbox (no string or math library, no string methods)
    health = run_check(check.lua, obj)
    # THEN it returns a valid status instead of failing (a failing check is Unknown, which fails a sync)
    assert health["status"] in ("Healthy", "Progressing")


def test_every_install_form_carries_the_same_lua_text():
    # GIVEN the checks as each form of install takes them, and the merge patch rendered into dist/
    plain = yaml.safe_load(argocd_settings.settings("plain"))["data"]
    helm = yaml.safe_load(argocd_settings.settings("helm"))["configs"]["cm"]
    operator = {f"resource.customizations.health.{c['group']}_{c['kind']}": c["check"]
                for c in yaml.safe_load(argocd_settings.settings("operator"))["spec"]["resourceHealthChecks"]}
    [cluster] = render([parse_text("t.yaml", spec_text())])
    rendered = cluster.files["argocd/configmap-argocd-cm.yaml"]["data"]
    # THEN every form holds the same keys with byte-identical Lua, that of the lua/ files
    expected = {c.key: c.lua for c in CHECKS}
    for form in (plain, helm, operator, rendered):
        assert form == expected
