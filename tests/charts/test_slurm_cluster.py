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


#: Two nodesets as the example has them: one always on with EFA, one on Spot that scales from zero.
TWO_NODESETS = {
    "nodesets": [{"name": "slinky", "instanceType": "g5.8xlarge", "gpusPerPod": 1, "efa": True, "replicas": 4},
                 {"name": "spot", "instanceType": "g5.2xlarge", "capacityType": "spot",
                  "autoscale": {"min": 0, "max": 8}}],
    "partitions": [{"name": "slinky", "nodesets": ["slinky"], "priorityTier": 10},
                   {"name": "backfill", "nodesets": ["spot"], "maxTime": "1-00:00:00", "priorityTier": 1,
                    "allowQos": ["scavenger"]},
                   {"name": "all", "nodesets": ["ALL"], "default": True, "priorityTier": 5}],
    "policy": {"qos": [{"name": "normal"}, {"name": "scavenger", "preemptMode": "requeue"}], "defaultQos": "normal"},
    "autoscaling": {"prometheusAddress": "http://prometheus.monitoring.svc:9090"},
}


def test_partitions_get_a_default_memory_per_gpu_and_all_leaves_out_the_autoscaled_nodeset():
    # GIVEN an always-on nodeset with its own partition, a Spot one behind `backfill`, and the default `all`
    objects = unit(SlurmClusterChart, **TWO_NODESETS)
    conf = objects["Controller/slurm"]["spec"]["extraConf"]
    # THEN every partition has a default memory per GPU (a job without --mem does not take a whole node)
    # and [ALL] is written as the nodesets in it: not the autoscaled spot, which did not opt in
    assert "GresTypes=gpu\n" in conf
    assert ("PartitionName=all Nodes=slinky State=UP Default=YES MaxTime=UNLIMITED PriorityTier=5 "
            "DefMemPerGPU=115956\n") in conf
    assert ("PartitionName=backfill Nodes=spot State=UP MaxTime=1-00:00:00 PriorityTier=1 AllowQos=scavenger "
            "DefMemPerGPU=28390\n") in conf
    # AND a partition of exactly one nodeset is that NodeSet's own; the other nodeset has none
    assert objects["NodeSet/slurm-worker-slinky"]["spec"]["partition"] == {
        "enabled": True, "config": "State=UP MaxTime=UNLIMITED PriorityTier=10 DefMemPerGPU=115956"}
    assert "partition" not in objects["NodeSet/slurm-worker-spot"]["spec"]


