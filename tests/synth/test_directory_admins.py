"""issue #15: which directory groups are Slurm operators/admins (`directory.adminGroups`).

The accounts Job resolves membership through sssd and sets sacctmgr AdminLevel for policy.users.
The shell block is run here against stub `id` and `sacctmgr` commands, so its decisions (raise,
lower back, leave alone when the directory cannot answer) are pinned, not just its text.
"""

from __future__ import annotations

import os
import socket
import subprocess

import pytest

from charts import policy
from slurmgen.run.pipeline import run
from slurmgen.spec import parse_text
from tests.spec_builder import variant
from tests.synth.test_directory import LDAP

POLICY = {"accounting": {"enabled": True}, "policy": {
    "qos": [{"name": "normal", "priority": 1}],
    "accounts": [{"name": "research", "fairshare": 1}],
    "users": [{"name": "alice", "defaultAccount": "research"},
              {"name": "bob", "defaultAccount": "research", "adminLevel": "Operator"},
              {"name": "carol", "defaultAccount": "research"},
              {"name": "dave", "defaultAccount": "research"}]}}
GROUPS = {"administrators": ["HPC-Admins"], "operators": ["hpc-ops"]}
ADMINS = variant(LDAP, directory={"adminGroups": GROUPS}, **POLICY)


def _job(files):
    return files["slurm/job-slurm-accounts-load.yaml"]["spec"]["template"]["spec"]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    folder = tmp_path_factory.mktemp("admins")
    (folder / "ldap.yaml").write_text(ADMINS)
    # a Kubernetes cluster of its own: one spec per destination (collisions.TABLE)
    (folder / "plain.yaml").write_text(variant(LDAP, name="plain", aws={"eksClusterName": "plain"}, **POLICY))
    return {c.spec.name: c.files for c in run([folder / "ldap.yaml", folder / "plain.yaml"]).clusters}


def test_the_job_gets_sssd_conf_and_the_ca_only_with_admin_groups(rendered):
    # GIVEN admin groups WHEN rendered THEN the Job mounts the pods' sssd.conf, root-only, and the CA
    pod = _job(rendered["ldap"])
    assert {"name": "sssd-conf", "secret": {"secretName": "slurm-sssd-conf", "defaultMode": 0o600,
                                            "items": [{"key": "sssd.conf", "path": "sssd.conf"}]}} in pod["volumes"]
    mounts = pod["containers"][0]["volumeMounts"]
    assert {"name": "sssd-conf", "mountPath": "/etc/sssd/sssd.conf", "subPath": "sssd.conf", "readOnly": True} in mounts
    assert any(m["name"] == "directory-ca" for m in mounts)
    # AND the users it manages, with the level the spec gives each, are in its ConfigMap
    data = rendered["ldap"]["slurm/configmap-slurm-accounts.yaml"]["data"]
    assert data["admin-levels"] == "alice|None\nbob|Operator\ncarol|None\ndave|None\n"
    # AND without admin groups the Job has no sssd at all
    plain = _job(rendered["plain"])
    assert not [v for v in plain["volumes"] if v["name"] in ("sssd-conf", "directory-ca")]
    assert "sssd" not in plain["containers"][0]["command"][2]
    assert "admin-levels" not in rendered["plain"]["slurm/configmap-slurm-accounts.yaml"]["data"]


STUB_ID = """#!/bin/sh
case "$2" in
  alice) echo "alice hpc-admins users" ;;
  carol) echo "carol HPC-OPS" ;;
  dave) echo "dave users" ;;
  *) exit 1 ;;
esac
"""
# current levels in slurmdbd: dave was an admin (left the group), bob cannot be looked up
STUB_SACCTMGR = """#!/bin/sh
if [ "$1" = -nP ]; then
  case "$4" in name=alice) echo None ;; name=bob) echo Administrator ;; name=carol) echo None ;; name=dave) echo Administrator ;; esac
else
  echo "$@" >> "$LOG"
fi
"""


def test_members_are_raised_leavers_lowered_and_an_unreadable_user_left_alone(tmp_path, monkeypatch):
    # GIVEN stub id/sacctmgr and an sssd socket WHEN the Job's admin block runs
    sock_path = tmp_path / "nss"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))
    spec = parse_text("ldap.yaml", ADMINS)
    assert policy.load_script(spec).count("sssd -D\n") == 1
    block = policy._script("admin-levels.sh").replace("sssd -D\n", "true\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("id", STUB_ID), ("sacctmgr", STUB_SACCTMGR)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "admin-levels").write_text("alice|None\nbob|Operator\ncarol|None\ndave|None\n")
    log = tmp_path / "log"
    script = f"set -eu\ncfg={cfg}\nfailed=0\n{block}echo failed=$failed\n"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "LOG": str(log),
           "SSSD_NSS_PIPE": str(sock_path), **{e["name"]: e["value"] for e in policy._admin_env(spec)}}
    done = subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True, timeout=30)
    sock.close()
    assert done.returncode == 0, done.stderr
    # THEN alice (admins group, any case) becomes Administrator, carol (operators) Operator,
    # dave (left) goes back to None; bob is unreadable: untouched, and the Job reports failure
    assert log.read_text().splitlines() == [
        "-i modify user where name=alice set adminlevel=Administrator",
        "-i modify user where name=carol set adminlevel=Operator",
        "-i modify user where name=dave set adminlevel=None",
    ]
    assert done.stdout.strip().endswith("failed=1")
    assert "cannot read the directory groups of bob" in done.stderr


def test_no_admin_groups_no_block():
    # GIVEN a directory without adminGroups THEN the script has no admin step
    assert "sssd -D" not in policy.load_script(parse_text("ldap.yaml", variant(LDAP, **POLICY)))
