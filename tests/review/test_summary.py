"""The PR summary, with golden Markdown for representative changes.

Each case edits an example spec, renders it, and summarizes it against the committed dist/.
Regenerate the golden files after an intended change with SLURMGEN_UPDATE_GOLDEN=1.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from slurmgen.cli import main
from tests.conftest import MINIMAL_SPEC, REPO, SPECS, TESTS, assert_golden
from tests.spec_builder import DROP, named, variant

GOLDEN = TESTS / "golden" / "summary"

L40S = {"name": "l40s", "instanceType": "g6e.12xlarge", "replicas": 2, "features": ["l40s"]}
INFERENCE = {"name": "inference", "nodesets": ["l40s"]}

# case: (example spec, changes merged in by tests/spec_builder.variant)
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "scale_up_training": ("training.yaml", {"nodesets": named({"h100": {"replicas": 32}})}),  # 16 before
    "widen_login": ("example.yaml", {"login": {"service": {
        "scheme": "internet-facing", "sourceRanges": ["10.0.0.0/16", "203.0.113.7/32"]}}}),  # internal, 192.168.100.0/24
    "bump_versions": ("example.yaml", {"versions": {"certManager": "v1.22.0", "slurmImageTag": "26.05.3-ubuntu26.04"},
                                       "compute": {"amiVersion": "v20261101"}}),
    "remove_fsx_and_a_user": ("example.yaml", {"storage": {"fsx": {"enabled": False}},
                                               "policy": {"users": named({"carol": DROP})}}),
    "new_nodeset_in_new_partition": ("prod.yaml", {"nodesets": lambda old: [*old, L40S],
                                                   "partitions": lambda old: [*old, INFERENCE]}),
    # effective slurm.conf: one partition, one nodeset, the scheduling weights
    "partition_max_time": ("prod.yaml", {"partitions": named({"gpu": {"maxTime": "14-00:00:00", "priorityTier": 20}})}),
    "nodeset_weight_and_features": ("example.yaml", {"nodesets": named({"spot": {
        "features": ["a10g", "spot", "cheap"], "extraSlurmdConf": {"Weight": 50}}})}),
    "scheduling_weights": ("training.yaml", {"scheduling": {"fairShare": {
        "decayHalfLife": "7-0", "weights": {"fairshare": 50000, "age": 5000, "qos": 2000}}}}),
}


def render_summary(tmp_path: Path, spec_name: str, changes: dict[str, Any], capsys, base_dir: Path) -> str:
    spec = tmp_path / spec_name
    for base in (SPECS).glob("_*.yaml"):
        (tmp_path / base.name).write_text(base.read_text())
    spec.write_text(variant((SPECS / spec_name).read_text(), **changes))
    capsys.readouterr()
    assert main(["--spec", str(spec), "--summary", "--base-dir", str(base_dir)]) == 0
    return capsys.readouterr().out


@pytest.fixture(autouse=True)
def no_chart_source(monkeypatch, tmp_path):
    """The chart section's 'not previewed' line is the same on every machine: no chart folder, cache or pull."""
    monkeypatch.delenv("SLURMGEN_CHART_DIR", raising=False)
    monkeypatch.setenv("SLURMGEN_CHART_PULL", "0")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


@pytest.mark.parametrize("case", sorted(CASES))
def test_summary_matches_golden(case, tmp_path, capsys, dist_tree):
    spec_name, changes = CASES[case]
    summary = render_summary(tmp_path, spec_name, changes, capsys, dist_tree)
    assert_golden(summary, GOLDEN / f"{case}.md")


def test_summary_headlines(tmp_path, capsys, dist_tree):
    summary = render_summary(tmp_path, *CASES["scale_up_training"], capsys, dist_tree)
    assert "- adds 16 p5.48xlarge node(s) (128 H100) to `train`\n- cost (on-demand): $880.64/h → $1,761.28/h now " \
           "and at the ceiling; not counted: " in summary
    assert "\n- changes nothing stateful\n" in summary
    risky = render_summary(tmp_path, *CASES["remove_fsx_and_a_user"], capsys, dist_tree)
    assert "- **touches stateful objects** (see below)" in risky
    assert "- stateful: removes PersistentVolumeClaim slurm/fsx" in risky
    assert "- policy: User 'carol' left the spec; the accounts Job deletes its associations" in risky
    exposed = render_summary(tmp_path, *CASES["widen_login"], capsys, dist_tree)
    assert "login exposure widened: Service slurm/slurm-login-ssh becomes internet-facing" in exposed


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                   check=True, capture_output=True)


