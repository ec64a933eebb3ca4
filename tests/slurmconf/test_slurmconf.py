"""The effective Slurm configuration: the files slurm-operator v1.2.1 writes from our CRs, and the
synth-time checks on them.

The golden files tests/golden/slurmconf/<cluster>.conf were reviewed by eye against
internal/builder/controllerbuilder/controller_config.go:buildSlurmConf@v1.2.1. Regenerate after an
intended change with SLURMGEN_UPDATE_GOLDEN=1 (and review the diff against the Go code again).
"""

from __future__ import annotations

import copy

import pytest
import yaml

from slurmgen.cli import main
from slurmgen.verify import slurm_files as checks
from slurmgen.verify.slurm_files import blocking, prune_waves, sync_states, wave_problems
from slurmgen.slurmconf.operator import effective, merged_config, slurmd_conf
from tests.conftest import EXAMPLES, SPECS, TESTS, assert_golden
from tests.spec_builder import DROP, by_name, variant

GOLDEN = TESTS / "golden" / "slurmconf"
CLUSTERS = sorted(p.stem for p in EXAMPLES)
CTL = "slurm/controller-slurm.yaml"


def tree_of(rendered, name: str) -> dict:
    return copy.deepcopy(dict(rendered[name].files))


def check_ids(problems) -> list[str]:
    return [p.check for p in problems]


def without_our_nodeset_lines(tree: dict) -> dict:
    """The tree as slurmgen rendered it before it wrote `NodeSet=` lines for every declared nodeset:
    only the operator's lines (for NodeSet CRs that exist) define them, which the wave checks catch."""
    conf = tree[CTL]["spec"]["extraConf"]
    tree[CTL]["spec"]["extraConf"] = "".join(line for line in conf.splitlines(True) if not line.startswith("NodeSet="))
    return tree


# -- the files ------------------------------------------------------------------------------------

@pytest.mark.parametrize("cluster", CLUSTERS)
def test_slurm_conf_matches_the_reviewed_golden_file(rendered, cluster):
    # GIVEN a shipped example WHEN its effective slurm.conf is assembled THEN it is the reviewed file
    text = effective(rendered[cluster].files).files["slurm.conf"]
    assert_golden(text, GOLDEN / f"{cluster}.conf")


def test_operator_keys_come_first_then_nodesets_then_our_extra_conf(rendered):
    text = effective(rendered["example"].files).files["slurm.conf"]
    lines = text.splitlines()
    # THEN the Controller service names the host, as Controller.PrimaryName(ServiceFQDNShort)
    assert "SlurmctldHost=slurm-controller-0(slurm-controller.slurm)" in lines
    assert "AccountingStorageHost=slurm-accounting" in lines
    assert "MetricsType=metrics/openmetrics" in lines
    # AND the sections come in buildSlurmConf's order, NodeSets sorted by CR name
    order = [lines.index(x) for x in ("### GENERAL ###", "### ACCOUNTING ###", "### NODESET & PARTITION ###",
                                      "NodeSet=slinky Feature=slinky", "NodeSet=spot Feature=spot",
                                      "### EXTRA CONFIG ###", "PreemptType=preempt/qos")]
    assert order == sorted(order)
    # AND no MERGED CONFIG section: our extraConf sets none of the merged keys
    assert "### MERGED CONFIG ###" not in text


def test_cgroup_conf_is_ours_when_a_config_file_ref_carries_it_else_the_operators(rendered):
    tree = tree_of(rendered, "example")
    assert effective(tree).files["cgroup.conf"].startswith("CgroupPlugin=autodetect\n")
    # WHEN no configFileRefs ConfigMap holds cgroup.conf
    tree[CTL]["spec"]["configFileRefs"] = [{"name": "slurm-gres-conf"}]
    # THEN the operator writes its own (buildCgroupConf)
    assert effective(tree).files["cgroup.conf"] == "CgroupPlugin=cgroup/v2\nIgnoreSystemd=yes\n"


