"""The `directory:` section: sssd.conf for LDAP and AD over LDAP, where it reaches the pods, the
bind password kept out of the render, sshd keys from the directory and the root-login switch.

Two small clusters are rendered and verified once (strict CRD and core schemas included):
`ldap` (OpenLDAP-style, ldaps, CA in a Secret, access filter, root login off) and `ad` (AWS Managed
Microsoft AD over LDAPS, CA in a ConfigMap, allowed groups, root kept for break-glass, no PAM home
creation). The golden sssd.conf files tests/golden/directory/<cluster>.sssd.conf were reviewed
against sssd-ldap(5) / sssd-ad(5) and ParallelCluster's DirectoryService settings; regenerate after
an intended change with SLURMGEN_UPDATE_GOLDEN=1 and review the diff.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from charts.directory import COMMON_SESSION_PAM
from slurmgen.run.pipeline import run
from slurmgen.spec import parse_text
from tests.conftest import MINIMAL_SPEC, TESTS, assert_golden
from tests.spec_builder import Whole, variant

GOLDEN = TESTS / "golden" / "directory"
PASSWORD_PLACEHOLDER = "ldap_default_authtok = {{ .bindPassword }}"

DATA = TESTS / "data" / "directory"
# Both clusters read the bind password from Secrets Manager, so External Secrets has an IAM role
LDAP = (DATA / "ldap-two-nodesets.yaml").read_text()
AD = (DATA / "ad.yaml").read_text()


@pytest.fixture(scope="module")
def clusters(tmp_path_factory):
    """Both clusters rendered and verified: {name: {relative path: object}}."""
    folder = tmp_path_factory.mktemp("clusters")
    paths = []
    for name, text in (("ldap", LDAP), ("ad", AD)):
        path = folder / f"{name}.yaml"
        path.write_text(text)
        paths.append(path)
    # each alone: two sites' variants of one spec, on one EKS cluster (one run would refuse two specs there)
    return {c.spec.name: c.files for path in paths for c in run([path]).clusters}


def sssd_conf(files) -> str:
    return files["secrets/externalsecret-slurm-sssd-conf.yaml"]["spec"]["target"]["template"]["data"]["sssd.conf"]


def of_kind(files, kind):
    return [o for o in files.values() if o["kind"] == kind]


@pytest.mark.parametrize("cluster", ["ldap", "ad"])
def test_sssd_conf_is_the_reviewed_file(clusters, cluster):
    # GIVEN a directory spec WHEN rendered THEN the sssd.conf template is the reviewed golden file
    text = sssd_conf(clusters[cluster])
    assert_golden(text, GOLDEN / f"{cluster}.sssd.conf")


def test_ldap_and_ad_differ_where_the_directories_do(clusters):
    ldap, ad = sssd_conf(clusters["ldap"]), sssd_conf(clusters["ad"])
    # THEN LDAP reads POSIX attributes, AD maps SIDs; both fold names to lowercase
    assert "ldap_schema = rfc2307bis\n" in ldap and "ldap_id_mapping = false\n" in ldap
    assert "ldap_schema = ad\n" in ad and "ldap_id_mapping = true\n" in ad
    assert "case_sensitive = false\n" in ad and "case_sensitive = false\n" in ldap
    # AND each says who may log in its own way
    assert "access_provider = ldap\nldap_access_filter = (memberOf=cn=hpc,ou=Groups,dc=corp,dc=example,dc=com)\n" in ldap
    assert "access_provider = simple\nsimple_allow_groups = hpc-users, hpc-admins\n" in ad
    # AND homes live on FSx, default <mount>/home
    assert "override_homedir = /fsx/home/%u\n" in ldap and "override_homedir = /fsx/users/%u\n" in ad
    # AND the certificate is verified against the mounted CA
    for text in (ldap, ad):
        assert "ldap_tls_reqcert = demand\nldap_tls_cacert = /etc/slurmgen/directory-ca/ca.pem\n" in text


def test_the_bind_password_is_only_a_reference(clusters):
    for files in clusters.values():
        secret = files["secrets/externalsecret-slurm-sssd-conf.yaml"]["spec"]
        # THEN sssd.conf holds only the template placeholder, filled in the cluster from Secrets Manager
        assert PASSWORD_PLACEHOLDER in secret["target"]["template"]["data"]["sssd.conf"]
        assert secret["secretStoreRef"] == {"kind": "SecretStore", "name": "aws-secrets-manager"}
        assert [d["secretKey"] for d in secret["data"]] == ["bindPassword"]
        # AND no rendered object carries an authtok other than the placeholder
        text = "\n".join(yaml.safe_dump(o) for o in files.values())
        assert re.findall(r"ldap_default_authtok = (.*)", text) == ["{{ .bindPassword }}"]
        # AND no Secret with data is rendered at all
        assert not [o for o in of_kind(files, "Secret") if o.get("data") or o.get("stringData")]
    assert clusters["ldap"]["secrets/externalsecret-slurm-sssd-conf.yaml"]["spec"]["data"][0]["remoteRef"]["key"] == "corp/ldap/reader"


def test_a_store_exists_for_the_bind_password_in_the_clusters_region(clusters):
    # GIVEN ldap generates its keys in the cluster (no awsSecretsManager) WHEN it has a directory
    store = clusters["ldap"]["secrets/secretstore-aws-secrets-manager.yaml"]["spec"]["provider"]["aws"]
    # THEN a SecretStore reads Secrets Manager in aws.region
    assert store == {"service": "SecretsManager", "region": "us-west-2"}
    # AND the keys are still generated, not read from Secrets Manager
    assert "secrets/password-slurm-auth-slurm.yaml" in clusters["ldap"]


def test_the_ad_ca_comes_from_a_config_map(clusters):
    login = clusters["ad"]["slurm/loginset-slurm-login.yaml"]["spec"]
    assert {"name": "directory-ca", "configMap": {"name": "corp-ad-ca", "defaultMode": 0o444,
                                                  "items": [{"key": "ca.pem", "path": "ca.pem"}]}} in login["template"]["spec"]["volumes"]


def test_sshd_takes_keys_from_the_directory_and_root_login_is_off(clusters):
    files = clusters["ldap"]
    login = files["slurm/loginset-slurm-login.yaml"]["spec"]
    sshd = login["extraSshdConfig"].splitlines()
    # THEN keys come from sssd, and root cannot log in
    assert "AuthorizedKeysCommand /usr/bin/sss_ssh_authorizedkeys" in sshd
    assert "AuthorizedKeysCommandUser nobody" in sshd
    assert "PermitRootLogin no" in sshd and "PermitRootLogin prohibit-password" not in sshd
    assert "rootSshAuthorizedKeys" not in login
    # AND the slurmd pods' sshd (pam_slurm_adopt) is key-only with the same keys and no root
    for ns in of_kind(files, "NodeSet"):
        worker = ns["spec"]["ssh"]["extraSshdConfig"].splitlines()
        assert {"PasswordAuthentication no", "AuthorizedKeysCommand /usr/bin/sss_ssh_authorizedkeys",
                "PermitRootLogin no"} <= set(worker)


def test_break_glass_keeps_key_only_root_login(clusters):
    login = clusters["ad"]["slurm/loginset-slurm-login.yaml"]["spec"]
    sshd = login["extraSshdConfig"].splitlines()
    # GIVEN rootLogin: true THEN root keeps key-only login with the listed keys
    assert "PermitRootLogin prohibit-password" in sshd and "PermitRootLogin no" not in sshd
    assert "ops@example.com" in login["rootSshAuthorizedKeys"]
    assert "AuthorizedKeysCommand /usr/bin/sss_ssh_authorizedkeys" in sshd


def test_homes_are_created_on_first_login_by_pam_mkhomedir(clusters):
    files = clusters["ldap"]
    # THEN the login pods' common-session ends with pam_mkhomedir, private homes
    pam = files["slurm/configmap-slurm-login-pam.yaml"]["data"]["common-session"]
    assert pam == COMMON_SESSION_PAM and pam.splitlines()[-1] == "session optional pam_mkhomedir.so umask=0077"
    login = files["slurm/loginset-slurm-login.yaml"]["spec"]
    assert {"name": "pam-session", "mountPath": "/etc/pam.d/common-session", "subPath": "common-session",
            "readOnly": True} in login["login"]["volumeMounts"]
    # AND slurmd pods keep the image's PAM (homes exist once their owner has logged in)
    for ns in of_kind(files, "NodeSet"):
        assert all(m["name"] != "pam-session" for m in ns["spec"]["slurmd"]["volumeMounts"])


def test_no_pam_file_when_homes_are_made_elsewhere(clusters):
    files = clusters["ad"]
    assert "slurm/configmap-slurm-login-pam.yaml" not in files
    login = files["slurm/loginset-slurm-login.yaml"]["spec"]
    assert all(m["name"] != "pam-session" for m in login["login"]["volumeMounts"])


def test_without_a_directory_nothing_changes():
    # GIVEN no directory section WHEN parsed THEN the model has none (today's root-only login stays)
    spec = parse_text("t.yaml", MINIMAL_SPEC)
    assert spec.directory is None


def test_the_shipped_prod_example_uses_active_directory(rendered):
    files = rendered["prod"].files
    text = sssd_conf(files)
    assert "ldap_schema = ad\n" in text and "ldap_uri = ldaps://corp.research.example.com\n" in text
    assert all(ns["spec"]["ssh"]["sssdConfRef"]["name"] == "slurm-sssd-conf" for ns in of_kind(files, "NodeSet"))


def _spec_with(tls: dict[str, Any]):
    """The ldap cluster with directory.tls replaced; plain ldap:// URIs unless the server speaks TLS at once."""
    uris = yaml.safe_load(LDAP)["directory"]["uris"]
    if tls.get("mode") in ("starttls", "none"):
        uris = [uri.replace("ldaps://", "ldap://", 1) for uri in uris]
    return parse_text("ldap.yaml", variant(LDAP, directory={"tls": Whole(tls), "uris": uris}))


