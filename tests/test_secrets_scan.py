"""The secret detector: what it flags, and the look-alikes it must leave alone (no false alarms on real specs)."""

from __future__ import annotations

import pytest

from slurmgen.spec import secrets_scan as scan


@pytest.mark.parametrize("text, finding", [
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blb\n-----END OPENSSH PRIVATE KEY-----", "holds a private-key block"),
    ("-----BEGIN PGP PRIVATE KEY BLOCK-----", "holds a private-key block"),
    ("key AKIAIOSFODNN7EXAMPLE here", "holds an AWS access key ID"),
    ("AccountingStoragePass=hunter2", "sets AccountingStoragePass to a literal value"),
    ("ldap_default_authtok = S3cret!", "sets ldap_default_authtok to a literal value"),
    ("aws_secret_access_key=wJalrXUtnFEMI/K7MDENG", "sets aws_secret_access_key to a literal value"),
    ("client_secret: 'abc123'", "sets client_secret to a literal value"),
    ("api-key=0123456789abcdef", "sets api-key to a literal value"),
    ("uri ldap://x\nbindpw s3cr3t\n", "sets bindpw to a literal value"),
    ("ghp_" + "a1B2" * 9, "holds an access token"),
    ("glpat-abcdefghij0123456789", "holds an access token"),
    # not an ARN (arn:partition:service:region:account:resource), so not a reference
    ("ldap_default_authtok = arn:aws:x:hunter2", "sets ldap_default_authtok to a literal value"),
    # issue 23 D: a value starting with `#` (a consumer's comment, but git holds it), any spelling of a
    # Slurm key (case-insensitive), a comma before it, credentials in a URL's user-info
    ("ldap_default_authtok = #hunter2", "sets ldap_default_authtok to a literal value"),
    ("[domain/x]\nldap_default_authtok = #hunter2\n", "sets ldap_default_authtok to a literal value"),
    ("uri ldap://x\nbindpw #s3cr3t\n", "sets bindpw to a literal value"),
    ("accountingstoragepass=hunter2", "sets accountingstoragepass to a literal value"),
    ("yes,AccountingStoragePass=#hunter2", "sets AccountingStoragePass to a literal value"),
    ("https://deploy:t0ken@github.com/o/r.git", "holds credentials in a URL (user:password@)"),
    ("https://t0kenvalue@github.com/o/r.git", "holds credentials in a URL (user:password@)"),
    ("http://admin:hunter2@prometheus:9090", "holds credentials in a URL (user:password@)"),
])
def test_secret_material_is_found(text, finding):
    assert finding in list(scan.scan_text(text))


@pytest.mark.parametrize("text", [
    "ldap_default_authtok_type = password",          # the type of the secret, not the secret
    "AccountingStoragePass=/var/run/munge/munge.socket.2",  # a path
    "PasswordAuthentication no",                      # sshd option, no assignment of a secret
    "PasswordAuthentication no\nPermitEmptyPasswords no\nClientAliveInterval 300\n",
    "Match User alice\n  ForceCommand /usr/bin/sshd-wrapper\n",
    "password = ${LDAP_PASSWORD}",                    # a reference
    "password: arn:aws:secretsmanager:us-east-1:123456789012:secret:ldap-AbCdEf",  # ARNs name a resource
    "role_arn = arn:aws-us-gov:iam::123456789012:role/reader",
    "token=arn:aws:s3:::bucket/key",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExampleKeyOnly user@example.com",  # a public key
    "-----BEGIN PUBLIC KEY-----",
    "bypass=1",                                       # 'pass' inside another word
    "passwordRevision: 3",
    "Token bucket project",                           # prose on one line, not a config line
    "AKIAIOSFODNN7EXAMPLEX",                          # 21 characters: not an access key ID
    "ssh://git@github.com/o/r.git",                   # a user name, no password
    "git@github.com:o/r.git",
    "http://prometheus-operated.monitoring:9090/prom",
])
def test_look_alikes_are_not_flagged(text):
    assert list(scan.scan_text(text)) == []


def test_map_entries_under_a_credential_key_are_flagged_with_no_value_shown():
    # GIVEN a Slurm parameter map holding a password
    findings = list(scan.scan_spec({"nodesets": [{"extraSlurmdConf": {"JobCompPass": "aK9xQ2mZ7pL4", "Weight": 10}}]}))
    # THEN one finding, at the entry, and the value itself is not in the message
    assert [(p, f.split(" (")[0]) for p, f in findings] == [
        (("nodesets", 0, "extraSlurmdConf", "JobCompPass"), "sets JobCompPass to a literal value")]
    assert "aK9xQ2mZ7pL4" not in findings[0][1]


def test_every_example_spec_is_clean():
    from slurmgen.spec._yaml import load_yaml
    from tests.conftest import EXAMPLES
    for path in EXAMPLES:
        assert list(scan.scan_spec(load_yaml(path.read_text(encoding="utf-8")))) == [], path.name


def test_credential_key_words():
    assert scan.credential_key("AccountingStoragePass")
    assert scan.credential_key("ldap_default_authtok")
    assert not scan.credential_key("ldap_default_authtok_type")
    assert not scan.credential_key("passwordSecret" + "Name")
    assert not scan.credential_key("Compass")
