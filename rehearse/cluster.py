"""etcd and kube-apiserver on loopback, in a temporary folder, stopped whatever happens.

Everything listens on 127.0.0.1 at ports the kernel picked free. kube-apiserver makes its own
self-signed serving certificate (--cert-dir), the admin user is a static token in group
system:masters (--token-auth-file), authorization is RBAC (as on EKS), and the service-account
key is fresh for each run (rehearse-keys). Flags and defaults: docs/rehearse.md.
"""

from __future__ import annotations

import ctypes
import json
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from .client import ApiClient

#: what a start may take before the rehearsal gives up (a first start on a slow machine: ~10 s)
START_TIMEOUT = 180.0
#: the Service CIDR: any private range works for a rehearsal; this one is kubeadm's default
SERVICE_CIDR = "10.96.0.0/12"


class StartError(RuntimeError):
    """A component did not come up: the message ends with the tail of its log."""


@dataclass
class ApiServer:
    """A running rehearsal API server: its client and the version it reports."""

    client: ApiClient
    version: str
    workdir: Path
    kubeconfig: Path  # for the components a later stage runs against it (controllers, Argo CD, kwok)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:
    """In the child before exec: on Linux, be killed when the rehearsal dies (even by SIGKILL)."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


@contextmanager
def process(argv: list[str], log: Path, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """Run `argv` with its output in `log` (and `env`, else the rehearsal's own); on leaving, stop it
    (SIGTERM, then SIGKILL after 10 s)."""
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True, preexec_fn=_die_with_parent)
        try:
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@dataclass
class Running:
    """Processes started together: `check()` raises StartError, with the end of its log, when one
    of them has exited (a component that dies mid-rehearsal must not read as a slow sync)."""

    procs: list[tuple[str, subprocess.Popen[bytes], Path]]

    def check(self) -> None:
        for name, proc, log in self.procs:
            if proc.poll() is not None:
                raise StartError(f"{name} exited with status {proc.returncode}; the end of {log}:\n{_tail(log)}")


def _tail(log: Path, lines: int = 15) -> str:
    text = log.read_text(errors="replace").splitlines() if log.exists() else []
    return "\n".join("    " + line for line in text[-lines:])


def _wait(ready, proc: subprocess.Popen[bytes], name: str, log: Path) -> None:
    """Poll `ready()` until true; StartError when `proc` exits or START_TIMEOUT passes."""
    deadline = time.monotonic() + START_TIMEOUT
    while not ready():
        if proc.poll() is not None:
            raise StartError(f"{name} exited with status {proc.returncode}; the end of {log}:\n{_tail(log)}")
        if time.monotonic() > deadline:
            raise StartError(f"{name} not ready after {START_TIMEOUT:.0f}s; the end of {log}:\n{_tail(log)}")
        time.sleep(0.3)


def listening(port: int) -> bool:
    """Something accepts TCP connections on 127.0.0.1:`port` (a component that is up)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def etcd_argv(bin_dir: Path, data: Path, client_port: int, peer_port: int) -> list[str]:
    """One etcd member on loopback, without TLS (nothing but the API server on this host talks to it)."""
    client, peer = f"http://127.0.0.1:{client_port}", f"http://127.0.0.1:{peer_port}"
    return [str(bin_dir / "etcd"), "--name=rehearse", f"--data-dir={data}",
            f"--listen-client-urls={client}", f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=rehearse={peer}", "--log-level=warn",
            "--unsafe-no-fsync"]  # a throw-away store: no need to wait for the disk


def apiserver_argv(bin_dir: Path, work: Path, etcd_port: int, port: int) -> list[str]:
    """kube-apiserver with the default admission plugins of its release, RBAC, privileged pods
    allowed (as EKS does: Slurm's pods need it) and a service-account issuer of its own."""
    key = work / "sa.key"
    return [str(bin_dir / "kube-apiserver"), f"--etcd-servers=http://127.0.0.1:{etcd_port}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={port}",
            f"--cert-dir={work / 'pki'}", f"--token-auth-file={work / 'tokens.csv'}",
            "--authorization-mode=RBAC", "--allow-privileged=true",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={key}", f"--service-account-signing-key-file={key}",
            "--profiling=false"]


@contextmanager
def api_server(bin_dir: Path, say) -> Iterator[ApiServer]:
    """etcd and kube-apiserver from `bin_dir`, ready to serve; both stopped (and the folder removed)
    on leaving, on success, failure or Ctrl-C."""
    with ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="slurmgen-rehearse-")))
        token = secrets.token_hex(24)
        (work / "tokens.csv").write_text(f'{token},rehearse-admin,rehearse-admin,"system:masters"\n')
        subprocess.run([str(bin_dir / "rehearse-keys"), str(work / "sa.key")], check=True)
        etcd_port, peer_port, port = free_port(), free_port(), free_port()
        started = time.monotonic()
        say(f"starting etcd on 127.0.0.1:{etcd_port} (data in {work})")
        etcd_log = work / "etcd.log"
        etcd = stack.enter_context(process(etcd_argv(bin_dir, work / "etcd", etcd_port, peer_port), etcd_log))
        _wait(lambda: listening(etcd_port), etcd, "etcd", etcd_log)
        say(f"starting kube-apiserver on https://127.0.0.1:{port}")
        log = work / "kube-apiserver.log"
        apiserver = stack.enter_context(process(apiserver_argv(bin_dir, work, etcd_port, port), log))
        ca = work / "pki" / "apiserver.crt"
        _wait(ca.exists, apiserver, "kube-apiserver", log)
        client = ApiClient(f"https://127.0.0.1:{port}", token, ca)
        _wait(lambda: _readyz(client), apiserver, "kube-apiserver", log)
        version = str(client.get("/version").body.get("gitVersion", "unknown"))
        say(f"kube-apiserver {version} ready ({time.monotonic() - started:.1f}s)")
        yield ApiServer(client, version, work, write_kubeconfig(work / "kubeconfig", client.base, ca, token))


