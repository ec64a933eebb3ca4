"""Real Slurm 26.05 daemons on loopback for the deep tests: MariaDB, slurmdbd, slurmctld, dynamic slurmd.

The daemons come from `../shared/slurm` (see its BUILD.md); nothing here is used by what users run.
Every daemon listens on 127.0.0.1 only, keeps its state under one temporary folder and is stopped by
`Site.close()`. The configuration is the effective one `--explain` assembles from a rendered tree,
changed only where this machine forces it (`LOCAL_CHANGES` says each change and why).
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

from tests.conftest import SHARED

REPO = Path(__file__).resolve().parents[2]
#: the deep tests' own cluster specs (the shapes of the shipped examples; never clusters/)
SPECS = Path(__file__).resolve().parents[1] / "specs"
SHARED_SLURM = SHARED / "slurm"
#: the build's compiled-in prefix (BUILD.md): slurmd starts slurmstepd from here
PREFIX = Path("/opt/slurm2605")
#: Debian run-time packages BUILD.md names (libraries, and MariaDB for slurmdbd)
RUNTIME_FILES = {"mariadbd": Path("/usr/sbin/mariadbd"), "mariadb-install-db": Path("/usr/bin/mariadb-install-db"),
                 "mariadb": Path("/usr/bin/mariadb")}

#: Each change this harness makes to the effective files, with the reason the environment forces it.
LOCAL_CHANGES = {
    "SlurmctldHost": "the pod name and Service become localhost(127.0.0.1)",
    "SlurmctldPort/SlurmdPort/AccountingStoragePort": "free loopback ports, not 6817-6819",
    "AccountingStorageHost": "127.0.0.1 instead of the Accounting Service",
    "StateSaveLocation/SlurmdSpoolDir/*LogFile/*PidFile": "paths under the test's folder (%n per slurmd)",
    "AuthAltParameters": "jwt_key path under the test's folder",
    "CommunicationParameters=NoInAddrAny,NoCtldInAddrAny": "loopback only",
    "SlurmdParameters=config_overrides": "nodes declare more CPUs/memory than this machine has",
    "CgroupPlugin=cgroup/v1": "this build has only cgroup/v1 (BUILD.md); EKS nodes use v2",
    "gres.conf AutoDetect": "no NVML in this build: File= lines on stand-in device files",
    "slurmdbd.conf Storage*/DbdHost/DbdPort/LogFile/PidFile": "the test's MariaDB and paths",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def missing() -> str | None:
    """Why the real daemons cannot run here, or None."""
    if not (SHARED_SLURM / "sbin" / "slurmctld").exists():
        return f"deep test: needs {SHARED_SLURM} (real Slurm daemons beside the checkout), which is absent"
    for what, path in RUNTIME_FILES.items():
        if not path.exists():
            return f"deep test: needs {what} (Debian mariadb-server, see {SHARED_SLURM}/BUILD.md); .ci/run installs it"
    if os.geteuid() != 0:
        return "deep test: the real Slurm daemons need root (SlurmUser, cgroups, /opt prefix)"
    link_prefix()  # the binaries find libslurmfull.so through the compiled-in prefix: link it before probing
    probe = subprocess.run([str(SHARED_SLURM / "sbin" / "slurmctld"), "-V"], capture_output=True, text=True)
    if probe.returncode != 0:
        return (f"deep test: {SHARED_SLURM}/sbin/slurmctld does not start here (run-time libraries, see "
                f"BUILD.md): {probe.stderr.strip()[:200]}")
    return None


def link_prefix() -> None:
    """Point the build's compiled-in prefix at this checkout's ../shared/slurm (BUILD.md; root only).

    A link left dangling or pointing at another checkout's build is replaced; a real folder is left
    alone. Without ../shared/slurm nothing is touched (a clone with nothing beside it)."""
    if not (SHARED_SLURM / "sbin" / "slurmctld").exists():
        return
    if PREFIX.is_symlink() and PREFIX.resolve() != SHARED_SLURM.resolve():
        PREFIX.unlink()
    if not PREFIX.exists():
        PREFIX.symlink_to(SHARED_SLURM.resolve())


def prepare_machine() -> None:
    """The build's prefix and the SlurmUser, as BUILD.md asks (root only)."""
    link_prefix()
    try:
        pwd.getpwnam("slurm")
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "slurm"],
                       check=True)
    for run_dir, owner in (("/run/slurmctld", "slurm"), ("/run/slurmdbd", "slurm"), ("/run/slurm", "root")):
        Path(run_dir).mkdir(exist_ok=True)
        shutil.chown(run_dir, owner, owner)