def test_merged_keys_are_unioned_like_build_merged_config():
    merge = {"SlurmctldParameters": ["enable_configless", "reconfig_on_restart"], "AuthInfo": ["use_client_ids"]}
    snippet = merged_config("SlurmctldParameters=Idle_On_Node_Suspend,enable_configless\n", merge)
    assert snippet == "SlurmctldParameters=enable_configless,idle_on_node_suspend,reconfig_on_restart"
    assert merged_config("PriorityType=priority/multifactor\n", merge) == ""


def test_slurmd_registration_conf_mirrors_slurmd_conf_args():
    nodeset = {"metadata": {"name": "slurm-worker-gpu"},
               "spec": {"extraConf": "Features=a10g RealMemory=1000 Weight=5",
                        "template": {"spec": {"hostname": "gpu-"}}}}
    # THEN the nodeset name is the first feature, keys are title-cased as Go's cases.Title, sorted
    assert slurmd_conf(nodeset) == "Features=gpu,a10g Realmemory=1000 Weight=5"


def test_slurmdbd_conf_shows_the_password_as_a_placeholder(rendered):
    text = effective(rendered["example"].files).files["slurmdbd.conf"]
    assert "StoragePass=<secret mariadb-password/password>" in text.splitlines()
    assert "StorageHost=mariadb" in text.splitlines() and "DbdHost=slurm-accounting-0" in text.splitlines()


# -- --explain -----------------------------------------------------------------------------------

def test_explain_prints_the_file_and_the_dynamic_nodes(capsys):
    assert main(["--spec", str(SPECS / "example.yaml"), "--explain", "slurm.conf"]) == 0
    out = capsys.readouterr().out
    assert out.startswith((GOLDEN / "example.conf").read_text())
    assert "# NodeSet=spot: Corespeccount=1 Features=spot,a10g Gres=gpu:a10g:1 Realmemory=28390 Weight=100\n" in out


@pytest.mark.parametrize("argv, line", [
    (["--explain", "slurm.cnf"], "--explain: unknown name 'slurm.cnf' (one of cgroup.conf, gres.conf, identity, "
                                 "slurm.conf, slurmdbd.conf, sssd.conf, topology.yaml)"),
    (["--explain", "slurm.conf", "--cluster", "nope"], "--cluster: no cluster 'nope' (rendered: example)"),
    (["--explain", "slurmdbd.conf", "--cluster", "t"], None),
])
def test_explain_refuses_an_unknown_file_or_cluster_with_one_line(argv, line, capsys, tmp_path):
    spec = SPECS / "example.yaml"
    if line is None:  # a cluster without accounting has no slurmdbd.conf
        from tests.conftest import MINIMAL_SPEC
        spec = tmp_path / "t.yaml"
        spec.write_text(MINIMAL_SPEC + "accounting: {enabled: false}\nscheduling: {fairShare: {enabled: false}}\n")
        line = "t: slurmdbd.conf: not written for this cluster: accounting is disabled"
    assert main(["--spec", str(spec), *argv]) == 2
    assert capsys.readouterr().err.splitlines() == [line]


def test_every_name_explain_accepts_is_listed_in_its_error_and_help(capsys, tmp_path):
    """Issue 21 item 7: the unknown-name line listed five of the seven names (not sssd.conf, identity)."""
    from slurmgen.cli import _parser, explain_names
    from tests.conftest import MINIMAL_SPEC
    spec = tmp_path / "t.yaml"
    spec.write_text(MINIMAL_SPEC)
    # GIVEN the names --explain accepts: each is accepted (never "unknown")
    for name in explain_names():
        main(["--spec", str(spec), "--explain", name])
        assert "unknown" not in capsys.readouterr().err, name
    # WHEN an unknown name is asked for THEN the line lists every one of them, and so does --help
    assert main(["--spec", str(spec), "--explain", "nope"]) == 2
    err = capsys.readouterr().err
    help_text = " ".join(_parser().format_help().split())
    for name in ("cgroup.conf", "gres.conf", "identity", "slurm.conf", "slurmdbd.conf", "sssd.conf", "topology.yaml"):
        assert name in explain_names(), name
        assert f"{name}," in err or f"{name})" in err, name
        assert name in help_text, name


