"""The effective configuration in real Slurm 26.05.3 daemons: slurmdbd on MariaDB, slurmctld, dynamic slurmd.

Each cluster spec under tests/specs/ is rendered as users render it; its effective files
(`--explain`), its Controller's init container, its dynamic node registrations and its accounts Job
then run for real, changed only as harness.LOCAL_CHANGES lists. Every rendered container and every daemon
runs in a sandbox of its own with only what its pod has (tests/deep/sandbox.py: its volumes as the
kubelet lays them out, its user, its env, an empty /run; sandbox.DIFFERENCES lists where it still differs
from a pod). Deep tests: they skip without ../shared/slurm (and fail then under SLURMGEN_REQUIRE_SHARED=1).
"""

from __future__ import annotations

import os
import re
import subprocess

import pytest
import yaml

from . import harness
from .harness import SPECS, Cluster, Rendered, render
from tests.spec_builder import variant


CLUSTERS = ["example", "training", "prod", "dev"]


def accounts_job(cluster: Cluster, rendered: Rendered, accounts: dict[str, str] | None = None,
                 ) -> subprocess.CompletedProcess:
    """The PostSync accounts Job's pod, in its sandbox (root, as its securityContext says)."""
    job = rendered.obj("job-slurm-accounts-load.yaml")
    if accounts is None:  # the ConfigMap of the same sync as the Job
        accounts = cluster.local_accounts(rendered.obj("configmap-slurm-accounts.yaml")["data"])
    return cluster.job_pod(job, accounts).run("sacctmgr", timeout=600)


GRES = re.compile(r"(?:^| )Gres=gpu:(?:([^: ]+):)?(\d+)")  # gpu:<model>:<n> (NVIDIA) or gpu:<n> (Neuron)


def local_gres_conf(cluster: Cluster, nodes: dict[str, str]) -> str:
    """gres.conf for the nodes to be registered: File= lines on stand-in devices (no NVML in this build)."""
    dev = cluster.dev
    lines = []
    for node, conf in sorted(nodes.items()):
        found = GRES.search(conf)
        if not found:
            continue
        model, count = found.group(1), int(found.group(2))
        files = []
        for i in range(count):
            path = dev / f"{node}-gpu{i}"
            if not path.exists():
                os.mknod(path, 0o600 | 0o020000, os.makedev(195, i))  # a character device (NVIDIA's major)
            files.append(str(path))
        typed = f" Type={model}" if model else ""
        lines.append(f"NodeName={node} Name=gpu{typed} File={','.join(files)}")
    return "\n".join(lines) + "\n"


def start_cluster(site, name: str, rendered: Rendered, nodes: dict[str, str]) -> Cluster:
    files = dict(rendered.files)
    accounts = [obj for path, obj in rendered.tree.items() if path.endswith("configmap-slurm-accounts.yaml")]
    cluster = Cluster(site, name, files, controller=rendered.obj("controller-slurm.yaml"),
                      accounts=accounts[0]["data"] if accounts else {})
    if "gres.conf" in files:
        (cluster.etc / "gres.conf").write_text(local_gres_conf(cluster, nodes))
    return cluster


def one_node_per_nodeset(rendered: Rendered) -> dict[str, str]:
    """Node name -> `--conf`, one node of each NodeSet (the pods' hostnames are <nodeset>-<i>)."""
    return {f"{nodeset}-0": conf for nodeset, conf in rendered.nodes.items()}


