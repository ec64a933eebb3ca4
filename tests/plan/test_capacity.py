"""Capacity that comes: interchangeable instance types, placement groups, zones (issue #12, break 6)."""

from __future__ import annotations

import copy

import pytest

from slurmgen.catalog.catalog import load_catalog
from slurmgen.catalog.mixed import interchangeable, pod_resources_for
from slurmgen.catalog.sizing import DEFAULT_RESERVE, pod_resources, slurm_node_conf
from charts.compute import placement_group_selector
from slurmgen.verify.consistency import check_placement
from slurmgen.plan.nodesets import plan_cluster
from slurmgen.spec.loader import parse_text
from slurmgen.review.summary import summarize
from tests.spec_builder import spec_text

CATALOG = load_catalog()
L4_POOL = "compute/nodepool-training-l4.yaml"
L4_NODESET = "slurm/nodeset-slurm-worker-l4.yaml"


def types(*names: str):
    return [CATALOG[n] for n in names]


# -- which types are interchangeable ------------------------------------------------------------

def test_equal_types_need_no_opt_in():
    # GIVEN two A100 types with the same vCPUs, memory and EFA but not the same GPU memory (40/80 GB)
    # WHEN checked without and with the opt-in
    strict = interchangeable(types("p4d.24xlarge", "p4de.24xlarge"), efa=True, allow_mixed=False)
    relaxed = interchangeable(types("p4d.24xlarge", "p4de.24xlarge"), efa=True, allow_mixed=True)
    # THEN the GPU memory difference needs allowMixedTypes, and nothing else is in the way
    assert len(strict) == 1 and strict[0].startswith("types differ in accelerator memory")
    assert relaxed == []


def test_efa_count_matters_only_when_the_nodeset_uses_efa():
    # GIVEN p5e (32 EFA) and p5en (16 EFA), both 8 H200 on 192 vCPUs
    pair = types("p5e.48xlarge", "p5en.48xlarge")
    # THEN with efa the difference needs the opt-in; without efa the types are interchangeable as they are
    assert interchangeable(pair, efa=True, allow_mixed=False) == [
        "types differ in EFA interfaces (p5e.48xlarge has 32 EFA, p5en.48xlarge has 16 EFA); "
        "set allowMixedTypes: true to size the slurmd pod for the smallest"]
    assert interchangeable(pair, efa=False, allow_mixed=False) == []


@pytest.mark.parametrize("pair, what", [
    (("g5.8xlarge", "g6.8xlarge"), "accelerators"),          # A10G vs L4, same vCPUs
    (("g6.4xlarge", "g6.8xlarge"), "CPUs"),                  # same GPU, 16 vs 32 vCPUs
    (("m7i.8xlarge", "m7a.8xlarge"), "CPUs"),                # 32 vCPUs each, but 16 vs 32 cores (SMT off on m7a)
    (("m7i.8xlarge", "m7g.8xlarge"), "architecture"),
])
def test_the_opt_in_never_mixes_architecture_cpus_or_accelerators(pair, what):
    # WHEN types differ in what the NodeSet's one image, Gres or CoreSpecCount depends on
    problems = interchangeable(types(*pair), efa=False, allow_mixed=True)
    # THEN even allowMixedTypes refuses them
    assert any(p.startswith(f"types differ in {what} (") for p in problems), problems


def test_a_list_is_sized_for_the_smallest_type_and_fits_every_type():
    # GIVEN g6.8xlarge (128 GiB) and gr6.8xlarge (256 GiB): 1 L4, 32 vCPUs each
    shape = pod_resources_for(types("gr6.8xlarge", "g6.8xlarge"), efa=True)
    alone = pod_resources(CATALOG["g6.8xlarge"], efa=True)
    larger = pod_resources(CATALOG["gr6.8xlarge"], efa=True)
    # THEN the pod is exactly the smaller type's pod, whatever the order of the list
    assert (shape.cpu_m, shape.memory_mi, shape.efa, shape.accelerators) == \
        (alone.cpu_m, alone.memory_mi, alone.efa, alone.accelerators)
    assert shape.memory_mi < larger.memory_mi
    # AND Slurm's node line is the smaller type's on both (same CoreSpecCount: same cores)
    assert slurm_node_conf(CATALOG["gr6.8xlarge"], shape) == slurm_node_conf(CATALOG["g6.8xlarge"], alone)