def test_no_change_and_default_base_is_head(tmp_path, capsys, dist_tree):
    # GIVEN a repository whose HEAD holds the example's committed tree
    repo = tmp_path / "repo"
    shutil.copytree(dist_tree / "example", repo / "dist" / "example")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "dist")
    spec = str(SPECS / "example.yaml")
    out = str(repo / "dist")
    # WHEN the example is summarized with no base named
    capsys.readouterr()
    assert main(["--spec", spec, "--out", out, "--summary"]) == 0
    # THEN nothing changed against HEAD
    assert capsys.readouterr().out == "## slurmgen: what this change deploys\n\nNo change to the rendered tree.\n"
    # AND the base is HEAD, not the folder on disk: editing the working tree changes nothing
    nodeset = repo / "dist" / "example" / "slurm" / "nodeset-slurm-worker-slinky.yaml"
    nodeset.write_text(nodeset.read_text().replace("replicas: 4", "replicas: 40"))
    assert main(["--spec", spec, "--out", out, "--summary"]) == 0
    assert "No change to the rendered tree." in capsys.readouterr().out
    # AND once that edit is committed, HEAD differs from the render and the summary says so
    git(repo, "commit", "-qam", "edit")
    assert main(["--spec", spec, "--out", out, "--summary"]) == 0
    summary = capsys.readouterr().out
    assert "No change to the rendered tree." not in summary
    assert "NodeSet slurm/slurm-worker-slinky" in summary and "spec.replicas" in summary


def test_summary_shows_the_effective_slurm_conf_per_entity_and_key(tmp_path, capsys, dist_tree):
    # GIVEN a partition's MaxTime and PriorityTier change WHEN summarized
    part = render_summary(tmp_path, *CASES["partition_max_time"], capsys, dist_tree)
    # THEN one line names the partition and each parameter, before → after
    assert "- `PartitionName=gpu` MaxTime 7-00:00:00 → 14-00:00:00; PriorityTier 10 → 20\n" in part
    node = render_summary(tmp_path, *CASES["nodeset_weight_and_features"], capsys, dist_tree)
    assert "- `NodeSet=spot` nodes (slurmd -Z --conf): Features spot,a10g → spot,a10g,cheap; Weight 100 → 50\n" in node
    weights = render_summary(tmp_path, *CASES["scheduling_weights"], capsys, dist_tree)
    assert "- scheduling: `PriorityWeightQOS` 0 → 2000\n" in weights
    assert "**Effective slurm.conf**" not in render_summary(tmp_path, *CASES["widen_login"], capsys, dist_tree)



# -- the headline is true for count, type, GPU-model and architecture changes; cost; one comment --------
# These cases own their inputs: a spec written here, a site catalog and price table under tests/data/summary.

DATA = TESTS / "data" / "summary"


def spec_text(nodesets: str, partitions: str, region: str = "us-east-1") -> str:
    return (f"schemaVersion: 1\nname: t\naws: {{region: {region}, eksClusterName: eks}}\n"
            f"gitops: {{repoURL: \"https://github.com/o/r.git\"}}\nnodesets: {nodesets}\npartitions: {partitions}\n")


def summary_between(tmp_path: Path, capsys, old: str, new: str, *, site: tuple[str, ...] = ("instance-types.csv",),
                    args: tuple[str, ...] = ()) -> str:
    """Render spec `old` into a base folder, then summarize spec `new` against it through the CLI;
    `site` files from tests/data/summary sit beside both specs (as clusters/*.csv would)."""
    paths = {}
    for side, text in (("old", old), ("new", new)):
        folder = tmp_path / side
        folder.mkdir()
        (folder / "t.yaml").write_text(text)
        for name in site:
            shutil.copy(DATA / name, folder / name)
        paths[side] = folder / "t.yaml"
    base = tmp_path / "base"
    assert main(["--spec", str(paths["old"]), "--out", str(base)]) == 0
    capsys.readouterr()
    assert main(["--spec", str(paths["new"]), "--summary", "--base-dir", str(base), *args]) == 0
    return capsys.readouterr().out


H100X4 = spec_text("[{name: gpu, instanceType: p5.48xlarge, replicas: 4}]", "[{name: gpu, nodesets: [gpu]}]")
GB200X4 = spec_text("[{name: gpu, instanceType: p6e-gb200.36xlarge, replicas: 4}]", "[{name: gpu, nodesets: [gpu]}]")