# -- checks ---------------------------------------------------------------------------------------

def test_no_check_fires_on_the_shipped_examples(rendered):
    # GIVEN the shipped examples WHEN every slurm.conf check runs THEN none fires
    assert blocking(p for name in CLUSTERS for p in checks.problems(name, rendered[name].files)) == []


def test_task_plugin_check_fires_without_task_cgroup_and_clears_with_it(rendered):
    tree = tree_of(rendered, "example")
    conf = tree[CTL]["spec"]["extraConf"]
    assert "TaskPlugin=task/cgroup,task/affinity\n" in conf
    # GIVEN the example without its TaskPlugin line THEN the check fires (cgroup.conf constrains)
    tree[CTL]["spec"]["extraConf"] = conf.replace("TaskPlugin=task/cgroup,task/affinity\n", "")
    assert "task-plugin" in check_ids(checks.problems("example", tree))
    # AND a task plugin list that holds task/cgroup clears it
    tree[CTL]["spec"]["extraConf"] += "TaskPlugin=task/affinity,task/cgroup\n"
    assert "task-plugin" not in check_ids(checks.problems("example", tree))


def test_install_waves_are_safe_because_every_declared_nodeset_has_its_line(rendered):
    # GIVEN the example as rendered THEN no partition dangles at any wave of the first install
    assert wave_problems("example", {}, rendered["example"].files) == []


def test_install_waves_name_each_partition_whose_nodeset_comes_after_the_controller(rendered):
    # GIVEN the example without our NodeSet= lines (only the operator's, for CRs that exist)
    lines = [str(p) for p in wave_problems("example", {}, without_our_nodeset_lines(tree_of(rendered, "example")))]
    assert lines == [
        "example/slurm/controller-slurm.yaml: spec.extraConf: PartitionName=backfill Nodes=spot: no NodeSet spot in "
        "slurm.conf after wave 2 of the first install (NodeSet slurm-worker-spot arrives at wave 3); slurmctld "
        "rejects a partition naming an unknown node",
        "example/slurm/controller-slurm.yaml: spec.extraConf: PartitionName=all Nodes=slinky: no NodeSet slinky in "
        "slurm.conf after wave 2 of the first install (NodeSet slurm-worker-slinky arrives at wave 3); slurmctld "
        "rejects a partition naming an unknown node"]


def test_a_partition_line_left_behind_by_a_removed_nodeset_is_reported(rendered):
    # GIVEN a tree where every NodeSet already exists (so the install waves do not matter), without
    # our NodeSet= lines
    base = without_our_nodeset_lines(tree_of(rendered, "example"))
    head = copy.deepcopy(base)
    # WHEN the spot NodeSet is removed but the Controller's backfill partition still names it
    del head["slurm/nodeset-slurm-worker-spot.yaml"], head["slurm/scaledobject-slurm-worker-spot.yaml"]
    problems = wave_problems("example", base, head)
    # THEN it fails at the wave the NodeSet is pruned
    assert [p.check for p in problems] == ["partition-nodes"]
    assert "Nodes=spot: no NodeSet spot in slurm.conf after wave" in str(problems[0])
    assert "of this change (no NodeSet of that name is rendered)" in str(problems[0])


def test_removing_a_nodeset_and_its_partition_together_is_safe(rendered):
    base = tree_of(rendered, "example")
    head = copy.deepcopy(base)
    del head["slurm/nodeset-slurm-worker-spot.yaml"], head["slurm/scaledobject-slurm-worker-spot.yaml"]
    head[CTL]["spec"]["extraConf"] = "\n".join(line for line in base[CTL]["spec"]["extraConf"].splitlines()
                                               if not line.startswith("PartitionName=backfill")) + "\n"
    # Controller (wave 2) drops the line before the NodeSet (wave 3) is pruned
    assert wave_problems("example", base, head) == []


