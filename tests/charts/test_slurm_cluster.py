"""SlurmClusterChart alone: the Slinky custom resources of one cluster (charts/slurm_cluster.py)."""

from __future__ import annotations

from charts.slurm_cluster import SlurmClusterChart
from tests.charts import build, model, unit

WAVE = "argocd.argoproj.io/sync-wave"


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


def by_kind(objects: dict, kind: str) -> dict:
    return {name.split("/", 1)[1]: o for name, o in objects.items() if name.startswith(f"{kind}/")}


def test_cross_references_between_slinky_crs():
    # GIVEN the minimal cluster (accounting in the cluster) / WHEN the Slurm cluster chart is built alone
    objects = unit(SlurmClusterChart)
    controller = objects["Controller/slurm"]["spec"]
    # THEN every reference between its CRs names an object of the chart
    assert controller["accountingRef"]["name"] in by_kind(objects, "Accounting")
    assert {r["name"] for r in controller["configFileRefs"]} <= set(by_kind(objects, "ConfigMap"))
    for kind in ("RestApi", "LoginSet", "NodeSet"):
        for obj in by_kind(objects, kind).values():
            assert obj["spec"]["controllerRef"] == {"name": "slurm"}, kind
    accounting = objects["Accounting/slurm"]["spec"]
    assert accounting["slurmKeyRef"] == controller["slurmKeyRef"]
    assert accounting["jwtKeyRef"] == controller["jwtKeyRef"]
    assert accounting["storageConfig"]["passwordKeyRef"] == {"name": "mariadb-password", "key": "password"}


def test_controller_is_synced_after_its_config_on_its_own_volume():
    # GIVEN a controller whose state is on gp3
    spec = model(controller={"persistence": {"storageClassName": "gp3", "size": "4Gi"}})
    objects = build(SlurmClusterChart, spec)
    controller = objects["Controller/slurm"]
    # THEN every ConfigMap it mounts syncs in an earlier wave, and it keeps the spec's cluster name and volume
    for config_map in by_kind(objects, "ConfigMap").values():
        assert int(config_map["metadata"]["annotations"][WAVE]) < int(controller["metadata"]["annotations"][WAVE])
    assert controller["spec"]["clusterName"] == spec.slurm_cluster_name
    assert controller["spec"]["persistence"]["storageClassName"] == "gp3"


def test_every_container_wrapper_sets_a_pinned_image():
    objects = unit(SlurmClusterChart)
    wrappers = {"Controller": ["slurmctld", "reconfigure", "logfile"], "NodeSet": ["slurmd", "logfile"],
                "LoginSet": ["login", "initconf"], "RestApi": ["slurmrestd"], "Accounting": ["slurmdbd"]}
    for kind, keys in wrappers.items():
        assert by_kind(objects, kind), kind
        for obj in by_kind(objects, kind).values():
            for key in keys:
                image = obj["spec"][key]["image"]
                assert ":" in image.rsplit("/", 1)[-1] and not image.endswith(":latest"), (kind, key, image)


def test_control_plane_pods_run_where_the_spec_places_them():
    # GIVEN the core node group as the placement
    core = {"eks.amazonaws.com/nodegroup": "core-node-group", "node.kubernetes.io/instance-type": "m6i.xlarge"}
    objects = unit(SlurmClusterChart, placement={"nodeSelector": core})
    # THEN every control-plane pod selects it
    for kind in ("Controller", "RestApi", "Accounting", "LoginSet"):
        for obj in by_kind(objects, kind).values():
            assert obj["spec"]["template"]["spec"]["nodeSelector"] == core, kind
