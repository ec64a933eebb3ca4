"""The Argo CD layer alone (apps/argocd.py): the root Application, the AppProject and the child Applications.

AppsChart is built from the unit charts it is given (built beside it, not synthesized) and the Helm
releases of the minimal spec; only its own objects are checked.
"""

from __future__ import annotations

from typing import Any, Sequence

from apps import helm
from apps.argocd import AppsChart, ArgoCDSettingsChart, RootChart
from charts.compute import ComputeChart
from charts.slurm_cluster import SlurmClusterChart
from charts.storage import StorageChart
from charts.unit import UnitChart
from slurmgen.plan.nodesets import plan_cluster
from slurmgen.spec import ClusterSpec
from tests.charts import Obj, build, model, new_app, synth
from tests.charts.test_slurm_cluster import TWO_NODESETS
from tests.charts.test_storage import STATIC

WAVE = "argocd.argoproj.io/sync-wave"
FINALIZER = "resources-finalizer.argocd.argoproj.io"


def apps(spec: ClusterSpec, unit_classes: Sequence[type[UnitChart]] = (ComputeChart, SlurmClusterChart),
         releases: Sequence[helm.HelmRelease] | None = None) -> dict[str, Obj]:
    """AppsChart alone for the units `unit_classes` and `releases` (by default the spec's Helm releases for
    its planned nodesets)."""
    app = new_app()
    plans = plan_cluster(spec)
    units: list[UnitChart] = [cls(app, spec, plans) if cls in (ComputeChart, SlurmClusterChart)  # type: ignore[call-arg]
                              else cls(app, spec) for cls in unit_classes]  # type: ignore[call-arg]
    if releases is None:
        releases = helm.planned_releases(spec, plans)
    chart = AppsChart(app, spec, units, releases)
    return synth(chart)


def children(objects: dict[str, Obj]) -> dict[str, Obj]:
    return {name.split("/", 1)[1]: o for name, o in objects.items() if name.startswith("Application/")}


def test_the_root_application_syncs_the_apps_folder_into_argocd():
    # GIVEN the minimal spec / WHEN the root chart is built alone
    objects = build(RootChart, model())  # type: ignore[arg-type]
    # THEN it is one Application that syncs <path>/<cluster>/apps into argocd and cascades on delete
    [(name, root)] = objects.items()
    assert name == "Application/t-root"
    assert root["spec"]["source"]["path"] == "dist/t/apps"
    assert root["spec"]["destination"] == {"namespace": "argocd", "server": "https://kubernetes.default.svc"}
    assert root["metadata"]["finalizers"] == [FINALIZER]
    assert root["spec"]["syncPolicy"]["automated"] == {"prune": True, "selfHeal": True}


def test_child_applications_are_ordered_by_string_waves():
    # GIVEN the compute and Slurm units and the minimal spec's releases / WHEN the apps chart is built
    objects = apps(model())
    waves = {name: app["metadata"]["annotations"][WAVE] for name, app in children(objects).items()}
    # THEN every wave is a string, and CRDs/cert-manager < operator < compute < Slurm CRs, the project first
    assert all(isinstance(w, str) for w in waves.values())
    w = {k: int(v) for k, v in waves.items()}
    assert w["t-cert-manager"] == w["t-slurm-operator-crds"] < w["t-slurm-operator"] < w["t-compute"] < w["t-slurm"]
    assert int(objects["AppProject/t"]["metadata"]["annotations"][WAVE]) < min(w.values())


