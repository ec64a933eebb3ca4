"""Data-loss guards: compare a new render with the tree it replaces and refuse destructive changes.

Argo CD applies whatever lands on the branch, with prune on. Removing a stateful object, or
changing a field that forces it to be recreated (or that the operator refuses to change), must be
a deliberate act: synth refuses with exit 2 and names the object, unless the user passes
`--allow-destroy KIND/NAME`.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

import re

import yaml

from .._input import RENDERED_MAX_BYTES, UnreadableFile, read_bytes
from ..errors import UserError
from ..kube.quantity import memory_mib
from ..kube.documents import load_document

Obj = dict[str, Any]

# Objects that hold data (or own something that does): removing one loses it.
STATEFUL = frozenset({"PersistentVolumeClaim", "PersistentVolume", "StorageClass", "MariaDB", "Controller"})

# Fields whose change recreates the object (or its volumes), or that the operator's webhook refuses.
IMMUTABLE: Mapping[str, tuple[tuple[str, ...], ...]] = {
    # persistence becomes the slurmctld StatefulSet's volumeClaimTemplates
    # (internal/builder/controllerbuilder/controller_app.go@v1.2.1), which Kubernetes never updates:
    # the operator's StatefulSet update would fail on every reconcile.
    "Controller": (("spec", "clusterName"), ("spec", "slurmKeyRef"), ("spec", "jwtKeyRef"),
                   ("spec", "persistence", "enabled"), ("spec", "persistence", "storageClassName"),
                   ("spec", "persistence", "accessModes"), ("spec", "persistence", "resources"),
                   ("spec", "jwtHs256KeyRef")),
    # internal/webhook/{controller,accounting,nodeset,loginset}_webhook.go@v1.2.1: ValidateUpdate
    "Accounting": (("spec", "jwtKeyRef"), ("spec", "jwtHs256KeyRef")),
    "NodeSet": (("spec", "controllerRef"), ("spec", "volumeClaimTemplates")),
    "LoginSet": (("spec", "controllerRef"),),
    "PersistentVolumeClaim": (("spec", "storageClassName"), ("spec", "volumeName"), ("spec", "accessModes"),
                              ("spec", "volumeMode")),
    "PersistentVolume": (("spec", "csi"), ("spec", "storageClassName"), ("spec", "volumeMode")),
    "StorageClass": (("provisioner",), ("parameters",), ("reclaimPolicy",), ("volumeBindingMode",)),
    "MariaDB": (("spec", "storage", "storageClassName"), ("spec", "rootPasswordSecretKeyRef"),
                ("spec", "passwordSecretKeyRef"), ("spec", "username"), ("spec", "database")),
}

_MISSING = object()

# Volume sizes that can only grow: Kubernetes refuses to shrink a bound claim
# (ValidatePersistentVolumeClaimUpdate: "field can not be less than previous value"), the MariaDB
# size is its claim's, and FSx file systems never shrink (a smaller PV would no longer hold the claim).
SIZES: Mapping[str, tuple[str, ...]] = {
    "PersistentVolumeClaim": ("spec", "resources", "requests", "storage"),
    "PersistentVolume": ("spec", "capacity", "storage"),
    "MariaDB": ("spec", "storage", "size"),
}

# The accounts Job (charts/policy.py) deletes from slurmdbd the accounts and QoS the spec no longer
# declares: the account's associations and fair-share usage go with it, and jobs can no longer be
# submitted under it. Users are not guarded: their associations go, their job records stay.
POLICY_CONFIG_MAP = "slurm-accounts"
POLICY_KINDS = {"Account": "SlurmAccount", "QOS": "SlurmQOS"}
_POLICY_LINE = re.compile(r"^(QOS|Account|User) - '([^']+)'")


@dataclass(frozen=True)
class Change:
    """One destructive change, named so `--allow-destroy KIND/NAME` can approve it."""

    cluster: str
    kind: str
    namespace: str | None
    name: str
    what: str

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.name}"

    @property
    def scoped(self) -> str:
        """The approval naming this cluster: `CLUSTER:KIND/NAME`."""
        return f"{self.cluster}:{self.key}"

    @property
    def object(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"

    def __str__(self) -> str:
        return f"{self.cluster}: refusing to {self.what}; pass --allow-destroy {self.scoped} if you mean it"


def identity(obj: Obj) -> tuple[str, str, str | None, str]:
    group = obj["apiVersion"].split("/")[0] if "/" in obj["apiVersion"] else ""
    return group, obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"]


def index(objs: Iterable[Obj]) -> dict[tuple[str, str, str | None, str], Obj]:
    return {identity(o): o for o in objs}


def parse_object(text: str) -> Obj | None:
    """A rendered file's object, or None when the file holds something else."""
    doc = load_document(text)  # bounded (aliases, depth): a file in dist/ is whatever a PR committed
    if not (isinstance(doc, dict) and isinstance(doc.get("kind"), str) and isinstance(doc.get("apiVersion"), str)
            and isinstance(doc.get("metadata"), dict) and isinstance(doc["metadata"].get("name"), str)):
        return None
    return doc


