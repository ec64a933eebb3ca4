"""The summary in words: policy changes (issue 29 item 2), a whole cluster removed in one line and the
first pull request on one screen (item 3), and headlines that say what runs now and at the ceiling (item 4)."""

from __future__ import annotations

import re

from pathlib import Path

from tests.conftest import REPO, assert_golden
from tests.spec_builder import named
from tests.review.test_summary import GOLDEN, no_chart_source, render_summary, spec_text, summary_between  # noqa: F401

# -- item 2: policy changes in plain words ----------------------------------------------------------

POLICY_EDIT = {"policy": {
    "qos": lambda old: [*[q | {"maxTRESPerUser": {"gres/gpu": 2}} if q["name"] == "high" else q for q in old],
                        {"name": "urgent", "priority": 1000, "preempt": ["scavenger"]}],
    "accounts": lambda old: [*old, {"name": "nlp", "parent": "research"}],
    "users": named({"alice": {"accounts": ["nlp"]}, "bob": {"accounts": ["nlp"]}}),
}}


def test_policy_changes_read_as_words_not_configmap_fields(tmp_path, capsys, dist_tree):
    # GIVEN the example gains QoS urgent, account nlp (alice and bob join it; bob leaves ml), and QoS high's
    # per-user GPU limit drops from 4 to 2
    summary = render_summary(tmp_path, "example.yaml", POLICY_EDIT, capsys, dist_tree)
    assert_golden(summary, GOLDEN / "policy_in_plain_words.md")
    head = summary.split("**Capacity**", 1)[0]
    # THEN the headline says what changed, in the policy's own terms
    assert "- adds QoS `urgent` (priority 1000, preempts scavenger)\n" in head
    assert "- changes QoS `high`: MaxTRESPerUser gres/gpu=4 → 2\n" in head
    assert "- adds account `nlp` (under research) with alice, bob\n" in head
    assert "- removes user bob from ml\n" in head
    # AND the object list no longer shows the ConfigMap's field names
    assert "data.accounts.cfg" not in summary and "data.declared-qos" not in summary
    assert "ConfigMap slurm/slurm-accounts (Slurm accounts and QoS, in the headline)" in summary
    # AND nothing is flagged: the example weighs QoS (2000) and fair share (10000), and its new users... none
    assert "will not take effect" not in summary


NO_POLICY = spec_text("[{name: gpu, instanceType: g6e.12xlarge, replicas: 2}]", "[{name: gpu, nodesets: [gpu]}]")
WITH_POLICY = NO_POLICY + """\
policy:
  qos: [{name: normal}, {name: urgent, priority: 1000, preempt: [normal]}]
  defaultQos: normal
  accounts: [{name: vision, fairshare: 40}, {name: nlp}]
  users: [{name: alice, defaultAccount: vision}, {name: bob, defaultAccount: vision}]
"""


def attention(summary: str) -> list[str]:
    return [line[2:] for line in summary.split("**Needs attention**\n\n", 1)[1].splitlines() if line.startswith("- ")]


def test_settings_that_cannot_take_effect_are_named(tmp_path, capsys):
    # GIVEN a cluster with the default scheduling (PriorityWeightQOS=0) and no directory gains a policy
    summary = summary_between(tmp_path, capsys, NO_POLICY, WITH_POLICY)
    notes = attention(summary)
    # THEN the QoS priority is flagged: the effective slurm.conf gives it no weight
    assert ("will not take effect: QoS priority (`urgent` 1000): `PriorityWeightQOS` is 0 in slurm.conf "
            "(set scheduling.fairShare.weights.qos)") in notes
    # AND the users: without `directory:` only root logs in (docs/storage-login-accounting.md)
    assert any(n.startswith("will not take effect: users alice, bob are declared, but only root can log in "
                            "(no `directory:` section)") for n in notes)
    # AND fair share counts (PriorityWeightFairshare 10000 by default): not flagged
    assert not any("fair share" in n for n in notes)
    # AND the headline names the new policy in one line
    assert "- Slurm policy: 2 QoS (normal, urgent), 2 account(s) (vision, nlp), 2 user(s)\n" in summary


