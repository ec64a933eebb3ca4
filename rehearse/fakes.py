"""The status writer of the sync stage: the status an absent operator would report, and nothing else.

Argo CD reads the health of a custom resource from its status, which its own operator writes. The
rehearsal runs Kubernetes' own controllers for real (kube-controller-manager, kube-scheduler, and
kwok for kubelets), but not the operators of these kinds: their pods are kwok pods, which run no
code. So this writer stands in for them. It writes, once per generation, the status each operator
writes when its object is ready, in the fields Argo CD's health check reads (Argo CD's
resource_customizations, or the tree's own argocd-cm checks for Slinky's kinds). Every kind it
fakes is in FAKED, and the rehearsal prints which of them it touched. It also provisions the volume
of a claim whose StorageClass names a CSI driver, as that driver's provisioner would.
"""

from __future__ import annotations

import threading
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .client import ApiClient

MERGE_PATCH = "application/merge-patch+json"


def _ready(*types: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A status of the given condition types, each True, for the object's generation."""
    def status(obj: dict[str, Any]) -> dict[str, Any]:
        generation = obj["metadata"].get("generation", 1)
        conditions = [{"type": t, "status": "True", "reason": "Rehearsal", "observedGeneration": generation,
                       "message": "written by the rehearsal's status writer (no operator runs)",
                       "lastTransitionTime": "2026-01-01T00:00:00Z"} for t in types]
        return {"conditions": conditions, "observedGeneration": generation}
    return status


def _nodeset(obj: dict[str, Any]) -> dict[str, Any]:
    """A NodeSet whose every slurmd pod is ready (slurm-operator v1.2.1's NodeSetStatus fields that
    the tree's health check reads)."""
    replicas = int((obj.get("spec") or {}).get("replicas") or 0)
    return {"observedGeneration": obj["metadata"].get("generation", 1), "replicas": replicas,
            "desired": replicas, "readyReplicas": replicas, "availableReplicas": replicas,
            "updatedReplicas": replicas, "selector": _selector(obj), "nodeSetHash": "rehearsal"}


def _selector(obj: dict[str, Any]) -> str:
    """The pod selector the operator reports (required by the CRD's status schema): its pods' labels."""
    return f"app.kubernetes.io/instance={obj['metadata']['name']}"


def _loginset(obj: dict[str, Any]) -> dict[str, Any]:
    """A LoginSet whose login pods exist (v1.2.1 writes its Deployment's status.replicas)."""
    replicas = (obj.get("spec") or {}).get("replicas")
    return {"replicas": 1 if replicas is None else int(replicas), "selector": _selector(obj)}


def _load_balancer(obj: dict[str, Any]) -> dict[str, Any]:
    """What the AWS Load Balancer Controller writes once the NLB is provisioned."""
    name = obj["metadata"]["name"]
    return {"loadBalancer": {"ingress": [{"hostname": f"{name}-rehearsal.elb.amazonaws.com"}]}}


@dataclass(frozen=True)
class Fake:
    """One kind the writer stands in for: whose status it writes, and which objects of it."""

    group: str
    kind: str
    plural: str
    operator: str
    status: Callable[[dict[str, Any]], dict[str, Any]]
    applies: Callable[[dict[str, Any]], bool] = lambda obj: True


FAKED: tuple[Fake, ...] = (
    Fake("slinky.slurm.net", "NodeSet", "nodesets", "slurm-operator", _nodeset),
    Fake("slinky.slurm.net", "LoginSet", "loginsets", "slurm-operator", _loginset),
    Fake("karpenter.sh", "NodePool", "nodepools", "Karpenter", _ready("Ready")),
    Fake("karpenter.k8s.aws", "EC2NodeClass", "ec2nodeclasses", "Karpenter", _ready("Ready")),
    Fake("external-secrets.io", "ExternalSecret", "externalsecrets", "External Secrets", _ready("Ready")),
    Fake("external-secrets.io", "SecretStore", "secretstores", "External Secrets", _ready("Ready")),
    Fake("external-secrets.io", "ClusterSecretStore", "clustersecretstores", "External Secrets", _ready("Ready")),
    Fake("k8s.mariadb.com", "MariaDB", "mariadbs", "mariadb-operator", _ready("Ready")),
    Fake("k8s.mariadb.com", "User", "users", "mariadb-operator", _ready("Ready")),
    Fake("k8s.mariadb.com", "Grant", "grants", "mariadb-operator", _ready("Ready")),
    Fake("k8s.mariadb.com", "Database", "databases", "mariadb-operator", _ready("Ready")),
    Fake("keda.sh", "ScaledObject", "scaledobjects", "KEDA", _ready("Ready")),
    Fake("cert-manager.io", "Certificate", "certificates", "cert-manager", _ready("Ready")),
    Fake("cert-manager.io", "Issuer", "issuers", "cert-manager", _ready("Ready")),
    Fake("cert-manager.io", "ClusterIssuer", "clusterissuers", "cert-manager", _ready("Ready")),
    Fake("monitoring.coreos.com", "Prometheus", "prometheuses", "prometheus-operator",
         _ready("Available", "Reconciled")),
    Fake("monitoring.coreos.com", "Alertmanager", "alertmanagers", "prometheus-operator",
         _ready("Available", "Reconciled")),
    Fake("", "Service", "services", "AWS Load Balancer Controller", _load_balancer,
         lambda obj: (obj.get("spec") or {}).get("type") == "LoadBalancer"),
)


class StatusWriter:
    """A thread that writes FAKED statuses until stopped; `touched` counts what it wrote, by kind."""

    def __init__(self, client: ApiClient, period: float = 1.0) -> None:
        self._client = client
        self._period = period
        self._stop = threading.Event()
        self._versions: dict[str, str | None] = {}
        self._written: dict[str, str] = {}  # uid -> the generation whose status was written
        self.touched: dict[str, int] = {}
        self.errors: list[str] = []
        self._thread = threading.Thread(target=self._run, name="rehearse-status-writer", daemon=True)

    def __enter__(self) -> "StatusWriter":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _version(self, group: str) -> str | None:
        """The served version of `group` (its preferred one), None while its CRD is not installed."""
        if not group:
            return "v1"
        if self._versions.get(group) is None:
            reply = self._client.get(f"/apis/{group}")
            self._versions[group] = (reply.body.get("preferredVersion") or {}).get("version") if reply.ok else None
        return self._versions[group]

    def _run(self) -> None:
        while not self._stop.wait(self._period):
            for fake in FAKED:
                try:
                    self.write(fake)
                except OSError as exc:  # the API server going away at the end
                    self.errors.append(f"{fake.kind}: {exc}")
            try:
                self.provision()
            except OSError as exc:
                self.errors.append(f"PersistentVolume: {exc}")

    def provision(self) -> None:
        """What a CSI driver's external-provisioner does (the FSx and EBS drivers' pods are kwok pods):
        for each Pending claim of a StorageClass that binds at once, a PersistentVolume of that class,
        size and access modes, bound to it; kube-controller-manager's binder then binds the claim.
        A WaitForFirstConsumer class waits for the scheduler's selected-node, as the real one does."""
        classes = {c["metadata"]["name"]: c for c in self._client.get("/apis/storage.k8s.io/v1/storageclasses").body
                   .get("items") or []}
        for claim in self._client.get("/api/v1/persistentvolumeclaims").body.get("items") or []:
            meta, spec = claim["metadata"], claim["spec"]
            cls = classes.get(spec.get("storageClassName") or "")
            if (claim.get("status") or {}).get("phase") != "Pending" or spec.get("volumeName") or cls is None \
                    or meta["uid"] in self._written:
                continue
            if cls.get("volumeBindingMode") == "WaitForFirstConsumer" and \
                    "volume.kubernetes.io/selected-node" not in (meta.get("annotations") or {}):
                continue
            volume = {"apiVersion": "v1", "kind": "PersistentVolume",
                      "metadata": {"name": f"pvc-{meta['uid']}",
                                   "annotations": {"pv.kubernetes.io/provisioned-by": cls["provisioner"]}},
                      "spec": {"capacity": {"storage": spec["resources"]["requests"]["storage"]},
                               "accessModes": spec["accessModes"], "storageClassName": cls["metadata"]["name"],
                               "persistentVolumeReclaimPolicy": cls.get("reclaimPolicy", "Delete"),
                               "volumeMode": spec.get("volumeMode", "Filesystem"),
                               "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                            "namespace": meta["namespace"], "name": meta["name"], "uid": meta["uid"]},
                               "csi": {"driver": cls["provisioner"], "volumeHandle": f"rehearsal-{meta['uid']}"}}}
            reply = self._client.request("POST", "/api/v1/persistentvolumes", volume)
            if not reply.ok and reply.status != 409:
                self.errors.append(f"PersistentVolume for {meta['namespace']}/{meta['name']}: {reply.message}")
                continue
            self._written[meta["uid"]] = "provisioned"
            self.touched["PersistentVolume (provisioned)"] = self.touched.get("PersistentVolume (provisioned)", 0) + 1

    def write(self, fake: Fake) -> None:
        """Write the status of every object of `fake`'s kind that lacks it for its generation."""
        version = self._version(fake.group)
        if version is None:
            return
        base = f"/api/{version}" if not fake.group else f"/apis/{fake.group}/{version}"
        reply = self._client.get(f"{base}/{fake.plural}")
        if not reply.ok:
            self._versions.pop(fake.group, None)
            return
        for obj in reply.body.get("items") or []:
            meta = obj["metadata"]
            generation = str(meta.get("generation", 1))
            if not fake.applies(obj) or self._written.get(meta["uid"]) == generation:
                continue
            path = (f"{base}/namespaces/{urllib.parse.quote(meta['namespace'])}/{fake.plural}/"
                    if meta.get("namespace") else f"{base}/{fake.plural}/") + urllib.parse.quote(meta["name"])
            status = self._client.request("PATCH", f"{path}/status", {"status": fake.status(obj)},
                                          content_type=MERGE_PATCH)
            if status.status == 404:  # a kind without the status subresource: status is part of the object
                status = self._client.request("PATCH", path, {"status": fake.status(obj)}, content_type=MERGE_PATCH)
            if not status.ok:
                self.errors.append(f"{fake.kind} {meta.get('namespace', '')}/{meta['name']}: {status.message}")
                continue
            self._written[meta["uid"]] = generation
            self.touched[fake.kind] = self.touched.get(fake.kind, 0) + 1