def wait_for(what: str, ok, timeout: float = 30.0, pause: float = 0.2, log: Path | None = None) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if ok():
            return
        time.sleep(pause)
    tail = log.read_text(errors="replace")[-3000:] if log and log.exists() else ""
    raise TimeoutError(f"{what}: not ready after {timeout} s\n{tail}")


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen
    log: Path

    def alive(self) -> bool:
        return self.popen.poll() is None

    def check(self) -> bool:
        """True while running; a daemon that exited is an error with its log's tail."""
        if not self.alive():
            raise AssertionError(f"{self.name} exited {self.popen.returncode}:\n"
                                 f"{self.log.read_text(errors='replace')[-3000:]}")
        return True

    def stop(self, timeout: float = 15.0) -> int | None:
        if self.alive():
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(5)
        return self.popen.returncode


def set_key(text: str, key: str, value: str | None) -> str:
    """slurm.conf with `key` set to `value` (None: removed), case-insensitively, in place or appended."""
    pattern = re.compile(rf"^{re.escape(key)}=.*$", re.IGNORECASE | re.MULTILINE)
    if value is None:
        return pattern.sub("", text)
    line = f"{key}={value}"
    if pattern.search(text):
        return pattern.sub(lambda _m: line, text, count=1)
    return text.rstrip("\n") + f"\n{line}\n"


@dataclass
class Site:
    """One folder of daemons. MariaDB and slurmdbd live as long as the site; slurmctld and slurmd are
    started and stopped by the tests."""

    root: Path
    procs: list[Proc] = field(default_factory=list)
    db_port: int = 0
    dbd_port: int = 0
    db_socket: Path = Path()

    # ---- MariaDB -------------------------------------------------------------------------
    def start_mariadb(self) -> None:
        data = self.root / "mariadb"
        data.mkdir(parents=True)
        self.db_socket = self.root / "mariadb.sock"
        subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={data}", "--user=root",
                        "--auth-root-authentication-method=normal", "--skip-test-db"],
                       check=True, capture_output=True)
        self.db_port = free_port()
        self._start("mariadb", ["/usr/sbin/mariadbd", "--no-defaults", f"--datadir={data}",
                                f"--socket={self.db_socket}", "--bind-address=127.0.0.1", f"--port={self.db_port}",
                                "--user=root", f"--pid-file={self.root / 'mariadb.pid'}",
                                "--innodb-buffer-pool-size=32M", "--skip-log-bin"])
        wait_for("mariadb", lambda: self.db_socket.exists() and self.sql("select 1").returncode == 0,
                 log=self.root / "mariadb.log")
        self.sql("CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'test-only';"
                 "GRANT ALL ON *.* TO 'slurm'@'127.0.0.1'; FLUSH PRIVILEGES;", check=True)

    def sql(self, statement: str, check: bool = False) -> subprocess.CompletedProcess:
        return subprocess.run(["mariadb", "--no-defaults", "-S", str(self.db_socket), "-uroot", "-N", "-B",
                               "-e", statement], capture_output=True, text=True, check=check)

    # ---- processes -----------------------------------------------------------------------
    def _start(self, name: str, argv: list[str], env: Mapping[str, str] | None = None) -> Proc:
        log = self.root / f"{name}.log"
        out = log.open("ab")
        popen = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 env={**os.environ, **(env or {})}, start_new_session=True)
        out.close()
        proc = Proc(name, popen, log)
        self.procs.append(proc)
        return proc

    def close(self) -> None:
        for proc in reversed(self.procs):
            proc.stop()
        self.procs.clear()
        sweep(self.root)


    # ---- Slurm -----------------------------------------------------------------------------
    def slurm_env(self, etc: Path) -> dict[str, str]:
        return {"SLURM_CONF": str(etc / "slurm.conf"),
                "PATH": f"{SHARED_SLURM / 'bin'}:{SHARED_SLURM / 'sbin'}:{os.environ.get('PATH', '')}"}

    def start_slurmdbd(self, slurmdbd_conf: str) -> None:
        """slurmdbd on the site's MariaDB, from the effective slurmdbd.conf (storage and paths local)."""
        etc = self.root / "dbd-etc"
        etc.mkdir()
        self.dbd_port = free_port()
        text = slurmdbd_conf
        for key, value in {"DbdHost": "localhost", "DbdAddr": "127.0.0.1", "DbdPort": str(self.dbd_port),
                           "StorageHost": "127.0.0.1", "StoragePort": str(self.db_port),
                           "StoragePass": "test-only", "LogFile": str(self.root / "slurmdbd.log"),
                           "PidFile": str(self.root / "slurmdbd.pid"),
                           "AuthAltParameters": f"jwt_key={etc / 'jwt.key'}"}.items():
            text = set_key(text, key, value)
        write_keys(etc)
        conf = etc / "slurmdbd.conf"
        conf.write_text(text)
        conf.chmod(0o600)
        shutil.chown(conf, "slurm", "slurm")
        # slurmdbd finds slurm.key next to slurm.conf; a stub slurm.conf points there
        (etc / "slurm.conf").write_text("ClusterName=dbd\nSlurmctldHost=localhost\n")
        dbd = self._start("slurmdbd", [str(SHARED_SLURM / "sbin" / "slurmdbd"), "-D"], self.slurm_env(etc))
        wait_for("slurmdbd", lambda: dbd.check() and port_open(self.dbd_port), timeout=60,
                 log=self.root / "slurmdbd.log")


