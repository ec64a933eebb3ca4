"""issue #15: the directory's bind password from a Secret the site created, and the directory with
secrets mode precreated (the whole sssd.conf is the site's Secret; `--explain sssd.conf` prints it).

`kref` is the `ldap` cluster of tests/synth/test_directory.py with `bindPassword: {secret: ...}` and no AWS
role; `pre` is the same directory with `secrets.mode: precreated` and no bindPassword. Both are
rendered and verified (strict CRD schemas: the kubernetes SecretStore against ESO v2.9.0's CRD).
"""

from __future__ import annotations

import re
import pytest
import yaml

from slurmgen.plan import identity
from slurmgen.cli import main
from slurmgen.run.pipeline import run
from slurmgen.spec import parse_text
from tests.spec_builder import DROP, Whole, variant
from tests.synth.test_directory import GOLDEN, LDAP, of_kind, sssd_conf

SM_REF = {"secretsManager": {"name": "corp/ldap/reader", "property": "password"}}  # ldap's own bindPassword
KREF = variant(LDAP, name="kref", aws={"identity": DROP},
               directory={"bindPassword": Whole(secret={"name": "corp-ldap-bind", "key": "password"})})
PRE = variant(LDAP, name="pre", aws={"identity": DROP}, directory={"bindPassword": DROP},
              secrets={"mode": "precreated"}, login={"sssdConfSecret": {"name": "site-sssd", "key": "sssd.conf"}})


@pytest.fixture(scope="module")
def clusters(tmp_path_factory):
    folder = tmp_path_factory.mktemp("refs")
    paths = []
    for name, text in (("kref", KREF), ("pre", PRE)):
        (folder / f"{name}.yaml").write_text(text)
        paths.append(folder / f"{name}.yaml")
    # each alone: two sites' variants of one spec, on one EKS cluster (one run would refuse two specs there)
    return {c.spec.name: c.files for path in paths for c in run([path]).clusters}


def test_a_precreated_bind_password_is_read_by_a_store_allowed_that_one_secret(clusters):
    # GIVEN bindPassword: {secret: {name: corp-ldap-bind, key: password}} WHEN rendered
    files = clusters["kref"]
    es = files["secrets/externalsecret-slurm-sssd-conf.yaml"]["spec"]
    # THEN sssd.conf's ExternalSecret reads that key of that Secret through the kubernetes store
    assert es["secretStoreRef"] == {"kind": "SecretStore", "name": "directory-bind-password"}
    assert [(d["secretKey"], d["remoteRef"]["key"], d["remoteRef"]["property"]) for d in es["data"]] == [
        ("bindPassword", "corp-ldap-bind", "password")]
    store = files["secrets/secretstore-directory-bind-password.yaml"]["spec"]["provider"]
    # AND the store reads the Slurm namespace through the API server, trusting the cluster's own CA
    assert store == {"kubernetes": {
        "remoteNamespace": "slurm",
        "server": {"url": "https://kubernetes.default.svc",
                   "caProvider": {"type": "ConfigMap", "name": "kube-root-ca.crt", "key": "ca.crt"}},
        "auth": {"serviceAccount": {"name": "directory-bind-password-reader"}}}}
    # AND its identity may only get that one Secret (not list, not others)
    role = files["secrets/role-directory-bind-password-reader.yaml"]
    assert role["rules"] == [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["corp-ldap-bind"],
                              "verbs": ["get"]}]
    binding = files["secrets/rolebinding-directory-bind-password-reader.yaml"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "directory-bind-password-reader",
                                    "namespace": "slurm"}]
    assert files["secrets/serviceaccount-directory-bind-password-reader.yaml"]["automountServiceAccountToken"] is False
    # AND nothing reads AWS Secrets Manager
    assert "secrets/secretstore-aws-secrets-manager.yaml" not in files


def test_the_reference_kind_does_not_change_sssd_conf(clusters):
    # GIVEN the same directory with its password in a Secret instead of Secrets Manager
    # THEN the rendered file is still the reviewed golden file of `ldap` (the password stays a placeholder);
    # only the template's refusals name where the password lives
    golden = (GOLDEN / "ldap.sssd.conf").read_text()
    kref = sssd_conf(clusters["kref"])
    guards = [line for line in kref.splitlines() if line.startswith("{{")]
    assert len(guards) == 3 and all("(Secret corp-ldap-bind, key password)" in line for line in guards)
    assert [line for line in kref.splitlines() if not line.startswith("{{")] == [
        line for line in golden.splitlines() if not line.startswith("{{")]
    text = "\n".join(yaml.safe_dump(o) for o in clusters["kref"].values())
    assert re.findall(r"ldap_default_authtok = (.*)", text) == ["{{ .bindPassword }}"]
    assert not [o for o in of_kind(clusters["kref"], "Secret") if o.get("data") or o.get("stringData")]


