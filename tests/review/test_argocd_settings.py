"""The health checks for each kind of Argo CD install, and `--verify-argocd` on live argocd-cm output."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from slurmgen.kube.health import CHECKS
from slurmgen.review import argocd_settings
from slurmgen.synth.build import render
from slurmgen.cli import main
from slurmgen.spec import SpecError, parse_text
from tests.spec_builder import spec_text
from tests.conftest import TESTS

DATA = TESTS / "data" / "argocd"
KEY = "resource.customizations.health.argoproj.io_Application"
NODESET_KEY = "resource.customizations.health.slinky.slurm.net_NodeSet"
# The Application check as an earlier slurmgen printed it, without the comment lines it has now.
OLD_APPLICATION_CHECK = DATA / "argocd-cm-application-only.yaml"


def live_cm(data: dict) -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "argocd-cm"}, "data": data})


def body(text: str) -> dict:
    return yaml.safe_load(text)


def test_each_install_kind_yields_an_argocd_cm_that_verifies():
    # GIVEN each form applied the way its install applies it
    plain = body(argocd_settings.settings("plain"))["data"]  # merge patch onto argocd-cm
    helm = body(argocd_settings.settings("helm"))["configs"]["cm"]  # the chart renders configs.cm into argocd-cm
    checks = body(argocd_settings.settings("operator"))["spec"]["resourceHealthChecks"]
    operator = {f"resource.customizations.health.{c['group']}_{c['kind']}": c["check"] for c in checks}  # what it writes
    # THEN the resulting argocd-cm passes the check every time
    for data in (plain, helm, operator):
        assert argocd_settings.verify(live_cm(data)) == []


def test_the_operator_form_names_the_application_and_every_slinky_kind():
    checks = body(argocd_settings.settings("operator"))["spec"]["resourceHealthChecks"]
    assert [(c["group"], c["kind"]) for c in checks] == [
        ("argoproj.io", "Application"), ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("slinky.slurm.net", "Accounting"), ("slinky.slurm.net", "Controller"),
        ("slinky.slurm.net", "RestApi"), ("slinky.slurm.net", "LoginSet"), ("slinky.slurm.net", "NodeSet")]
    assert "hs.status = obj.status.health.status" in checks[0]["check"]
    assert 'c.type == "ComparisonError"' in checks[0]["check"]


def in_place(tmp_path: Path, old_application_check: bool) -> Path:
    """A Helm-installed argocd-cm holding today's checks, the Application one as today's slurmgen
    writes it, or as an earlier one did (Argo CD's snippet, which reads status.health alone)."""
    live = body(OLD_APPLICATION_CHECK.read_text())
    live["data"].update({c.key: c.lua for c in CHECKS if c.kind != "Application" or not old_application_check})
    path = tmp_path / "argocd-cm-in-place.yaml"
    path.write_text(yaml.safe_dump(live))
    return path


@pytest.mark.parametrize("fixture,code,expect", [
    (None, 0, "has slurmgen's health checks"),
    ("old", 1, f"argocd-cm {KEY} differs from slurmgen's check"),
    ("argocd-cm-application-only.yaml", 1, f"has no {NODESET_KEY}: the slurm unit's later waves"),
    ("argocd-cm-reverted.yaml", 1, f"has no {KEY}"),
    ("argocd-cm-other-check.yaml", 1, "differs from slurmgen's check"),
])
def test_verify_argocd_reads_kubectl_output(capsys, tmp_path, fixture, code, expect):
    # WHEN the live ConfigMap (kubectl get cm argocd-cm -o yaml) is checked
    path = DATA / fixture if fixture not in (None, "old") else in_place(tmp_path, fixture == "old")
    assert main(["--verify-argocd", str(path)]) == code
    out = capsys.readouterr().out
    # THEN the line says what is wrong and what to run
    assert expect in out, out
    if code:
        assert "--argocd-settings" in out


def test_verify_names_every_missing_check_on_its_own_line():
    # GIVEN the argocd-cm an earlier slurmgen left: the Application check only
    problems = argocd_settings.verify((DATA / "argocd-cm-application-only.yaml").read_text())
    # THEN one line for its outdated Application check, then one per missing Slinky kind
    assert [p.split(":")[0].split(";")[0] for p in problems] == [f"argocd-cm {KEY} differs from slurmgen's check",
                                                    *(f"argocd-cm has no {c.key}" for c in CHECKS[1:])]


def test_verify_argocd_refuses_what_is_not_argocd_cm(tmp_path, capsys):
    other = tmp_path / "cm.yaml"
    other.write_text(live_cm({KEY: "x"}).replace("argocd-cm", "argocd-rbac-cm"))
    assert main(["--verify-argocd", str(other)]) == 1
    assert "not the argocd-cm ConfigMap" in capsys.readouterr().out


def test_verify_argocd_unreadable_file_exits_2(tmp_path, capsys):
    assert main(["--verify-argocd", str(tmp_path / "missing.yaml")]) == 2
    assert "cannot read" in capsys.readouterr().err


@pytest.mark.parametrize(("install", "patch_rendered"), [("plain", True), ("helm", False), ("operator", False)])
def test_the_spec_says_who_owns_argocd_cm_and_only_plain_gets_a_patch_in_dist(install, patch_rendered):
    # GIVEN a spec naming how its Argo CD is installed
    spec = parse_text("t.yaml", spec_text(gitops={"argocdInstall": install}))
    assert spec.gitops.argocd_install == install
    # WHEN rendered
    [cluster] = render([spec])
    # THEN only a kubectl-installed Argo CD gets the argocd-cm merge patch (Helm and the operator would
    # revert it: they take the check from their values / the ArgoCD CR, printed by --argocd-settings)
    assert ("argocd/configmap-argocd-cm.yaml" in cluster.files) is patch_rendered


def test_an_unknown_argocd_install_is_a_spec_error():
    with pytest.raises(SpecError) as err:
        parse_text("t.yaml", spec_text(gitops={"argocdInstall": "flux"}))
    assert "gitops.argocdInstall" in str(err.value)
