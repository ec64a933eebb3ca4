"""The Argo CD layer: the root Application, the AppProject and one child Application per deploy unit.

Every child gets the cascade finalizer, automated sync with prune and self-heal, unbounded retries
with capped backoff and a string sync wave. The AppProject lists exactly the repositories, destinations and
cluster-scoped kinds the children use: no `*` anywhere.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from cdk8s import ApiObject, ApiObjectMetadata, Chart, JsonPatch
from constructs import Construct

from slurmgen.kube import naming
from charts._objects import emit, wave
from charts.unit import UnitChart
from slurmgen.spec import ClusterSpec
from slurmgen.kube import waves
from slurmgen.kube.health import argocd_cm_data
from slurmgen.kube.vocabulary import KEEP, SYNC_OPTIONS
from .helm import HelmRelease

API = "argoproj.io/v1alpha1"
FINALIZER = "resources-finalizer.argocd.argoproj.io"
# Every Application (root and children) retries a failed sync forever, at most every 5 minutes,
# each time on the newest revision. Why (controller/appcontroller.go @ v3.5.1):
# - autoSync skips a revision whose last sync failed ("Skipping auto-sync: failed previous sync
#   attempt ... and will not retry"), and `automated` has no option to retry it (SyncPolicyAutomated
#   holds prune, selfHeal, allowEmpty, enabled only; selfHeal acts after a *successful* sync). So a
#   bounded retry that runs out (a hook image pull, a CRD or webhook another Application serves,
#   a NodePool not Ready) parks that revision; for a pinned chart the revision never changes:
#   parked until someone syncs by hand.
# - processRequestedAppOperation retries while `RetryCount < Retry.Limit || Retry.Limit < 0`,
#   waiting `duration * factor^n` capped at `maxDuration` (RetryStrategy.NextRetryAt, types.go).
# - `refresh: true` makes each retry sync the newest revision: without it an unbounded retry of a
#   broken commit would hold the operation and autoSync ("another operation is in progress")
#   would never pick up the fix.
# A broken manifest still surfaces: the Application shows the failed operation and its message
# ("Retrying attempt #n") and the sync waves behind it wait. The operation stays Running meanwhile,
# as does one that waits on a resource never healthy (no failure, so no retry): no auto-sync, and a
# manual sync is refused, until it is terminated (docs/bootstrap.md, "A sync that stays Running").
RETRY = {"limit": -1, "backoff": {"duration": "10s", "factor": 2, "maxDuration": "5m"}, "refresh": True}
PART_OF = "app.kubernetes.io/part-of"


def _sync_policy(options: Iterable[str]) -> dict[str, Any]:
    """Automated sync with prune and self-heal, retried without a limit (see RETRY)."""
    policy: dict[str, Any] = {"automated": {"prune": True, "selfHeal": True}, "retry": RETRY}
    opts = sorted(set(options))
    if opts:
        policy["syncOptions"] = opts
    return policy


def unit_path(spec: ClusterSpec, unit: str) -> str:
    """Repository path of one unit's folder: <gitops.path>/<cluster>/<unit>."""
    return f"{spec.gitops.path}/{spec.name}/{unit}"


def cluster_scoped_kinds(chart: UnitChart) -> set[tuple[str, str]]:
    """(group, kind) of the objects a chart renders without a namespace (recorded by `emit`, no jsii calls)."""
    return {(api.split("/")[0] if "/" in api else "", kind)
            for api, kind, namespace in getattr(chart, "emitted", ()) if namespace is None}


