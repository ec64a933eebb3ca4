"""The sync stage: Argo CD syncs the committed tree from a local git repository until every
Application is Synced and Healthy, then syncs a second rendering and prunes.

Per cluster, on a fresh API server (an EKS cluster of its own): kube-controller-manager,
kube-scheduler and kwok play the cluster's machinery; the prerequisites docs/bootstrap.md lists are
installed (Argo CD's and Karpenter's CRDs, the nodes); Argo CD's application controller and repo
server run out of cluster; the status writer (fakes.py) stands in for the operators that are not run.
Then, as docs/bootstrap.md does, the tree's argocd-cm is merged in and the root Application applied.
"""

from __future__ import annotations

import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from slurmgen.review.preview.charts import ChartLocator

from . import argocd, build, cluster, crds, fakes, gitrepo, nodes
from .client import ApiClient
from .tree import TreeObject, read_cluster

APPS = f"/apis/argoproj.io/v1alpha1/namespaces/{argocd.NAMESPACE}/applications"
#: the CRDs docs/bootstrap.md asks to be there before the root is applied; every other CRD comes
#: from the tree's own Applications, so that the rehearsal proves they come first
PREREQUISITE_GROUPS = {"argoproj.io", "karpenter.sh", "karpenter.k8s.aws"}
WAVE = "argocd.argoproj.io/sync-wave"
HOOK = "argocd.argoproj.io/hook"
SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
#: how long one revision may take to converge before the rehearsal names what is stuck
CONVERGE_TIMEOUT = 900.0
#: set when the rehearsal is interrupted: every cluster still waiting stops (and stops its processes)
STOP = threading.Event()


class SyncFailed(RuntimeError):
    """Argo CD did not converge, or converged in an order the tree does not promise: the message
    names the Application or object and what Argo CD or the API server said."""


@dataclass
class AppRecord:
    """What the rehearsal saw of one Application."""

    name: str
    wave: int
    created: datetime | None = None
    healthy_at: datetime | None = None  # the earliest status.health.lastTransitionTime seen while Healthy
    seen_healthy: float | None = None  # seconds since the stage began, when first seen Synced and Healthy


@dataclass
class SyncOutcome:
    """One cluster's sync stage: the Applications in wave order, what was faked, the checks made."""

    apps: list[AppRecord] = field(default_factory=list)
    root: str = ""
    faked: dict[str, int] = field(default_factory=dict)
    rewrites: gitrepo.Rewrites = field(default_factory=gitrepo.Rewrites)
    checks: list[str] = field(default_factory=list)
    settings: list[str] = field(default_factory=list)  # what the rehearsal adds to a plain Argo CD install
    timeline: str = ""
    nodes: int = 0
    seconds: float = 0.0