def test_every_child_has_the_finalizer_automated_sync_and_an_unbounded_retry():
    # GIVEN a spec with every optional release the minimal spec leaves off (FSx by Helm, KEDA, the dashboard)
    spec = model(storage={"fsx": {**STATIC["fsx"], "csiDriver": "helm"}}, monitoring={"kubePrometheusStack": {"enabled": True}},
                 nodeset={"autoscale": {"min": 0, "max": 2}})
    # WHEN the apps chart is built for units and releases
    objects = apps(spec, (ComputeChart, SlurmClusterChart, StorageChart))
    # THEN every child is in the project, labelled part of the root, cascades and retries without a limit
    assert {"t-compute", "t-slurm", "t-storage", "t-keda", "t-aws-fsx-csi-driver", "t-kube-prometheus-stack"} \
        <= set(children(objects))
    for name, app in children(objects).items():
        assert app["metadata"]["finalizers"] == [FINALIZER], name
        policy = app["spec"]["syncPolicy"]
        assert policy["automated"] == {"prune": True, "selfHeal": True}, name
        assert policy["retry"]["limit"] == -1 and policy["retry"]["backoff"]["factor"] == 2, name
        assert app["spec"]["project"] == "t", name
        assert app["metadata"]["labels"]["app.kubernetes.io/part-of"] == "t-root", name


def test_helm_children_are_pinned_and_name_oci_registries_without_a_scheme():
    # GIVEN the minimal spec's releases / WHEN the apps chart is built
    found = children(apps(model()))
    # THEN the operator comes from Slinky's OCI registry at the pinned version, without its CRDs
    operator = found["t-slurm-operator"]["spec"]["source"]
    values = operator["helm"]["valuesObject"]
    assert operator == {"chart": "slurm-operator", "repoURL": "ghcr.io/slinkyproject/charts", "targetRevision": "1.2.1",
                        "helm": {"releaseName": "slurm-operator", "valuesObject": values}}
    assert values["crds"] == {"enabled": False} and values["certManager"] == {"enabled": True}
    # AND the CRDs are applied server-side, cert-manager is pinned with its CRDs, nothing floats
    assert "ServerSideApply=true" in found["t-slurm-operator-crds"]["spec"]["syncPolicy"]["syncOptions"]
    cert = found["t-cert-manager"]["spec"]["source"]
    assert cert["targetRevision"] == "v1.21.1" and cert["helm"]["valuesObject"]["crds"]["enabled"] is True
    for name, app in found.items():
        source = app["spec"]["source"]
        assert "*" not in source["repoURL"] and source["targetRevision"] not in ("", "HEAD", "latest", "*"), name


def test_a_unit_application_reads_its_folder_and_creates_its_namespace():
    # GIVEN the Slurm unit / WHEN the apps chart is built
    app = children(apps(model()))["t-slurm"]["spec"]
    # THEN its Application reads <path>/<cluster>/slurm, flat, into the Slurm namespace, which it creates
    assert app["source"] == {"repoURL": "https://github.com/o/r.git", "targetRevision": "main",
                             "path": "dist/t/slurm"}
    assert app["destination"]["namespace"] == "slurm"
    assert "CreateNamespace=true" in app["syncPolicy"]["syncOptions"]


def test_the_project_lists_exactly_what_the_children_use():
    # GIVEN the compute and Slurm units and the minimal spec's releases / WHEN the apps chart is built
    objects = apps(model())
    project = objects["AppProject/t"]["spec"]
    # THEN no wildcard anywhere; the spec's repository, the units' and releases' namespaces and cluster kinds
    assert "'*'" not in repr(project)
    assert "https://github.com/o/r.git" in project["sourceRepos"]
    assert {d["namespace"] for d in project["destinations"]} >= {"slurm", "slinky", "cert-manager", "kube-system"}
    kinds = {(k["group"], k["kind"]) for k in project["clusterResourceWhitelist"]}
    assert {("karpenter.sh", "NodePool"), ("karpenter.k8s.aws", "EC2NodeClass"),
            ("apiextensions.k8s.io", "CustomResourceDefinition")} <= kinds
    # AND every child's repository and destination is one the project allows
    for name, app in children(objects).items():
        assert app["spec"]["source"]["repoURL"] in project["sourceRepos"], name
        assert app["spec"]["destination"]["namespace"] in {d["namespace"] for d in project["destinations"]}, name


def test_a_unit_of_cluster_scoped_objects_adds_its_kinds_to_the_project():
    # GIVEN only the storage unit of a static FSx (a PersistentVolume, no namespace) and no release
    spec = model(storage=STATIC)
    kinds = {(k["group"], k["kind"]) for k in
             apps(spec, (StorageChart,), releases=[])["AppProject/t"]["spec"]["clusterResourceWhitelist"]}
    # THEN the project allows that kind and Namespace (CreateNamespace=true), nothing else
    assert kinds == {("", "PersistentVolume"), ("", "Namespace")}