def test_prune_waves_are_swapped_like_argo_cd():
    assert prune_waves({"a": 0, "b": 2, "c": 3}) == {"a": 3, "b": 2, "c": 0}


def test_sync_states_apply_changed_objects_at_their_wave():
    def obj(kind, name, wave, **spec):
        return {"kind": kind, "metadata": {"name": name, "namespace": "s",
                                           "annotations": {"argocd.argoproj.io/sync-wave": str(wave)}}, "spec": spec}
    base = {"slurm/a.yaml": obj("Controller", "c", 2, v=1)}
    head = {"slurm/a.yaml": obj("Controller", "c", 2, v=2), "slurm/b.yaml": obj("NodeSet", "n", 3)}
    states = sync_states(base, head)
    assert [(w, sorted(s), s["slurm/a.yaml"]["spec"]["v"]) for w, s in states] == [
        (2, ["slurm/a.yaml"], 2), (3, ["slurm/a.yaml", "slurm/b.yaml"], 2)]


def test_an_operator_owned_key_in_extra_conf_is_refused(rendered):
    tree = tree_of(rendered, "example")
    tree[CTL]["spec"]["extraConf"] += "ClusterName=other\nSlurmctldParameters=idle_on_node_suspend\n"
    lines = [str(p) for p in checks.problems("example", tree) if p.check == "operator-owned-key"]
    # THEN ClusterName is refused, SlurmctldParameters (merged by the operator) is not
    assert lines == ["example/slurm/controller-slurm.yaml: spec.extraConf: ClusterName=other overrides "
                     "ClusterName=slurm-on-eks, which slurm-operator 1.2.1 writes itself "
                     "(controller_config.go:buildSlurmConf); set it through the Controller instead"]


def test_a_key_set_twice_with_different_values_is_refused(rendered):
    tree = tree_of(rendered, "example")
    tree[CTL]["spec"]["extraConf"] += "priorityweightage=5\nSelectType=select/cons_tres\n"
    lines = [str(p) for p in checks.problems("example", tree) if p.check == "duplicate-key"]
    assert lines == ["example/slurm/controller-slurm.yaml: spec.extraConf: PriorityWeightAge is set twice with "
                     "different values (1000, 5); only one can hold"]


def test_a_partition_defined_twice_is_refused(rendered):
    tree = tree_of(rendered, "example")
    tree[CTL]["spec"]["extraConf"] += "PartitionName=slinky Nodes=slinky MaxTime=1:00:00\n"
    lines = [str(p) for p in checks.problems("example", tree) if p.check == "duplicate-key"]
    assert lines == ["example/slurm/controller-slurm.yaml: spec.extraConf: PartitionName=slinky is defined 2 times "
                     "(a NodeSet's own partition and the Controller's extraConf); slurmctld keeps one"]


def test_a_partition_qos_missing_from_the_policy_is_refused(rendered):
    tree = tree_of(rendered, "example")
    tree[CTL]["spec"]["extraConf"] = tree[CTL]["spec"]["extraConf"].replace("AllowQos=scavenger",
                                                                          "AllowQos=scavenger,urgent")
    lines = [str(p) for p in checks.problems("example", tree) if p.check == "partition-qos"]
    assert lines == ["example/slurm/controller-slurm.yaml: spec.extraConf: PartitionName=backfill "
                     "AllowQos=scavenger,urgent: QoS urgent is not created by the policy (accounts.cfg)"]


def test_default_memory_larger_than_the_smallest_node_is_refused(rendered):
    tree = tree_of(rendered, "example")
    # `backfill` holds spot (28390 MB, 1 GPU)
    tree[CTL]["spec"]["extraConf"] = tree[CTL]["spec"]["extraConf"].replace(
        "AllowQos=scavenger DefMemPerGPU=28390", "AllowQos=scavenger DefMemPerGPU=28391")
    lines = [str(p) for p in checks.problems("example", tree) if p.check == "default-memory"]
    assert lines == ["example/slurm/controller-slurm.yaml: spec.extraConf: PartitionName=backfill DefMemPerGPU=28391 "
                     "x 1 GPUs of NodeSet spot = 28391 MB exceeds its RealMemory=28390"]


