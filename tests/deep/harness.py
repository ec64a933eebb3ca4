"""Real Slurm 26.05 daemons on loopback for the deep tests: MariaDB, slurmdbd, slurmctld, dynamic slurmd.

The daemons come from `../shared/slurm` (see its BUILD.md); nothing here is used by what users run.
Each daemon stands for a pod's process and runs in a sandbox of its own (tests/deep/sandbox.py): slurmdbd
and slurmctld in the pods slurm-operator builds (tests/deep/operator_pods.py), each slurmd with its own
spool, log and /run, and a login sackd through which the test's own clients sign. They meet only over
127.0.0.1. The configuration is the effective one `--explain` assembles from a rendered tree, changed only
where this machine forces it (`LOCAL_CHANGES` says each change and why); `Site.close()` stops it all.
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
from typing import Any, Mapping

from tests.conftest import SHARED

from . import operator_pods, sandbox
from .pod import Pod
from .sandbox import Mount, Plan

REPO = Path(__file__).resolve().parents[2]
#: the deep tests' own cluster specs (the shapes of the shipped examples; never clusters/)
SPECS = Path(__file__).resolve().parents[1] / "specs"
SHARED_SLURM = SHARED / "slurm"
#: the build's compiled-in prefix (BUILD.md): slurmd starts slurmstepd from here
PREFIX = Path("/opt/slurm2605")
#: Debian run-time packages BUILD.md names (libraries, and MariaDB for slurmdbd)
RUNTIME_FILES = {"mariadbd": Path("/usr/sbin/mariadbd"), "mariadb-install-db": Path("/usr/bin/mariadb-install-db"),
                 "mariadb": Path("/usr/bin/mariadb")}

#: Each change this harness makes to the effective files, with the reason the environment forces it. Paths
#: stay as rendered: every daemon runs in a sandbox of its own (tests/deep/sandbox.py) with its pod's
#: folders, so none needs a path of its own; sandbox.DIFFERENCES lists how a sandbox differs from a pod.
LOCAL_CHANGES = {
    "SlurmctldHost": "the pod name and Service become localhost(127.0.0.1)",
    "SlurmctldPort/SlurmdPort/AccountingStoragePort/DbdPort": "free loopback ports, not 6817-6819: every "
                                                              "sandbox shares the host's network",
    "AccountingStorageHost (slurm.conf, the accounts ConfigMap's client slurm.conf)": "127.0.0.1 instead of "
                                                                                      "the Accounting Service",
    "CommunicationParameters=NoInAddrAny,NoCtldInAddrAny": "loopback only",
    "SlurmdParameters=config_overrides": "nodes declare more CPUs/memory than this machine has",
    "CgroupPlugin=cgroup/v1": "this build has only cgroup/v1 (BUILD.md); EKS nodes use v2",
    "gres.conf AutoDetect": "no NVML in this build: File= lines on stand-in device files",
    "slurmdbd.conf DbdHost/DbdAddr/DbdPort/Storage*": "the test's MariaDB and ports on loopback",
    "slurmd --conf Port=": "one port per slurmd: they share the host's network",
    "slurmd reads /etc/slurm": "the cluster's files mounted, where a Slinky worker fetches them from slurmctld "
                               "(configless); the files are the same",
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
    """The build's prefix and the SlurmUser, uid and gid 401 as in the images (root only).

    The sandboxes copy the host's /etc, so the host's `slurm` is the pods' `slurm`; the operator runs
    slurmctld and slurmdbd as uid 401 (internal/builder/common/const.go SlurmUserUid)."""
    link_prefix()
    uid = operator_pods.SLURM_UID
    try:
        have = pwd.getpwnam("slurm").pw_uid
    except KeyError:
        subprocess.run(["groupadd", "--system", "--gid", str(uid), "slurm"], check=True)
        subprocess.run(["useradd", "--system", "--uid", str(uid), "--gid", str(uid), "--no-create-home",
                        "--shell", "/usr/sbin/nologin", "slurm"], check=True)
        have = uid
    if have != uid:
        raise RuntimeError(f"the host's slurm user has uid {have}; the pods' is {uid}: remove it (userdel slurm) "
                           "and the deep tests make it again")


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
        self.start("mariadb", ["/usr/sbin/mariadbd", "--no-defaults", f"--datadir={data}",
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
    def start(self, name: str, argv: list[str]) -> Proc:
        """A program (a sandbox's argv), its output in <name>.log; stopped by close()."""
        log = self.root / f"{name}.log"
        out = log.open("ab")
        popen = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 start_new_session=True)
        out.close()
        proc = Proc(name, popen, log)
        self.procs.append(proc)
        return proc

    def close(self) -> None:
        """Stop every sandbox: each takes its namespace's processes with it (a job's slurmstepd too)."""
        for proc in reversed(self.procs):
            proc.stop()
        self.procs.clear()

    # ---- Slurm -----------------------------------------------------------------------------
    def start_slurmdbd(self, slurmdbd_conf: str) -> None:
        """slurmdbd in the Accounting's pod, on the site's MariaDB (storage and port local)."""
        self.dbd_port = free_port()
        text = slurmdbd_conf
        for key, value in {"DbdHost": "localhost", "DbdAddr": "127.0.0.1", "DbdPort": str(self.dbd_port),
                           "StorageHost": "127.0.0.1", "StoragePort": str(self.db_port),
                           "StoragePass": "test-only"}.items():
            text = set_key(text, key, value)
        pod = operator_pods.accounting_pod(self.root / "slurmdbd-pod", text, KEY)
        dbd = self.start("slurmdbd", pod.command("slurmdbd"))
        wait_for("slurmdbd", lambda: dbd.check() and port_open(self.dbd_port), timeout=60, log=dbd.log)


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
KEYS = ("slurm.key", "jwt.key")


