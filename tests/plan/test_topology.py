"""Topology-aware placement (issue #16): topology.yaml, partition Topology=, the labeler's wiring and logic.

The labeler's functions are pure (nodes in, annotation values out), so they are tested without a cluster.
"""

from __future__ import annotations

import json

import yaml

from charts import topology_labeler as lab
from charts.slurm_cluster import CONFIG_FILES_HASH
from slurmgen.spec import parse_text
from tests.conftest import REPO, SPECS, TESTS, assert_golden
from tests.spec_builder import by_name, variant

GOLDEN = TESTS / "golden" / "topology" / "training.yaml"


def _obj(rendered, path):
    return rendered["training"].files[path]


def test_training_topology_yaml_matches_golden(rendered):
    # GIVEN the training example WHEN rendered THEN topology.yaml is the reviewed file
    text = _obj(rendered, "slurm/configmap-slurm-topology-conf.yaml")["data"]["topology.yaml"]
    assert_golden(text, GOLDEN)
    doc = yaml.safe_load(text)
    # AND flat is the only cluster default, tree has its declared root, the Capacity Block partition has slots
    assert [t["topology"] for t in doc if t["cluster_default"]] == ["flat"]
    tree = next(t for t in doc if t["topology"] == "tree")
    assert tree["tree"]["switches"] == [{"switch": "ec2"}]
    block = next(t for t in doc if t["topology"] == "block-reserved")
    assert block["block"]["block_sizes"] == [2, 4]
    assert len(block["block"]["blocks"]) == 4  # one slot per Slurm node (4), whatever the block sizes


def test_topology_yaml_is_a_controller_config_file_and_rolls_slurmctld(rendered):
    # GIVEN the training Controller WHEN topology is on THEN topology.yaml is in configFileRefs and in the hash
    controller = _obj(rendered, "slurm/controller-slurm.yaml")["spec"]
    assert {"name": "slurm-topology-conf"} in controller["configFileRefs"]
    assert CONFIG_FILES_HASH in controller["template"]["metadata"]["annotations"]


def test_partitions_name_their_topology(rendered):
    # GIVEN the training example WHEN the partitions are written THEN each names its topology
    extra = _obj(rendered, "slurm/controller-slurm.yaml")["spec"]["extraConf"]
    lines = {line.split()[0]: line for line in extra.splitlines() if line.startswith("PartitionName=")}
    assert "Topology=tree" in lines["PartitionName=train"]
    assert "Topology=block-reserved" in lines["PartitionName=reserved"]
    own = _obj(rendered, "slurm/nodeset-slurm-worker-h200.yaml")["spec"]["partition"]["config"]
    assert "Topology=tree" in own.split()


