"""A rendered pod's volumes laid out as the kubelet lays them out, and its containers as sandbox plans.

`Pod` takes a pod spec (as rendered, plus the volumes the operator adds to that pod) and the contents of
the objects its volumes name (ConfigMaps, Secrets, claims). It writes each volume once, under its own
folder, the way the kubelet does (Kubernetes 1.34, pkg/volume/util/atomic_writer.go and
pkg/volume/volume_linux.go):
- ConfigMap, Secret and projected volumes: the files in a timestamped folder behind a `..data` link, each
  top-level name a link into `..data`; `items` pick and rename keys; `defaultMode`/`mode` (0644 when
  unset); with the pod's `fsGroup` each file is group-owned by it and gains group read (0400 -> 0440);
- emptyDir: 0777, and with `fsGroup` its group and the setgid bit;
- a claim: the folder the test gives, group-owned by `fsGroup` with group read/write, as a volume that
  supports ownership management (EBS) gets it at every mount;
- `subPath`: the file or folder it resolves to inside the volume, links followed within it.

Then `plan(container)` gives the container's sandbox: its mounts, `command`+`args`, env (literal values
only: a `valueFrom` is refused, so a test cannot miss it), user, group and supplementary groups (runAsUser,
runAsGroup, fsGroup, supplementalGroups; the container's securityContext over the pod's).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Mapping

from . import sandbox
from .sandbox import Mount, Plan

#: kubelet's atomic writer names the payload folder by time; any fixed name shows the same layout
PAYLOAD = "..2026_01_01_00_00_00.000000001"
DEFAULT_MODE = 0o644


@dataclass
class Pod:
    """One pod: its spec, the objects its volumes read, and a folder for its volumes."""

    root: Path
    spec: Mapping[str, Any]  # a PodSpec: containers, initContainers, volumes, securityContext
    configmaps: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    secrets: Mapping[str, Mapping[str, bytes]] = field(default_factory=dict)
    claims: Mapping[str, Path] = field(default_factory=dict)
    hostname: str = "pod"
    _made: dict[str, Path] = field(default_factory=dict)

    # ---- volumes ------------------------------------------------------------------------------
    @property
    def fs_group(self) -> int | None:
        return self.spec.get("securityContext", {}).get("fsGroup")

    def volume(self, name: str) -> Path:
        """The folder of volume `name`, written on first use and then shared by every container."""
        if name not in self._made:
            (spec,) = [v for v in self.spec.get("volumes", []) if v["name"] == name] or [None]
            if spec is None:
                raise KeyError(f"the pod has no volume {name!r} (a container mounts one its pod lacks)")
            self._made[name] = self._write(spec)
        return self._made[name]

    def _write(self, spec: Mapping[str, Any]) -> Path:
        folder = self.root / "volumes" / spec["name"]
        if "emptyDir" in spec:
            folder.mkdir(parents=True)
            folder.chmod(0o777)
            if self.fs_group is not None:
                os.chown(folder, -1, self.fs_group)
                folder.chmod(0o2777)
            return folder
        if "persistentVolumeClaim" in spec:
            claim = spec["persistentVolumeClaim"]["claimName"]
            path = self.claims[claim]
            if self.fs_group is not None:
                _own_group(path, self.fs_group, read_only=False)
            return path
        files = self._projected_files(spec)
        _atomic_write(folder, files)
        if self.fs_group is not None:
            _own_group(folder, self.fs_group, read_only=True)
        return folder

    def _projected_files(self, spec: Mapping[str, Any]) -> dict[str, tuple[bytes, int]]:
        """Path in the volume -> (content, mode), for a configMap, secret or projected volume."""
        if "projected" in spec:
            default = spec["projected"].get("defaultMode", DEFAULT_MODE)
            out: dict[str, tuple[bytes, int]] = {}
            for source in spec["projected"]["sources"]:
                (kind, ref), = source.items()
                out.update(self._keys(kind, ref, default))
            return out
        for kind in ("configMap", "secret"):
            if kind in spec:
                return self._keys(kind, spec[kind], spec[kind].get("defaultMode", DEFAULT_MODE))
        raise ValueError(f"volume {spec['name']}: a kind the sandbox does not lay out: {sorted(spec)}")

    def _keys(self, kind: str, ref: Mapping[str, Any], default: int) -> dict[str, tuple[bytes, int]]:
        name = ref.get("name") or ref.get("secretName")
        if kind == "configMap":
            data = {k: v.encode() for k, v in self.configmaps[name].items()}
        elif kind == "secret":
            data = dict(self.secrets[name])
        else:
            raise ValueError(f"projection {kind} is not laid out by the sandbox")
        items = ref.get("items") or [{"key": k, "path": k} for k in sorted(data)]
        return {item["path"]: (data[item["key"]], item.get("mode", default)) for item in items}

    # ---- containers ---------------------------------------------------------------------------
    def container(self, name: str) -> Mapping[str, Any]:
        every = [*self.spec.get("initContainers", []), *self.spec.get("containers", [])]
        (found,) = [c for c in every if c["name"] == name] or [None]
        if found is None:
            raise KeyError(f"no container {name!r} in the pod")
        return found

    def plan(self, name: str) -> Plan:
        """Container `name` as its pod runs it."""
        c = self.container(name)
        pod_sc, sc = self.spec.get("securityContext", {}), c.get("securityContext", {})
        uid = sc.get("runAsUser", pod_sc.get("runAsUser", 0))  # our images' default user is root
        gid = sc.get("runAsGroup", pod_sc.get("runAsGroup", 0))
        groups = tuple(g for g in (self.fs_group, *pod_sc.get("supplementalGroups", ())) if g is not None)
        env = sandbox.base_env(uid, self.hostname)
        for e in c.get("env", []):
            if "value" not in e:
                raise ValueError(f"container {name}: env {e['name']} is not a literal value; the sandbox does not resolve it")
            env[e["name"]] = e["value"]
        mounts = []
        for m in c.get("volumeMounts", []):
            source = self.volume(m["name"])
            if m.get("subPath"):
                source = _resolve_within(source, m["subPath"])
            mounts.append(Mount(m["mountPath"], source, read_only=bool(m.get("readOnly"))))
        argv = (*c.get("command", ()), *c.get("args", ()))
        if not argv:
            raise ValueError(f"container {name}: no command; the sandbox has no image entrypoint to fall back on")
        return Plan(argv=tuple(argv), env=env, uid=uid, gid=gid, groups=groups, mounts=tuple(mounts),
                    cwd=c.get("workingDir", "/"))

    def command(self, name: str) -> list[str]:
        """The argv that starts container `name` in a sandbox of its own (a fresh root at each start)."""
        return sandbox.command(self.plan(name), self.root / "containers" / f"{name}-{_next(self.root)}")

    def run(self, name: str, timeout: float = 120) -> subprocess.CompletedProcess:
        """Run container `name` to its end (an init container, a Job's container)."""
        return subprocess.run(self.command(name), capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)


def _next(root: Path) -> int:
    """A new number per container start under `root` (a restarted container gets a fresh root)."""
    runs = root / "containers"
    runs.mkdir(parents=True, exist_ok=True)
    return len(list(runs.iterdir()))


def _atomic_write(folder: Path, files: Mapping[str, tuple[bytes, int]]) -> None:
    """The kubelet's layout: <folder>/..<time>/<path>, ..data -> ..<time>, <top> -> ..data/<top>."""
    payload = folder / PAYLOAD
    payload.mkdir(parents=True)
    for rel, (content, mode) in files.items():
        path = payload / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        path.chmod(mode)
    (folder / "..data").symlink_to(PAYLOAD)
    for top in sorted({PurePosixPath(rel).parts[0] for rel in files}):
        (folder / top).symlink_to(f"..data/{top}")


def _own_group(folder: Path, gid: int, read_only: bool) -> None:
    """SetVolumeOwnership: group `gid`, group read (and write unless read-only), setgid and x on folders."""
    mask = 0o440 if read_only else 0o660
    for path in [folder, *folder.rglob("*")]:
        if path.is_symlink():
            continue
        os.chown(path, -1, gid)
        mode = path.stat().st_mode & 0o7777
        path.chmod(mode | mask | (0o2000 | 0o110 if path.is_dir() else 0))


def _resolve_within(volume: Path, sub: str) -> Path:
    """A subPath, links followed, which must stay inside the volume (the kubelet refuses an escape)."""
    resolved = (volume / sub).resolve()
    if not resolved.is_relative_to(volume.resolve()):
        raise ValueError(f"subPath {sub} leaves its volume")
    if not resolved.exists():
        raise FileNotFoundError(f"subPath {sub}: not in the volume (the kubelet would make an empty folder)")
    return resolved