def write_kubeconfig(path: Path, server: str, ca: Path, token: str, namespace: str = "") -> Path:
    """A kubeconfig for the admin user (JSON, which is YAML), mode 0600: what any other component
    of the rehearsal, or a person debugging it, points at the API server (in `namespace`, for a
    component that takes its own namespace from it, as Argo CD does)."""
    context = {"cluster": "rehearse", "user": "rehearse-admin", **({"namespace": namespace} if namespace else {})}
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "rehearse",
              "clusters": [{"name": "rehearse", "cluster": {"server": server, "certificate-authority": str(ca)}}],
              "users": [{"name": "rehearse-admin", "user": {"token": token}}],
              "contexts": [{"name": "rehearse", "context": context}]}
    path.touch(mode=0o600)
    path.write_text(json.dumps(config, indent=1) + "\n")
    return path


def _readyz(client: ApiClient) -> bool:
    try:
        return client.get("/readyz").ok
    except OSError:  # not listening yet, or TLS not up
        return False


@contextmanager
def controllers(bin_dir: Path, server: ApiServer, say) -> Iterator[Running]:
    """kube-controller-manager and kube-scheduler against `server`, and kwok playing the kubelet of
    every node annotated for it; all stopped on leaving.

    kube-controller-manager runs every controller of its release's default set (Deployments, Jobs,
    the garbage collector, namespace deletion, PersistentVolume binding...), signing service-account
    tokens with the API server's key. Neither it nor the scheduler serves HTTPS (--secure-port=0):
    nothing here reads their health endpoints."""
    work = server.workdir
    kwok_config = work / "kwok.yaml"  # empty: kwok's default stages (nodes Ready, pods Ready, Job pods Succeeded)
    kwok_config.write_text("")
    argvs = {
        "kube-controller-manager": [
            str(bin_dir / "kube-controller-manager"), f"--kubeconfig={server.kubeconfig}", "--leader-elect=false",
            "--secure-port=0", f"--service-account-private-key-file={work / 'sa.key'}",
            f"--root-ca-file={work / 'pki' / 'apiserver.crt'}", "--use-service-account-credentials=false",
            f"--service-cluster-ip-range={SERVICE_CIDR}", "--controllers=*"],
        "kube-scheduler": [str(bin_dir / "kube-scheduler"), f"--kubeconfig={server.kubeconfig}", "--leader-elect=false",
                           "--secure-port=0"],
        "kwok": [str(bin_dir / "kwok"), f"--kubeconfig={server.kubeconfig}", f"--config={kwok_config}",
                 "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake", "--cidr=10.64.0.1/16",
                 "--node-ip=127.0.0.1", "--node-lease-duration-seconds=40",  # Leases, as kubelets renew them
                 f"--server-address=127.0.0.1:{free_port()}"],
    }
    say("starting kube-controller-manager, kube-scheduler and kwok")
    with ExitStack() as stack:
        procs = [(name, stack.enter_context(process(argv, work / f"{name}.log")), work / f"{name}.log")
                 for name, argv in argvs.items()]
        yield Running(procs)