def test_a_precreated_bind_password_needs_no_aws_identity():
    # GIVEN a bind password in a Secret and keys generated in the cluster
    spec = parse_text("kref.yaml", KREF)
    # THEN External Secrets calls no AWS API, so no IAM role or policy is planned for it
    assert identity.reads_secrets_manager(spec) is False
    assert identity.secret_names(spec) == []
    # AND with Secrets Manager the same spec does need it (the rule is not always false)
    sm = parse_text("ldap.yaml", LDAP)
    assert identity.reads_secrets_manager(sm) is True and identity.secret_names(sm) == ["corp/ldap/reader"]


def test_precreated_mode_points_every_pod_at_the_sites_sssd_conf(clusters):
    # GIVEN a directory with secrets.mode precreated and login.sssdConfSecret site-sssd
    files = clusters["pre"]
    # THEN nothing is rendered for secrets (no External Secrets at all)
    assert not [p for p in files if p.startswith("secrets/")]
    assert not of_kind(files, "ExternalSecret")
    # AND the LoginSet and every NodeSet name the site's Secret
    ref = {"name": "site-sssd", "key": "sssd.conf"}
    assert files["slurm/loginset-slurm-login.yaml"]["spec"]["sssdConfRef"] == ref
    nodesets = of_kind(files, "NodeSet")
    assert nodesets and all(ns["spec"]["ssh"]["sssdConfRef"] == ref for ns in nodesets)
    # AND the rest of the directory section still applies: sshd keys from sssd, the CA mounted
    login = files["slurm/loginset-slurm-login.yaml"]["spec"]
    assert "AuthorizedKeysCommand /usr/bin/sss_ssh_authorizedkeys\n" in login["extraSshdConfig"]
    assert any(v["name"] == "directory-ca" for v in login["template"]["spec"]["volumes"])


def test_explain_prints_the_sssd_conf_the_site_creates(tmp_path, capsys):
    # GIVEN the precreated cluster WHEN --explain sssd.conf
    path = tmp_path / "pre.yaml"
    path.write_text(PRE)
    assert main(["--spec", str(path), "--explain", "sssd.conf"]) == 0
    out = capsys.readouterr().out
    # THEN it is the reviewed file without the template guard, the password a visible placeholder
    golden = (GOLDEN / "ldap.sssd.conf").read_text()
    body = golden.split("\n", 3)[3]  # the first lines are External Secrets' guards against a bad password
    assert golden.startswith("{{- if regexMatch")
    assert out == body.replace("{{ .bindPassword }}", "<bind password>")
    assert "{{" not in out


def test_explain_sssd_conf_without_a_file_of_ours_is_one_line(tmp_path, capsys):
    # GIVEN precreated secrets and no directory: sssd.conf is entirely the site's
    from tests.conftest import MINIMAL_SPEC

    path = tmp_path / "t.yaml"
    path.write_text(MINIMAL_SPEC + "secrets: {mode: precreated}\n")
    # WHEN --explain sssd.conf THEN exit 2 with one line naming the Secret
    assert main(["--spec", str(path), "--explain", "sssd.conf"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == ["t: sssd.conf: not rendered: with secrets.mode precreated and no directory, "
                   "the Secret slurm-sssd-conf is entirely yours"]


def test_precreated_mode_refuses_a_bind_password_reference():
    # GIVEN precreated mode AND a bindPassword reference (nothing would read it) THEN one clear line
    from slurmgen.spec import SpecError

    with pytest.raises(SpecError) as err:
        parse_text("pre.yaml", variant(PRE, directory={"bindPassword": SM_REF}))
    assert "directory.bindPassword: unused with secrets.mode: precreated" in str(err.value)


def test_explain_without_a_directory_is_the_rendered_local_file():
    # GIVEN no directory and generated secrets WHEN sssd.conf is explained
    from charts.secrets import DEFAULT_SSSD_CONF, effective_sssd_conf
    from tests.conftest import MINIMAL_SPEC

    text, why = effective_sssd_conf(parse_text("t.yaml", MINIMAL_SPEC))
    # THEN it is the file the ExternalSecret renders (local files only), not a directory's
    assert (text, why) == (DEFAULT_SSSD_CONF, "")
    assert "id_provider = proxy" in text