def test_labeler_wiring(rendered):
    # GIVEN the training example WHEN rendered THEN the labeler runs the packaged script on the core nodes
    dep = _obj(rendered, "slurm/deployment-slurm-topology-labeler.yaml")
    pod = dep["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"eks.amazonaws.com/nodegroup": "core"}
    assert dep["spec"]["replicas"] == 1 and dep["spec"]["strategy"]["type"] == "Recreate"
    cm = _obj(rendered, "slurm/configmap-slurm-topology-labeler.yaml")["data"]
    assert cm["labeler.py"] == (REPO / "charts" / "topology_labeler.py").read_text()
    cfg = json.loads(cm["config.json"])
    assert cfg["annotation"] == "topology.slinky.slurm.net/spec"
    assert cfg["tree"]["pools"] == ["training-h100", "training-h200", "training-trn2"]  # backfill is flat: L4 has no topology labels
    assert cfg["blocks"][0]["pools"] == ["training-h200"] and cfg["blocks"][0]["size"] == 2
    # AND its ClusterRole reads and patches Nodes, nothing else
    role = _obj(rendered, "slurm/clusterrole-training-topology-labeler.yaml")
    assert role["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]}]
    project = rendered["training"].files["apps/appproject-training.yaml"]["spec"]["clusterResourceWhitelist"]
    assert {"group": "rbac.authorization.k8s.io", "kind": "ClusterRoleBinding"} in project


def test_no_topology_renders_nothing_of_it(rendered):
    # GIVEN the example without a topology section WHEN rendered THEN no labeler, no topology.yaml, no Topology=
    files = rendered["example"].files
    assert not [p for p in files if "topology" in p]
    assert "Topology=" not in files["slurm/controller-slurm.yaml"]["spec"]["extraConf"]


LAYERS = [f"topology.k8s.aws/network-node-layer-{i}" for i in range(1, 5)]
TREE = {"topology": "tree", "root": "ec2", "layers": LAYERS, "pools": ["c-h100"]}


def test_tree_unit_from_eks_labels():
    # GIVEN a node with three layer labels THEN the unit is the root then layers 1..3
    labels = {LAYERS[0]: "nn-a", LAYERS[1]: "nn-b", LAYERS[2]: "nn-c"}
    assert lab.tree_unit(labels, TREE) == "ec2:nn-a:nn-b:nn-c"
    # AND a fourth layer is appended; a node missing layer 2 has no place in the tree
    assert lab.tree_unit({**labels, LAYERS[3]: "nn-d"}, TREE) == "ec2:nn-a:nn-b:nn-c:nn-d"
    assert lab.tree_unit({LAYERS[0]: "nn-a", LAYERS[2]: "nn-c"}, TREE) is None


def test_blocks_group_by_domain_and_keep_existing_slots():
    # GIVEN four nodes in two domains, blocks of 2
    slots = ["p-b0", "p-b1", "p-b2"]
    nodes = [("n1", "x", None), ("n2", "y", None), ("n3", "x", None), ("n4", "y", None)]
    # WHEN assigned THEN nodes sharing a domain share a block
    got = lab.assign_blocks(nodes, slots, 2)
    assert got["n1"] == got["n3"] and got["n2"] == got["n4"] and got["n1"] != got["n2"]
    # AND a node that already has a slot keeps it; a node without a domain gets none
    again = lab.assign_blocks([("n9", "y", "p-b2"), ("n5", None, None), ("n6", "y", None)], slots, 2)
    assert again == {"n9": "p-b2", "n6": "p-b2"}
    # AND a domain larger than a block overflows its own slot (Slurm counts every node of a base
    # block) rather than spreading over slots or leaving nodes out (more cases: tests/charts/test_topology_blocks.py)
    assert set(lab.assign_blocks([(f"m{i}", "z", None) for i in range(7)], slots, 2).items()) == \
        {(f"m{i}", "p-b0") for i in range(7)}


def test_desired_annotation_combines_tree_and_block():
    # GIVEN a node of a pool in both the tree and a block topology
    cfg = {"annotation": "topology.slinky.slurm.net/spec", "poolLabel": "karpenter.sh/nodepool", "tree": TREE,
           "blocks": [{"topology": "block-p", "size": 2, "slots": ["p-b0"], "domainLabel": LAYERS[2],
                       "pools": ["c-h100"]}]}
    node = {"metadata": {"name": "ip-1", "labels": {"karpenter.sh/nodepool": "c-h100", LAYERS[0]: "a",
                                                    LAYERS[1]: "b", LAYERS[2]: "c"}}}
    other = {"metadata": {"name": "ip-2", "labels": {"karpenter.sh/nodepool": "c-cpu"}}}
    # WHEN the desired annotations are computed THEN the value names both units; other nodes get none
    assert lab.desired([node, other], cfg) == {"ip-1": "tree:ec2:a:b:c,block-p:p-b0", "ip-2": ""}


def test_default_topology_nodesets_are_efa_gpu_and_trainium():
    # GIVEN topology on without a nodeset list WHEN loaded THEN only the EFA GPU/Trainium types with labels are in
    text = (SPECS / "training.yaml").read_text()
    spec = parse_text("training.yaml", text)
    assert spec.topology is not None
    assert spec.topology.nodesets == ("h100", "h200", "l40s", "trn2")
    assert [b.name for b in spec.topology.blocks] == ["block-reserved"]


def test_a_nodeset_with_a_list_of_labelled_types_is_a_default_topology_nodeset():
    # GIVEN training.yaml with h200 on a list of two labelled EFA GPU types (p5e, p5en)
    text = (SPECS / "training.yaml").read_text()
    nodesets = by_name(yaml.safe_load(text)["nodesets"], {
        "h200": {"instanceType": ["p5e.48xlarge", "p5en.48xlarge"], "allowMixedTypes": True}})
    listed = variant(text, nodesets=nodesets)
    # WHEN loaded
    spec = parse_text("training.yaml", listed)
    # THEN h200 stays in the topologies (and the block partition that needs it still loads)
    assert spec.topology is not None
    assert spec.topology.nodesets == ("h100", "h200", "l40s", "trn2")
    assert [b.name for b in spec.topology.blocks] == ["block-reserved"]


def test_summary_names_topology_changes(rendered):
    # GIVEN the training tree and the same tree whose Capacity Block partition had one block size
    import copy

    from slurmgen.review.slurm_diff import changes

    new = rendered["training"].files
    old = copy.deepcopy(dict(new))
    cm = old["slurm/configmap-slurm-topology-conf.yaml"]["data"]
    cm["topology.yaml"] = cm["topology.yaml"].replace("block_sizes: [2, 4]", "block_sizes: [2]")
    # WHEN the summary compares them THEN it names the topology and the key that changed, nothing else
    assert changes(old, new) == ["topology.yaml: `block-reserved` block_sizes 2 → 2,4"]


def test_explain_prints_topology_yaml(rendered, capsys):
    # GIVEN the training example WHEN --explain topology.yaml THEN the file is printed as rendered
    from slurmgen.cli import main

    assert main(["--spec", str(SPECS / "training.yaml"), "--explain", "topology.yaml"]) == 0
    assert "- topology: block-reserved" in capsys.readouterr().out


def test_reconcile_patches_only_what_differs(monkeypatch):
    # GIVEN three nodes of the cluster's pools: one current, one new, one whose nodeset left the topologies
    cfg = {"pools": ["c-cpu", "c-h100"], "annotation": "a", "poolLabel": "p", "interval": 30, "tree": TREE,
           "blocks": []}
    labels = {"p": "c-h100", LAYERS[0]: "x", LAYERS[1]: "y", LAYERS[2]: "z"}
    nodes = [{"metadata": {"name": "ok", "labels": labels, "annotations": {"a": "tree:ec2:x:y:z"}}},
             {"metadata": {"name": "new", "labels": labels}},
             {"metadata": {"name": "gone", "labels": {"p": "c-cpu"}, "annotations": {"a": "tree:ec2:x:y:z"}}}]
    calls = []

    def fake(method, path, body=None):
        calls.append((method, path, body))
        return {"items": nodes} if method == "GET" else {}

    monkeypatch.setattr(lab, "_request", fake)
    # WHEN one round runs
    lab.reconcile(cfg)
    # THEN it lists the cluster's pools, sets the new node, removes the stale value, leaves the current one
    assert calls[0] == ("GET", "/api/v1/nodes?labelSelector=p%20in%20%28c-cpu%2Cc-h100%29", None)
    assert calls[1:] == [("PATCH", "/api/v1/nodes/gone", {"metadata": {"annotations": {"a": None}}}),
                         ("PATCH", "/api/v1/nodes/new", {"metadata": {"annotations": {"a": "tree:ec2:x:y:z"}}})]