def _time(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None


def _wave(doc: dict[str, Any]) -> int:
    return int(((doc.get("metadata") or {}).get("annotations") or {}).get(WAVE, "0"))


def _apply(client: ApiClient, doc: dict[str, Any]) -> None:
    """`kubectl apply` of a new object (a create): how docs/bootstrap.md applies the root."""
    meta = doc["metadata"]
    path = f"/apis/{doc['apiVersion']}/namespaces/{meta.get('namespace', 'default')}/applications"
    reply = client.request("POST", path, doc)
    if not reply.ok:
        raise SyncFailed(f"the root Application {meta['name']} was refused: {reply.message}")


def _app_state(app: dict[str, Any]) -> tuple[str, str, str, str]:
    status = app.get("status") or {}
    return ((status.get("sync") or {}).get("status", ""), (status.get("health") or {}).get("status", ""),
            (status.get("sync") or {}).get("revision", ""), (status.get("operationState") or {}).get("phase", ""))


def _stuck(app: dict[str, Any]) -> str:
    """Why one Application has not converged, in Argo CD's words: its conditions, its operation's
    message, and each resource that is not Synced and Healthy."""
    status = app.get("status") or {}
    sync, health, revision, phase = _app_state(app)
    words = [f"{app['metadata']['name']}: sync {sync or '-'}, health {health or '-'}, operation {phase or '-'}"]
    for cond in status.get("conditions") or []:
        words.append(f"{cond.get('type')}: {cond.get('message')}")
    message = (status.get("operationState") or {}).get("message")
    if message:
        words.append(f"operation: {message}")
    for res in status.get("resources") or []:
        res_health = (res.get("health") or {})
        if res.get("status") != "Synced" or res_health.get("status", "Healthy") != "Healthy":
            words.append(f"{res.get('kind')} {res.get('namespace', '')}/{res.get('name')}: {res.get('status')}, "
                         f"{res_health.get('status', '-')} {res_health.get('message', '')}".rstrip())
    return "; ".join(words)


def converge(client: ApiClient, expected: set[str], revision: str, started: float, say,
             records: dict[str, AppRecord], alive: Callable[[], None] = lambda: None,
             timeout: float = CONVERGE_TIMEOUT) -> None:
    """Wait until every Application of `expected` is Synced to `revision` and Healthy, with its last
    operation Succeeded; record when each was created and became Healthy. SyncFailed on timeout,
    naming each Application that is not there yet and why."""
    deadline = time.monotonic() + timeout
    last_report = 0.0
    while True:
        if STOP.is_set():
            raise SyncFailed("interrupted")
        alive()  # a component that exited ends the wait with its log's tail
        items = {a["metadata"]["name"]: a for a in client.get(APPS).body.get("items") or []}
        done = set()
        for name, app in items.items():
            record = records.setdefault(name, AppRecord(name, _wave(app)))
            record.created = _time(app["metadata"].get("creationTimestamp"))
            sync, health, rev, phase = _app_state(app)
            if health == "Healthy":  # the first time it was: what the root's next wave waited for
                since = _time(((app.get("status") or {}).get("health") or {}).get("lastTransitionTime"))
                if since is not None and (record.healthy_at is None or since < record.healthy_at):
                    record.healthy_at = since
            if sync == "Synced" and health == "Healthy" and rev == revision and phase in ("Succeeded", ""):
                done.add(name)
                if record.seen_healthy is None:
                    record.seen_healthy = time.monotonic() - started
        waiting = sorted(expected - done)
        if not waiting:
            return
        now = time.monotonic()
        if now > deadline:
            reasons = [_stuck(items[n]) if n in items else f"{n}: never created" for n in waiting]
            raise SyncFailed(f"not Synced and Healthy at {revision[:8]} after {timeout:.0f}s: " + " | ".join(reasons))
        if now - last_report > 30:
            last_report = now
            say(f"  {len(done)}/{len(expected)} Applications Synced and Healthy; waiting for {', '.join(waiting[:4])}"
                + (" ..." if len(waiting) > 4 else ""))
        time.sleep(1.0)


def check_waves(records: dict[str, AppRecord], root: str) -> list[str]:
    """The root syncs its children wave by wave, each wave Healthy before the next is applied:
    every child of a later wave was created no earlier than every child of an earlier wave became
    Healthy (both in the API server's clock, to the second). Problems, one line each."""
    children = [r for r in records.values() if r.name != root]
    problems = []
    for early in children:
        for late in children:
            if early.wave < late.wave and early.healthy_at and late.created and late.created < early.healthy_at:
                problems.append(f"{late.name} (wave {late.wave}) was created at {late.created:%H:%M:%S}, before "
                                f"{early.name} (wave {early.wave}) was Healthy at {early.healthy_at:%H:%M:%S}")
    return problems


def timeline(records: dict[str, AppRecord], root: str) -> str:
    """When each wave of the root's children was applied and was Healthy, in seconds after the root
    was created (the API server's clock, to the second)."""
    start = records[root].created if root in records else None
    waves: dict[int, list[AppRecord]] = {}
    for record in records.values():
        if record.name != root:
            waves.setdefault(record.wave, []).append(record)
    if start is None:
        return ""
    parts = []
    for wave, members in sorted(waves.items()):
        created = [r.created for r in members if r.created]
        healthy = [r.healthy_at for r in members if r.healthy_at]
        if created and healthy:
            parts.append(f"wave {wave} applied +{(min(created) - start).total_seconds():.0f}s, "
                         f"Healthy +{(max(healthy) - start).total_seconds():.0f}s")
    return "; ".join(parts)


def _list(client: ApiClient, path: str) -> list[dict[str, Any]]:
    return client.get(path).body.get("items") or []


def check_hooks(client: ApiClient, objects: list[TreeObject]) -> tuple[list[str], list[str]]:
    """Each PostSync hook Job ran after its Application's Sync phase: created no earlier than every
    Sync hook Job of its namespace completed. (checks made, problems)."""
    made, problems = [], []
    for obj in objects:
        annotations = (obj.body.get("metadata") or {}).get("annotations") or {}
        if obj.kind != "Job" or annotations.get(HOOK) != "PostSync":
            continue
        namespace = obj.body["metadata"].get("namespace") or obj.default_namespace
        jobs = {j["metadata"]["name"]: j for j in _list(client, f"/apis/batch/v1/namespaces/{namespace}/jobs")}
        post = jobs.get(obj.name)
        if post is None:
            problems.append(f"the PostSync hook Job {namespace}/{obj.name} never ran")
            continue
        created = _time(post["metadata"]["creationTimestamp"])
        sync_hooks = [o for o in objects if o.kind == "Job" and ((o.body.get("metadata") or {}).get("annotations")
                                                                   or {}).get(HOOK) == "Sync"]
        for hook in sync_hooks:
            live = jobs.get(hook.name)
            done = _time(((live or {}).get("status") or {}).get("completionTime"))
            if done is None:
                problems.append(f"the Sync hook Job {namespace}/{hook.name} has no completionTime")
            elif created is not None and created < done:
                problems.append(f"the PostSync hook Job {obj.name} was created at {created:%H:%M:%S}, before the "
                                f"Sync hook {hook.name} completed at {done:%H:%M:%S}")
        made.append(f"PostSync {obj.name} after {len(sync_hooks)} Sync hook(s)")
    return made, problems


def check_crds_first(client: ApiClient, objects: list[TreeObject]) -> tuple[str, list[str]]:
    """Every custom resource of the tree was created no earlier than the CRD that defines its kind
    (API server clock, to the second): the waves put CRDs first. (the check made, problems)."""
    defined_by = {(c["spec"]["group"], c["spec"]["names"]["kind"]): c for c in _list(client, crds.CRDS_PATH)}
    path = _object_path(client)
    problems, checked = [], 0
    for obj in objects:
        crd = defined_by.get(obj.group_kind)
        if crd is None or obj.group_kind[0] in PREREQUISITE_GROUPS:
            continue
        live = client.get(path(obj) or "")
        if not live.ok:
            continue  # a hook deleted after it ran, or an object the second rendering dropped
        checked += 1
        made, defined = _time(live.body["metadata"]["creationTimestamp"]), _time(crd["metadata"]["creationTimestamp"])
        if made is not None and defined is not None and made < defined:
            problems.append(f"{obj.label} was created at {made:%H:%M:%S}, before its CRD {crd['metadata']['name']} "
                            f"at {defined:%H:%M:%S}")
    return f"CRDs before the {checked} custom resources that need them", problems


def _guarded(obj: TreeObject) -> bool:
    """Marked to survive a prune (the data-loss guards): sync option Prune=false."""
    words = str(((obj.body.get("metadata") or {}).get("annotations") or {}).get(SYNC_OPTIONS, ""))
    return "Prune=false" in {w.strip() for w in words.split(",")}


def _exists(client: ApiClient, obj: TreeObject, discovery: Callable[[TreeObject], str | None]) -> bool:
    path = discovery(obj)
    return path is not None and client.get(path).ok


def _object_path(client: ApiClient) -> Callable[[TreeObject], str | None]:
    """TreeObject -> its URL on the API server (discovery read once per apiVersion)."""
    from .play import Discovery, object_path

    found = Discovery(client)

    def path(obj: TreeObject) -> str | None:
        res = found.resource(obj.api_version, obj.kind)
        if res is None:
            return None
        namespace = (obj.body["metadata"].get("namespace") or obj.default_namespace) if res.namespaced else None
        return f"{object_path(obj, res, namespace)}/{urllib.parse.quote(obj.name)}"
    return path


def refresh_all(client: ApiClient) -> None:
    """What a git webhook does on a push: ask Argo CD to look at the repository again now."""
    for app in _list(client, APPS):
        client.request("PATCH", f"{APPS}/{app['metadata']['name']}",
                       {"metadata": {"annotations": {"argocd.argoproj.io/refresh": "normal"}}},
                       content_type="application/merge-patch+json")


def expected_apps(folder: Path) -> tuple[str, set[str]]:
    """(the root Application's name, every Application the committed copy holds)."""
    root, names = "", set()
    for path in sorted(folder.rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "Application":
                names.add(doc["metadata"]["name"])
                if path.parent.name == "bootstrap":
                    root = doc["metadata"]["name"]
    return root, names


def rehearse_cluster(bin_dir: Path, tree: Path, locator: ChartLocator, say, change: Path | None = None,
                     vendored: list[crds.Crd] | None = None, objects: list[TreeObject] | None = None) -> SyncOutcome:
    """The sync stage for one cluster's committed tree (`tree` = dist/<cluster>/, its `objects` when
    already read), and, when given, a second rendering (`change`) committed over it; SyncFailed
    naming what did not hold."""
    outcome = SyncOutcome()
    started = time.monotonic()
    objects = read_cluster(tree) if objects is None else objects
    vendored = crds.load() if vendored is None else vendored
    manifests = build.module_source("argocd", "github.com/argoproj/argo-cd/v3") / "manifests" / "base" / "config"
    with cluster.api_server(bin_dir, say) as server:
        client = server.client
        crds.install(client, [c for c in vendored if c.group_kind[0] in PREREQUISITE_GROUPS])
        node_list = nodes.fake_nodes(objects)
        for node in node_list:
            reply = client.request("POST", "/api/v1/nodes", node)
            if not reply.ok:
                raise SyncFailed(f"creating the fake node {node['metadata']['name']}: {reply.message}")
        outcome.nodes = len(node_list)
        repo = gitrepo.Repository(server.workdir)
        gitrepo.stage(tree, repo.tree, repo.url, locator, outcome.rewrites)
        revision = repo.commit(f"dist/{tree.name} as committed")
        copy = repo.tree / "dist" / tree.name
        cm = copy / "argocd" / "configmap-argocd-cm.yaml"
        outcome.settings = argocd.install_settings(client, manifests, cm if cm.is_file() else None)
        with cluster.controllers(bin_dir, server, say) as machinery, \
                argocd.running(bin_dir, server, say) as argo, fakes.StatusWriter(client) as writer:

            def alive() -> None:
                machinery.check()
                argo.check()
            root, expected = expected_apps(copy)
            outcome.root = root
            for path in sorted((copy / "bootstrap").glob("*.yaml")):
                for doc in yaml.safe_load_all(path.read_text()):
                    if isinstance(doc, dict):
                        _apply(client, doc)
            say(f"{tree.name}: root {root} applied at {revision[:8]}; Argo CD syncs {len(expected)} Applications")
            records: dict[str, AppRecord] = {}
            converge(client, expected, revision, started, say, records, alive)
            problems = check_waves(records, root)
            outcome.timeline = timeline(records, root)
            made, hook_problems = check_hooks(client, objects)
            crd_check, crd_problems = check_crds_first(client, objects)
            problems += hook_problems + crd_problems
            outcome.checks += [f"waves in order ({len({r.wave for r in records.values()})} waves)", crd_check, *made]
            if change is not None:
                problems += _second_revision(client, repo, tree, change, locator, outcome, started, say, objects,
                                             alive)
            outcome.faked = dict(writer.touched)
            outcome.apps = sorted(records.values(), key=lambda r: (r.wave, r.seen_healthy or 0.0))
            if problems:
                raise SyncFailed("; ".join(problems))
    outcome.seconds = time.monotonic() - started
    return outcome


def _second_revision(client: ApiClient, repo: gitrepo.Repository, tree: Path, change: Path, locator: ChartLocator,
                     outcome: SyncOutcome, started: float, say, before: list[TreeObject],
                     alive: Callable[[], None]) -> list[str]:
    """Commit `change` (a second rendering of the same cluster) and wait for Argo CD to converge
    on it; then every object of the first tree marked Prune=false is still there, and every other
    object the second tree dropped is gone. Problems, one line each."""
    if change.name != tree.name:
        return [f"the second rendering {change} is not of cluster {tree.name}"]
    gitrepo.stage(change, repo.tree, repo.url, locator, gitrepo.Rewrites())
    revision = repo.commit(f"dist/{tree.name}: a second rendering")
    refresh_all(client)
    _, expected = expected_apps(repo.tree / "dist" / tree.name)
    say(f"{tree.name}: second rendering committed at {revision[:8]}; waiting for Argo CD to converge and prune")
    converge(client, expected, revision, started, say, {}, alive)
    after = {(o.group_kind, o.body["metadata"].get("namespace"), o.name) for o in read_cluster(change)}
    path = _object_path(client)
    problems, pruned, guarded = [], 0, 0
    for obj in before:
        if obj.owner.startswith("bootstrap"):
            continue
        present = _exists(client, obj, path)
        if _guarded(obj):  # whether the second rendering keeps it or drops it, it must be there
            guarded += 1
            if not present:
                problems.append(f"{obj.label} is marked Prune=false but is gone after the second rendering")
        elif (obj.group_kind, obj.body["metadata"].get("namespace"), obj.name) not in after:
            pruned += 1
            hook = ((obj.body.get("metadata") or {}).get("annotations") or {}).get(HOOK)
            if present and hook is None:
                problems.append(f"{obj.label} was dropped by the second rendering but Argo CD did not prune it")
    outcome.checks.append(f"second rendering converged: {pruned} objects pruned, {guarded} marked Prune=false "
                          "still there")
    return problems
