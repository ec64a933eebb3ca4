"""Issue #11, problems 6-8: the accounts Job reaches Slurm and makes removals real; the database
user's connection limit; the external database's password, TLS and rotation."""

from __future__ import annotations



from slurmgen.verify import guards
from charts.accounting import my_cnf
from charts.policy import declared, load_script
from slurmgen.spec import parse_text
from tests.conftest import MINIMAL_SPEC
from tests.spec_builder import spec_text

JOB = "slurm/job-slurm-accounts-load.yaml"
C = "slurm-on-eks"  # the example's Slurm cluster name
CONFIG = "slurm/configmap-slurm-accounts.yaml"


# -- 6. the accounts Job (what it does to a real slurmdbd: tests/deep/test_real_slurm.py) ---------------


def test_declared_lists_cover_every_account_qos_and_association(rendered):
    # GIVEN the example's policy
    spec = rendered["example"].spec
    lists = declared(spec)
    # THEN every declared user/account pair is listed (bob is in vision and ml)
    assert lists["declared-associations"].splitlines() == ["alice|ml", "bob|ml", "bob|vision", "carol|ops"]
    assert "root" not in lists["declared-accounts"].splitlines()
    assert load_script(spec).count("sacctmgr -i load") == 1  # QoS are created one by one first (qos-create.sh)


def _policy_cm(accounts_cfg: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "slurm-accounts", "namespace": "slurm"},
            "data": {"accounts.cfg": accounts_cfg}}


def test_removing_an_account_or_qos_needs_allow_destroy_but_a_user_does_not():
    # GIVEN a previous render with an account, a QoS and a user, and a new one without them
    old = _policy_cm("QOS - 'old':Priority=1\nAccount - 'legacy':Fairshare=1\nUser - 'dave':Fairshare=1\n"
                     "Account - 'kept':Fairshare=1\n")
    new = _policy_cm("Account - 'kept':Fairshare=1\n")
    # WHEN the guard compares them
    changes = guards.destructive_changes("c", [old], [new])
    # THEN the account and the QoS are refused, each approvable by its own key; the user is not
    assert sorted(c.key for c in changes) == ["SlurmAccount/legacy", "SlurmQOS/old"]
    assert "pass --allow-destroy c:SlurmAccount/legacy" in str(next(c for c in changes if c.name == "legacy"))


def test_cli_refuses_an_account_removal_until_approved(tmp_path, capsys):
    # GIVEN a rendered cluster with a policy
    from slurmgen.cli import main

    account_a, account_b = ({"name": name, "parent": "root", "fairshare": 1} for name in "ab")
    policy = {"qos": [{"name": "normal", "priority": 1}], "accounts": [account_a, account_b],
              "users": [{"name": "u", "defaultAccount": "a"}]}
    spec, out = tmp_path / "t.yaml", tmp_path / "dist"
    spec.write_text(spec_text(accounting={"enabled": True}, policy=policy))
    assert main(["--spec", str(spec), "--out", str(out)]) == 0
    # WHEN account b leaves the spec
    spec.write_text(spec_text(accounting={"enabled": True}, policy={**policy, "accounts": [account_a]}))
    before = (out / "t" / "slurm" / "configmap-slurm-accounts.yaml").read_text()
    capsys.readouterr()
    # THEN synth refuses with exit 2 and leaves dist untouched, and passes once approved
    assert main(["--spec", str(spec), "--out", str(out)]) == 2
    assert "--allow-destroy t:SlurmAccount/b" in capsys.readouterr().err
    assert (out / "t" / "slurm" / "configmap-slurm-accounts.yaml").read_text() == before
    assert main(["--spec", str(spec), "--out", str(out), "--allow-destroy", "SlurmAccount/b"]) == 0


# -- 7. the database user -----------------------------------------------------------------------


def test_connection_limit_follows_the_spec():
    spec = parse_text("t.yaml", MINIMAL_SPEC + "accounting: {database: {inCluster: {maxUserConnections: 400}}}")
    assert "max_connections=450\n" in my_cnf(spec)


# -- 8. the external database -------------------------------------------------------------------