def test_type_and_gpu_model_change_reads_as_a_replacement(tmp_path, capsys):
    # GIVEN 4 p5.48xlarge (32 H100) replaced by 4 p6e-gb200.36xlarge (16 GB200, arm64), a site type
    summary = summary_between(tmp_path, capsys, H100X4, GB200X4)
    assert_golden(summary, GOLDEN / "type_change_gb200.md")
    # THEN the headline says what goes and what comes, never "removes 0 ... node(s)"
    assert "- replaces 4 p5.48xlarge node(s) (32 H100) with 4 p6e-gb200.36xlarge node(s) (16 GB200) in `gpu`\n" in summary
    assert "removes 0" not in summary
    # AND the signed deltas per GPU model and per instance type
    assert "- GPUs at the ceiling: GB200 +16, H100 -32\n" in summary
    assert "- nodes at the ceiling: p5.48xlarge -4, p6e-gb200.36xlarge +4\n" in summary
    # AND the architecture flip is a headline and a note needing attention (images for arm64)
    assert "- **Architecture: nodeset `gpu` amd64 → arm64;" in summary
    note = summary.split("**Needs attention**\n\n- ", 1)[1].splitlines()[0]
    assert note.startswith("architecture: nodeset `gpu` amd64 → arm64; every image on its nodes (DaemonSets too) "
                           "must exist for arm64: ")
    assert "ghcr.io/slinkyproject/slurmd:" in note
    # AND the cost: the H100s had a list price, the GB200 has none in the packaged table (never guessed, never $0)
    assert "- cost (on-demand): $220.16/h → no price now and at the ceiling; " \
           "not counted: `gpu` no price in us-east-1 (add it to clusters/prices.csv)\n" in summary
    assert "$0.00" not in summary


def test_a_type_change_that_raises_gpus_is_not_a_removal(tmp_path, capsys):
    # GIVEN 4 p5.4xlarge (1 H100 each) replaced by 1 p5.48xlarge (8 H100)
    old = spec_text("[{name: gpu, instanceType: p5.4xlarge, replicas: 4}]", "[{name: gpu, nodesets: [gpu]}]")
    new = spec_text("[{name: gpu, instanceType: p5.48xlarge, replicas: 1}]", "[{name: gpu, nodesets: [gpu]}]")
    summary = summary_between(tmp_path, capsys, old, new)
    # THEN it reads as a replacement that adds 4 H100, not "removes 3 ... node(s)"
    assert "removes 3" not in summary
    assert "- replaces 4 p5.4xlarge node(s) (4 H100) with 1 p5.48xlarge node(s) (8 H100) in `gpu`\n" in summary
    assert "- GPUs at the ceiling: H100 +4\n- nodes at the ceiling: p5.48xlarge +1, p5.4xlarge -4\n" in summary
    assert "Architecture" not in summary  # both amd64
    # AND the cost before and after: 4 × $6.88 → 1 × $55.04
    assert "- cost (on-demand): $27.52/h → $55.04/h now and at the ceiling\n" in summary


def test_architecture_flip_of_a_cpu_nodeset_is_flagged(tmp_path, capsys):
    old = spec_text("[{name: cpu, instanceType: m7i.2xlarge, replicas: 2}]", "[{name: cpu, nodesets: [cpu]}]")
    new = spec_text("[{name: cpu, instanceType: m7g.2xlarge, replicas: 2}]", "[{name: cpu, nodesets: [cpu]}]")
    summary = summary_between(tmp_path, capsys, old, new)
    assert "- replaces 2 m7i.2xlarge node(s) with 2 m7g.2xlarge node(s) in `cpu`\n" in summary
    assert "- **Architecture: nodeset `cpu` amd64 → arm64;" in summary
    assert "**Needs attention**\n\n- architecture: nodeset `cpu` amd64 → arm64;" in summary


