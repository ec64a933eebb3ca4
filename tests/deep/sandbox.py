"""One process with only what its pod would give it, for the deep tests.

A pod's container sees its image's files, the volumes its spec mounts, an empty `/run` and `/tmp` of its
own, its env and its user; nothing of another pod but the network. `Plan` says that much for one
program; `command` turns it into the argv that runs it (`_enter.py`: a mount and a PID namespace of its
own, a fresh root, chroot). Every rendered container the tests play (init containers, the accounts Job,
the topology labeler's script) and every daemon that stands for a pod (slurmctld, slurmdbd, each slurmd,
the login pod's sackd) runs in one: no socket and no file crosses between them except over loopback TCP.

Where a sandbox must still differ from a real pod, `DIFFERENCES` says so, with the reason; nothing else
does. Root only (namespaces, chroot, mounts).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

#: the build's compiled-in prefix (../shared/slurm/BUILD.md) holds the Slurm programs the images have in /usr
SLURM_PREFIX = "/opt/slurm2605"
#: The image's default PATH, behind the Slurm build's folders (the images have Slurm in /usr/bin, /usr/sbin).
PATH = f"{SLURM_PREFIX}/sbin:{SLURM_PREFIX}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
ENTER = Path(__file__).with_name("_enter.py")

#: Each place where a sandbox still differs from the pod it stands for, and why. Tests print it; a new
#: difference is added here or not made at all.
DIFFERENCES = {
    "image files": "the machine's /usr (read-only) and a copy of its /etc stand for the image's: Debian 12, "
                   "not the Slinky images' Ubuntu; the same shell, coreutils and awk family",
    "Slurm programs": f"Slurm 26.05.3 from ../shared/slurm, read-only at {SLURM_PREFIX} and first on PATH, "
                      "where the images have 26.05.1 in /usr",
    "/etc/slurm2605": "a link to /etc/slurm: the build's default config folder is /etc/slurm2605, the images' "
                      "is /etc/slurm (the pods mount their files there)",
    "network": "the host's network namespace: daemons listen on 127.0.0.1 at free ports, and names of "
               "Services (slurm-accounting, slurm-controller) are rewritten to 127.0.0.1 where a file names them",
    "/dev, /sys": "the host's, read-write (slurmd's cgroup/v1 plugin and the stand-in GPU device files need them)",
    "users": "uid 401 is the host's `slurm` (the images' SlurmUser, the operator's SlurmUserUid)",
    "kubelet env": "no KUBERNETES_* Service variables and no service-account token (none of our scripts reads them)",
    "MariaDB": "runs on the host as the database a pod reaches over TCP (MariaDB CR or RDS)",
    "entrypoints": "a container without `command` (slurmctld, slurmdbd, slurmd, sackd) gets the command its "
                   "image's entrypoint runs in the foreground; our containers run their rendered command",
    "sidecars": "the operator's logfile sidecar is not run (it only tails the log); probes are not called",
}


@dataclass(frozen=True)
class Mount:
    """A bind mount of `source` (a file or a folder) at `target`, or a fresh tmpfs when `source` is None."""

    target: str
    source: Path | None = None
    read_only: bool = False
    mode: int = 0o755


@dataclass(frozen=True)
class Plan:
    """One program in its sandbox: argv, env, user and the mounts on top of the image-like root."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    uid: int = 0
    gid: int = 0
    groups: tuple[int, ...] = ()
    mounts: tuple[Mount, ...] = ()
    cwd: str = "/"
    programs: tuple[str, ...] = ("/usr", SLURM_PREFIX)
    etc_links: Mapping[str, str] = field(default_factory=lambda: {"slurm2605": "slurm"})

    def with_mounts(self, *mounts: Mount) -> Plan:
        return Plan(self.argv, self.env, self.uid, self.gid, self.groups, (*self.mounts, *mounts), self.cwd,
                    self.programs, self.etc_links)


def _ordered(mounts: tuple[Mount, ...]) -> list[Mount]:
    """Parents before children, as a mount under a mount needs (the kubelet sorts the same way)."""
    return sorted(mounts, key=lambda m: (m.target.rstrip("/").count("/"), m.target))


def command(plan: Plan, scratch: Path) -> list[str]:
    """The argv that runs `plan` in its sandbox; its root is built under `scratch` (a fresh folder)."""
    scratch.mkdir(parents=True, exist_ok=True)
    for m in plan.mounts:
        if m.source is not None and not m.source.exists():
            raise FileNotFoundError(f"sandbox mount {m.target}: {m.source} does not exist")
    data = {
        "root": str(scratch / "root"), "argv": list(plan.argv), "env": dict(plan.env),
        "uid": plan.uid, "gid": plan.gid, "groups": sorted({plan.gid, *plan.groups}), "cwd": plan.cwd,
        # the Slurm build is there when ../shared is (harness.link_prefix); a program it lacks fails plainly
        "programs": [p for p in plan.programs if os.path.exists(p)], "etc_links": dict(plan.etc_links),
        "mounts": [{"target": m.target, "source": None if m.source is None else str(m.source),
                    "read_only": m.read_only, "mode": m.mode} for m in _ordered(plan.mounts)],
    }
    path = scratch / "plan.json"
    path.write_text(json.dumps(data, indent=1))
    return [sys.executable, "-I", "-S", str(ENTER), str(path)]


def base_env(uid: int, hostname: str = "pod") -> dict[str, str]:
    """What the container runtime sets before the container's own env."""
    return {"PATH": PATH, "HOSTNAME": hostname, "HOME": "/root" if uid == 0 else "/"}


def missing() -> str | None:
    """Why sandboxes cannot run here, or None."""
    if os.geteuid() != 0:
        return "deep test: the pod sandbox needs root (mount and PID namespaces, chroot)"
    return None
