"""What slurm-operator v1.2.1 and slurmctld 26.05 do with the slurm.conf pieces we render (issue #11).

Each test rests on upstream code read at the pinned tags (cited in charts/slurm_cluster.py,
slurmgen/catalog/sizing.py and slurmgen/plan/nodesets.py); where the operator's behaviour matters, the test
re-enacts it in a few lines (`operator_*` helpers) instead of trusting our own rendering of it.
"""

from __future__ import annotations

import itertools
import re

import pytest
import yaml

from slurmgen.synth.build import render
from slurmgen.catalog.catalog import load_catalog
from slurmgen.catalog.sizing import DEFAULT_RESERVE, SizingError, pod_resources, slurm_node_conf
from charts import slurm_cluster
from slurmgen.kube.quantity import memory_mib
from slurmgen.spec import parse_text
from tests.conftest import MINIMAL_SPEC
from slurmgen.plan.nodesets import BRIDGED_SLURMD_REQUESTS
from tests.scheduling import bridged
from tests.spec_builder import spec_text

CATALOG = load_catalog()

# gpu (on-demand), spot (spot, own partition), burst (autoscaled on-demand), spot2 (spot, opted in).
FOUR_KINDS = """\
schemaVersion: 1
name: t
aws: {region: us-west-2, eksClusterName: eks}
gitops: {repoURL: "https://github.com/o/r.git"}
autoscaling: {prometheusAddress: "http://prometheus.monitoring:9090"}
nodesets:
  - {name: gpu, instanceType: g5.xlarge, features: [gpu, a10g]}
  - {name: spot, instanceType: g5.xlarge, capacityType: spot, features: [a10g, spot]}
  - {name: burst, instanceType: m7i.xlarge, autoscale: {min: 0, max: 4}}
  - {name: spot2, instanceType: m7i.xlarge, capacityType: spot, includeInAll: true}
partitions:
  - {name: spot, nodesets: [spot]}
  - {name: burst, nodesets: [burst]}
  - {name: all, nodesets: [ALL], default: true}
"""


def _render(text: str) -> dict:
    [cluster] = render([parse_text("t.yaml", text)])
    return cluster.files


def _controller(files: dict) -> dict:
    return files["slurm/controller-slurm.yaml"]["spec"]


def _nodesets(files: dict) -> dict[str, dict]:
    return {obj["metadata"]["name"]: obj["spec"] for obj in files.values() if obj["kind"] == "NodeSet"}


def _slurm_nodeset_name(spec: dict) -> str:
    """common.GetSlurmNodeSetName: the pod hostname prefix trimmed of '-'."""
    return spec["template"]["spec"]["hostname"].strip("-")


def operator_nodeset_block(existing: list[dict]) -> list[str]:
    """controller_config.go buildNodeSetConf (v1.2.1): one NodeSet line per existing CR, and its partition."""
    lines = []
    for spec in sorted(existing, key=_slurm_nodeset_name):
        name = _slurm_nodeset_name(spec)
        lines.append(f"NodeSet={name} Feature={name}")
        if spec.get("partition", {}).get("enabled"):
            lines.append(f"PartitionName={name} Nodes={name} {spec['partition']['config']}")
    return lines


def dangling_partition_names(lines: list[str]) -> list[str]:
    """Names in a partition's Nodes= that no NodeSet line defines: slurmctld takes them for host names
    and exits ("Invalid node names in partition", slurm-26-05-1-1 src/slurmctld/read_config.c)."""
    defined = {m.group(1) for line in lines if (m := re.match(r"NodeSet=(\S+)", line))}
    out = []
    for line in lines:
        if line.startswith("PartitionName="):
            nodes = re.search(r"\bNodes=(\S+)", line).group(1)
            out += [n for n in nodes.split(",") if n.upper() != "ALL" and n not in defined]
    return out


def operator_features(spec: dict) -> list[str]:
    """workerbuilder slurmdConfArgs (v1.2.1): the nodeset name, then every Features= value appended."""
    features = [_slurm_nodeset_name(spec)]
    for token in spec.get("extraConf", "").split(" "):
        key, _, value = token.partition("=")
        if key.title() in ("Features", "Feature"):
            features += value.split(",")
    return features


# -- problem 1: cgroup.conf is enforced only through task/cgroup ------------------------------------