def test_cost_at_replicas_and_at_the_ceiling_per_partition_and_cluster(tmp_path, capsys):
    # GIVEN an on-demand H100 nodeset doubled, a spot one beside it, in us-east-1 (priced)
    nodesets = ("[{name: gpu, instanceType: p5.48xlarge, replicas: %d}, "
                "{name: spot, instanceType: g5.xlarge, replicas: 2, capacityType: spot}]")
    parts = "[{name: gpu, nodesets: [gpu]}, {name: cheap, nodesets: [spot]}]"
    summary = summary_between(tmp_path, capsys, spec_text(nodesets % 4, parts), spec_text(nodesets % 8, parts))
    # THEN the headline has the on-demand $/h before → after, and names what is not counted
    assert ("- cost (on-demand): $220.16/h → $440.32/h now and at the ceiling; "
            "not counted: `spot` spot: price varies\n") in summary
    # AND the capacity table has replicas and $/h per nodeset; spot is marked, never priced
    assert "| 4 → 8 | $220.16/h → $440.32/h | $220.16/h → $440.32/h |" in summary
    assert "| 2 | spot (price varies) | spot (price varies) |" in summary
    # AND the cost table per partition and for the cluster
    assert "| `gpu` | $220.16/h → $440.32/h | $220.16/h → $440.32/h |" in summary
    assert "| `cheap` | spot (price varies) | spot (price varies) |" in summary
    assert "| **cluster** | $220.16/h → $440.32/h + spot (price varies) |" in summary
    assert "On-demand list prices in us-east-1, USD per hour (Karpenter v1.14.1 on-demand list prices" in summary


def test_a_site_prices_csv_beside_the_specs_prices_what_the_table_lacks(tmp_path, capsys):
    # GIVEN clusters/prices.csv (here: beside the specs) with a GB200 price
    summary = summary_between(tmp_path, capsys, H100X4, GB200X4, site=("instance-types.csv", "prices.csv"))
    # THEN the GB200 nodes are priced from it: 4 × $100.50
    assert "- cost (on-demand): $220.16/h → $402.00/h now and at the ceiling\n" in summary
    assert "prices.csv for 1 row(s)" in summary


def test_reserved_capacity_is_marked_paid_separately():
    from slurmgen.catalog.pricing import load_prices
    from slurmgen.review.summary import _node_price

    prices = load_prices()
    assert _node_price("reserved", ("p5.48xlarge",), "us-east-1", prices).kind == "reserved"
    assert _node_price("spot", ("p5.48xlarge",), "us-east-1", prices).kind == "spot"
    assert _node_price("on-demand", ("p5.48xlarge",), "eu-west-1", prices).kind == "none"  # no row: no guess
    # a list of types with different prices is counted at the dearest, marked as an upper bound
    listed = _node_price("on-demand", ("g6.8xlarge", "g6.16xlarge"), "us-east-1", prices)
    assert listed.upper and listed.usd == prices.on_demand("us-east-1", "g6.16xlarge")


def test_the_slurmdbd_password_placeholder_stays_whole(tmp_path, capsys):
    # GIVEN a cluster that turns accounting on (slurmdbd.conf is new; a new cluster only counts its keys)
    old = MINIMAL_SPEC + "accounting: {enabled: false}\nscheduling: {fairShare: {enabled: false}}\n"
    summary = summary_between(tmp_path, capsys, old, MINIMAL_SPEC)
    # THEN the StoragePass line shows the whole placeholder, not a key made of its second half
    assert "- slurmdbd.conf: `StoragePass` - → <secret mariadb-password/password>\n" in summary
    assert "password>` - →" not in summary


def _pvc(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "slurm"},
            "spec": {"resources": {"requests": {"storage": "10Gi"}}}}


def test_forty_clusters_fit_one_comment_with_what_needs_attention_first(tmp_path):
    # GIVEN one rendered cluster, added as 40 new clusters, and a 41st that loses a volume
    from slurmgen.run.pipeline import run
    from slurmgen.review.summary import COMMENT_MAX_CHARS, summarize

    spec = tmp_path / "t.yaml"
    spec.write_text(spec_text("[{name: gpu, instanceType: p5.48xlarge, replicas: 4}, "
                              "{name: cpu, instanceType: m7i.2xlarge, replicas: 2}]",
                              "[{name: gpu, nodesets: [gpu]}, {name: cpu, nodesets: [cpu]}]"))
    result = run([spec])
    tree = dict(result.clusters[0].files)
    new = {f"c{i:02d}": tree for i in range(40)} | {"zz": tree}
    old = {"zz": {**tree, "storage/pvc-data.yaml": _pvc("data")}}
    full = summarize(old, new, catalog=result.catalog)
    assert len(full) > 65_536  # GitHub would refuse it
    # WHEN fitted to one comment
    comment = summarize(old, new, catalog=result.catalog, max_chars=COMMENT_MAX_CHARS)
    # THEN it fits, and says where the rest is
    assert len(comment) <= COMMENT_MAX_CHARS
    assert "**Shortened to fit one comment**" in comment and "`slurmgen-summary` artifact" in comment
    # AND the destructive change comes first, before any other cluster
    assert comment.index("- stateful: removes PersistentVolumeClaim slurm/data") < comment.index("### Cluster `c00`")
    # AND every cluster keeps its headline and cost line
    for i in range(40):
        head = comment.split(f"### Cluster `c{i:02d}` (new cluster)\n\n", 1)[1]
        assert head.startswith("- adds 2 m7i.2xlarge node(s) to `cpu`\n- adds 4 p5.48xlarge node(s) (32 H100) to `gpu`\n")
        assert "- cost (on-demand): - → $220.97/h now and at the ceiling\n" in head
    # AND the details that did not fit are named
    assert "_Details not shown here for" in comment


