"""Build the pinned upstream programs of rehearse/upstream/ into a cache outside the repository.

The cache folder is keyed by a hash of the Go module (go.mod, go.sum, the main packages) and the Go
version, so a change of pin or of toolchain builds anew and an unchanged one reuses the binaries:
``${XDG_CACHE_HOME:-~/.cache}/slurmgen/rehearse/<key>/bin/``. Only the go command is used, and it
fetches modules only from the Go module proxy it is configured with.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Mapping

UPSTREAM = Path(__file__).resolve().parent / "upstream"
#: program -> its main package in rehearse/upstream
PROGRAMS = {"etcd": "./cmd/etcd", "kube-apiserver": "./cmd/kube-apiserver", "rehearse-keys": "./cmd/rehearse-keys"}
#: The Kubernetes release k8s.io/kubernetes is pinned at in upstream/go.mod: its version stamp (the
#: variables hack/lib/version.sh sets at build time) so that /version reports it.
KUBERNETES_VERSION = "v1.34.4"


class BuildError(RuntimeError):
    """The go command is missing or failed: the message says which and why."""


class GoUnavailable(BuildError):
    """No go command, or the pinned modules cannot be downloaded (no module proxy): the rehearsal
    cannot be built on this machine, which is not a fault of the tree."""


def go_binary() -> str:
    """The go command on PATH, or BuildError saying it is needed."""
    found = shutil.which("go")
    if found is None:
        raise GoUnavailable("the go command is not on PATH (the rehearsal builds kube-apiserver and etcd with Go)")
    return found


def go_version(go: str) -> str:
    """`go env GOVERSION`, e.g. go1.26.8: part of the cache key."""
    return subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, check=True).stdout.strip()


def cache_key(go_ver: str) -> str:
    """A short hash of the pinned module (go.mod, go.sum, every main package), the version stamp and
    the Go version: a change of any of them builds anew."""
    digest = hashlib.sha256(go_ver.encode())
    digest.update(ldflags().encode())
    for path in [UPSTREAM / "go.mod", UPSTREAM / "go.sum", *sorted(UPSTREAM.glob("cmd/*/*.go"))]:
        digest.update(str(path.relative_to(UPSTREAM.parent)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/slurmgen/rehearse`` (``~/.cache`` when unset or relative) in `environ` (the
    process's by default): outside the repository."""
    base = (os.environ if environ is None else environ).get("XDG_CACHE_HOME", "")
    return (Path(base) if os.path.isabs(base) else Path.home() / ".cache") / "slurmgen" / "rehearse"


def ldflags() -> str:
    """The version stamp kube-apiserver reports at /version (as upstream's hack/lib/version.sh sets it)."""
    major, minor = KUBERNETES_VERSION.lstrip("v").split(".")[:2]
    stamp = {"gitVersion": KUBERNETES_VERSION, "gitMajor": major, "gitMinor": minor, "gitTreeState": "clean"}
    pkgs = ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
    return " ".join(f"-X {pkg}.{k}={v}" for pkg in pkgs for k, v in stamp.items()) + " -s -w"


def say(message: str) -> None:
    """Progress on stderr: a cold build takes many minutes and must not be silent."""
    print(f"rehearse: {message}", file=sys.stderr, flush=True)


def build(force: bool = False, root: Path | None = None) -> Path:
    """The folder holding every program of PROGRAMS, built now where missing, under `root` (cache_root()
    by default); BuildError on failure."""
    go = go_binary()
    bin_dir = (root or cache_root()) / cache_key(go_version(go)) / "bin"
    missing = [name for name in PROGRAMS if force or not (bin_dir / name).is_file()]
    if not missing:
        return bin_dir
    bin_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": os.environ.get("GOFLAGS", "") + " -mod=readonly"}
    started = time.monotonic()
    say(f"downloading the pinned Go modules of {UPSTREAM} (go mod download; once per module cache)")
    try:
        _go([go, "mod", "download"], env)
    except BuildError as exc:
        raise GoUnavailable(f"{exc}: is the Go module proxy ({_goproxy(go)}) reachable?") from exc
    say(f"modules ready ({time.monotonic() - started:.0f}s)")
    for name in missing:
        step = time.monotonic()
        say(f"building {name} (go build {PROGRAMS[name]}; a cold kube-apiserver takes many minutes on 2 cores)")
        tmp = bin_dir / f".{name}.{os.getpid()}.tmp"
        _go([go, "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags(), "-o", str(tmp), PROGRAMS[name]], env)
        tmp.replace(bin_dir / name)
        say(f"built {bin_dir / name} ({time.monotonic() - step:.0f}s)")
    say(f"build done in {time.monotonic() - started:.0f}s")
    return bin_dir


def _go(argv: list[str], env: dict[str, str]) -> None:
    """Run one go command in rehearse/upstream, its output passed through; BuildError when it fails."""
    code = subprocess.run(argv, cwd=UPSTREAM, env=env).returncode
    if code != 0:
        raise BuildError(f"`{' '.join(argv[1:3])}` in {UPSTREAM} exited {code} (its output is above)")


def _goproxy(go: str) -> str:
    return subprocess.run([go, "env", "GOPROXY"], capture_output=True, text=True).stdout.strip() or "GOPROXY"


def main() -> int:
    """`python -m rehearse.build [--force]`: build what is missing and print the binaries' folder."""
    try:
        print(build(force="--force" in sys.argv[1:]))
    except BuildError as exc:
        say(f"build failed: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
