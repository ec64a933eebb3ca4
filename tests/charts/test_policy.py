"""Accounts, QoS and fair share as code, alone: charts/policy.py emit_policy and emit_accounts_config."""

from __future__ import annotations

from charts.policy import emit_accounts_config, emit_policy, flat_file
from slurmgen.spec import load_spec
from tests.charts import model, part
from tests.conftest import SPECS, assert_golden

POLICY = {"qos": [{"name": "normal", "priority": 100, "preempt": ["scavenger"]},
                  {"name": "scavenger", "priority": 0, "preemptMode": "requeue"}],
          "defaultQos": "normal",
          "accounts": [{"name": "research", "fairshare": 60, "qos": ["normal", "scavenger"], "defaultQos": "normal"}],
          "users": [{"name": "carol", "defaultAccount": "research"}]}


def test_policy_job_is_an_idempotent_post_sync_hook():
    # GIVEN a spec with QoS, an account and a user / WHEN the policy Job is emitted alone
    spec = model(policy=POLICY)
    job = part(emit_policy, spec, spec.placement.pod_spec())["Job/slurm-accounts-load"]
    # THEN it is a PostSync hook re-created on each sync, bounded in retries and time
    annotations = job["metadata"]["annotations"]
    assert annotations["argocd.argoproj.io/hook"] == "PostSync"
    assert annotations["argocd.argoproj.io/hook-delete-policy"] == "BeforeHookCreation"
    body = job["spec"]
    assert body["backoffLimit"] <= 10 and body["ttlSecondsAfterFinished"] > 0 and body["activeDeadlineSeconds"] > 0
    # AND it loads the file without `clean` (which would drop and re-create every association)
    script = body["template"]["spec"]["containers"][0]["command"][2]
    assert 'sacctmgr -i load file="$cfg/accounts.cfg"' in script
    assert "clean" not in script
    assert "sacctmgr -i delete account" in script  # removals: tests/deep/test_real_slurm.py


def test_the_loaded_file_is_the_spec_policy_as_a_flat_file():
    # GIVEN the same policy / WHEN its ConfigMap is emitted alone (wave 0: before the Controller)
    spec = model(policy=POLICY)
    config_map = part(emit_accounts_config, spec)["ConfigMap/slurm-accounts"]
    # THEN it holds the spec's flat file, with its QoS and users
    loaded = config_map["data"]["accounts.cfg"]
    assert loaded == flat_file(spec)
    assert "QOS - 'scavenger'" in loaded and "User - 'carol'" in loaded
    assert config_map["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] == "0"


EXAMPLE = SPECS / "example.yaml"
GOLDEN = SPECS.parent / "golden"


def test_the_example_policy_is_the_reviewed_flat_file():
    # GIVEN the example's policy (tests/specs/example.yaml), loaded / WHEN written as sacctmgr's flat file
    text = flat_file(load_spec(EXAMPLE))
    # THEN it is the reviewed file (SLURMGEN_UPDATE_GOLDEN=1 rewrites it: review the diff)
    assert_golden(text, GOLDEN / "example-accounts.cfg")


def test_the_flat_file_orders_qos_before_the_cluster_and_parents_before_children():
    # GIVEN the example's policy, with sub-accounts / WHEN written as a flat file
    lines = flat_file(load_spec(EXAMPLE)).splitlines()[1:]
    # THEN every QoS line comes before the Cluster line, and each Parent is an account already defined
    cluster = next(i for i, line in enumerate(lines) if line.startswith("Cluster - "))
    assert all(line.startswith("QOS - ") for line in lines[:cluster])
    defined = {"root"}
    for line in lines[cluster + 1:]:
        if line.startswith("Parent - "):
            assert line.split("'")[1] in defined, line
        if line.startswith("Account - "):
            defined.add(line.split("'")[1])