def test_controller_sets_the_cgroup_task_plugin_and_cgroup_accounting(rendered):
    for name, cluster in rendered.items():
        # GIVEN each example cluster, WHEN rendered
        conf = _controller(cluster.files)["extraConf"].splitlines()
        cgroup = cluster.files["slurm/configmap-slurm-cgroup-conf.yaml"]["data"]["cgroup.conf"]
        # THEN slurm.conf loads task/cgroup (which applies Constrain*) stacked with task/affinity, and
        # gathers job accounting from the cgroups; the operator writes neither line itself
        assert "TaskPlugin=task/cgroup,task/affinity" in conf, name
        assert "ProctrackType=proctrack/cgroup" in conf, name
        assert "JobAcctGatherType=jobacct_gather/cgroup" in conf, name
        assert "ConstrainCores=yes" in cgroup and "ConstrainRAMSpace=yes" in cgroup, name


# -- problem 2: a config file edit must reach slurmctld (and through it slurmd/sackd) ---------------

@pytest.mark.parametrize("constant", ["CGROUP_CONF", "GRES_CONF"])
def test_changing_only_a_config_file_rolls_the_controller_pod(monkeypatch, constant):
    # GIVEN a GPU cluster (it mounts both cgroup.conf and gres.conf through configFileRefs)
    before = _render(MINIMAL_SPEC)
    # WHEN only the content of one config file changes
    monkeypatch.setattr(slurm_cluster, constant, getattr(slurm_cluster, constant) + "# edited\n")
    after = _render(MINIMAL_SPEC)
    # THEN that ConfigMap changed, and the Controller's pod template changed with it (the operator hashes
    # only its own <name>-config ConfigMap into the pod, so without this nothing would restart slurmctld)
    configmap = {"CGROUP_CONF": "slurm-cgroup-conf", "GRES_CONF": "slurm-gres-conf"}[constant]
    changed = sorted(path for path in before if before[path] != after[path])
    assert changed == [f"slurm/configmap-{configmap}.yaml", "slurm/controller-slurm.yaml"]
    old, new = _controller(before), _controller(after)
    assert old["template"]["metadata"]["annotations"] != new["template"]["metadata"]["annotations"]
    assert {k: v for k, v in old.items() if k != "template"} == {k: v for k, v in new.items() if k != "template"}


def test_config_files_hash_ignores_key_order_but_not_content():
    assert (slurm_cluster.config_files_hash({"a": {"x": "1"}, "b": {"y": "2"}})
            == slurm_cluster.config_files_hash({"b": {"y": "2"}, "a": {"x": "1"}}))
    assert slurm_cluster.config_files_hash({"a": {"x": "1"}}) != slurm_cluster.config_files_hash({"a": {"x": "2"}})


# -- problem 3: a partition must never name a NodeSet slurmctld does not know -----------------------

def test_no_partition_dangles_whichever_nodeset_crs_exist(rendered):
    for name, cluster in rendered.items():
        extra = _controller(cluster.files)["extraConf"].splitlines()
        crs = list(_nodesets(cluster.files).values())
        # GIVEN every moment of a sync: no NodeSet CR yet (first install: Controller at wave 2, NodeSets
        # at 3), any one of them missing (added in the same commit as its partition), or all of them
        for existing in [[], crs, *([c for c in crs if c is not gone] for gone in crs)]:
            # WHEN the operator assembles slurm.conf: its NodeSet block, then our extraConf
            conf = operator_nodeset_block(existing) + extra
            # THEN every name in every partition's Nodes= is a defined NodeSet
            assert dangling_partition_names(conf) == [], (name, [_slurm_nodeset_name(c) for c in existing])


def test_removing_a_nodeset_and_its_partition_leaves_nothing_dangling():
    # GIVEN a cluster whose CR for `spot` still exists (Argo CD prunes it after applying the Controller)
    old_crs = list(_nodesets(_render(FOUR_KINDS)).values())
    # WHEN `spot` and its partition are removed from the spec in one commit
    data = yaml.safe_load(FOUR_KINDS)
    data["nodesets"] = [n for n in data["nodesets"] if n["name"] != "spot"]
    data["partitions"] = [p for p in data["partitions"] if p["name"] != "spot"]
    assert [len(data["nodesets"]), len(data["partitions"])] == [3, 2]
    new = _render(yaml.safe_dump(data, sort_keys=False))
    # THEN the new extraConf with the old or the new set of CRs never dangles
    extra = _controller(new)["extraConf"].splitlines()
    for existing in (old_crs, list(_nodesets(new).values())):
        assert dangling_partition_names(operator_nodeset_block(existing) + extra) == []