class UnreadableTree(UserError):
    """Files of a previous render that cannot be read or parsed: the guards cannot see what they held."""


def read_tree(root: Path) -> dict[str, Obj]:
    """Every object of a previously written tree, by relative path (empty when there is none).

    Symbolic links are never followed. A YAML file that cannot be read or parsed raises
    UnreadableTree (one line per file): a guard must not pass because it could not see an object.
    """
    if root.is_symlink() or not root.is_dir():
        return {}
    out: dict[str, Obj] = {}
    broken: list[str] = []
    for dirpath, _, filenames in os.walk(root, followlinks=False):
        for name in filenames:
            path = Path(dirpath) / name
            if not name.endswith(".yaml"):
                continue
            try:
                mode = path.lstat().st_mode
            except OSError as err:
                broken.append(f"{path}: cannot read the previous render ({err.strerror}); restore or delete it")
                continue
            if not stat.S_ISREG(mode):  # a symlink is never followed, a FIFO never opened
                kind = "a symbolic link" if stat.S_ISLNK(mode) else "not a regular file"
                broken.append(f"{path}: {kind} in a rendered tree (not followed); remove it")
                continue
            try:
                obj = parse_object(read_bytes(path, max_bytes=RENDERED_MAX_BYTES,
                                              advice="no rendered object is that large").decode("utf-8"))
            except (OSError, UnicodeDecodeError, yaml.YAMLError, UnreadableFile) as err:
                what = err.strerror if isinstance(err, OSError) else str(err).splitlines()[0]
                broken.append(f"{path}: cannot read the previous render ({what}); restore it (git checkout) "
                              "or delete it, then run again")
                continue
            if obj is not None:
                out[path.relative_to(root).as_posix()] = obj
    if broken:
        raise UnreadableTree(sorted(broken))
    return dict(sorted(out.items()))


def read_objects(root: Path) -> list[Obj]:
    """Every object of a previously written tree (empty when there is none)."""
    return list(read_tree(root).values())


def field(obj: Obj, path: tuple[str, ...]) -> Any:
    node: Any = obj
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return _MISSING
        node = node[key]
    return node


def _show(value: Any) -> str:
    return "unset" if value is _MISSING else repr(value)


def shrinkage(was: Any, now: Any) -> str | None:
    """"OLD -> NEW" when a storage quantity gets smaller (or unreadable, which cannot be proven safe)."""
    if was is _MISSING or was == now:
        return None
    try:
        if now is not _MISSING and memory_mib(str(now)) >= memory_mib(str(was)):
            return None
    except ValueError:
        pass
    return f"{_show(was)} -> {_show(now)}"


def policy_names(objs: Iterable[Obj]) -> set[tuple[str, str]]:
    """(QOS|Account|User, name) declared by the rendered sacctmgr flat file, if any."""
    names: set[tuple[str, str]] = set()
    for obj in objs:
        if obj.get("kind") == "ConfigMap" and obj["metadata"].get("name") == POLICY_CONFIG_MAP:
            for line in (obj.get("data") or {}).get("accounts.cfg", "").splitlines():
                match = _POLICY_LINE.match(line)
                if match:
                    names.add((match.group(1), match.group(2)))
    return names


def has_policy(objs: Iterable[Obj]) -> bool:
    """True when the render holds the accounts ConfigMap (and so the Job that applies it)."""
    return any(o.get("kind") == "ConfigMap" and o["metadata"].get("name") == POLICY_CONFIG_MAP for o in objs)