def test_password_from_secrets_manager_is_escaped_for_slurmdbd_conf(rendered):
    # GIVEN an external database whose password comes from AWS Secrets Manager
    target = rendered["training"].files["secrets/externalsecret-slurm-db-password.yaml"]["spec"]["target"]
    template = target["template"]["data"]["password"]
    # THEN ESO escapes '\' then '#' (Slurm's parser drops a lone '\' and cuts at an unescaped '#')
    assert template.index('replace "\\\\" "\\\\\\\\"') < template.index('replace "#" "\\\\#"')
    # AND refuses whitespace and double quotes, which an unquoted value cannot hold
    assert 'regexMatch `[\\s"]`' in template and "{{ fail " in template


def test_in_cluster_password_from_secrets_manager_is_refused_not_escaped():
    # GIVEN the in-cluster MariaDB (whose User reads the same Secret raw) with values from Secrets Manager
    from charts.secrets import db_password_template

    template = db_password_template("password", escape=False)
    # THEN '#' and '\' are refused rather than escaped
    assert "replace" not in template and 'regexMatch `[\\s"#\\\\]`' in template


def test_password_revision_changes_the_accounting_spec_only_when_set(rendered):
    from charts.accounting import accounting_spec

    base = parse_text("t.yaml", MINIMAL_SPEC)
    bumped = parse_text("t.yaml", MINIMAL_SPEC + "accounting: {database: {passwordRevision: 3}}")
    template = {"metadata": {"labels": {"a": "b"}}, "spec": {}}
    # GIVEN no revision, no annotation (existing renders stay byte-identical)
    assert "annotations" not in accounting_spec(base, template)["template"]["metadata"]
    # WHEN the revision is bumped, the Accounting's spec changes: the operator reconciles and re-reads the Secret
    got = accounting_spec(bumped, template)["template"]["metadata"]
    assert got == {"labels": {"a": "b"}, "annotations": {"slurmgen.dev/db-password-revision": "3"}}
    assert template == {"metadata": {"labels": {"a": "b"}}, "spec": {}}  # the caller's dict is not mutated


def test_summary_names_the_flag_an_account_removal_needs():
    from slurmgen.review.summary import _attention

    # GIVEN an account and a user that leave the spec
    old = {"slurm/cm.yaml": _policy_cm("Account - 'legacy':Fairshare=1\nUser - 'dave':Fairshare=1\n")}
    new = {"slurm/cm.yaml": _policy_cm("")}
    # THEN needs-attention says what the Job will do, and which approval synth needs
    notes = [n for n in _attention("c", old, new) if n.startswith("policy:")]
    assert notes == [
        "policy: Account 'legacy' left the spec; the accounts Job deletes it from slurmdbd "
        "(synth needs --allow-destroy c:SlurmAccount/legacy)",
        "policy: User 'dave' left the spec; the accounts Job deletes its associations under slurmgen's accounts "
        "(its job records stay)",
    ]


def test_dropping_the_whole_policy_deletes_nothing_and_needs_no_flag():
    from slurmgen.review.summary import _attention

    # GIVEN a render with a policy, and one without any (no ConfigMap, so no Job either)
    old = _policy_cm("QOS - 'old':Priority=1\nAccount - 'legacy':Fairshare=1\n")
    # THEN nothing is refused, and the summary says the entities stay
    assert guards.destructive_changes("c", [old], []) == []
    assert [n for n in _attention("c", {"cm.yaml": old}, {}) if n.startswith("policy:")] == [
        "policy: no longer managed here (the accounts Job is gone); its accounts, users and QoS stay in slurmdbd "
        "as they are"]


def test_settings_set_every_qos_field_and_clear_what_the_spec_leaves_unset(rendered):
    # GIVEN the example's policy (high: a per-user GPU limit; scavenger: requeue and a group limit)
    from charts.policy import settings

    lines = dict(line.split("|", 1) for line in settings(rendered["example"].spec.policy)["qos-settings"].splitlines())
    # THEN each QoS line sets every scalar (unset ones at Slurm's default) and only the TRES limits declared
    assert lines["high"] == ("Priority=1000 GraceTime=0 UsageFactor=1 MaxWallDurationPerJob=-1 PreemptMode=cluster "
                             "Flags=-1 MaxTRESPerUser=gres/gpu=4")
    assert lines["scavenger"].endswith("PreemptMode=requeue Flags=-1 GrpTRES=gres/gpu=8")
    # AND no value holds a space (the Job splits the line into words)
    assert all(" " not in word.split("=", 1)[1] for line in lines.values() for word in line.split())
    accounts = dict(line.split("|", 1) for line in
                    settings(rendered["example"].spec.policy)["account-settings"].splitlines())
    assert accounts["research"] == "Fairshare=60"