# -- problem 4: ALL means the nodesets a user expects ------------------------------------------------

def test_all_leaves_out_spot_and_autoscaled_nodesets_unless_they_opt_in():
    # GIVEN on-demand `gpu`, spot `spot`, autoscaled `burst` and spot `spot2` with includeInAll: true
    files = _render(FOUR_KINDS)
    # WHEN the default partition [ALL] is written
    [line] = [ln for ln in _controller(files)["extraConf"].splitlines() if ln.startswith("PartitionName=all ")]
    # THEN it names exactly gpu and spot2, never Nodes=ALL (which would take every node of every kind)
    assert re.search(r"\bNodes=(\S+)", line).group(1) == "gpu,spot2"
    assert "Default=YES" in line


def test_example_default_partition_keeps_jobs_off_the_autoscaled_spot_nodes(rendered):
    spec = rendered["example"].spec
    all_part = next(p for p in spec.partitions if p.name == "all")
    assert all_part.all_nodesets and all_part.nodesets == ("slinky",)


# -- problem 5: Slurm offers what the pod is given -----------------------------------------------------

def threads_per_core(it) -> int:
    """Graviton, HPC and 7th/8th-gen AMD general-purpose types have one thread per core; the rest two."""
    family = it.instance_type.split(".")[0]
    return 1 if it.arch == "arm64" or family.startswith("hpc") or family in {
        "c7a", "m7a", "r7a", "c8a", "m8a", "r8a"} else 2


def test_smt_off_families_have_one_thread_per_core():
    from slurmgen.catalog import sizing
    # THEN an HPC type and a 7th-gen AMD type count a core per vCPU; an SMT type two vCPUs per core
    assert [sizing.threads_per_core(CATALOG[n]) for n in ("hpc7a.96xlarge", "c7a.48xlarge", "m8a.48xlarge",
                                                          "c6a.48xlarge", "p5.48xlarge", "c7g.16xlarge")] == [1, 1, 1, 2, 2, 1]


def _slurm_cpus(instance: str, extra_conf: str) -> int:
    it = CATALOG[instance]
    conf = dict(token.split("=", 1) for token in extra_conf.split(" "))
    if "CPUs" in conf:
        return int(conf["CPUs"])
    return it.vcpu - int(conf.get("CoreSpecCount", 0)) * threads_per_core(it)


def test_slurm_never_schedules_more_cpu_or_memory_than_the_slurmd_pod_requests(rendered):
    for name, cluster in rendered.items():
        for cr, spec in _nodesets(cluster.files).items():
            # GIVEN each rendered NodeSet (no CPU/memory limits, so the entrypoint adds no CoreSpecCount)
            requests = spec["slurmd"]["resources"]["requests"]
            assert "cpu" not in spec["slurmd"]["resources"].get("limits", {}), (name, cr)
            if bridged({"spec": spec}):
                # slurm-bridge's nodes: slurmd asks Kubernetes for itself only, and Slurm's share is
                # checked against the node in tests/charts/test_bridge.py (the pods Slurm places need the rest free)
                assert requests == BRIDGED_SLURMD_REQUESTS | {k: v for k, v in requests.items() if k == "vpc.amazonaws.com/efa"}
                continue
            pool_name = spec["template"]["spec"]["nodeSelector"]["karpenter.sh/nodepool"]
            pool = cluster.files[f"compute/nodepool-{pool_name}.yaml"]["spec"]["template"]["spec"]
            types = next(r["values"] for r in pool["requirements"] if r["key"] == "node.kubernetes.io/instance-type")
            conf = dict(t.split("=", 1) for t in spec["extraConf"].split(" "))
            # THEN on every type its NodePool may launch, Slurm's CPUs (detected minus CoreSpecCount
            # cores, or CPUs=) fit in the CPU request
            for instance in types:
                assert _slurm_cpus(instance, spec["extraConf"]) * 1000 <= int(requests["cpu"].rstrip("m")), (name, cr, instance)
            # AND RealMemory fits in the memory request
            assert int(conf["RealMemory"]) <= memory_mib(requests["memory"]), (name, cr)


def _sizable() -> list[str]:
    """Catalog types a whole-node slurmd pod fits on (the rest are refused by sizing: tests/catalog)."""
    names = []
    for name in sorted(CATALOG):
        try:
            pod_resources(CATALOG[name], reserve=DEFAULT_RESERVE)
        except SizingError:
            continue
        names.append(name)
    return names


SIZABLE = _sizable()


