"""Block topology on a real slurmctld 26.05.3 (deep test: needs ../shared/slurm, root, a `slurm` user).

The topology.yaml our generator writes for a block partition, and the Topology= units our labeler
assigns to nodes of uneven network domains, go to a real slurmctld with dynamic nodes (`slurmd -Z`,
as the Slinky worker pods start them). Every block size must then run a job, inside one aligned
block, and Slurm must accept or refuse each job size as tests/block_placement.py predicts, on the
labeler's assignment and on the one the former labeler made (b0:2 b1:1 b2:1: -N4 refused).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from charts import topology_labeler as lab
from slurmgen.spec import parse_text
from slurmgen.plan.topology import labeler_config, topology_yaml
from tests.block_placement import fits
from tests.conftest import need_shared, skip_or_fail
from tests.deep.harness import PREFIX, SHARED_SLURM, free_port, prepare_machine
SPEC = Path(__file__).with_name("block_cluster.yaml")
# Kubernetes nodes of the Capacity Block: three under network node x, three alone.
DOMAINS = {"x1": "nn-x", "x2": "nn-x", "x3": "nn-x", "w1": "nn-w", "y1": "nn-y", "z1": "nn-z"}
WAIT = 20.0  # seconds, for any daemon or job


class SlurmCluster:
    """slurmctld and dynamic slurmd nodes on 127.0.0.1, all state in one temporary folder.

    auth/slurm puts its sack sockets at fixed paths (/run/slurmctld, /run/slurm: src/plugins/auth/
    slurm/sack.c@slurm-26-05-3-1), shared with any other Slurm on the machine; each daemon gets a
    private mount namespace whose /run is a folder here, and clients reach slurmctld's socket
    through SLURM_SACK_SOCKET (src/common/sack_api.c).
    """

    def __init__(self, root: Path, partition: str, topology: str) -> None:
        self.root = root
        self.partition = partition
        self.procs: list[subprocess.Popen[bytes]] = []
        self.port = free_port()
        for sub in ("state", "log", "spool", "run-ctld"):
            (root / sub).mkdir()
        (root / "slurm.key").write_bytes(os.urandom(1024))
        (root / "slurm.key").chmod(0o600)
        for path in (root / "slurm.key", root / "state", root / "log"):
            shutil.chown(path, "slurm")
        (root / "topology.yaml").write_text(topology)
        (root / "slurm.conf").write_text("\n".join([
            "ClusterName=deep", "SlurmctldHost=localhost(127.0.0.1)", f"SlurmctldPort={self.port}",
            "SlurmUser=slurm", "AuthType=auth/slurm", "CredType=cred/slurm",
            f"StateSaveLocation={root}/state", f"SlurmdSpoolDir={root}/spool/%n",
            f"SlurmctldPidFile={root}/ctld.pid", f"SlurmdPidFile={root}/spool/%n.pid",
            f"SlurmctldLogFile={root}/log/slurmctld.log", f"SlurmdLogFile={root}/log/%n.log",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "SelectType=select/cons_tres",
            "MpiDefault=none", "AccountingStorageType=accounting_storage/none", "JobCompType=jobcomp/none",
            "JobAcctGatherType=jobacct_gather/none", "MaxNodeCount=64", "ReturnToService=2",
            "CommunicationParameters=NoInAddrAny,NoCtldInAddrAny", "SlurmdParameters=config_overrides",
            f"NodeSet={partition} Feature={partition}",
            f"PartitionName={partition} Nodes={partition} Default=YES State=UP MaxTime=5 "
            f"Topology=block-{partition}", ""]))
        self.env = {**os.environ, "SLURM_CONF": str(root / "slurm.conf"),
                    "SLURM_SACK_SOCKET": str(root / "run-ctld" / "slurmctld" / "sack.socket")}

    def _daemon(self, run: Path, log: str, *argv: str) -> None:
        run.mkdir(exist_ok=True)
        script = 'mount --bind "$0" /run && exec "$@"'
        with open(self.root / "log" / log, "ab") as out:
            self.procs.append(subprocess.Popen(
                ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, str(run), *argv],
                env=self.env, stdout=out, stderr=subprocess.STDOUT))

    def start_controller(self) -> None:
        self._daemon(self.root / "run-ctld", "slurmctld.out", str(PREFIX / "sbin" / "slurmctld"), "-D", "-i")
        self.wait(lambda: self.run("scontrol", "ping", check=False).returncode == 0, "slurmctld to answer")

    def add_node(self, name: str, topology: str) -> None:
        """A dynamic node as a Slinky worker pod starts it, its Topology= from the node annotation."""
        (self.root / "spool" / name).mkdir()
        conf = f"CPUs=1 RealMemory=100 Port={free_port()} Feature={self.partition} Topology={topology}"
        self._daemon(self.root / f"run-{name}", f"{name}.out", str(PREFIX / "sbin" / "slurmd"),
                     "-D", "-Z", "-N", name, "--conf", conf)

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(PREFIX / "bin" / argv[0]), *argv[1:]], env=self.env, capture_output=True,
                              text=True, timeout=WAIT, check=check)

    def wait(self, ready: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + WAIT
        while not ready():
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.procs):
                logs = "\n".join(p.read_text()[-2000:] for p in sorted((self.root / "log").glob("*")))
                raise AssertionError(f"timed out waiting for {what}; logs:\n{logs}")
            time.sleep(0.1)

    def stop(self) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def _prerequisites() -> None:
    """The build at its compiled-in prefix and the `slurm` user: made when root, else skip."""
    build = need_shared(SHARED_SLURM)
    if os.geteuid() != 0:
        skip_or_fail("deep test: needs root (slurmd starts jobs as their user; daemons need private mounts)")
    assert build.resolve() == SHARED_SLURM.resolve()
    prepare_machine()  # the build's prefix and the `slurm` user (tests/deep/harness.py)
    if shutil.which("unshare") is None:
        skip_or_fail("deep test: needs unshare (util-linux) for the daemons' private /run")


def _assignment() -> tuple[str, dict[str, str], list[str], list[int]]:
    """topology.yaml, {node: Topology=} from the labeler, the slots, and the block sizes."""
    spec = parse_text(str(SPEC), SPEC.read_text())
    cfg = labeler_config(spec)
    [block] = cfg["blocks"]
    nodes = [{"metadata": {"name": name, "labels": {cfg["poolLabel"]: block["pools"][0],
                                                    block["domainLabel"]: domain}}}
             for name, domain in DOMAINS.items()]
    assert spec.topology is not None
    return topology_yaml(spec), lab.desired(nodes, cfg), block["slots"], list(spec.topology.blocks[0].sizes)


@pytest.fixture(scope="module")
def cluster() -> Iterator[tuple[SlurmCluster, dict[str, str], list[str], list[int]]]:
    _prerequisites()
    topology, units, slots, sizes = _assignment()
    root = Path(tempfile.mkdtemp(prefix="slurmgen-blocks-"))  # short: unix socket paths; slurm must enter it
    root.chmod(0o755)
    slurm = SlurmCluster(root, "cb", topology)
    try:
        slurm.start_controller()
        for name, unit in units.items():
            slurm.add_node(name, unit)
        slurm.wait(lambda: sorted(slurm.run("sinfo", "-h", "-N", "-o", "%N %t").stdout.split()[1::2])
                   == ["idle"] * len(units), "every node idle")
        yield slurm, units, slots, sizes
    finally:
        slurm.stop()
        shutil.rmtree(root, ignore_errors=True)


def _slot_nodes(slurm: SlurmCluster) -> dict[str, list[str]]:
    """{base block: its nodes} as `scontrol show topology` reports them."""
    out = slurm.run("scontrol", "show", "topology", "block-cb").stdout
    blocks: dict[str, list[str]] = {}
    for name, nodes in re.findall(r"^BlockName=(\S+) .*?(?:Nodes=(\S*))?\s*BlockSize", out, re.M):
        hosts = slurm.run("scontrol", "show", "hostnames", nodes).stdout.split() if nodes else []
        blocks[name] = sorted(hosts)
    return blocks


def _accepts(slurm: SlurmCluster, nodes: int) -> bool:
    """Whether slurmctld would ever run a job of `nodes` nodes (--test-only: no job is made)."""
    out = slurm.run("sbatch", "--test-only", f"-N{nodes}", "--wrap", "hostname", check=False)
    return out.returncode == 0 and "to start at" in out.stderr


def test_slurm_sees_the_blocks_the_labeler_assigned(cluster):
    slurm, units, slots, _ = cluster
    # GIVEN the labeler's Topology= per node WHEN slurmctld reports its base blocks THEN they match
    expected = {slot: sorted(n for n, u in units.items() if u == f"block-cb:{slot}") for slot in slots}
    assert _slot_nodes(slurm) == expected
    # AND the uneven domains fill b0 and b1 (the domain of three overflows b0): an aligned pair of 4+
    assert [len(expected[s]) for s in slots[:3]] == [3, 2, 1]


def test_a_job_of_each_block_size_runs_inside_one_aligned_block(cluster):
    slurm, units, slots, sizes = cluster
    slot_of = {n: slots.index(u.split(":")[1]) for n, u in units.items()}
    for size in sizes:
        # WHEN a job of the block size runs
        out = slurm.run("srun", f"-N{size}", "--time=1", "printenv", "SLURMD_NODENAME")
        hosts = sorted(set(out.stdout.split()))
        # THEN it gets that many nodes, all in one aligned group of size/base base blocks
        assert len(hosts) == size, out
        group = size // sizes[0]
        assert len({slot_of[h] // group for h in hosts}) == 1, (size, hosts)
    # AND a batch job of the largest size is accepted and completes
    job = slurm.run("sbatch", "--parsable", f"-N{sizes[-1]}", "-o", "/dev/null", "--wrap", "hostname").stdout.strip()
    slurm.wait(lambda: "COMPLETED" in slurm.run("scontrol", "show", "job", job).stdout, f"batch job {job}")


def test_slurm_accepts_the_job_sizes_the_block_model_predicts(cluster):
    slurm, units, slots, sizes = cluster
    # GIVEN the labeler's assignment, then the former labeler's for the same nodes (b0:2 b1:1 b2:1 b3:1+1),
    # applied as slurm-operator applies an annotation change (UpdateNodeTopology)
    # Only changed nodes are updated, as the operator does (UpdateNodeTopology compares first): re-sending
    # a node its current block drops it from block placement (topology_p_add_rm_node, topology_block.c
    # @slurm-26-05-3-1, clears it from blocks_nodes_bitmap and sets it back only for a new block).
    former = {"x1": "cb-b0", "x2": "cb-b0", "x3": "cb-b1", "w1": "cb-b2", "y1": "cb-b3", "z1": "cb-b3"}
    current = {n: u.split(":")[1] for n, u in units.items()}
    for layout in (dict(current), former):
        for node, slot in layout.items():
            if current[node] != slot:
                slurm.run("scontrol", "update", f"NodeName={node}", f"Topology=block-cb:{slot}")
                current[node] = slot
        counts = [list(layout.values()).count(s) for s in slots]
        # WHEN every job size up to the node count is tried THEN slurmctld agrees with the model
        predicted = [n for n in range(1, len(units) + 1) if fits(counts, sizes, n)]
        assert [n for n in range(1, len(units) + 1) if _accepts(slurm, n)] == predicted, counts
    # AND the former layout indeed refused -N4 (the bug), the labeler's accepted every size
    assert not fits([2, 1, 1, 2, 0, 0, 0, 0], sizes, 4)