def test_the_argocd_cm_patch_is_one_configmap_in_the_argocd_namespace():
    # GIVEN the minimal spec / WHEN the Argo CD settings chart is built alone
    objects: dict[str, Any] = build(ArgoCDSettingsChart, model())  # type: ignore[arg-type]
    # THEN it is argocd-cm, without labels (a merge patch keeps the installed ones), holding health checks
    [(name, config_map)] = objects.items()
    assert name == "ConfigMap/argocd-cm" and config_map["metadata"] == {"name": "argocd-cm", "namespace": "argocd"}
    assert any(key.startswith("resource.customizations.health.") for key in config_map["data"])


def test_generated_keys_and_the_database_sync_before_the_slurm_cluster():
    # GIVEN the minimal spec's units (secrets generated, a managed database) and releases
    from charts.accounting import DatabaseChart
    from charts.secrets import SecretsChart
    found = children(apps(model(), (ComputeChart, SecretsChart, DatabaseChart, SlurmClusterChart)))
    w = {name: int(app["metadata"]["annotations"][WAVE]) for name, app in found.items()}
    # THEN External Secrets runs before the secrets unit, which comes before the database and the Slurm CRs
    assert w["t-external-secrets"] < w["t-secrets"] < w["t-database"] < w["t-slurm"]


def test_a_release_kept_on_delete_leaves_its_objects_when_its_application_goes():
    # GIVEN the minimal spec's releases (the CRD releases are kept on delete) / WHEN the apps chart is built
    found = children(apps(model()))
    # THEN their Applications delete nothing (the CRDs and every custom resource would go), the others do
    for name, app in found.items():
        assert ("Delete=false" in app["spec"]["syncPolicy"].get("syncOptions", [])) == name.endswith("-crds"), name


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch, what `kubectl patch --type merge` sends."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def test_the_argocd_cm_patch_adds_the_health_checks_and_keeps_everything_else():
    # GIVEN a live argocd-cm with the user's settings and a Helm install's labels
    live = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "argocd-cm", "namespace": "argocd",
                         "labels": {"app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/part-of": "argocd"}},
            "data": {"url": "https://argocd.example.com", "resource.exclusions": "- kinds: [Event]\n"}}
    patch = build(ArgoCDSettingsChart, model())["ConfigMap/argocd-cm"]  # type: ignore[arg-type]
    # WHEN the chart's object is applied as `kubectl patch --type merge --patch-file`
    after = merge_patch(live, patch)
    # THEN the user's keys and labels are untouched and the health checks are added
    assert after["metadata"] == live["metadata"]
    assert after["data"]["url"] == live["data"]["url"] and after["data"]["resource.exclusions"]
    lua = after["data"]["resource.customizations.health.argoproj.io_Application"]
    assert "hs.status = obj.status.health.status" in lua and lua.rstrip().endswith("return hs")
    # AND the object holds nothing else (no labels to overwrite, no key but the checks)
    assert set(patch["metadata"]) == {"name", "namespace"} and list(patch["data"]) == [
        "resource.customizations.health.argoproj.io_Application",
        *(f"resource.customizations.health.slinky.slurm.net_{kind}"
          for kind in ("Accounting", "Controller", "RestApi", "LoginSet", "NodeSet"))]


def test_the_argocd_cm_patch_is_its_own_unit_and_the_same_for_every_cluster():
    # GIVEN two clusters that differ in everything the patch could read
    one = build(ArgoCDSettingsChart, model())  # type: ignore[arg-type]
    other = build(ArgoCDSettingsChart, model(name="u", aws={"region": "eu-west-1"}, **TWO_NODESETS))  # type: ignore[arg-type]
    # THEN the patch goes to its own folder, argocd/ (not bootstrap/, which kubectl applies; not apps/, the
    # root's), and is the same object: patching for a second cluster changes nothing
    assert ArgoCDSettingsChart.unit == "argocd"
    assert one == other


