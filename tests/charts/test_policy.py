"""Accounts, QoS and fair share as code, alone: charts/policy.py emit_policy and emit_accounts_config."""

from __future__ import annotations

from charts.policy import emit_accounts_config, emit_policy, flat_file
from tests.charts import model, part

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