def local_client_conf(text: str, dbd_port: int) -> str:
    """A client slurm.conf that names the Accounting Service, pointed at the site's slurmdbd."""
    return set_key(set_key(text, "AccountingStorageHost", "127.0.0.1"), "AccountingStoragePort", str(dbd_port))


@dataclass
class Cluster:
    """One cluster on the site: its Controller pod (our init container, then slurmctld), one sandbox per
    slurmd, and a login sackd through which the test's own Slurm clients sign, as on the login pod."""

    site: Site
    name: str
    files: Mapping[str, str]  # effective files by name, as --explain assembles them
    controller: Mapping[str, Any] = field(default_factory=dict)  # the rendered Controller
    accounts: Mapping[str, str] = field(default_factory=dict)  # the slurm-accounts ConfigMap's data
    etc: Path = Path()
    ctld_port: int = 0
    ctld: Proc | None = None
    pod: Pod | None = None
    slurmds: dict[str, Proc] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.folder = self.site.root / self.name
        self.folder.mkdir()
        self.etc = self.folder / "etc"
        self.etc.mkdir()
        self.ctld_port = free_port()
        # the statesave claim: a new EBS volume's ext4 root has lost+found; the kubelet applies fsGroup
        self.state = self.folder / "statesave"
        (self.state / "lost+found").mkdir(parents=True)
        self.spool = self.folder / "spool"
        self.spool.mkdir()
        self.jobs = self.folder / "jobs"  # job output files (-o), the same path in every slurmd sandbox
        self.jobs.mkdir()
        self.dev = self.folder / "dev"  # stand-in GPU device files, likewise
        self.dev.mkdir()
        write_keys(self.etc)
        self.write_config(self.files)
        self._start_login_sackd()

    @property
    def secrets(self) -> dict[str, dict[str, bytes]]:
        """The Secrets the pods read: slurm.key and jwt.key under the names the Controller refers to."""
        spec = self.controller.get("spec", {})
        refs = [spec.get("slurmKeyRef", {"name": "slurm-auth-slurm", "key": "slurm.key"}),
                spec.get("jwtKeyRef", {"name": "slurm-auth-jwt", "key": "jwt.key"})]
        return {ref["name"]: {ref["key"]: KEY} for ref in refs}

    def local_slurm_conf(self, text: str) -> str:
        local = {
            "SlurmctldHost": "localhost(127.0.0.1)", "SlurmctldPort": str(self.ctld_port),
            "SlurmdPort": str(free_port()), "AccountingStorageHost": "127.0.0.1",
            "AccountingStoragePort": str(self.site.dbd_port),
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

    def config_files(self) -> dict[str, str]:
        """The files of /etc/slurm in the cluster's pods, as they are now (keys come from Secrets)."""
        return {p.name: p.read_text() for p in sorted(self.etc.iterdir()) if p.name not in KEYS}

    # ---- the login pod's sackd, for the test's own clients ------------------------------------
    def _start_login_sackd(self) -> None:
        run = self.folder / "login-run"  # the login pod's /run/slurm, where its clients find the socket
        run.mkdir()
        plan = Plan(argv=("sackd", "-D"), env={**sandbox.base_env(0, "login"), "RUNTIME_DIRECTORY": "/run/slurm/sack"},
                    mounts=(Mount("/etc/slurm", self.etc, read_only=True), Mount("/run/slurm", run)))
        self.sack_socket = run / "sack" / "sack.socket"
        proc = self.site.start(f"{self.name}-login-sackd", sandbox.command(plan, self.folder / "login-sandbox"))
        wait_for(f"{self.name} login sackd", lambda: proc.check() and self.sack_socket.is_socket(), log=proc.log)

    @property
    def env(self) -> dict[str, str]:
        """The environment of the test's clients: the cluster's slurm.conf, the login sackd's socket."""
        return {"SLURM_CONF": str(self.etc / "slurm.conf"), "SLURM_SACK_SOCKET": str(self.sack_socket),
                "PATH": f"{SHARED_SLURM / 'bin'}:{SHARED_SLURM / 'sbin'}:{os.environ.get('PATH', '')}"}

    def run(self, *argv: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
        """A Slurm client command against this cluster, as a user of the login pod runs it."""
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **self.env})
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} exited {done.returncode}: {done.stdout}{done.stderr}")
        return done

    # ---- the Controller's pod -----------------------------------------------------------------
    def local_accounts(self, accounts: Mapping[str, str] | None = None) -> dict[str, str]:
        """The slurm-accounts ConfigMap (this cluster's, or `accounts`) with its client slurm.conf pointed at
        the site's slurmdbd."""
        data = dict(self.accounts if accounts is None else accounts)
        if "slurm.conf" in data:
            data["slurm.conf"] = local_client_conf(data["slurm.conf"], self.site.dbd_port)
        return data

    def new_pod(self) -> Pod:
        """A new Controller pod (after a restart: fresh emptyDirs and /run, the same claim)."""
        n = len(list(self.folder.glob("controller-pod-*")))
        return operator_pods.controller_pod(self.folder / f"controller-pod-{n}", self.controller,
                                            self.config_files(), {"slurm-accounts": self.local_accounts()},
                                            self.secrets, self.state)

    def bootstrap(self) -> subprocess.CompletedProcess:
        """A new Controller pod's init containers, in order; the pod then waits for start_ctld."""
        self.pod = self.new_pod()
        done = None
        for init in self.pod.spec["initContainers"]:
            done = self.pod.run(init["name"], timeout=600)
            if done.returncode != 0:
                break
        assert done is not None, "the Controller has no init container"
        return done

    def start_ctld(self, wait: bool = True) -> Proc:
        """slurmctld in the pod whose init containers ran (or in a new pod, without them)."""
        pod, self.pod = self.pod or self.new_pod(), None
        self.ctld = self.site.start(f"{self.name}-slurmctld", pod.command("slurmctld"))
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
        """Stop this cluster's jobs, slurmd, slurmctld and login sackd (the site keeps slurmdbd)."""
        if self.ctld is not None and self.ctld.alive():
            self.run("scancel", "--full", "--state=RUNNING", check=False, timeout=20)
        mine = [p for p in self.site.procs if p.name.startswith(f"{self.name}-")]
        for proc in mine:
            # a slurmd with steps left waits for them: its sandbox's PID namespace ends them all once killed
            proc.stop(timeout=2 if proc in self.slurmds.values() else 15)
            self.site.procs.remove(proc)
        self.slurmds.clear()

    # ---- workers ----------------------------------------------------------------------------
    def start_slurmd(self, node: str, conf: str, wait: bool = True) -> Proc:
        """A dynamic node as a Slinky worker pod starts it (`slurmd -Z --conf '<NodeSet conf>'`), root,
        in a sandbox of its own: its /var/spool/slurmd, /var/log/slurm and /run."""
        port = free_port()
        spool, logs = self.spool / node, self.folder / f"slurmd-{node}-log"
        spool.mkdir(exist_ok=True)
        logs.mkdir(exist_ok=True)
        plan = Plan(argv=("slurmd", "-D", "-Z", "-N", node, "--conf", f"{conf} Port={port}"),
                    env=sandbox.base_env(0, node),
                    mounts=(Mount("/etc/slurm", self.etc, read_only=True), Mount("/var/spool/slurmd", spool),
                            Mount("/var/log/slurm", logs), Mount(str(self.dev), self.dev), Mount(str(self.jobs), self.jobs)))
        n = len(list(self.folder.glob(f"slurmd-{node}-sandbox-*")))
        proc = self.site.start(f"{self.name}-slurmd-{node}",
                               sandbox.command(plan, self.folder / f"slurmd-{node}-sandbox-{n}"))
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

    def job_pod(self, job: Mapping[str, Any], accounts: Mapping[str, str]) -> Pod:
        """The pod of a rendered Job, with the slurm-accounts ConfigMap `accounts` and this cluster's Secrets."""
        n = len(list(self.folder.glob("job-pod-*")))
        return Pod(self.folder / f"job-pod-{n}", job["spec"]["template"]["spec"],
                   configmaps={"slurm-accounts": dict(accounts)}, secrets=self.secrets,
                   hostname="slurm-accounts-load")


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

