"""Build the pinned upstream programs of rehearse/upstream/ into a cache outside the repository.

rehearse/upstream/ holds one Go module per upstream product (kubernetes, kwok, argocd, helm). Each
module's programs are cached in a folder keyed by a hash of that module (go.mod, go.sum, its main
packages, the version stamps) and the Go version, so a change of pin or of toolchain builds that
module anew and an unchanged one reuses its binaries:
``${XDG_CACHE_HOME:-~/.cache}/slurmgen/rehearse/<module>-<key>/``. Only the go command is used, and
it fetches modules only from the Go module proxy it is configured with.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from dataclasses import dataclass
from typing import Iterable, Mapping

UPSTREAM = Path(__file__).resolve().parent / "upstream"


@dataclass(frozen=True)
class Program:
    """One upstream program: the Go module folder under rehearse/upstream that pins it, the package
    `go build` builds there, and the version stamp upstream's release build gives it (-X flags)."""

    module: str
    package: str
    stamp: tuple[tuple[str, str], ...] = ()


#: The Kubernetes release k8s.io/kubernetes is pinned at: its version stamp (the variables
#: hack/lib/version.sh sets at build time), so that /version and the logs report it.
KUBERNETES_VERSION = "v1.34.4"
ARGOCD_VERSION = "v3.3.0"
HELM_VERSION = "v3.19.4"
HELM_CLIENT_GO_MINOR = "34"  # k8s.io/client-go v0.34.x in rehearse/upstream/helm/go.mod


def _kubernetes_stamp() -> tuple[tuple[str, str], ...]:
    major, minor = KUBERNETES_VERSION.lstrip("v").split(".")[:2]
    stamp = {"gitVersion": KUBERNETES_VERSION, "gitMajor": major, "gitMinor": minor, "gitTreeState": "clean"}
    return tuple((f"{pkg}.{k}", v) for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
                 for k, v in stamp.items())


_K8S = _kubernetes_stamp()
#: program -> how it is built. Each upstream product has a module of its own, so that none moves
#: another's dependencies: each is built with the versions its own go.mod chose.
PROGRAMS = {
    "etcd": Program("kubernetes", "./cmd/etcd"),
    "kube-apiserver": Program("kubernetes", "./cmd/kube-apiserver", _K8S),
    "kube-controller-manager": Program("kubernetes", "k8s.io/kubernetes/cmd/kube-controller-manager", _K8S),
    "kube-scheduler": Program("kubernetes", "k8s.io/kubernetes/cmd/kube-scheduler", _K8S),
    "rehearse-keys": Program("kubernetes", "./cmd/rehearse-keys"),
    "kwok": Program("kwok", "sigs.k8s.io/kwok/cmd/kwok"),
    # the stamps of Argo CD's Makefile (LDFLAGS) and of helm's (internal/version)
    "argocd": Program("argocd", "./cmd/argocd", (("github.com/argoproj/argo-cd/v3/common.version", ARGOCD_VERSION[1:]),
                                                 ("github.com/argoproj/argo-cd/v3/common.gitTreeState", "clean"))),
    # helm's Makefile also stamps the Kubernetes version its client-go is (v0.34 -> 1.34), its default
    # for charts' kubeVersion when no --kube-version is given
    "helm": Program("helm", "helm.sh/helm/v3/cmd/helm", (
        ("helm.sh/helm/v3/internal/version.version", HELM_VERSION),
        ("helm.sh/helm/v3/internal/version.gitTreeState", "clean"),
        *((f"helm.sh/helm/v3/pkg/{pkg}.k8sVersion{part}", value) for pkg in ("chartutil", "lint/rules")
          for part, value in (("Major", "1"), ("Minor", HELM_CLIENT_GO_MINOR))))),
}
#: what the first stage (the API server's dry-run) needs; the sync stage needs every program
API_SERVER = ("etcd", "kube-apiserver", "rehearse-keys")


class BuildError(RuntimeError):
    """The go command is missing or failed: the message says which and why."""


class GoUnavailable(BuildError):
    """No go command, or the pinned modules cannot be downloaded (no module proxy): the rehearsal
    cannot be built on this machine, which is not a fault of the tree."""


def go_binary() -> str:
    """The go command on PATH, or GoUnavailable saying it is needed."""
    found = shutil.which("go")
    if found is None:
        raise GoUnavailable("the go command is not on PATH (the rehearsal builds its upstream programs with Go)")
    return found


def go_version(go: str) -> str:
    """`go env GOVERSION`, e.g. go1.26.8: part of the cache key."""
    return subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, check=True).stdout.strip()


