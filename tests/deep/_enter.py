"""Enter a sandbox and run one program in it: the process half of tests/deep/sandbox.py.

Run as root, as `python3 _enter.py PLAN.json`. Standard library only, nothing imported from the repository:
it runs before the program it starts and must not depend on the test process's modules.

1. unshare(2) a mount and a PID namespace; the mount namespace is made private, so nothing mounted here
   reaches the host.
2. Fork the namespace's init (PID 1). It builds a new root on a tmpfs: the machine's programs read-only
   (/usr, the Slurm build), a copy of /etc, fresh /run and /tmp, /dev, /sys, a /proc of its own, then the
   plan's mounts; it chroots there and starts the program with the plan's user, groups, env and argv.
3. The parent stays outside, forwards SIGTERM/SIGINT/SIGHUP to that init and exits with the program's
   status. The init dies with its parent (PR_SET_PDEATHSIG) and takes every process of the namespace with
   it (a job's slurmstepd included), so no sandbox outlives the test that started it.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import sys
import warnings  # noqa: F401 - loaded before chroot: the program's root has no Python library

CLONE_NEWNS = 0x00020000
CLONE_NEWPID = 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG = 1

libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _bytes(text: str | None) -> bytes | None:
    return None if text is None else text.encode()


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = _bytes
    _check(libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
           f"mount {source} on {target}")


def bind(source: str, target: str, read_only: bool, recursive: bool = False) -> None:
    mount(source, target, None, MS_BIND | (MS_REC if recursive else 0))
    if read_only:
        mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID)


def _mkpoint(target: str, source_is_dir: bool) -> None:
    """The mount point: a folder, or an empty file for a file (a subPath of a ConfigMap key)."""
    if source_is_dir:
        os.makedirs(target, exist_ok=True)
        return
    os.makedirs(os.path.dirname(target), exist_ok=True)
    if not os.path.exists(target):
        open(target, "w").close()


def build_root(plan: dict) -> str:
    """The image-like root: what every container of ours sees before its pod's volumes."""
    root = plan["root"]
    os.makedirs(root, exist_ok=True)
    mount("tmpfs", root, "tmpfs", MS_NOSUID, "mode=0755")
    for name in ("bin", "sbin", "lib", "lib64"):  # merged /usr, as Debian and Ubuntu images have it
        if os.path.islink(f"/{name}"):
            os.symlink(os.readlink(f"/{name}"), f"{root}/{name}")
    for path in plan["programs"]:  # the machine's programs stand for the image's: read-only
        _mkpoint(root + path, True)
        bind(os.path.realpath(path), root + path, read_only=True)
    # /etc: a private copy (users, libraries' settings, alternatives), writable like an image layer
    shutil.copytree("/etc", f"{root}/etc", symlinks=True, ignore_dangling_symlinks=True)
    for link, target in plan.get("etc_links", {}).items():
        path = f"{root}/etc/{link}"
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.unlink(path)
        os.symlink(target, path)
    for path, mode in (("/run", 0o755), ("/tmp", 0o1777), ("/var/tmp", 0o1777)):
        os.makedirs(root + path, exist_ok=True)
        mount("tmpfs", root + path, "tmpfs", MS_NOSUID | MS_NODEV, f"mode={mode:o}")
    for path in ("/var/log", "/var/spool", "/var/lib", "/var/cache", "/home", "/root", "/mnt", "/opt"):
        os.makedirs(root + path, exist_ok=True)
    os.chmod(f"{root}/root", 0o700)
    for path in ("/dev", "/sys"):
        _mkpoint(root + path, True)
        bind(path, root + path, read_only=False, recursive=True)
    os.makedirs(f"{root}/proc", exist_ok=True)
    mount("proc", f"{root}/proc", "proc", MS_NOSUID | MS_NODEV)  # this PID namespace's processes only
    # the pod's volumes, parents first (the plan lists them in mount order)
    for m in plan["mounts"]:
        target = root + m["target"]
        if m["source"] is None:
            _mkpoint(target, True)
            mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, f"mode={m.get('mode', 0o755):o}")
        else:
            _mkpoint(target, os.path.isdir(m["source"]))
            bind(m["source"], target, read_only=m["read_only"])
    return root


def run_init(plan: dict) -> int:
    """PID 1 of the namespace: build the root, start the program, reap, forward signals, return its status."""
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    root = build_root(plan)
    os.chroot(root)
    os.chdir("/")
    pid = os.fork()
    if pid == 0:
        try:
            os.chdir(plan.get("cwd", "/"))
            os.setgroups(plan["groups"])
            os.setgid(plan["gid"])
            os.setuid(plan["uid"])
            os.umask(0o022)
            os.execvpe(plan["argv"][0], plan["argv"], plan["env"])
        except OSError as exc:
            print(f"sandbox: cannot start {plan['argv'][0]}: {exc}", file=sys.stderr)
            os._exit(127)
    forward(pid)
    while True:
        try:
            done, status = os.waitpid(-1, 0)  # reap orphans too: this is the namespace's init
        except ChildProcessError:
            return 1
        except InterruptedError:
            continue
        if done == pid:
            return exit_code(status)


def exit_code(status: int) -> int:
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


def forward(pid: int) -> None:
    """Pass the stop signals on to `pid` (gone already: nothing to do)."""
    def handler(sig: int, _frame) -> None:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, handler)


def main(path: str) -> int:
    with open(path) as f:
        plan = json.load(f)
    _check(libc.unshare(CLONE_NEWNS | CLONE_NEWPID), "unshare")
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    child = os.fork()  # the first child is PID 1 of the new namespace
    if child == 0:
        try:
            code = run_init(plan)
        except BaseException as exc:  # noqa: BLE001 - any failure to build the sandbox is the sandbox's
            print(f"sandbox: {exc}", file=sys.stderr)
            code = 125
        os._exit(code)
    forward(child)
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except InterruptedError:
            continue
    return exit_code(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
