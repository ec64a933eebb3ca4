"""The one path rule: every path a spec gives is checked as the consumer will read it.

Why: a prefix check on the literal text is not what the kernel resolves. `/fsx/../etc` starts with
`/fsx/` but names `/etc`; `/fsx//home` and `/fsx/.` are other spellings of paths a check compared
by text would miss. So a path must already be in normal form (posixpath.normpath: no `.` or `..`
part, no empty part, no trailing `/`) before any other check reads it, and the checks compare
parts (`within`), never prefixes of text.

A volume mounted over a folder hides what the image or the operator put there. The pods that
mount FSx are the slurmd and login pods of slurm-operator v1.2.1, which mounts (internal/builder/
common/const.go, loginbuilder/login_app.go, workerbuilder/worker_app.go at tag v1.2.1):
/etc/slurm (slurm.conf, slurm.key), /mnt/slurm and /mnt/etc/slurm (its init container's copies),
/run (PidFile) with /run/slurm (sackd) and /run/slurmctld, /var/log/slurm, /var/spool/slurmd and
/var/spool/slurmctld, /etc/ssh (sshd_config and host keys), /etc/sssd and /root/.ssh; slurmgen
mounts /dev/shm (charts/storage.py) and /etc/pam.d/common-session (charts/directory.py). The
images' own trees (Debian/Ubuntu: /usr, /bin, /sbin, /lib*, /etc, /var/lib, /boot) and the kernel's
(/dev, /proc, /sys) hold what every process runs. A mount at, above or inside any of them is refused.

Kubelet writes a ConfigMap or Secret volume through a folder `..data` and timestamped `..<time>`
folders (pkg/volume/util/atomic_writer.go), and the API server refuses an item path with a `..`
part or starting with `..` (validateLocalNonReservedPath) and a key `.`, `..` or starting with
`..` (IsConfigMapKey): such a key can never exist, and such a path is refused at apply.
"""

from __future__ import annotations

import posixpath

#: Folders no user volume may be mounted at, above or inside (see the module's doc).
RESERVED_TREES = (
    "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/run", "/sbin", "/sys", "/usr",
    "/var/lib", "/var/log/slurm", "/var/spool/slurmd", "/var/spool/slurmctld", "/mnt/slurm", "/mnt/etc/slurm",
    "/root/.ssh",
)


def form_problem(path: str) -> str | None:
    """Why an absolute path is not in normal form, or None: the message names the normal form."""
    if not path.startswith("/"):
        return "must be an absolute path (starting with /)"
    parts = path.split("/")[1:]
    if path != "/" and ("" in parts or "." in parts or ".." in parts):
        shown = {"..": "'..' (a parent)", ".": "'.'", "": "an empty part ('//' or a trailing '/')"}
        bad = next(shown[part] for part in parts if part in shown)
        fix = _normal(path)
        return (f"has {bad}; write the path in its normal form" + (f" ({fix})" if fix and ".." not in parts else "")
                + ", as the container runtime resolves it")
    return None


def _normal(path: str) -> str:
    return "/" + posixpath.normpath(path).lstrip("/")


def within(path: str, folder: str) -> bool:
    """Whether normal-form `path` is `folder` or inside it, part by part (`/fsx2` is not in `/fsx`)."""
    return folder == "/" or path == folder or path.startswith(folder + "/")


def mount_problem(path: str) -> str | None:
    """Why a volume may not be mounted at normal-form `path`, or None."""
    if path == "/":
        return "would hide the image's whole file system"
    for tree in RESERVED_TREES:
        if within(tree, path):
            return f"would hide {tree}, which the image or slurm-operator v1.2.1 provides"
        if within(path, tree):
            return f"is inside {tree}, which the image or slurm-operator v1.2.1 provides"
    return None


def item_name_problem(name: str) -> str | None:
    """Why a ConfigMap/Secret key (also used as a projected item path) can never be mounted, or None."""
    if name in (".", ".."):
        return f"{name!r} is not a key a ConfigMap or Secret can hold"
    if name.startswith(".."):
        return (f"{name!r} starts with '..', which kubelet reserves for its own folders in a volume (..data); "
                "no ConfigMap or Secret key can start so")
    return None