@pytest.mark.parametrize("name", CLUSTERS)
def test_fresh_database_controller_starts_nodes_register_and_jobs_run(slurm_site, name):
    # GIVEN a cluster's spec, rendered, and a slurmdbd that has never seen it
    rendered = render(SPECS / f"{name}.yaml")
    nodes = one_node_per_nodeset(rendered)
    cluster = start_cluster(slurm_site, name, rendered, nodes)
    try:
        # WHEN the Controller's pod starts: its init container, then slurmctld
        boot = cluster.bootstrap()
        assert boot.returncode == 0, boot.stdout + boot.stderr
        cluster.start_ctld()
        # AND every NodeSet's slurmd registers as its pod starts it
        for node, conf in nodes.items():
            cluster.start_slurmd(node, conf)
        # AND the accounts Job (a cluster with a policy) runs after the sync
        if any(path.endswith("job-slurm-accounts-load.yaml") for path in rendered.tree):
            job = accounts_job(cluster, rendered)
            assert job.returncode == 0, job.stdout + job.stderr
        # THEN each node is in the partitions slurm.conf puts its NodeSet in, with its features
        partitions = partitions_of(rendered.files["slurm.conf"])
        for node, conf in nodes.items():
            nodeset = node.rsplit("-", 1)[0]
            shown = cluster.run("scontrol", "show", "node", node).stdout
            features = re.search(r"AvailableFeatures=(\S+)", shown).group(1).split(",")
            assert features == re.search(r"Features=(\S+)", conf).group(1).split(","), shown
            want = sorted(p for p, members in partitions.items() if nodeset in members)
            got = sorted(re.search(r"Partitions=(\S+)", shown).group(1).split(","))
            assert got == want, shown
        # AND a job runs in each partition
        for partition in partitions:
            assert_job_runs(cluster, rendered, partition)
        # AND slurmctld holds the tree and blocks of topology.yaml as written (the labeler's placement
        # of nodes into them: tests/deep/test_topology_blocks.py)
        if "topology.yaml" in rendered.files:
            assert_topology_as_written(cluster, rendered.files["topology.yaml"])
    finally:
        cluster.close()