def test_starttls_upgrades_plain_ldap_and_still_verifies():
    from charts.directory import sssd_conf_template

    # GIVEN ldap:// URIs with tls.mode starttls WHEN sssd.conf is rendered
    text = sssd_conf_template(_spec_with({"mode": "starttls", "ca": {"secret": {"name": "corp-ldap-ca", "key": "ca.crt"}}}).directory)
    # THEN sssd upgrades the connection and verifies the certificate
    assert "ldap_id_use_start_tls = true\nldap_tls_reqcert = demand\n" in text


def test_the_explicit_opt_out_is_visible_in_sssd_conf():
    from charts.directory import sssd_conf_template

    # GIVEN tls.mode none (the explicit opt-out) WHEN rendered THEN no TLS setting remains, and sssd is
    # told to take no passwords over the clear channel (it would refuse them anyway: ldap_auth.c)
    text = sssd_conf_template(_spec_with({"mode": "none"}).directory)
    assert "auth_provider = none\n" in text
    assert "ldap_tls_" not in text and "ldap_id_use_start_tls = false\n" in text


def test_verification_can_be_turned_off_only_explicitly():
    from charts.directory import sssd_conf_template

    text = sssd_conf_template(_spec_with({"verify": False}).directory)
    assert "ldap_tls_reqcert = never\n" in text and "ldap_tls_cacert" not in text