# -- what is rendered --------------------------------------------------------------------------

def test_a_list_becomes_the_pool_requirement_and_the_pod_selects_the_pool(rendered):
    files = rendered["training"].files
    pool = files[L4_POOL]["spec"]
    selector = files[L4_NODESET]["spec"]["template"]["spec"]["nodeSelector"]
    # THEN the NodePool allows both types, in the spec's order
    assert {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g6.8xlarge", "gr6.8xlarge"]} \
        in pool["template"]["spec"]["requirements"]
    # AND the pod selects the pool and the capacity type, not one instance type
    assert selector == {"karpenter.sh/nodepool": "training-l4", "karpenter.sh/capacity-type": "spot"}
    # AND a single-type nodeset still selects its type
    h100 = files["slurm/nodeset-slurm-worker-h100.yaml"]["spec"]["template"]["spec"]["nodeSelector"]
    assert h100["node.kubernetes.io/instance-type"] == "p5.48xlarge"


def test_pool_limits_cover_max_nodes_of_the_largest_type(rendered):
    # GIVEN 6 replicas of [g6.8xlarge (128 GiB), gr6.8xlarge (256 GiB)], 32 vCPUs and 1 L4 each
    limits = rendered["training"].files[L4_POOL]["spec"]["limits"]
    # THEN 6 nodes of any mix fit the limits: memory counted on gr6.8xlarge
    assert limits == {"nodes": "6", "cpu": str(32 * 6), "memory": f"{262144 * 6}Mi", "nvidia.com/gpu": "6"}


def test_slurmd_of_a_list_is_the_smallest_types_pod(rendered):
    # GIVEN the rendered L4 nodeset, and the plan of the same nodeset on g6.8xlarge alone
    spec = rendered["training"].spec
    nodeset = rendered["training"].files[L4_NODESET]["spec"]
    alone = pod_resources(CATALOG["g6.8xlarge"], reserve=DEFAULT_RESERVE)
    # THEN it requests the smaller type's CPU and memory, and Slurm is told that type's memory
    assert nodeset["slurmd"]["resources"]["requests"] == alone.requests()
    assert nodeset["extraConf"] == plan_cluster(spec)["l4"].slurm_conf
    assert f"RealMemory={slurm_node_conf(CATALOG['g6.8xlarge'], alone)['RealMemory']}" in nodeset["extraConf"].split(" ")


def test_placement_group_is_the_node_class_selector(rendered):
    node_class = rendered["training"].files["compute/ec2nodeclass-training-h100.yaml"]["spec"]
    # THEN the H100 nodes launch in the named group, and no other nodeset uses one
    assert node_class["placementGroupSelector"] == {"name": "training-h100"}
    others = [rel for c in rendered.values() for rel, o in c.files.items()
              if o["kind"] == "EC2NodeClass" and "placementGroupSelector" in o["spec"]]
    assert others == ["compute/ec2nodeclass-training-h100.yaml"]


@pytest.mark.parametrize("value, selector", [
    ("pg-0123456789abcdef0", {"id": "pg-0123456789abcdef0"}),
    ("training-h100", {"name": "training-h100"}),
    ("pg-Training", {"name": "pg-Training"}),  # not Karpenter's id pattern ^pg-[0-9a-z]+$: a name
])
def test_placement_group_id_or_name(value, selector):
    assert placement_group_selector(value) == selector


def test_single_zone_placement_group_renders(tmp_path):
    # GIVEN an EFA nodeset with a placement group id and one zone of its own
    text = spec_text(nodeset={"instanceType": "p5.48xlarge", "efa": True, "zones": ["us-west-2b"],
                              "placementGroup": "pg-0123456789abcdef0"})
    spec = parse_text("t.yaml", text)
    # THEN the spec is valid and the plan keeps the group and the zone
    [ns] = spec.nodesets
    assert (ns.placement_group, ns.zones) == ("pg-0123456789abcdef0", ("us-west-2b",))


# -- the placement proof and the summary ------------------------------------------------------

def test_a_type_in_the_list_the_pod_does_not_fit_is_caught(rendered):
    # GIVEN the L4 pool with a smaller type added by hand (g6.4xlarge: 16 vCPUs, 64 GiB)
    files = copy.deepcopy(dict(rendered["training"].files))
    for req in files[L4_POOL]["spec"]["template"]["spec"]["requirements"]:
        if req["key"] == "node.kubernetes.io/instance-type":
            req["values"].append("g6.4xlarge")
    # WHEN the placement proof runs
    problems = check_placement(files, CATALOG, DEFAULT_RESERVE)
    # THEN it names that type for CPU and memory
    assert [p.split(" exceed ")[1] for p in problems] == [
        "15700m allocatable on g6.4xlarge after the DaemonSet reserve",
        "57051Mi allocatable on g6.4xlarge after the DaemonSet reserve"]


def test_a_pod_selecting_one_type_of_a_list_pool_is_caught(rendered):
    # GIVEN the L4 pod selecting g6.8xlarge although its pool allows two types
    files = copy.deepcopy(dict(rendered["training"].files))
    files[L4_NODESET]["spec"]["template"]["spec"]["nodeSelector"]["node.kubernetes.io/instance-type"] = "g6.8xlarge"
    # THEN no pool gives every node that label for sure: the proof refuses it
    [problem] = check_placement(files, CATALOG, DEFAULT_RESERVE)
    assert "matches 0 NodePools" in problem


def test_summary_lists_the_types_and_counts_nodes_of_either(rendered):
    # GIVEN the training render without the L4 nodeset, then with it
    new = rendered["training"].files
    old = {rel: o for rel, o in new.items() if rel not in (L4_POOL, L4_NODESET)}
    # WHEN summarized
    text = summarize({"training": old}, {"training": new}, CATALOG)
    # THEN the headline counts nodes of either type and the table lists both
    assert "- adds 6 g6.8xlarge or gr6.8xlarge node(s) (6 L4) to `backfill`" in text
    assert "| `l4` **(new)** | - → backfill | - → g6.8xlarge, gr6.8xlarge | - → spot | - → 6 | - → 6 × L4 |" in text


FSX = {"fsx": {"enabled": True, "sizeGiB": 1200, "zone": "us-west-2a", "static": {
    "fileSystemId": "fs-0123456789abcdef0", "dnsName": "fs-0123456789abcdef0.fsx.us-west-2.amazonaws.com",
    "mountName": "abc"}}}


@pytest.mark.parametrize("compute_zones, own_zones, fsx, expected", [
    (["us-west-2a", "us-west-2b"], None, False, ("us-west-2a", "us-west-2b")),
    (["us-west-2a", "us-west-2b"], None, True, ("us-west-2a",)),                         # FSx pins compute.zones
    (["us-west-2b"], ["us-west-2a", "us-west-2c"], True, ("us-west-2a", "us-west-2c")),  # own zones are kept
    ([], None, False, ()),
])
def test_the_zone_rule_and_the_node_pool_resolve_the_same_zones(compute_zones, own_zones, fsx, expected):
    # GIVEN a spec with compute zones, maybe nodeset zones of its own, maybe FSx
    text = spec_text(nodeset={"zones": own_zones} if own_zones else None, compute={"zones": compute_zones},
                     **({"storage": FSX} if fsx else {}))
    spec = parse_text("t.yaml", text)
    # WHEN the model resolves the nodeset's zones (the one function the NodePool and the placement-group rule read)
    zones = spec.pool_zones(spec.nodesets[0])
    # THEN they are the expected ones
    assert zones == expected


def test_each_derived_fact_has_one_home():
    # GIVEN the rules and the charts that once derived the same facts each in their own way
    import inspect

    import charts.compute
    import charts.slurm_cluster
    from slurmgen.catalog import rules
    from slurmgen.spec import _checks
    # THEN the NodePool zones, the node ceiling and the own partition are each computed in one place (the model)
    assert not hasattr(_checks, "nodeset_zones") and not hasattr(charts.compute, "plan_zones")
    assert "maxNodes\"" not in inspect.getsource(rules) and "ceiling =" not in inspect.getsource(rules)
    assert not hasattr(charts.slurm_cluster, "own_partition")
    # AND the spec rule and the plan size a nodeset with the one function (catalog/mixed.py fit)
    from slurmgen.plan import nodesets
    for module in (rules, nodesets):
        source = inspect.getsource(module)
        assert "fit(catalog" in source and "interchangeable(" not in source and "lookup(" not in source