class AppsChart(Chart):
    """`dist/<cluster>/apps/`: what the root Application syncs."""

    unit = "apps"

    def __init__(self, scope: Construct, spec: ClusterSpec, units: Sequence[UnitChart],
                 releases: Sequence[HelmRelease]) -> None:
        super().__init__(scope, f"{spec.name}-apps", disable_resource_name_hashes=True)
        self.spec = spec
        destinations: set[str] = set()
        kinds: set[tuple[str, str]] = {("", "Namespace")}  # CreateNamespace=true creates them
        for unit in units:
            self._unit_application(unit)
            if unit.sync.namespace:
                destinations.add(unit.sync.namespace)
            kinds |= cluster_scoped_kinds(unit)
        for release in releases:
            self._helm_application(release)
            destinations |= {release.namespace, *release.extra_namespaces}
            kinds |= set(release.cluster_kinds)
        repos = {spec.gitops.repo_url} | {r.repo_url for r in releases}
        self._project(sorted(repos), sorted(destinations), sorted(kinds))

    def _application(self, unit: str, wave_no: int, source: dict[str, Any], namespace: str | None,
                     options: list[str], ignore: Sequence[dict[str, object]] = ()) -> None:
        spec = self.spec
        destination = {"server": spec.gitops.destination_server, "namespace": namespace}
        body: dict[str, Any] = {
            "project": naming.project(spec.name),
            "source": source,
            "destination": destination,
            "syncPolicy": _sync_policy(options),
        }
        if ignore:
            body["ignoreDifferences"] = list(ignore)
        emit(self, api_version=API, kind="Application", name=naming.application(spec.name, unit),
             namespace=spec.gitops.argocd_namespace, labels={PART_OF: naming.root_application(spec.name)},
             annotations=wave(wave_no), finalizers=[FINALIZER], body={"spec": body})

    def _unit_application(self, unit: UnitChart) -> None:
        sync = unit.sync
        options = list(sync.extra_sync_options)
        if sync.create_namespace:
            options.append("CreateNamespace=true")
        if sync.server_side_apply:
            options.append("ServerSideApply=true")
        if sync.ignore_differences:
            options.append("RespectIgnoreDifferences=true")
        # No `directory: {recurse: false}` (the default): Argo CD's controller rewrites its Applications
        # through Go types whose omitempty drops it, and the root would then see every child OutOfSync.
        source = {"repoURL": self.spec.gitops.repo_url, "targetRevision": self.spec.gitops.target_revision,
                  "path": unit_path(self.spec, unit.unit)}
        self._application(unit.unit, sync.wave, source, sync.namespace, options, sync.ignore_differences)

    def _helm_application(self, release: HelmRelease) -> None:
        helm: dict[str, Any] = {"releaseName": release.release_name}
        if release.values:
            helm["valuesObject"] = release.values
        source = {"repoURL": release.repo_url, "chart": release.chart, "targetRevision": release.version,
                  "helm": helm}
        options = ["CreateNamespace=true"] + (["ServerSideApply=true"] if release.server_side_apply else [])
        if release.keep_on_delete:
            options.append("Delete=false")
        self._application(release.unit, release.wave, source, release.namespace, options)

    def _project(self, repos: list[str], namespaces: list[str], kinds: list[tuple[str, str]]) -> None:
        spec = self.spec
        body = {
            "description": f"Slurm cluster {spec.name} ({spec.aws.eks_cluster_name}, {spec.aws.region}), generated by slurmgen",
            "sourceRepos": repos,
            "destinations": [{"server": spec.gitops.destination_server, "namespace": ns} for ns in namespaces],
            "clusterResourceWhitelist": [{"group": g, "kind": k} for g, k in kinds],
            "orphanedResources": {"warn": False},
        }
        emit(self, api_version=API, kind="AppProject", name=naming.project(spec.name),
             namespace=spec.gitops.argocd_namespace, annotations=wave(waves.PROJECT, **{
                 SYNC_OPTIONS: KEEP}),
             finalizers=[FINALIZER], body={"spec": body})


class RootChart(Chart):
    """`dist/<cluster>/bootstrap/`: the root Application, the one object applied by hand."""

    unit = "bootstrap"

    def __init__(self, scope: Construct, spec: ClusterSpec) -> None:
        super().__init__(scope, f"{spec.name}-bootstrap", disable_resource_name_hashes=True)
        body = {
            "project": spec.gitops.root_project,
            "source": {"repoURL": spec.gitops.repo_url, "targetRevision": spec.gitops.target_revision,
                       "path": unit_path(spec, "apps")},
            # Applications and the AppProject live next to Argo CD, whatever cluster Slurm runs on.
            "destination": {"server": spec.gitops.root_destination_server, "namespace": spec.gitops.argocd_namespace},
            "syncPolicy": _sync_policy([]),
        }
        emit(self, api_version=API, kind="Application", name=naming.root_application(spec.name),
             namespace=spec.gitops.argocd_namespace, finalizers=[FINALIZER], body={"spec": body})


class ArgoCDSettingsChart(Chart):
    """`dist/<cluster>/argocd/`: the `argocd-cm` keys the sync waves need (kube/health.py), as a merge patch.

    Not applied with `kubectl apply`: a whole ConfigMap would replace the user's settings, and
    `kubectl apply --server-side` first hands every field owned by an earlier client-side apply to
    its own field manager (kubectl apply.go migrateToSSAIfNecessary), then drops what this file
    lacks. `kubectl patch --type merge --patch-file` adds these keys and touches nothing else;
    no labels either (a Helm-installed argocd-cm keeps its managed-by label). Same bytes for every
    cluster, so patching it again for another cluster changes nothing.
    """

    unit = "argocd"

    def __init__(self, scope: Construct, spec: ClusterSpec) -> None:
        super().__init__(scope, f"{spec.name}-argocd", disable_resource_name_hashes=True)
        obj = ApiObject(self, "argocd-cm", api_version="v1", kind="ConfigMap",
                        metadata=ApiObjectMetadata(name="argocd-cm", namespace=spec.gitops.argocd_namespace))
        obj.add_json_patch(JsonPatch.add("/data", argocd_cm_data()))