def test_the_slurm_bridge_application_syncs_like_the_other_charts_after_the_slurm_unit():
    # GIVEN a bridge / WHEN the apps chart is built with the Slurm unit
    found = children(apps(model(bridge={"namespaces": ["inference"], "partition": "gpu"})))
    bridge, operator = found["t-slurm-bridge"], found["t-slurm-operator"]
    # THEN it syncs after the Slurm CRs, with the same finalizer, project, automated sync and retry
    assert int(bridge["metadata"]["annotations"][WAVE]) > int(found["t-slurm"]["metadata"]["annotations"][WAVE])
    assert bridge["metadata"]["finalizers"] == operator["metadata"]["finalizers"]
    assert bridge["spec"]["project"] == operator["spec"]["project"] == "t"
    assert bridge["spec"]["syncPolicy"] == {**operator["spec"]["syncPolicy"], "syncOptions": ["CreateNamespace=true"]}
    assert bridge["spec"]["destination"]["namespace"] == "slurm"


def test_argo_cd_ignores_the_replicas_of_autoscaled_nodesets_only():
    # GIVEN an always-on nodeset and one scaled by KEDA / WHEN the apps chart is built with the Slurm unit
    found = children(apps(model(**TWO_NODESETS)))
    app = found["t-slurm"]["spec"]
    # THEN the Slurm Application leaves the autoscaled NodeSet's replicas to KEDA, and only those
    assert app["ignoreDifferences"] == [{"group": "slinky.slurm.net", "kind": "NodeSet", "name": "slurm-worker-spot",
                                         "namespace": "slurm", "jsonPointers": ["/spec/replicas"]}]
    assert "RespectIgnoreDifferences=true" in app["syncPolicy"]["syncOptions"]
    # AND KEDA is a pinned chart, applied server-side, synced before the Slurm CRs its ScaledObjects target
    keda = found["t-keda"]
    assert keda["spec"]["source"]["chart"] == "keda" and keda["spec"]["source"]["targetRevision"] == "2.20.2"
    assert "ServerSideApply=true" in keda["spec"]["syncPolicy"]["syncOptions"]
    assert int(keda["metadata"]["annotations"][WAVE]) < int(found["t-slurm"]["metadata"]["annotations"][WAVE])
    assert keda["spec"]["source"]["helm"]["valuesObject"]["rbac"]["scaledRefKinds"] == [
        {"apiGroup": "slinky.slurm.net", "kind": "nodesets"}]


def _dropped_by_omitempty(value, where: str = "spec"):
    """Paths of values Go's `omitempty` drops when Argo CD writes an Application back (false, 0,
    "", {} and []), outside Helm values (a raw object, kept as it is)."""
    if isinstance(value, dict):
        if not value:
            yield where
        for key, item in value.items():
            if key not in ("valuesObject", "values"):
                yield from _dropped_by_omitempty(item, f"{where}.{key}")
    elif isinstance(value, list):
        if not value:
            yield where
        for i, item in enumerate(value):
            yield from _dropped_by_omitempty(item, f"{where}[{i}]")
    elif value is False or value == 0 or value == "":
        yield where


def test_every_application_survives_argo_cds_own_round_trip():
    # GIVEN every Application of a spec with every optional release, and the root
    spec = model(storage={"fsx": {**STATIC["fsx"], "csiDriver": "helm"}}, monitoring={"kubePrometheusStack": {"enabled": True}},
                 nodeset={"autoscale": {"min": 0, "max": 2}})
    applications = [*children(apps(spec, (ComputeChart, SlurmClusterChart, StorageChart))).values(),
                    *build(RootChart, spec).values()]  # type: ignore[arg-type]
    assert len(applications) > 6
    # THEN none holds a value Argo CD's controller drops when it updates the object (its Go types
    # say omitempty): the parent's diff would show the child OutOfSync for ever (`make rehearse`
    # saw `directory: {recurse: false}` do so)
    for app in applications:
        assert list(_dropped_by_omitempty(app["spec"])) == [], app["metadata"]["name"]