def test_diff_names_removed_partitions_and_groups_accounting_keys(rendered):
    from slurmgen.review.slurm_diff import changes
    old = tree_of(rendered, "example")
    new = copy.deepcopy(old)
    new[CTL]["spec"]["extraConf"] = new[CTL]["spec"]["extraConf"].replace(
        "PartitionName=backfill Nodes=spot State=UP MaxTime=1-00:00:00 PriorityTier=1 AllowQos=scavenger "
        "DefMemPerGPU=28390\n", "").replace("AccountingStorageEnforce=associations,limits,qos",
                                            "AccountingStorageEnforce=associations")
    assert changes(old, new) == [
        "`PartitionName=backfill` removed (was: Nodes=spot State=UP MaxTime=1-00:00:00 PriorityTier=1 "
        "AllowQos=scavenger DefMemPerGPU=28390)",
        "accounting: `AccountingStorageEnforce` associations,limits,qos → associations"]
    assert changes(old, old) == []


def test_synth_accepts_a_nodeset_and_its_partition_added_in_one_commit(tmp_path, capsys, dist_tree):
    # GIVEN the prod tree and a spec whose new partition names a new NodeSet (it arrives after the
    # Controller: wave 3 against 2)
    import shutil
    from slurmgen.write.output import read_tree
    out = tmp_path / "dist"
    shutil.copytree(dist_tree / "prod", out / "prod")
    for f in (SPECS).glob("*.yaml"):
        (tmp_path / f.name).write_text(f.read_text())
    spec = tmp_path / "prod.yaml"
    prod = yaml.safe_load(spec.read_text())
    spec.write_text(variant(spec.read_text(),
                            nodesets=[*prod["nodesets"], {"name": "l40s", "instanceType": "g6e.12xlarge", "replicas": 2}],
                            partitions=[*prod["partitions"], {"name": "inference", "nodesets": ["l40s"]}]))
    # WHEN it is rendered
    rc = main(["--spec", str(spec), "--out", str(out)])
    # THEN the wave check passes (the Controller's own NodeSet=l40s line exists from wave 2 on) and it is written
    assert rc == 0, capsys.readouterr().err
    conf = read_tree(out / "prod")["slurm/controller-slurm.yaml"]
    assert "NodeSet=l40s Feature=l40s\n" in conf and "PartitionName=inference Nodes=l40s " in conf