def test_fit_never_exceeds_the_cap_even_when_headlines_alone_do_not_fit(tmp_path):
    from slurmgen.review.summary import ClusterSection, fit_comment

    parts = [ClusterSection(f"c{i:03d}", [f"### Cluster `c{i:03d}`", "", "- adds 1 p5.48xlarge node(s)"], ["x" * 500],
                            [f"stateful: removes PersistentVolumeClaim slurm/v{i}"]) for i in range(400)]
    text = fit_comment(parts, 5_000)
    assert len(text) <= 5_000
    assert text.rstrip().endswith("locally: `main.py --summary` without `--max-chars`)._")

def test_the_comment_keeps_room_to_name_every_cluster_whose_details_are_cut():
    from slurmgen.review.summary import ClusterSection, _length, _reserve, fit_comment

    # GIVEN one urgent cluster with short details, then 100 whose details can never fit
    urgent = ClusterSection("a000", ["### Cluster `a000`"], ["y" * 400], ["stateful: removes PersistentVolumeClaim x"])
    rest = [ClusterSection(f"c{i:03d}", [f"### Cluster `c{i:03d}`"], ["x" * 5000], []) for i in range(100)]
    heads = fit_comment([urgent, *rest], 10**9).split("## Details", 1)[0]
    # AND a cap with room for the first details and for naming one cluster, or for naming all 101 alone
    block = ["## Details", "", "### Details of `a000`", "", "y" * 400]
    names = ["a000", *[c.name for c in rest]]
    cap = _length([heads, *block]) + _reserve(names) - 300
    comment = fit_comment([urgent, *rest], cap)
    # THEN the line naming the clusters whose details are cut is there, whole, and the cap holds
    assert "_Details not shown here for 101 cluster(s): `a000`, `c000`" in comment
    assert len(comment) <= cap and "more line(s) cut" not in comment