def test_a_nodeset_asks_for_the_devices_slurm_offers_and_keeps_its_nodes_while_busy():
    # GIVEN one GPU and one EFA interface per pod on g5.8xlarge
    nodeset = unit(SlurmClusterChart, **TWO_NODESETS)["NodeSet/slurm-worker-slinky"]["spec"]
    resources = nodeset["slurmd"]["resources"]
    # THEN extended resources have limits == requests, CPU and memory requests only (see PodShape.limits)
    assert resources["limits"] == {"nvidia.com/gpu": "1", "vpc.amazonaws.com/efa": "1"}
    assert {k: resources["requests"][k] for k in resources["limits"]} == resources["limits"]
    assert {"cpu", "memory"} <= set(resources["requests"])
    # AND Slurm is told the same GPU, in one well-formed extraConf line
    assert "Gres=gpu:a10g:1" in nodeset["extraConf"].split(" ")
    assert "  " not in nodeset["extraConf"] and all("=" in t for t in nodeset["extraConf"].split(" "))
    # AND pods are named after the nodeset and Karpenter never disrupts a node under a pod
    assert nodeset["template"]["spec"]["hostname"] == "slinky-"
    assert nodeset["template"]["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] == "true"


def test_fsx_is_mounted_on_login_and_every_nodeset_and_shm_on_gpu_ones_only():
    # GIVEN a static FSx, a GPU nodeset and a CPU one
    from tests.charts.test_storage import STATIC
    objects = unit(SlurmClusterChart, storage=STATIC,
                   nodesets=[{"name": "gpu", "instanceType": "g5.xlarge"}, {"name": "cpu", "instanceType": "m7i.2xlarge"}],
                   partitions=[{"name": "gpu", "nodesets": ["gpu", "cpu"]}])
    # WHEN the login and worker pods are read
    for name, gpu in (("NodeSet/slurm-worker-gpu", True), ("NodeSet/slurm-worker-cpu", False),
                      ("LoginSet/slurm-login", False)):
        obj = objects[name]["spec"]
        container = obj["slurmd" if name.startswith("NodeSet/") else "login"]
        volumes = {v["name"]: v for v in obj["template"]["spec"]["volumes"]}
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        # THEN each mounts the FSx claim at /fsx, and only the GPU pods get a memory-backed /dev/shm
        assert volumes[mounts["/fsx"]]["persistentVolumeClaim"] == {"claimName": "fsx"}, name
        assert ("/dev/shm" in mounts) == gpu, name
        if gpu:
            assert volumes[mounts["/dev/shm"]]["emptyDir"]["medium"] == "Memory"


def test_precreated_secrets_are_referenced_by_their_given_names():
    # GIVEN Secrets made by hand (slurm.key, jwt.key, the database password, sssd.conf)
    objects = unit(SlurmClusterChart, secrets={"mode": "precreated", "slurmKey": {"name": "dev-slurm-key", "key": "slurm.key"},
                                               "jwtKey": {"name": "dev-jwt-key", "key": "jwt.key"}},
                   accounting={"database": {"mode": "external", "host": "db.example.com",
                                            "passwordSecret": {"name": "dev-slurmdbd", "key": "password"}}},
                   login={"sssdConfSecret": {"name": "dev-sssd", "key": "sssd.conf"}})
    # THEN the controller, slurmdbd and the login pods read those names
    assert objects["Controller/slurm"]["spec"]["slurmKeyRef"] == {"name": "dev-slurm-key", "key": "slurm.key"}
    assert objects["Controller/slurm"]["spec"]["jwtKeyRef"] == {"name": "dev-jwt-key", "key": "jwt.key"}
    assert objects["Accounting/slurm"]["spec"]["storageConfig"]["passwordKeyRef"] == {"name": "dev-slurmdbd", "key": "password"}
    assert objects["LoginSet/slurm-login"]["spec"]["sssdConfRef"] == {"name": "dev-sssd", "key": "sssd.conf"}


def test_generated_secrets_are_referenced_by_the_names_the_secrets_chart_gives_them():
    # GIVEN the minimal spec (secrets generated in the cluster) / WHEN the Slurm cluster chart is built alone
    objects = unit(SlurmClusterChart)
    # THEN the keys and sssd.conf are the Secrets the secrets chart makes (tests/charts/test_secrets.py)
    assert objects["Controller/slurm"]["spec"]["slurmKeyRef"] == {"name": "slurm-auth-slurm", "key": "slurm.key"}
    assert objects["LoginSet/slurm-login"]["spec"]["sssdConfRef"] == {"name": "slurm-sssd-conf", "key": "sssd.conf"}


def test_the_service_monitor_carries_the_label_of_the_prometheus_release():
    # GIVEN kube-prometheus-stack installed by this cluster and ServiceMonitor labels that name its release
    from apps import helm
    spec = model(monitoring={"kubePrometheusStack": {"enabled": True}},
                 metrics={"serviceMonitor": {"labels": {"release": "kube-prometheus-stack"}}})
    monitor = build(SlurmClusterChart, spec)["Controller/slurm"]["spec"]["metrics"]["serviceMonitor"]
    # THEN the Prometheus of that release selects the ServiceMonitor
    assert monitor["enabled"] is True
    assert monitor["labels"] == {"release": helm.kube_prometheus_stack(spec).release_name}


def test_a_service_monitor_only_where_a_prometheus_operator_is_known():
    # GIVEN no Prometheus operator known, one installed with the cluster, and one said to exist
    def monitor(**changes):
        return unit(SlurmClusterChart, **changes)["Controller/slurm"]["spec"]["metrics"].get("serviceMonitor")
    # THEN only the last two get a ServiceMonitor (its CRD would be missing otherwise)
    assert monitor() is None
    assert monitor(monitoring={"kubePrometheusStack": {"enabled": True}})["enabled"] is True
    assert monitor(metrics={"serviceMonitor": {"enabled": True}})["enabled"] is True


def test_slurm_conf_follows_the_policy():
    # GIVEN fair share with weights, and a QoS that preempts another by requeueing it
    conf = unit(SlurmClusterChart, scheduling={"fairShare": {"enabled": True, "weights": {"fairshare": 10000, "qos": 2000}}},
                policy={"qos": [{"name": "normal", "preempt": ["scavenger"]}, {"name": "scavenger", "preemptMode": "requeue"}],
                        "defaultQos": "normal"})["Controller/slurm"]["spec"]["extraConf"].splitlines()
    # THEN slurmctld enforces the associations, limits and QoS, weighs by them and preempts by QoS
    for line in ("AccountingStorageEnforce=associations,limits,qos", "AccountingStorageTRES=gres/gpu",
                 "PriorityWeightFairshare=10000", "PriorityWeightQOS=2000",
                 "PreemptType=preempt/qos", "PreemptMode=REQUEUE"):
        assert line in conf, line
    assert "PreemptType=preempt/partition_prio" not in conf
