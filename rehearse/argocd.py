"""Argo CD out of cluster, as its own development setup runs it (its Procfile): the application
controller and the repo server against the rehearsal's API server, with Debian's redis-server.

`ARGOCD_FAKE_IN_CLUSTER=true` makes the in-cluster destination (https://kubernetes.default.svc)
the kubeconfig's API server. The settings are those of a plain install: Argo CD's own manifests/base/config/ at the version run,
read from the Go module cache, and the `default` AppProject that argocd-server creates at its first
start; then the bootstrap of docs/bootstrap.md merges the tree's argocd-cm in. The rehearsal adds
`resource.exclusions` for what cannot work here and says so (EXCLUDED).
"""

from __future__ import annotations

import json
import secrets
import shutil
import socket
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import yaml

from .client import ApiClient
from .cluster import ApiServer, Running, StartError, _wait, free_port, listening, process, write_kubeconfig

NAMESPACE = "argocd"
#: Kinds Argo CD is told to leave alone here: their servers are kwok pods, which run no code, so the
#: API server would refuse every call they intercept (webhooks) or fail discovery (APIService).
EXCLUDED = ({"apiGroups": ["admissionregistration.k8s.io"],
             "kinds": ["ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"], "clusters": ["*"]},
            {"apiGroups": ["apiregistration.k8s.io"], "kinds": ["APIService"], "clusters": ["*"]})


class ArgoError(RuntimeError):
    """A setting the API server refused, or a component that did not start."""


def _create(client: ApiClient, path: str, body: dict[str, Any]) -> None:
    reply = client.request("POST", path, body)
    if not reply.ok and reply.status != 409:
        raise ArgoError(f"creating {body['kind']} {body['metadata']['name']}: {reply.message}")


def install_settings(client: ApiClient, manifests: Path, tree_cm: Path | None) -> list[str]:
    """What a plain install and the bootstrap leave in the argocd namespace before the root is
    applied: each ConfigMap and Secret of Argo CD's own manifests/base/config/ (at the version run),
    then the tree's argocd-cm merge patch (docs/bootstrap.md step 4). What the rehearsal adds to a
    plain install, one line each (for the report)."""
    added = []
    _create(client, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    ns = f"/api/v1/namespaces/{NAMESPACE}"
    for path in sorted(manifests.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        if not isinstance(doc, dict) or doc.get("kind") not in ("ConfigMap", "Secret"):
            continue  # kustomization.yaml
        name = doc["metadata"]["name"]
        if name == "argocd-cm":
            data = doc.setdefault("data", {})
            data["resource.exclusions"] = data.get("resource.exclusions", "") + yaml.safe_dump(list(EXCLUDED))
            added.append("argocd-cm resource.exclusions: webhook configurations and APIServices (their servers are "
                         "kwok pods)")
        if name == "argocd-secret":  # argocd-server generates it at its first start; it is not run here
            doc["stringData"] = {"server.secretkey": secrets.token_urlsafe(32)}
            added.append("argocd-secret server.secretkey, which argocd-server would generate")
        _create(client, f"{ns}/{'configmaps' if doc['kind'] == 'ConfigMap' else 'secrets'}", doc)
    _create(client, f"/apis/argoproj.io/v1alpha1/namespaces/{NAMESPACE}/appprojects", {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject", "metadata": {"name": "default"},
        "spec": {"sourceRepos": ["*"], "destinations": [{"server": "*", "namespace": "*"}],
                 "clusterResourceWhitelist": [{"group": "*", "kind": "*"}]}})
    added.append("the default AppProject, which argocd-server would create")
    if tree_cm is not None:  # docs/bootstrap.md: kubectl -n argocd patch configmap argocd-cm --type merge --patch-file
        patch = yaml.safe_load(tree_cm.read_text())
        reply = client.request("PATCH", f"{ns}/configmaps/argocd-cm", {"data": patch.get("data") or {}},
                               content_type="application/merge-patch+json")
        if not reply.ok:
            raise ArgoError(f"{tree_cm}: the merge patch of argocd-cm was refused: {reply.message}")
    return added


def _redis_ready(port: int) -> bool:
    """redis-server answers PING on 127.0.0.1:`port`: it serves, not only listens."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@contextmanager
def running(bin_dir: Path, server: ApiServer, say) -> Iterator[Running]:
    """redis-server, the repo server and the application controller, ready; stopped on leaving."""
    redis = shutil.which("redis-server")
    git = shutil.which("git")
    if redis is None or git is None:
        raise StartError("the sync stage needs Debian's redis-server and git on PATH (apt-get install redis-server git)")
    work = server.workdir / "argocd"
    for sub in ("home", "tmp", "tls", "ssh", "gpg", "plugins"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    token = json.loads(server.kubeconfig.read_text())["users"][0]["user"]["token"]
    kubeconfig = write_kubeconfig(work / "kubeconfig", server.client.base,
                                  server.workdir / "pki" / "apiserver.crt", token, namespace=NAMESPACE)
    tools = work / "bin"  # what the repo server runs by name: helm (built here) and git (Debian's)
    tools.mkdir(exist_ok=True)
    for name, target in (("helm", bin_dir / "helm"), ("git", Path(git))):
        if not (tools / name).exists():
            (tools / name).symlink_to(target)
    env = {"PATH": f"{tools}:/usr/bin:/bin", "HOME": str(work / "home"), "TMPDIR": str(work / "tmp"),
           "KUBECONFIG": str(kubeconfig), "ARGOCD_FAKE_IN_CLUSTER": "true", "ARGOCD_GPG_ENABLED": "false",
           "ARGOCD_TLS_DATA_PATH": str(work / "tls"), "ARGOCD_SSH_DATA_PATH": str(work / "ssh"),
           "ARGOCD_GNUPGHOME": str(work / "gpg"), "ARGOCD_PLUGINSOCKFILEPATH": str(work / "plugins"),
           "HOSTNAME": "argocd-application-controller-0"}
    redis_port, repo_port, repo_metrics, metrics = free_port(), free_port(), free_port(), free_port()
    with ExitStack() as stack:
        say(f"starting redis-server on 127.0.0.1:{redis_port}, Argo CD's repo server and application controller")
        started = Running([])
        log = work / "redis.log"
        proc = stack.enter_context(process([redis, "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "",
                                            "--appendonly", "no", "--dir", str(work / "tmp")], log))
        _wait(lambda: _redis_ready(redis_port), proc, "redis-server", log)
        started.procs.append(("redis-server", proc, log))
        log = work / "repo-server.log"
        proc = stack.enter_context(process(
            [str(bin_dir / "argocd"), "repo-server", "--address", "127.0.0.1", "--port", str(repo_port),
             "--metrics-address", "127.0.0.1", "--metrics-port", str(repo_metrics),
             "--redis", f"127.0.0.1:{redis_port}", "--loglevel", "info"], log, env=env))
        _wait(lambda: listening(repo_port), proc, "argocd repo-server", log)
        started.procs.append(("argocd repo-server", proc, log))
        log = work / "application-controller.log"
        proc = stack.enter_context(process(
            [str(bin_dir / "argocd"), "--kubeconfig", str(kubeconfig), "--redis", f"127.0.0.1:{redis_port}",
             "--repo-server", f"127.0.0.1:{repo_port}",
             "--metrics-port", str(metrics), "--loglevel", "info", "--status-processors", "4",
             "--operation-processors", "4", "--app-resync", "20",
             "--persist-resource-health=true"], log, env=env))  # each resource's health in status, for failure messages
        started.procs.append(("argocd application-controller", proc, log))
        yield started