def test_fair_share_without_its_weight_is_flagged(tmp_path, capsys):
    # GIVEN fair share turned off (no PriorityWeightFairshare) while accounts get shares
    old = WITH_POLICY + "scheduling: {fairShare: {enabled: false}}\n"
    new = old.replace("{name: nlp}", "{name: nlp, fairshare: 60}")
    notes = attention(summary_between(tmp_path, capsys, old, new))
    # THEN the changed share is named, with why it is ignored and the spec's fix
    assert ("will not take effect: fair share (account `nlp` 60): `PriorityWeightFairshare` is 0 in slurm.conf "
            "(set scheduling.fairShare.enabled: true and weights.fairshare)") in notes
    # AND what did not change is not repeated (account vision's 40 was there before)
    assert not any("`vision` 40" in n for n in notes)
    # AND the users were there before: not flagged again
    assert not any("users alice" in n for n in notes)


def test_with_a_weight_and_a_directory_nothing_is_flagged(tmp_path, capsys):
    # GIVEN the same policy with QoS weighed
    new = WITH_POLICY + "scheduling: {fairShare: {weights: {qos: 1000}}}\n"
    notes = attention(summary_between(tmp_path, capsys, NO_POLICY, new))
    assert not any("QoS priority" in n for n in notes)


# -- item 3: a whole cluster removed is one line; the first pull request fits one screen -----------

def starter(region: str = "eu-west-1") -> str:
    """docs/starter.yaml as the quick start copies it, in another region (its zone follows)."""
    return (REPO / "docs" / "starter.yaml").read_text().replace("us-west-2", region)


def render_one(tmp_path: Path, text: str, name: str = "mycluster"):
    from slurmgen.run.pipeline import run

    spec = tmp_path / f"{name}.yaml"
    spec.write_text(text)
    result = run([spec])
    return dict(result.clusters[0].files), result.catalog


def removal_lines(summary: str) -> list[str]:
    return [line for line in summary.splitlines() if line.startswith("- removes cluster ")]


def test_removing_three_of_four_clusters_is_three_lines(tmp_path, rendered):
    from slurmgen.review.summary import summarize

    # GIVEN a base of four clusters, and a change that keeps dev, removes the other three and adds one
    old = {name: dict(c.files) for name, c in rendered.items()}
    assert sorted(old) == ["dev", "example", "prod", "training"]
    tree, catalog = render_one(tmp_path, starter())
    summary = summarize(old, {"dev": old["dev"], "mycluster": tree}, catalog=catalog)
    # THEN the removal part is three lines, one per cluster, and no removed cluster gets a section
    lines = removal_lines(summary)
    assert [line.split("`")[1] for line in lines] == ["example", "prod", "training"]
    assert "### Cluster `example`" not in summary and "stateful: removes" not in summary
    # AND each line counts the objects and names the stateful ones, with what keeps them
    example = lines[0]
    total = len(old["example"])
    assert example.startswith(f"- removes cluster `example`: {total} objects, ")
    assert "PersistentVolumeClaim slurm/fsx" in example and "Controller slurm/slurm" in example
    assert "kept by Prune=false,Delete=false" in example and example.endswith("; root: Application argocd/example-root")
    # AND one note says what Argo CD does with them
    assert summary.count("root Application reports `app path does not exist`") == 1
    # AND the cluster that stayed the same has no section, the new one has its own
    assert "### Cluster `dev`" not in summary and "### Cluster `mycluster` (new cluster)" in summary
    # AND a comment fitted to a cap keeps the three lines
    comment = summarize(old, {"dev": old["dev"], "mycluster": tree}, catalog=catalog, max_chars=5_000)
    assert removal_lines(comment) == lines and len(comment) <= 5_000


