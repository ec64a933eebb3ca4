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
    # issue 32, class 2: a value after a no-break space, `;` or `,` (what the consumer keeps), a key
    # after a no-break space inside another value, a value on the line a consumer joins, commented out
    ("AccountingStoragePass=\u00a0hunter2", "sets AccountingStoragePass to a literal value"),
    ("JobCompPass=;hunter2", "sets JobCompPass to a literal value"),
    ("AccountingStoragePass=,hunter2", "sets AccountingStoragePass to a literal value"),
    ("SchedulerParameters=x\u00a0AccountingStoragePass=hunter2", "sets AccountingStoragePass to a literal value"),
    ("AccountingStoragePass=\\\nhunter2", "sets AccountingStoragePass to a literal value"),
    ("[d]\nldap_default_authtok =\n    hunter2\n", "sets ldap_default_authtok to a literal value"),
    ("[d]\nldap_default_authtok = ;hunter2\n", "sets ldap_default_authtok to a literal value"),
    ("[d]\n;ldap_default_authtok = hunter2\n", "sets ldap_default_authtok to a literal value"),
    ("[d]\nldap_default_authtok\u00a0= hunter2\n", "sets ldap_default_authtok to a literal value"),
    ("3\u00a0ldap_default_authtok = hunter2", "sets ldap_default_authtok to a literal value"),
    ("uri x\n  bindpw ;s3cr3t\n", "sets bindpw to a literal value"),
    # URLs read fully: query and fragment parameters, percent-decoded
    ("https://github.com/o/r.git#access_token=abc123def", "holds credentials in a URL's query or fragment"),
    ("https://aps/ws?auth=abcdef", "holds credentials in a URL's query or fragment"),
    ("https://x/?%61uth=abcdef", "holds credentials in a URL's query or fragment"),
    ("https://x/?a=1&X-Amz-Signature=abcdef0123", "holds credentials in a URL's query or fragment"),
    ("https://x/%67hp_" + "a1B2" * 9, "holds an access token"),
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
    "https://github.com/o/r.git#main",                # a fragment without a credential
    "https://x/?auth=none",
    "PasswordAuthentication no,",                     # a type word with trailing punctuation
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


@pytest.mark.parametrize("value, shown", [
    ("gpu", True), ("arn:aws:iam::111122223333:user/secrets", True), ("password", True), ("passwordSecret", True),
    ("sha256:" + "0123456789abcdef" * 4, True), ("subnet-0123456789abcdef0", True),
    ("password=hunter2", False), ("1 password=hunter2", False), ("token: abc", False),
    ("aK9xQ2mZ7pL4vB8nR3tYw", False), ("ghp_" + "a1B2" * 9, False), ("https://x/?auth=abcdef", False),
])
def test_an_error_line_shows_only_values_proven_harmless(value, shown):
    # GIVEN a value an error line would quote / WHEN asked whether it may / THEN only harmless ones are shown
    assert scan.shown_value(value) is shown


def test_redact_replaces_every_unshown_value_and_its_repr():
    # GIVEN spec data with a secret-looking value and a token-shaped key
    data = {"a": "password=hunter2", "aK9xQ2mZ7pL4vB8nR3tYw": 1, "b": "fine"}
    unshown = scan.unshown(data)
    # WHEN a line quoting both is redacted / THEN neither is left, and the harmless one stays
    line = scan.redact("x.aK9xQ2mZ7pL4vB8nR3tYw: 'password=hunter2' and 'fine'", unshown)
    assert "hunter2" not in line and "aK9xQ2" not in line and "'fine'" in line