def policy_removals(cluster: str, old: Iterable[Obj], new: Iterable[Obj]) -> list[Change]:
    """Slurm accounts and QoS that left the spec: the accounts Job would delete them from slurmdbd."""
    old, new = list(old), list(new)
    if not has_policy(new):
        return []  # no policy any more: no Job either, so nothing is deleted (the entities stay as they are)
    namespace = next((o["metadata"].get("namespace") for o in old
                      if o.get("kind") == "ConfigMap" and o["metadata"].get("name") == POLICY_CONFIG_MAP), None)
    gone = sorted(policy_names(old) - policy_names(new))
    return [Change(cluster, POLICY_KINDS[title], namespace, name,
                   f"delete Slurm {title.lower() if title == 'Account' else title} '{name}' from slurmdbd "
                   "(its associations and fair-share usage go with it)")
            for title, name in gone if title in POLICY_KINDS]


def destructive_changes(cluster: str, old: Iterable[Obj], new: Iterable[Obj]) -> list[Change]:
    """Stateful objects removed, and immutable fields changed, between two renders of one cluster."""
    before, after = index(old), index(new)
    changes: list[Change] = []
    for ident, obj in sorted(before.items(), key=lambda kv: tuple(str(p) for p in kv[0])):
        _, kind, namespace, name = ident
        if ident not in after:
            if kind in STATEFUL:
                where = f"{namespace}/{name}" if namespace else name
                changes.append(Change(cluster, kind, namespace, name,
                                      f"remove {kind} {where}, which holds state (its data would go with it)"))
            continue
        size = SIZES.get(kind)
        if size is not None:
            shrink = shrinkage(field(obj, size), field(after[ident], size))
            if shrink:
                where = f"{namespace}/{name}" if namespace else name
                changes.append(Change(cluster, kind, namespace, name,
                                      f"shrink {'.'.join(size)} of {kind} {where} ({shrink}): "
                                      "a volume can only grow (Kubernetes refuses, or the data no longer fits)"))
        for path in IMMUTABLE.get(kind, ()):
            was, now = field(obj, path), field(after[ident], path)
            if was is not _MISSING and was != now:
                where = f"{namespace}/{name}" if namespace else name
                changes.append(Change(cluster, kind, namespace, name,
                                      f"change {'.'.join(path)} of {kind} {where} ({_show(was)} -> {_show(now)}): "
                                      "it forces a re-creation or the operator refuses it"))
    return changes + policy_removals(cluster, before.values(), after.values())


class BadApproval(UserError):
    """An --allow-destroy value that is malformed, ambiguous or matches nothing: one line each, then
    the changes still refused."""


_APPROVAL = re.compile(r"^(?:(?P<cluster>[^:/\s]+):)?(?P<kind>[A-Za-z][A-Za-z0-9]*)/(?P<name>[^/\s]+)$")


def unapproved(changes: Iterable[Change], approvals: Iterable[str]) -> list[Change]:
    """The changes no approval covers; raise BadApproval for approvals that are wrong.

    `CLUSTER:KIND/NAME` approves that cluster's change; the old `KIND/NAME` is accepted only when
    exactly one cluster of the run has that change (one flag never approves several clusters). An
    approval that matches no change of this run is an error: a typo must not pass silently.
    """
    changes = list(changes)
    approved: set[str] = set()
    problems: list[str] = []
    for value in dict.fromkeys(approvals):
        match = _APPROVAL.match(value)
        if not match:
            problems.append(f"--allow-destroy {value}: expected CLUSTER:KIND/NAME (e.g. example:PersistentVolumeClaim/fsx)")
            continue
        if match.group("cluster"):
            hits = [c for c in changes if c.scoped == value]
        else:
            hits = [c for c in changes if c.key == value]
            clusters = sorted({c.cluster for c in hits})
            if len(clusters) > 1:
                problems.append(f"--allow-destroy {value}: ambiguous, clusters {', '.join(clusters)} all have this "
                                f"change; name each one: " + ", ".join(f"--allow-destroy {c}:{value}" for c in clusters))
                continue
        if not hits:
            problems.append(f"--allow-destroy {value}: matches no destructive change of this run; remove it "
                            "(or check the cluster, kind and name)")
            continue
        approved.update(c.scoped for c in hits)
    left = [c for c in changes if c.scoped not in approved]
    if problems:
        raise BadApproval(problems + [str(c) for c in left])  # every problem at once
    return left