def test_the_waves_of_a_removal_are_checked_against_the_tree_being_replaced(rendered, tmp_path, monkeypatch):
    # GIVEN NodeSets synced before the Controller (install is then fine) and the check enforced
    import dataclasses
    import yaml
    from slurmgen.run.pipeline import Result
    base = without_our_nodeset_lines(tree_of(rendered, "example"))
    base[CTL]["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] = "5"
    for rel, obj in base.items():
        (tmp_path / "example" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "example" / rel).write_text(yaml.safe_dump(obj))
    assert wave_problems("example", {}, base) == []
    # WHEN the spot NodeSet (wave 3) and its ScaledObject (4) go with the partition line: prune waves
    # are swapped, so the NodeSet is pruned at wave 4 and the Controller drops the line only at 5
    head = copy.deepcopy(base)
    del head["slurm/nodeset-slurm-worker-spot.yaml"], head["slurm/scaledobject-slurm-worker-spot.yaml"]
    head[CTL]["spec"]["extraConf"] = head[CTL]["spec"]["extraConf"].replace(
        "PartitionName=backfill Nodes=spot State=UP MaxTime=1-00:00:00 PriorityTier=1 AllowQos=scavenger "
        "DefMemPerGPU=28390\n", "")
    result = Result(clusters=(dataclasses.replace(rendered["example"], files=head),))
    # THEN the check against the replaced tree names the partition and the wave
    assert result.sync_problems(tmp_path) == [
        "example/slurm/controller-slurm.yaml: spec.extraConf: PartitionName=backfill Nodes=spot: no NodeSet spot in "
        "slurm.conf after wave 4 of this change (no NodeSet of that name is rendered); slurmctld rejects a "
        "partition naming an unknown node"]


def test_a_pruned_object_marked_prune_last_goes_after_the_last_wave():
    # GIVEN a ConfigMap (wave 0) the live cluster holds with PruneLast, and one without
    def obj(kind, name, wave, options=None):
        annotations = {"argocd.argoproj.io/sync-wave": str(wave)}
        if options:
            annotations["argocd.argoproj.io/sync-options"] = options
        return {"kind": kind, "metadata": {"name": name, "namespace": "s", "annotations": annotations}, "spec": {}}
    base = {"slurm/a.yaml": obj("Controller", "c", 2), "slurm/b.yaml": obj("ConfigMap", "last", 0, "PruneLast=true"),
            "slurm/c.yaml": obj("ConfigMap", "plain", 0)}
    head = {"slurm/a.yaml": {**obj("Controller", "c", 2), "spec": {"v": 2}}}
    # WHEN the sync states of removing both are modelled
    states = sync_states(base, head)
    # THEN the plain one goes at its wave, the PruneLast one only after every wave (gitops-engine
    # v3.5.1 sync_context.go: pruneLast tasks get the sync phase's last wave + 1, read from the live object)
    assert [(w, sorted(s)) for w, s in states] == [
        (0, ["slurm/a.yaml", "slurm/b.yaml"]), (2, ["slurm/a.yaml", "slurm/b.yaml"]), (3, ["slurm/a.yaml"])]


def test_turning_topology_off_keeps_topology_yaml_until_the_controller_drops_it_but_not_for_the_nodesets(rendered, tmp_path):
    # GIVEN training as rendered (topology on), written out as the tree being replaced
    import dataclasses
    from slurmgen.run.pipeline import Result, run
    base = tree_of(rendered, "training")
    for rel, obj in base.items():
        (tmp_path / "training" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "training" / rel).write_text(yaml.safe_dump(obj))
    # WHEN topology is turned off (and the block partition with it)
    text = (SPECS / "training.yaml").read_text()
    partitions = by_name(yaml.safe_load(text)["partitions"], {"reserved": {"topology": DROP}})
    spec = tmp_path / "training.yaml"
    spec.write_text(variant(text, topology=DROP, partitions=partitions))
    head = run([spec]).clusters[0]
    assert "slurm/configmap-slurm-topology-conf.yaml" not in head.files
    # THEN the ConfigMap the old Controller names (configFileRefs) is pruned last, so the operator can
    # build slurm.conf at every wave; what is left is the NodeSet h200's own partition line, which still
    # names tree at wave 2 (turn every partition flat first: tests/verify/test_topology_waves.py)
    lines = Result(clusters=(dataclasses.replace(head, files=dict(head.files)),)).sync_problems(tmp_path)
    assert not [line for line in lines if "cannot build slurm.conf" in line]
    assert [line.split(": ")[0] for line in lines] == ["training/slurm/nodeset-slurm-worker-h200.yaml"]
    assert "PartitionName=h200 Topology=tree: no topology tree after wave 2" in lines[0]


def test_the_slurm_conf_reader_reads_lines_with_slurms_own_grammar():
    # GIVEN slurm.conf lines with a quoted value, an escaped comment sign and our secret placeholder
    from slurmgen.slurmconf.parse import parse, tokens
    # WHEN they are read / THEN as Slurm's parse_config.c reads them (spec/grammar/slurm_conf.py)
    assert tokens('Epilog="/opt/a b" PrologFlags=x11') == [("Epilog", "/opt/a b"), ("PrologFlags", "x11")]
    assert tokens("NodeName=n Gres=gpu:2 # a comment") == [("NodeName", "n"), ("Gres", "gpu:2")]
    assert tokens("StoragePass=<secret db/password> X=1") == [("StoragePass", "<secret db/password>"), ("X", "1")]
    assert parse('PartitionName=p Nodes=a AllowGroups="x y"\n').partitions["p"][0].get("AllowGroups") == "x y"
