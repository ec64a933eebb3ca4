"""The Sync hooks that hold a wave until slurmdbd or slurmctld answers (charts/slurm_waits.py).

What they do against real daemons: tests/deep/test_real_slurm.py (test_the_wait_hooks_...)."""

from __future__ import annotations

import pytest

from slurmgen.run.pipeline import run
from tests.spec_builder import spec_text

HOOK, WAVE = "argocd.argoproj.io/hook", "argocd.argoproj.io/sync-wave"


def _by_kind(files: dict[str, dict], kind: str) -> dict[str, dict]:
    return {o["metadata"]["name"]: o for o in files.values() if o["kind"] == kind}


@pytest.mark.parametrize("cluster", ["example", "training", "prod", "dev"])
def test_each_hook_runs_in_the_wave_of_the_daemon_it_waits_for(rendered, cluster):
    files = rendered[cluster].files
    jobs = _by_kind(files, "Job")
    crs = {o["kind"]: o for o in files.values() if o["apiVersion"].startswith("slinky.slurm.net/")}
    for name, kind, service, port in (("slurm-wait-slurmdbd", "Accounting", "accounting", "6819"),
                                      ("slurm-wait-slurmctld", "Controller", "controller", "6817")):
        job = jobs[name]
        # THEN it is a Sync hook in its daemon's wave, recreated at each sync
        assert job["metadata"]["annotations"][HOOK] == "Sync"
        assert job["metadata"]["annotations"][WAVE] == crs[kind]["metadata"]["annotations"][WAVE]
        assert job["metadata"]["annotations"]["argocd.argoproj.io/hook-delete-policy"] == "BeforeHookCreation"
        # AND it connects to the Service the operator names <CR name>-<role>, at the daemon's port
        (container,) = job["spec"]["template"]["spec"]["containers"]
        env = {e["name"]: e["value"] for e in container["env"]}
        cr = crs[kind]["metadata"]
        assert (env["HOST"], env["PORT"]) == (f"{cr['name']}-{service}.{cr['namespace']}", port)
        # AND it fails on its own, bounded (the sync then fails and is retried), as a non-root user
        spec = job["spec"]
        assert spec["backoffLimit"] == 0 and spec["activeDeadlineSeconds"] > 5 * int(env["WAIT_TRIES"])
        assert spec["template"]["spec"]["securityContext"]["runAsNonRoot"] is True


def test_without_accounting_only_slurmctld_is_waited_for(tmp_path):
    # GIVEN a spec without accounting
    path = tmp_path / "minimal.yaml"
    path.write_text(spec_text(accounting={"enabled": False}, scheduling={"fairShare": {"enabled": False}}))
    (cluster,) = run([path]).clusters
    # THEN there is one hook, the Controller's
    assert sorted(n for n in _by_kind(cluster.files, "Job") if n.startswith("slurm-wait-")) == ["slurm-wait-slurmctld"]
