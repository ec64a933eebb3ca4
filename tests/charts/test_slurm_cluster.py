"""SlurmClusterChart alone: the Slinky custom resources of one cluster (charts/slurm_cluster.py)."""

from __future__ import annotations

from charts.slurm_cluster import SlurmClusterChart
from tests.charts import unit


def test_the_minimal_cluster_is_a_controller_its_nodeset_login_and_accounting():
    # GIVEN the minimal spec / WHEN the Slurm cluster chart is built alone
    objects = unit(SlurmClusterChart)
    # THEN it holds the operator's objects for one nodeset, with the waits for slurmctld and slurmdbd
    assert {"Controller/slurm", "Accounting/slurm", "RestApi/slurm", "LoginSet/slurm-login",
            "NodeSet/slurm-worker-gpu", "Job/slurm-wait-slurmctld", "Job/slurm-wait-slurmdbd"} <= set(objects)
    assert all(o["metadata"]["namespace"] == "slurm" for o in objects.values())


def test_the_nodeset_pods_land_on_their_pool_and_tolerate_its_gpu_taint():
    # GIVEN the minimal g5.xlarge nodeset / WHEN built
    pod = unit(SlurmClusterChart)["NodeSet/slurm-worker-gpu"]["spec"]["template"]["spec"]
    # THEN its pods select the nodeset's NodePool, instance type and capacity type, and tolerate the GPU taint
    assert pod["nodeSelector"] == {"karpenter.sh/nodepool": "t-gpu", "node.kubernetes.io/instance-type": "g5.xlarge",
                                   "karpenter.sh/capacity-type": "on-demand"}
    assert any(t.get("key") == "nvidia.com/gpu" for t in pod["tolerations"])


def test_the_controller_is_kept_when_its_application_goes():
    # GIVEN the controller (its state volume holds the job queue) / THEN Argo CD never prunes or deletes it
    controller = unit(SlurmClusterChart)["Controller/slurm"]
    assert "Prune=false,Delete=false" in controller["metadata"]["annotations"]["argocd.argoproj.io/sync-options"]