def sweep(folder: Path) -> None:
    """Kill what the daemons left running (a job's slurmstepd outlives a stopped slurmd): every process
    with a file open under `folder` (slurmstepd rewrites its environment, so its open log tells)."""
    prefix = f"{folder}/"
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            held = [os.readlink(fd) for fd in (entry / "fd").iterdir()]
        except OSError:
            continue  # gone, or not ours to read
        if any(target.startswith(prefix) for target in held):
            try:
                os.kill(int(entry.name), signal.SIGKILL)
            except OSError:
                pass


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def write_keys(etc: Path) -> None:
    """slurm.key (auth/slurm) and jwt.key, 0600 and owned by SlurmUser; the same bytes for every daemon."""
    for name in ("slurm.key", "jwt.key"):
        path = etc / name
        path.write_bytes(KEY)
        path.chmod(0o600)
        shutil.chown(path, "slurm", "slurm")


KEY = bytes(range(256)) * 4  # a test-only key: 1 KiB, the size the chart generates


@dataclass
class Cluster:
    """One cluster's effective config on the site: slurmctld and its dynamic slurmd."""

    site: Site
    name: str
    files: Mapping[str, str]  # effective files by name, as --explain assembles them
    etc: Path = Path()
    ctld_port: int = 0
    ctld: Proc | None = None
    slurmds: dict[str, Proc] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.etc = self.site.root / f"{self.name}-etc"
        self.etc.mkdir()
        self.ctld_port = free_port()
        self.state = self.site.root / f"{self.name}-state"
        self.state.mkdir()
        shutil.chown(self.state, "slurm", "slurm")
        self.spool = self.site.root / f"{self.name}-spool"
        self.spool.mkdir()
        write_keys(self.etc)
        self.write_config(self.files)

    def local_slurm_conf(self, text: str) -> str:
        logs = self.site.root / self.name
        logs.mkdir(exist_ok=True)
        shutil.chown(logs, "slurm", "slurm")
        local = {
            "SlurmctldHost": "localhost(127.0.0.1)", "SlurmctldPort": str(self.ctld_port),
            "SlurmdPort": str(free_port()), "AccountingStorageHost": "127.0.0.1",
            "AccountingStoragePort": str(self.site.dbd_port), "StateSaveLocation": str(self.state),
            "SlurmdSpoolDir": str(self.spool / "%n"), "SlurmctldLogFile": str(logs / "slurmctld.log"),
            "SlurmSchedLogFile": None, "SlurmdLogFile": str(logs / "slurmd-%n.log"),
            "SlurmctldPidFile": str(logs / "slurmctld.pid"), "SlurmdPidFile": str(logs / "slurmd-%n.pid"),
            "AuthAltParameters": f"jwt_key={self.etc / 'jwt.key'}",
            "CommunicationParameters": "NoInAddrAny,NoCtldInAddrAny",
            "SlurmdParameters": "config_overrides",
        }
        for key, value in local.items():
            text = set_key(text, key, value)
        return text

    def write_config(self, files: Mapping[str, str]) -> None:
        for name, text in files.items():
            if name == "slurmdbd.conf":
                continue
            if name == "slurm.conf":
                text = self.local_slurm_conf(text)
            elif name == "cgroup.conf":
                text = set_key(text, "CgroupPlugin", "cgroup/v1")
            (self.etc / name).write_text(text)

    @property
    def env(self) -> dict[str, str]:
        return self.site.slurm_env(self.etc)

    def run(self, *argv: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
        """A Slurm client command against this cluster."""
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **self.env})
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} exited {done.returncode}: {done.stdout}{done.stderr}")
        return done

    def start_ctld(self, wait: bool = True, extra_args: Iterable[str] = ()) -> Proc:
        self.ctld = self.site._start(f"{self.name}-slurmctld",
                                     [str(SHARED_SLURM / "sbin" / "slurmctld"), "-D", *extra_args], self.env)
        if wait:
            wait_for(f"{self.name} slurmctld", self.ctld_ready, timeout=60, log=self.ctld.log)
        return self.ctld

    def ctld_ready(self) -> bool:
        if self.ctld is None or not self.ctld.alive():
            raise AssertionError(f"slurmctld exited: {self.ctld.log.read_text(errors='replace')[-3000:]}"
                                 if self.ctld else "no slurmctld")
        return self.run("scontrol", "ping", check=False, timeout=10).returncode == 0

    def stop_ctld(self) -> int | None:
        return self.ctld.stop() if self.ctld else None

    def close(self) -> None:
        """Stop this cluster's jobs, slurmd and slurmctld (the site keeps MariaDB and slurmdbd)."""
        if self.ctld is not None and self.ctld.alive():
            self.run("scancel", "--full", "--state=RUNNING", check=False, timeout=20)
        for proc in [*self.slurmds.values(), *([self.ctld] if self.ctld else [])]:
            proc.stop()
            if proc in self.site.procs:
                self.site.procs.remove(proc)
        self.slurmds.clear()
        sweep(self.site.root / self.name)  # its logs: what still holds one is a leftover of this cluster

    def start_slurmd(self, node: str, conf: str, wait: bool = True) -> Proc:
        """A dynamic node as a Slinky worker pod starts it: `slurmd -Z --conf '<NodeSet conf>'`."""
        port = free_port()
        (self.spool / node).mkdir(exist_ok=True)
        proc = self.site._start(f"{self.name}-slurmd-{node}",
                                [str(SHARED_SLURM / "sbin" / "slurmd"), "-D", "-Z", "-N", node,
                                 "--conf", f"{conf} Port={port}"], self.env)
        self.slurmds[node] = proc
        if wait:
            wait_for(f"slurmd {node}", lambda: self._registered(node, proc), timeout=60, log=proc.log)
        return proc

    def _registered(self, node: str, proc: Proc) -> bool:
        if not proc.alive():
            raise AssertionError(f"slurmd {node} exited: {proc.log.read_text(errors='replace')[-3000:]}")
        shown = self.run("sinfo", "-h", "-N", "-n", node, "-o", "%t", check=False, timeout=10)
        states = set(shown.stdout.split())  # a line per partition of the node
        return shown.returncode == 0 and bool(states) and states <= {"idle", "mix", "alloc"}


@dataclass(frozen=True)
class Rendered:
    """One spec rendered as users render it: the tree, the effective files, the node registrations."""

    tree: Mapping[str, dict]
    files: Mapping[str, str]
    nodes: Mapping[str, str]

    def obj(self, suffix: str) -> dict:
        """The one rendered object whose path ends with `suffix`."""
        found = [obj for path, obj in self.tree.items() if path.endswith(suffix)]
        assert len(found) == 1, (suffix, sorted(self.tree))
        return found[0]


def render(spec: Path) -> Rendered:
    from slurmgen.run.pipeline import run
    from slurmgen.slurmconf.operator import effective

    (cluster,) = run([spec]).clusters
    eff = effective(cluster.files)
    assert eff is not None
    return Rendered(cluster.files, eff.files, eff.nodes)