def test_the_quick_start_summary_fits_one_screen(tmp_path, rendered):
    from slurmgen.review.summary import summarize

    # GIVEN the README's quick start in eu-west-1: the four example clusters removed, the starter added
    old = {name: dict(c.files) for name, c in rendered.items()}
    tree, catalog = render_one(tmp_path, starter("eu-west-1"))
    summary = summarize(old, {"mycluster": tree}, catalog=catalog)
    # THEN the whole summary is one screen: four removal lines and the new cluster; its Mermaid source
    # is not read as text (GitHub draws it as one picture), so it is counted apart, and bounded
    assert len(removal_lines(summary)) == 4
    text, picture = re.subn(r"(?s)```mermaid\n.*?```\n", "", summary)
    assert picture == 1 and len(text.splitlines()) <= 60, summary
    assert len(summary.splitlines()) - len(text.splitlines()) <= 25
    # AND the new cluster still says what it deploys and what it costs
    assert "- adds 2 g6.12xlarge node(s) (8 L4) to `gpu`\n" in summary
    assert "- cost (on-demand): - → $1.80/h now and at the ceiling; not counted: `gpu` no price in eu-west-1" in summary
    # AND its slurm.conf is its partitions and nodesets, the rest counted with the command that prints it
    assert "- `PartitionName=gpu` added: Nodes=gpu " in summary
    assert "`main.py --explain slurm.conf --cluster mycluster`" in summary
    assert "`SlurmctldPort`" not in summary


# -- item 4: what runs now and what can run at the ceiling --------------------------------------------

AUTOSCALED = ("[{name: cpu, instanceType: m7i.2xlarge, replicas: 2}, "
              "{name: l40s, instanceType: g6e.12xlarge, autoscale: {min: 0, max: 4}}]")
PARTS = "[{name: cpu, nodesets: [cpu]}, {name: inference, nodesets: [l40s]}]"
PROM = "autoscaling: {prometheusAddress: 'http://prometheus.monitoring.svc:9090'}\n"


def test_an_autoscaled_nodeset_reads_up_to_its_ceiling_with_what_runs_now(tmp_path, capsys):
    # GIVEN a nodeset added with 0 replicas that scales to 4 with the queue
    old = spec_text("[{name: cpu, instanceType: m7i.2xlarge, replicas: 2}]", "[{name: cpu, nodesets: [cpu]}]")
    new = spec_text(AUTOSCALED, PARTS) + PROM
    summary = summary_between(tmp_path, capsys, old, new)
    # THEN the headline says up to 4, and 0 now
    assert "- adds up to 4 (0 now) g6e.12xlarge node(s) (16 L40S) to `inference`\n" in summary
    assert "- adds 4 g6e.12xlarge" not in summary
    # AND the cost says the same: what runs now, and the ceiling
    from slurmgen.catalog.pricing import load_prices

    prices = load_prices()
    cpu, l40s = prices.on_demand("us-east-1", "m7i.2xlarge"), prices.on_demand("us-east-1", "g6e.12xlarge")
    assert cpu is not None and l40s is not None
    now, ceiling = f"${2 * cpu:,.2f}/h", f"${2 * cpu + 4 * l40s:,.2f}/h"
    assert f"- cost (on-demand): {now} now, {now} → {ceiling} at the ceiling\n" in summary


def test_raising_an_autoscaled_ceiling_says_so(tmp_path, capsys):
    # GIVEN the autoscaled nodeset's ceiling raised from 4 to 8, still 0 replicas
    old = spec_text(AUTOSCALED, PARTS) + PROM
    new = old.replace("max: 4", "max: 8")
    summary = summary_between(tmp_path, capsys, old, new)
    # THEN the headline adds up to 4 more, none now
    assert "- adds up to 4 (0 now) g6e.12xlarge node(s) (16 L40S) to `inference`\n" in summary


def test_more_replicas_under_the_same_ceiling_is_a_headline(tmp_path, capsys):
    # GIVEN a nodeset that may launch 8 nodes runs 4 instead of 2
    old = spec_text("[{name: cpu, instanceType: m7i.2xlarge, replicas: 2, maxNodes: 8}]", "[{name: cpu, nodesets: [cpu]}]")
    summary = summary_between(tmp_path, capsys, old, old.replace("replicas: 2", "replicas: 4"))
    # THEN the headline says what runs now, not "no change in capacity"
    assert "- runs 2 more m7i.2xlarge node(s) now in `cpu` (2 → 4; the ceiling stays 8)\n" in summary
    assert "no change in capacity" not in summary
    # AND the cost moves now, not at the ceiling
    assert "- cost (on-demand): $0.81/h → $1.61/h now, $3.23/h at the ceiling\n" in summary