def test_cli_max_chars_prints_the_comment_and_writes_the_full_summary(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    spec = tmp_path / "t.yaml"
    spec.write_text(MINIMAL_SPEC)
    full_file = tmp_path / "full.md"
    capsys.readouterr()
    assert main(["--spec", str(spec), "--summary", "--base-dir", str(tmp_path / "empty"), "--max-chars", "2500",
                 "--full-summary", str(full_file)]) == 0
    comment = capsys.readouterr().out
    full = full_file.read_text()
    assert len(comment) <= 2500 < len(full)
    assert comment.startswith("## slurmgen: what this change deploys\n\n> **Shortened to fit one comment**")
    assert "**Shortened" not in full and "- `PartitionName=gpu` added: " in full
    # AND a nonsense cap is refused with one line
    assert main(["--spec", str(spec), "--summary", "--max-chars", "10"]) == 2
    assert "--max-chars 10: too small" in capsys.readouterr().err


def test_workflow_posts_the_capped_comment_and_keeps_the_full_summary():
    import yaml

    steps = yaml.safe_load((REPO / ".github" / "workflows" / "slurmgen.yml").read_text())["jobs"]["render"]["steps"]
    summary = next(s for s in steps if "--summary" in s.get("run", ""))
    assert "--max-chars 60000" in summary["run"] and "--full-summary" in summary["run"]
    assert "GITHUB_STEP_SUMMARY" in summary["run"]
    upload = next(s for s in steps if "upload-artifact" in s.get("uses", ""))
    assert upload["with"]["name"] == "slurmgen-summary" and "github.event_name == 'pull_request'" in upload["if"]
    assert upload["with"]["path"] == "${{ runner.temp }}/summary-full.md"


# -- the price table: packaged from pinned tables (tests/catalog/test_prices.py), strict, overridable per site---------

GO_TABLE = '''package pricing

// generated at 2026-07-06T14:20:29Z for us-east-1

var InitialOnDemandPricesAWS = map[string]map[ec2types.InstanceType]float64{
\t// us-east-1
\t"us-east-1": {
\t\t// p5 family
\t\t"p5.48xlarge": 55.040000, "p5.4xlarge": 6.880000,
\t},
\t"us-west-9": {
\t\t"m7i.large": 0.100800,
\t},
}
'''


def test_the_generator_extracts_prices_and_names_its_source():
    from slurmgen.catalog.generate_prices import render
    from slurmgen.catalog.pricing import parse_prices

    text = render([("zz_generated.pricing_aws.go", GO_TABLE)], "v1.14.1")
    assert parse_prices(text, "x") == {("us-east-1", "p5.48xlarge"): 55.04, ("us-east-1", "p5.4xlarge"): 6.88,
                                       ("us-west-9", "m7i.large"): 0.1008}
    assert "#   regions:   us-east-1, us-west-9\n" in text
    assert "#   summary:   Karpenter v1.14.1 on-demand list prices (2026-07-06)\n" in text


def test_the_generator_refuses_the_cny_table_and_other_files():
    from slurmgen.catalog.generate_prices import SourceError, extract

    with pytest.raises(SourceError, match="CNY"):
        extract(GO_TABLE.replace("PricesAWS", "PricesCN"), "cn.go")
    with pytest.raises(SourceError, match="generated at"):
        extract("package pricing\n", "other.go")


def test_the_packaged_prices_parse_and_match_their_header():
    from slurmgen.catalog.pricing import default_prices_text, load_prices

    text = default_prices_text()
    prices = load_prices()
    assert f"#   rows:      {len(prices.table)}\n" in text
    assert {"us-east-1", "us-gov-east-1", "us-gov-west-1", "us-west-2", "eu-west-1"} <= set(prices.regions())
    assert prices.on_demand("us-east-1", "p5.48xlarge") == 55.04
    assert prices.on_demand("us-west-2", "p5.48xlarge") is None  # not covered: no price, no guess


@pytest.mark.parametrize("row, message", [
    ("us-east-1,p5.48xlarge,cheap", "prices.csv:3: usd_per_hour must be a number such as 55.04, got 'cheap'"),
    ("US-East-1,p5.48xlarge,1", "prices.csv:3: region must look like us-east-1, got 'US-East-1'"),
    ("us-east-1,p5.48xlarge", "prices.csv:3: expected 3 cells"),
    ("us-east-1,p6e-gb200.36xlarge,2", "prices.csv:3: duplicate row us-east-1,p6e-gb200.36xlarge (first on line 2)"),
])
def test_a_bad_site_prices_csv_is_one_line_and_exit_2(tmp_path, capsys, row, message):
    (tmp_path / "empty").mkdir()
    (tmp_path / "t.yaml").write_text(MINIMAL_SPEC)
    (tmp_path / "prices.csv").write_text(f"region,instance_type,usd_per_hour\nus-east-1,p6e-gb200.36xlarge,1\n{row}\n")
    capsys.readouterr()
    assert main(["--spec", str(tmp_path / "t.yaml"), "--summary", "--base-dir", str(tmp_path / "empty")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{tmp_path}/{message}" in err, err


def test_a_node_class_change_besides_the_ami_says_its_nodes_drift(tmp_path, capsys):
    # GIVEN an EFA nodeset on a single-card type (no interface layout) moved to a multi-card one, same GPUs
    old = spec_text("[{name: gpu, instanceType: p5.4xlarge, replicas: 1, efa: true}]", "[{name: gpu, nodesets: [gpu]}]")
    new = spec_text("[{name: gpu, instanceType: p5.48xlarge, replicas: 1, efa: true}]",
                    "[{name: gpu, nodesets: [gpu]}]")
    summary = summary_between(tmp_path, capsys, old, new)
    # THEN the EC2NodeClass's new network interfaces need attention: every node of it is replaced
    assert "- nodes: EC2NodeClass t-gpu changes spec.networkInterfaces (nodes drift and are replaced once empty)" \
        in summary.split("**Needs attention**", 1)[1]
