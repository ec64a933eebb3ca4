"""The Sync hooks that hold a wave until slurmdbd or slurmctld answers (charts/slurm_waits.py), in the
Slurm cluster chart built alone.

What they do against real daemons: tests/deep/test_real_slurm.py (test_the_wait_hooks_...)."""

from __future__ import annotations

from charts.slurm_cluster import SlurmClusterChart
from tests.charts import unit

HOOK, WAVE = "argocd.argoproj.io/hook", "argocd.argoproj.io/sync-wave"


def test_each_hook_runs_in_the_wave_of_the_daemon_it_waits_for():
    # GIVEN the minimal cluster (slurmdbd and slurmctld) / WHEN the Slurm cluster chart is built alone
    objects = unit(SlurmClusterChart)
    for name, kind, service, port in (("slurm-wait-slurmdbd", "Accounting", "accounting", "6819"),
                                      ("slurm-wait-slurmctld", "Controller", "controller", "6817")):
        job, cr = objects[f"Job/{name}"], objects[f"{kind}/slurm"]
        # THEN it is a Sync hook in its daemon's wave, recreated at each sync
        assert job["metadata"]["annotations"][HOOK] == "Sync"
        assert job["metadata"]["annotations"][WAVE] == cr["metadata"]["annotations"][WAVE]
        assert job["metadata"]["annotations"]["argocd.argoproj.io/hook-delete-policy"] == "BeforeHookCreation"
        # AND it connects to the Service the operator names <CR name>-<role>, at the daemon's port
        (container,) = job["spec"]["template"]["spec"]["containers"]
        env = {e["name"]: e["value"] for e in container["env"]}
        assert (env["HOST"], env["PORT"]) == (f"slurm-{service}.{cr['metadata']['namespace']}", port)
        # AND it fails on its own, bounded (the sync then fails and is retried), as a non-root user
        spec = job["spec"]
        assert spec["backoffLimit"] == 0 and spec["activeDeadlineSeconds"] > 5 * int(env["WAIT_TRIES"])
        assert spec["template"]["spec"]["securityContext"]["runAsNonRoot"] is True


def test_without_accounting_only_slurmctld_is_waited_for():
    # GIVEN a spec without accounting / WHEN the Slurm cluster chart is built alone
    objects = unit(SlurmClusterChart, accounting={"enabled": False}, scheduling={"fairShare": {"enabled": False}})
    # THEN there is one hook, the Controller's
    assert sorted(n for n in objects if n.startswith("Job/slurm-wait-")) == ["Job/slurm-wait-slurmctld"]