def assert_topology_as_written(cluster: Cluster, topology_yaml: str) -> None:
    for topo in yaml.safe_load(topology_yaml):
        shown = cluster.run("scontrol", "show", "topology", topo["topology"]).stdout
        if "tree" in topo:
            switches = {sw["switch"] for sw in topo["tree"]["switches"]}
            assert set(re.findall(r"SwitchName=(\S+)", shown)) == switches, shown
        if "block" in topo:
            sizes = topo["block"]["block_sizes"]
            blocks = [b["block"] for b in topo["block"]["blocks"]]
            base = re.findall(r"BlockName=(\S+) BlockIndex=\d+ BlockSize=(\d+)", shown)
            assert base == [(name, str(sizes[0])) for name in blocks], shown
            # each larger size aggregates aligned runs of base blocks (Slurm forms them from aligned pairs)
            aggregated = {int(n) for n in re.findall(r"AggregatedBlock=\S+ BlockIndex=\d+ Nodes=\S* BlockSize=(\d+)", shown)}
            assert aggregated == {size for size in sizes[1:] if size // sizes[0] <= len(blocks)}, shown


def partitions_of(slurm_conf: str) -> dict[str, set[str]]:
    """Partition name -> the NodeSet names it lists."""
    out = {}
    for line in slurm_conf.splitlines():
        found = re.match(r"PartitionName=(\S+) Nodes=(\S+)", line)
        if found:
            out[found.group(1)] = set(found.group(2).split(","))
    return out


def assert_job_runs(cluster: Cluster, rendered: Rendered, partition: str) -> None:
    line = next(x for x in rendered.files["slurm.conf"].splitlines() if x.startswith(f"PartitionName={partition} "))
    qos = re.search(r"AllowQos=([^, ]+)", line)
    argv = ["srun", "-p", partition, "-N1", "-n1", "--mem=100", "-t", "1"]
    if qos:
        argv.append(f"--qos={qos.group(1)}")
    done = cluster.run(*argv, "hostname", check=False, timeout=60)
    assert done.returncode == 0, f"{partition}: {done.stdout}{done.stderr}"


@pytest.fixture()
def example(slurm_site):
    """The example spec's cluster under a name of its own (each test gets a fresh Slurm cluster name)."""
    made = []

    def make(test: str, edit=None, slurm_name: str | None = None) -> tuple[Cluster, Rendered]:
        data = yaml.safe_load((SPECS / "example.yaml").read_text())
        data["slurm"]["clusterName"] = slurm_name or test
        if edit:
            edit(data)
        path = slurm_site.root / f"{test}.yaml"
        path.write_text(yaml.safe_dump(data))
        rendered = render(path)
        cluster = start_cluster(slurm_site, test, rendered, one_node_per_nodeset(rendered))
        made.append(cluster)
        return cluster, rendered

    yield make
    for cluster in made:
        cluster.close()


def test_a_failed_start_does_not_block_the_next_one(example):
    # GIVEN a controller that started before its QoS existed (what the init container now prevents;
    # slurmdbd's QoS are shared by every cluster, so this one is new to it)
    def firstboot(data: dict) -> None:
        data["policy"]["qos"].append({"name": "firstboot", "priority": 1})
        data["partitions"][1]["allowQos"] = ["firstboot"]

    cluster, rendered = example("failedstart", firstboot)
    failed = cluster.start_ctld(wait=False)
    failed.popen.wait(60)
    assert failed.popen.returncode != 0
    assert "invalid AllowQOS (firstboot)" in failed.log.read_text()
    assert sorted(p.name for p in cluster.state.iterdir()) == ["clustername", "lost+found"]
    # WHEN the pod starts again: init container, then slurmctld
    boot = cluster.bootstrap()
    # THEN the init container cleared the state the failed start left, and slurmctld comes up
    assert boot.returncode == 0, boot.stderr
    assert "removing" in boot.stdout and "clustername" in boot.stdout
    cluster.start_ctld()
    # AND a later restart keeps its state (the init container touches nothing once state was saved)
    cluster.stop_ctld()
    assert len(list(cluster.state.iterdir())) > 2
    boot = cluster.bootstrap()
    assert boot.returncode == 0 and "removing" not in boot.stdout
    cluster.start_ctld()


def _db(cluster: Cluster, *what: str) -> list[str]:
    return cluster.run("sacctmgr", "-nP", "show", *what).stdout.splitlines()


def test_accounts_job_leaves_what_the_spec_declares_and_removes_only_its_own(example, slurm_site):
    # GIVEN a running cluster, and slurmdbd holding what an older spec declared (marked), what an
    # admin made by hand, and another cluster's entities
    cluster, rendered = example("accounts")
    assert cluster.bootstrap().returncode == 0
    cluster.start_ctld()
    mark, theirs = "[slurmgen accounts]", "[slurmgen other]"
    for argv in (
        ["add", "qos", "old", f"description=retired {mark}"], ["add", "qos", "manual", "description=by hand"],
        ["add", "qos", "their-qos", f"description=x {theirs}"],
        ["add", "account", "legacy", f"description=legacy {mark}", "cluster=accounts"],
        ["add", "account", "legacy-sub", "parent=legacy", f"description=sub {mark}", "cluster=accounts"],
        ["add", "user", "dave", "account=legacy-sub", "cluster=accounts"],
        ["add", "account", "admin", "description=by hand", "cluster=accounts"],
        ["add", "user", "eve", "account=admin", "cluster=accounts"],
        ["modify", "qos", "normal", "set", "preempt=manual"],
    ):
        cluster.run("sacctmgr", "-i", *argv)
    # WHEN the accounts Job runs
    job = accounts_job(cluster, rendered)
    # THEN it succeeds, and slurmdbd holds the spec's preemption and association QoS
    assert job.returncode == 0, job.stdout + job.stderr
    qos = dict(line.split("|") for line in _db(cluster, "qos", "format=name,preempt"))
    assert (qos["normal"], qos["high"], qos["scavenger"]) == ("scavenger", "scavenger", "")
    assocs = _db(cluster, "assoc", "where", "cluster=accounts", "format=account,user,qos,defaultqos")
    assert "root||high,normal,scavenger|normal" in assocs
    assert "ops||normal,scavenger|normal" in assocs
    # AND what the older spec declared is gone, children first; hand-made and foreign entities stay
    assert {"old", "legacy"} & {*qos, *_db(cluster, "account", "format=account")} == set()
    assert {"manual", "their-qos"} <= set(qos)
    assert "admin|eve" in _db(cluster, "assoc", "where", "cluster=accounts", "format=account,user")
    removals = [line for line in job.stdout.splitlines() if line.startswith("removing")]
    assert removals[:3] == ["removing user dave from account legacy-sub",
                            "removing account legacy-sub from accounts", "removing account legacy from accounts"]
    assert sorted(removals[3:]) == ["removing account legacy", "removing account legacy-sub", "removing qos old"]
    # AND a user may use the QoS its account grants: scavenger on the backfill partition
    cluster.start_slurmd("spot-0", rendered.nodes["spot"])
    assert_job_runs(cluster, rendered, "backfill")
    # AND a second run changes nothing and still exits 0
    again = accounts_job(cluster, rendered)
    assert again.returncode == 0 and "removing" not in again.stdout and "Modified" not in again.stdout


def test_accounts_job_fails_when_slurmdbd_differs_from_the_spec(example):
    # GIVEN a converged cluster, and an expectation sacctmgr refuses to set (a default QoS outside the list)
    cluster, rendered = example("verify")
    assert cluster.bootstrap().returncode == 0
    cluster.start_ctld()
    assert accounts_job(cluster, rendered).returncode == 0
    accounts = {**cluster.local_accounts(rendered.obj("configmap-slurm-accounts.yaml")["data"]),
                "expected-associations": "ops||normal|high\n"}
    # WHEN the Job's read-back runs on it
    done = accounts_job(cluster, rendered, accounts)
    # THEN it fails and names what differs
    assert done.returncode == 1
    assert "association ops: slurmdbd does not hold QOS='normal' DefaultQOS='high'" in done.stderr


def test_a_second_sync_that_changes_a_qos_changes_it_in_slurmdbd(example):
    # GIVEN a running cluster whose accounts Job converged
    cluster, rendered = example("requos")
    assert cluster.bootstrap().returncode == 0
    cluster.start_ctld()
    assert accounts_job(cluster, rendered).returncode == 0
    qos_format, assoc = "format=name,priority,maxtrespu,grptres", ["where", "cluster=requos", "user=",
                                                                  "format=account,fairshare"]
    before = dict(line.split("|", 1) for line in _db(cluster, "qos", qos_format))
    assert (before["high"], before["scavenger"]) == ("1000|gres/gpu=4|", "0||gres/gpu=8")
    assert "research|60" in _db(cluster, "assoc", *assoc)

    def change(data: dict) -> None:
        qos = {q["name"]: q for q in data["policy"]["qos"]}
        qos["high"]["priority"] = 1500
        qos["high"]["maxTRESPerUser"] = {"gres/gpu": 2}
        del qos["scavenger"]["grpTRES"]
        (research,) = [a for a in data["policy"]["accounts"] if a["name"] == "research"]
        research["fairshare"] = 70

    # WHEN a commit changes a QoS's priority and limit, drops another's limit and changes an account's
    # fair share, and the Job runs again after the sync
    _, changed = example("requos-next", change, slurm_name="requos")
    job = accounts_job(cluster, changed)
    # THEN slurmdbd holds the new values, and nothing else changed
    assert job.returncode == 0, job.stdout + job.stderr
    after = dict(line.split("|", 1) for line in _db(cluster, "qos", qos_format))
    assert (after["high"], after["scavenger"], after["normal"]) == ("1500|gres/gpu=2|", "0||", before["normal"])
    assert "research|70" in _db(cluster, "assoc", *assoc)


def test_a_new_qos_and_a_partition_naming_it_come_up_in_one_sync(example):
    # GIVEN a running cluster whose accounts Job converged
    cluster, rendered = example("change")
    assert cluster.bootstrap().returncode == 0
    cluster.start_ctld()
    assert accounts_job(cluster, rendered).returncode == 0

    def add_urgent(data: dict) -> None:
        data["policy"]["qos"].append({"name": "urgent", "priority": 5000, "maxTRESPerUser": {"gres/gpu": 2}})
        data["policy"]["accounts"][0]["qos"].append("urgent")
        data["partitions"].append({"name": "urgent", "nodesets": ["slinky"], "allowQos": ["urgent"]})

    # WHEN one commit adds a QoS and a partition naming it: the Controller's pod restarts with the
    # new slurm.conf after the ConfigMap (wave 0) changed, and the Job runs after the sync
    cluster.stop_ctld()
    _, changed = example("change-next", add_urgent, slurm_name="change")
    cluster.write_config(changed.files)
    cluster.controller = changed.obj("controller-slurm.yaml")
    cluster.accounts = changed.obj("configmap-slurm-accounts.yaml")["data"]
    if "gres.conf" in changed.files:
        (cluster.etc / "gres.conf").write_text(local_gres_conf(cluster, one_node_per_nodeset(changed)))
    boot = cluster.bootstrap()
    # THEN slurmctld comes up with the new partition, and the Job sets the QoS's limit
    assert boot.returncode == 0 and "creating QoS urgent" in boot.stdout, boot.stderr
    cluster.start_ctld()
    assert "PartitionName=urgent" in cluster.run("scontrol", "show", "partition", "urgent").stdout
    job = accounts_job(cluster, changed)
    assert job.returncode == 0, job.stdout + job.stderr
    assert "urgent|gres/gpu=2" in _db(cluster, "qos", "format=name,maxtrespu")


CPU_SPEC = """\
schemaVersion: 1
name: cpus
aws: {region: us-west-2, eksClusterName: eks}
gitops: {repoURL: "https://github.com/o/r.git"}
versions: {slurmImageTag: 26.05.1-ubuntu26.04}
accounting: {enabled: false}
scheduling: {fairShare: {enabled: false}}
nodesets: [{name: cpu, instanceType: m6i.large}]
partitions: [{name: cpu, nodesets: [cpu]}]
"""


def _cpus_of_concurrent_jobs(cluster: Cluster, nodes: list[str]) -> list[str]:
    """Start one 1-CPU job per node (or two on one node), all at once; each prints the CPUs it may use."""
    out = cluster.jobs
    ids = []
    for i, node in enumerate(nodes):
        done = cluster.run("sbatch", "--parsable", "-p", "cpu", "-w", node, "-n1", "-c1", "--mem=100", "-t", "1",
                           "-o", str(out / f"{i}.out"),
                           "--wrap", "grep Cpus_allowed_list /proc/self/status; sleep 50")  # cancelled on close
        ids.append(done.stdout.strip())
    harness.wait_for("jobs", lambda: all((out / f"{i}.out").exists() and (out / f"{i}.out").read_text()
                                         for i in range(len(nodes))), timeout=60)
    running = cluster.run("squeue", "-h", "-t", "R", "-o", "%i").stdout.split()
    assert sorted(running) == sorted(ids), "the jobs did not run at the same time"
    return [(out / f"{i}.out").read_text().split()[-1] for i in range(len(nodes))]


def test_one_slurmd_per_instance_gives_concurrent_jobs_their_own_cpus(slurm_site, tmp_path):
    # GIVEN a CPU nodeset, one slurmd per instance as the spec now always renders it (no split)
    spec = tmp_path / "cpus.yaml"
    spec.write_text(CPU_SPEC)
    rendered = render(spec)
    assert "Cpus=" not in rendered.nodes["cpu"]
    cluster = start_cluster(slurm_site, "cpus", rendered, {})
    try:
        cluster.start_ctld()
        cluster.start_slurmd("cpu-0", rendered.nodes["cpu"])
        # WHEN two 1-CPU jobs run on it at once
        cpus = _cpus_of_concurrent_jobs(cluster, ["cpu-0", "cpu-0"])
        # THEN task/cgroup gives them disjoint CPUs
        assert len(set(cpus)) == 2, cpus
    finally:
        cluster.close()


def test_two_slurmd_splitting_one_machine_put_their_jobs_on_the_same_cpu(slurm_site, tmp_path):
    # GIVEN the registration a split nodeset used to render: two slurmd on one machine, CPUs=1 each
    # (why a split is refused: Slurm maps a node's abstract CPUs through the whole machine's CPU map)
    spec = tmp_path / "split.yaml"
    spec.write_text(variant(CPU_SPEC, name="split"))
    rendered = render(spec)
    cluster = start_cluster(slurm_site, "split", rendered, {})
    try:
        cluster.start_ctld()
        conf = rendered.nodes["cpu"].replace("Features=", "CPUs=1 Features=")
        for node in ("cpu-0", "cpu-1"):
            cluster.start_slurmd(node, conf)
        # WHEN each runs a job at the same time
        cpus = _cpus_of_concurrent_jobs(cluster, ["cpu-0", "cpu-1"])
        # THEN both jobs get the same machine CPU
        assert cpus[0] == cpus[1], cpus
    finally:
        cluster.close()


def _local_wait(job: dict, port: int, **env: str) -> dict:
    """A wait hook's Job with its Service name and port rewritten to the daemon on loopback."""
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    values = {**{e["name"]: e["value"] for e in container["env"]}, "HOST": "127.0.0.1", "PORT": str(port), **env}
    container = {**container, "env": [{"name": k, "value": v} for k, v in values.items()]}
    return {"spec": {"template": {"spec": {**pod, "containers": [container]}}}}


def test_the_wait_hooks_hold_their_wave_until_the_daemon_answers(example):
    # GIVEN a cluster whose slurmdbd is up and whose slurmctld has not started
    cluster, rendered = example("waits")
    dbd = _local_wait(rendered.obj("job-slurm-wait-slurmdbd.yaml"), cluster.site.dbd_port)
    ctld_job = rendered.obj("job-slurm-wait-slurmctld.yaml")
    # WHEN the hooks run, each in its pod sandbox (as the rendered user, with only its env)
    # THEN the Accounting's hook succeeds, and the Controller's fails while slurmctld is down
    done = cluster.job_pod(dbd, {}).run("wait", timeout=60)
    assert done.returncode == 0 and "slurmdbd answers" in done.stdout, done.stdout + done.stderr
    down = cluster.job_pod(_local_wait(ctld_job, cluster.ctld_port, WAIT_TRIES="1"), {}).run("wait", timeout=60)
    assert down.returncode == 1 and "slurmctld (127.0.0.1:" in down.stderr, down.stdout + down.stderr
    # AND once slurmctld's pod is up the Controller's hook succeeds
    assert cluster.bootstrap().returncode == 0
    cluster.start_ctld()
    up = cluster.job_pod(_local_wait(ctld_job, cluster.ctld_port), {}).run("wait", timeout=60)
    assert up.returncode == 0 and "slurmctld answers" in up.stdout, up.stdout + up.stderr



# Descriptions as a spec could write them (the schema already refuses quotes, ':' and line breaks):
# what sacctmgr's flat-file reader keeps, trims, unescapes or lowercases (grammar/sacctmgr_file.py).
FLAT_FILE_TEXTS = ["plain words", "Mixed Case", "a\\b", "x\\ y", "  lead", "trail  ", "a;b", "a,b", "a/b", "a=b",
                   "a`b", "a\u00a0b", "tab\there", "gres/gpu x", "a|b", "100%", "ends in \\\\"]


def test_sacctmgr_stores_flat_file_text_as_the_tokenizer_reads_it(example, tmp_path):
    from slurmgen.spec.grammar import Unreadable, odd_space, sacctmgr_file
    # GIVEN a running cluster and a flat file with one account per description, as charts/policy.py writes it
    cluster, rendered = example("flatfile")
    assert cluster.bootstrap().returncode == 0
    cluster.start_ctld()
    names = {f"ff{i}": text for i, text in enumerate(FLAT_FILE_TEXTS)}
    lines = ["Cluster - 'flatfile':Fairshare=1", "Parent - 'root'"]
    lines += [f"Account - '{name}':Description='{text}':Organization='org':Fairshare=1" for name, text in names.items()]
    flat = tmp_path / "accounts.cfg"
    flat.write_text("\n".join(lines) + "\n", encoding="utf-8")
    # WHEN sacctmgr loads it
    cluster.run("sacctmgr", "-i", "load", f"file={flat}", timeout=120)
    stored = dict(line.split("|", 1) for line in _db(cluster, "account", "where", f"names={','.join(names)}",
                                                      "format=account,description"))
    # THEN each description is what the tokenizer reads from its line, and read_back accepts exactly the
    # texts stored as written (lowercased); every one was stored
    assert sorted(stored) == sorted(names)
    for (name, text), line in zip(names.items(), lines[2:], strict=True):
        assert stored[name] == dict(sacctmgr_file.options(line))["Description"], (text, stored[name])
        try:
            sacctmgr_file.read_back("Description", text)
            accepted = True
        except Unreadable:
            accepted = False
        # (a no-break space is kept as written, and refused because it looks like a plain space)
        assert accepted == (stored[name] == text.lower()) or odd_space(text), (text, stored[name])