def test_almost_every_catalog_type_is_sized_for_a_whole_node_pod():
    # the core-spec test below runs on these; only tiny types (under 1 CPU or 1 GiB left) drop out
    assert 1200 < len(SIZABLE) < len(CATALOG)


def test_whole_node_core_spec_leaves_slurm_the_request_in_whole_cores():
    # GIVEN every sizable catalog type, sized as a whole-node pod
    for instance in SIZABLE:
        it = CATALOG[instance]
        shape = pod_resources(it, reserve=DEFAULT_RESERVE)
        conf = slurm_node_conf(it, shape)
        per_core_m = 1000 * threads_per_core(it)
        usable = it.vcpu // threads_per_core(it) - int(conf.get("CoreSpecCount", "0"))
        # THEN Slurm keeps at least one core, never more cores than the request holds (but for that
        # one), and the most that fit: one core more would exceed the request
        assert usable >= 1, instance
        assert usable * per_core_m <= shape.cpu_m or usable == 1, instance
        assert (usable + 1) * per_core_m > shape.cpu_m, instance
        # AND CoreSpecCount is only written when it reserves something
        assert conf.get("CoreSpecCount") != "0", instance


@pytest.mark.parametrize(("instance", "core_spec", "usable_cpus"), [
    ("p5.48xlarge", "2", 188),    # 96 cores, the request holds 94.76: 2 reserved, 94 x 2 threads
    ("m6i.large", None, 2),        # 1 core: it stays Slurm's even though the request is 1.93 CPUs
    ("hpc7a.96xlarge", "3", 189),  # SMT off: 192 cores of one thread, 189.53 requested
])
def test_core_spec_count_on_known_types(instance, core_spec, usable_cpus):
    it = CATALOG[instance]
    conf = slurm_node_conf(it, pod_resources(it, reserve=DEFAULT_RESERVE))
    assert conf.get("CoreSpecCount") == core_spec
    usable = it.vcpu // threads_per_core(it) - int(conf.get("CoreSpecCount", "0"))
    assert usable * threads_per_core(it) == usable_cpus


def test_a_cpu_spec_list_from_the_user_replaces_our_core_spec_count():
    files = _render(spec_text(nodeset={"extraSlurmdConf": {"CpuSpecList": "0-1"}}))
    tokens = _nodesets(files)["slurm-worker-gpu"]["extraConf"].split(" ")
    assert "CpuSpecList=0-1" in tokens and not any(t.startswith("CoreSpecCount=") for t in tokens)


# -- problem 9: features once each -------------------------------------------------------------------

def test_features_reach_slurmd_once_each(rendered):
    clusters = [c.files for c in rendered.values()] + [_render(FOUR_KINDS)]
    for files in clusters:
        for cr, spec in _nodesets(files).items():
            # WHEN the operator prepends the nodeset name to our Features
            features = operator_features(spec)
            # THEN no feature appears twice
            assert len(features) == len(set(features)), (cr, features)


def test_features_keep_the_spec_order_without_the_nodeset_name():
    spec = _nodesets(_render(FOUR_KINDS))
    assert operator_features(spec["slurm-worker-gpu"]) == ["gpu", "a10g"]
    assert operator_features(spec["slurm-worker-spot"]) == ["spot", "a10g"]
    assert "Features=" not in spec["slurm-worker-burst"]["extraConf"]


def test_every_combination_of_spot_and_autoscale_defaults_as_documented():
    # includeInAll defaults to true only for on-demand (or reserved) nodesets that do not autoscale
    from slurmgen.spec._checks.names import include_in_all
    for capacity, autoscale in itertools.product(["on-demand", "reserved", "spot"], [None, {"min": 0, "max": 2}]):
        ns = {"capacityType": capacity, "autoscale": autoscale}
        assert include_in_all(ns) == (capacity != "spot" and autoscale is None)
        assert include_in_all({**ns, "includeInAll": True}) is True


def test_every_partition_has_a_default_memory_per_job(rendered):
    for cluster in rendered.values():
        conf = cluster.files["slurm/controller-slurm.yaml"]["spec"]["extraConf"]
        lines = [line for line in conf.splitlines() if line.startswith("PartitionName=")]
        assert all("DefMemPer" in line for line in lines), cluster.spec.name
        for rel, obj in cluster.files.items():
            if obj["kind"] == "NodeSet" and "partition" in obj["spec"]:
                assert "DefMemPer" in obj["spec"]["partition"]["config"], rel