def module_key(module: str, go_ver: str) -> str:
    """A short hash of one pinned module (go.mod, go.sum, its main packages), the stamps of its
    programs and the Go version: a change of any of them builds that module's programs anew."""
    folder = UPSTREAM / module
    digest = hashlib.sha256(go_ver.encode())
    for name, program in sorted(PROGRAMS.items()):
        if program.module == module:
            digest.update(f"{name}\0{program.package}\0{ldflags(program)}\0".encode())
    for path in [folder / "go.mod", folder / "go.sum", *sorted(folder.glob("cmd/*/*.go"))]:
        digest.update(str(path.relative_to(UPSTREAM)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/slurmgen/rehearse`` (``~/.cache`` when unset or relative) in `environ` (the
    process's by default): outside the repository."""
    base = (os.environ if environ is None else environ).get("XDG_CACHE_HOME", "")
    return (Path(base) if os.path.isabs(base) else Path.home() / ".cache") / "slurmgen" / "rehearse"


def ldflags(program: Program) -> str:
    """The program's version stamp, as its upstream release build sets it, and no symbol table."""
    return " ".join(f"-X {var}={value}" for var, value in program.stamp) + " -s -w"


def say(message: str) -> None:
    """Progress on stderr: a cold build takes many minutes and must not be silent."""
    print(f"rehearse: {message}", file=sys.stderr, flush=True)


def build(names: Iterable[str] = tuple(PROGRAMS), force: bool = False, root: Path | None = None) -> Path:
    """A folder holding each program of `names` (every one by default), built now where missing,
    under `root` (cache_root() by default); BuildError on failure.

    Each module's programs live in ``<root>/<module>-<key>/``; the folder returned,
    ``<root>/bin-<keys>/``, links to them by name, so callers run ``folder / "kube-apiserver"``."""
    go = go_binary()
    go_ver = go_version(go)
    root = root or cache_root()
    names = sorted(set(names))
    keys = {module: module_key(module, go_ver) for module in sorted({PROGRAMS[n].module for n in names})}
    started = time.monotonic()
    for module, key in keys.items():
        folder = root / f"{module}-{key}"
        missing = [n for n in names if PROGRAMS[n].module == module and (force or not (folder / n).is_file())]
        if missing:
            _build_module(go, module, folder, missing)
    links = root / ("bin-" + hashlib.sha256(repr(sorted(keys.items())).encode()).hexdigest()[:16])
    links.mkdir(parents=True, exist_ok=True)
    for name in names:
        target = root / f"{PROGRAMS[name].module}-{keys[PROGRAMS[name].module]}" / name
        link = links / name
        if not link.is_symlink() or os.readlink(link) != str(target):
            tmp = links / f".{name}.{os.getpid()}.link"
            tmp.unlink(missing_ok=True)
            tmp.symlink_to(target)
            tmp.replace(link)
    if time.monotonic() - started > 5:
        say(f"build done in {time.monotonic() - started:.0f}s")
    return links


def _build_module(go: str, module: str, folder: Path, names: list[str]) -> None:
    """Download one module's pinned dependencies, then build `names` into `folder` (each written
    under a temporary name and renamed, so a build cut short leaves nothing that looks built)."""
    folder.mkdir(parents=True, exist_ok=True)
    cwd = UPSTREAM / module
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": os.environ.get("GOFLAGS", "") + " -mod=readonly"}
    started = time.monotonic()
    say(f"downloading the pinned Go modules of {cwd} (go mod download; once per module cache)")
    try:
        _go([go, "mod", "download"], env, cwd)
    except BuildError as exc:
        raise GoUnavailable(f"{exc}: is the Go module proxy ({_goproxy(go)}) reachable?") from exc
    say(f"modules ready ({time.monotonic() - started:.0f}s)")
    for name in names:
        program = PROGRAMS[name]
        step = time.monotonic()
        say(f"building {name} (go build {program.package}; a cold build takes minutes on 2 cores)")
        tmp = folder / f".{name}.{os.getpid()}.tmp"
        _go([go, "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags(program), "-o", str(tmp),
             program.package], env, cwd)
        tmp.replace(folder / name)
        say(f"built {folder / name} ({time.monotonic() - step:.0f}s)")


def module_source(module: str, path: str) -> Path:
    """The folder of the pinned upstream module `path` in the Go module cache, as the module folder
    `module` pins it (`go list -m`): where the rehearsal reads upstream's own manifests, such as
    Argo CD's install settings, at the version it runs."""
    go = go_binary()
    env = {**os.environ, "GOFLAGS": os.environ.get("GOFLAGS", "") + " -mod=readonly"}
    done = subprocess.run([go, "list", "-m", "-f", "{{.Dir}}", path], cwd=UPSTREAM / module, env=env,
                          capture_output=True, text=True)
    folder = Path(done.stdout.strip())
    if done.returncode != 0 or not folder.is_dir():
        raise BuildError(f"`go list -m {path}` in {UPSTREAM / module}: {done.stderr.strip() or 'not downloaded'}")
    return folder


def _go(argv: list[str], env: dict[str, str], cwd: Path) -> None:
    """Run one go command in a module folder, its output passed through; BuildError when it fails."""
    code = subprocess.run(argv, cwd=cwd, env=env).returncode
    if code != 0:
        raise BuildError(f"`{' '.join(argv[1:3])}` in {cwd} exited {code} (its output is above)")


def _goproxy(go: str) -> str:
    return subprocess.run([go, "env", "GOPROXY"], capture_output=True, text=True).stdout.strip() or "GOPROXY"


def main() -> int:
    """`python -m rehearse.build [--force] [PROGRAM ...]`: build what is missing (every program, or
    those named) and print the folder that links to them."""
    args = sys.argv[1:]
    names = [a for a in args if not a.startswith("-")] or list(PROGRAMS)
    unknown = sorted(set(names) - set(PROGRAMS))
    if unknown:
        say(f"no program {', '.join(unknown)}; there are {', '.join(PROGRAMS)}")
        return 2
    try:
        print(build(names, force="--force" in args))
    except BuildError as exc:
        say(f"build failed: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
