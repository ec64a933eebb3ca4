"""`--preview`: every Helm Application rendered offline at its pinned version, and the proofs on it.

The deep tests render the shipped examples against ../shared/chart-sources (research copies of the
pinned charts); the others feed the proofs hand-made renders and need neither ../shared nor the SDK.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from slurmgen.review.preview import preview_cluster
from slurmgen.review.preview.charts import ChartLocator, ChartRender, HelmSource
from slurmgen.review.preview.proofs import image_problems, placement_problems, project_problems, values_problems
from tests.spec_builder import spec_text
from tests.conftest import EXAMPLES, REQUIRE_SHARED, SHARED, TESTS, need_shared

#: the tests' own specs on the command line (a bare `main.py` would read the repository's clusters/)
SPEC_ARGS = [arg for path in EXAMPLES for arg in ("--spec", str(path))]

CHART_SOURCES = SHARED / "chart-sources"


def need_sdk() -> None:
    """The Helm SDK (requirements-preview.txt, installed by `make test`); required where ../shared is."""
    if importlib.util.find_spec("helm_python") is None:
        reason = "needs helm-python-sdk (make preview-install) to render charts"
        if REQUIRE_SHARED:
            pytest.fail(f"{reason}; SLURMGEN_REQUIRE_SHARED=1 forbids skipping it")
        pytest.skip(reason)


# ../shared/chart-sources/SOURCES.md: cert-manager's folder is its source @ v1.21.1, whose Chart.yaml
# carries the placeholder v0.0.0 (set at release). The preview refuses a placeholder, so the tests
# render a copy stamped as the release would be; every other folder is used as it is.
STAMPED = {"cert-manager": "v1.21.1"}
UNPROVEN_IN_SHARED = frozenset({"neuron-helm-chart"})  # no source in ../shared (SOURCES.md)


def stamped_chart_dir(target: Path) -> Path:
    """A chart folder: links to ../shared/chart-sources, and copies of the STAMPED ones with their release version."""
    target.mkdir(parents=True, exist_ok=True)
    for folder in sorted(CHART_SOURCES.iterdir()):
        if not (folder / "Chart.yaml").is_file():
            continue
        if folder.name in STAMPED:
            copy, release = target / folder.name, STAMPED[folder.name]
            shutil.copytree(folder, copy)
            for path in [copy, *copy.rglob("*")]:  # ../shared is read-only: let the copy be written and removed
                path.chmod(path.stat().st_mode | 0o200)
            text = (copy / "Chart.yaml").read_text(encoding="utf-8")
            (copy / "Chart.yaml").write_text(re.sub(r"(?m)^(version|appVersion):.*$", rf"\1: {release}", text))
        else:
            (target / folder.name).symlink_to(folder)
    return target


@pytest.fixture(scope="module")
def chart_dir(tmp_path_factory):
    need_shared(CHART_SOURCES)
    return stamped_chart_dir(tmp_path_factory.mktemp("charts"))


@pytest.fixture(scope="module")
def locator(chart_dir):
    """The pinned chart sources in ../shared, never a pull; renders are shared by the tests of this module."""
    need_sdk()
    found = ChartLocator(chart_dir=chart_dir, pull=False)
    yield found
    found.close()


@pytest.fixture(scope="module")
def previews(rendered, locator):
    return {name: preview_cluster(cluster, locator, UNPROVEN_IN_SHARED) for name, cluster in rendered.items()}


def with_files(cluster, edit) -> Any:
    """A copy of a rendered cluster whose files went through `edit(files)`."""
    files = {rel: __import__("copy").deepcopy(obj) for rel, obj in cluster.files.items()}
    edit(files)
    return dataclasses.replace(cluster, files=files)


# --- the shipped examples, rendered for real -----------------------------------------------------

def test_every_shipped_example_previews_clean(previews):
    # GIVEN every example's Helm Applications rendered at their pinned versions with our values
    for name, preview in previews.items():
        # THEN no proof fails
        assert preview.problems == [], "\n".join(preview.problems)
        # AND the charts really rendered: each has objects
        assert preview.renders and all(r.objects for r in preview.renders), name


def test_every_helm_application_is_previewed_or_says_why(rendered, previews, chart_dir):
    for name, cluster in rendered.items():
        apps = {o["metadata"]["name"] for rel, o in cluster.files.items()
                if rel.startswith("apps/") and o["kind"] == "Application" and "chart" in o["spec"]["source"]}
        preview = previews[name]
        done = {r.source.application for r in preview.renders}
        skipped = {line.split(": ", 1)[0].split("/", 1)[1] for line in preview.not_previewed}
        # THEN each Helm Application is exactly one of previewed / not previewed
        assert done | skipped == apps and not done & skipped, name
    # AND the chart with no source in ../shared is named, with the reason, as allowed (not failed)
    assert previews["training"].not_previewed == [
        "training/training-neuron-device-plugin: not previewed (allowed by --allow-unproven): no chart source for "
        f"neuron-helm-chart 1.9.0 (not in {chart_dir}, not cached, pull off)"]
    # AND kube-prometheus-stack, whose dependencies ../shared now holds, is previewed
    assert "kube-prometheus-stack" in {r.source.chart for r in previews["training"].renders}


def test_chart_source_differences_are_handled(previews):
    example = {r.source.chart: r for r in previews["example"].renders}
    # GIVEN cert-manager's source stamped with its release version (STAMPED)
    # THEN it renders as the pinned release would: images tagged with the pinned version
    from slurmgen.synth.rendered import images
    tags = {i.rsplit(":", 1)[1] for o in example["cert-manager"].objects for i in images(o)}
    assert tags == {"v1.21.1"}
    # AND external-secrets' missing generated CRDs are counted, with a note
    assert example["external-secrets"].assumed_kinds == {("apiextensions.k8s.io", "CustomResourceDefinition")}
    assert any("lacks the CRDs" in n for n in example["external-secrets"].notes)
    # AND hooks are part of the render (cert-manager's startupapicheck Job is a post-install hook)
    assert any(o["kind"] == "Job" for o in example["cert-manager"].objects)


def test_a_gpu_nodepool_without_its_label_fails_the_preview(rendered, locator):
    # GIVEN prod with its H100 NodePool no longer labelling nodes nvidia.com/gpu.present
    def drop(files):
        files["compute/nodepool-prod-h100.yaml"]["spec"]["template"]["metadata"]["labels"].pop("nvidia.com/gpu.present")
    broken = with_files(rendered["prod"], drop)
    # WHEN previewed
    result = preview_cluster(broken, locator)
    # THEN one clear line names the plugin and the NodePool it no longer reaches
    assert [p for p in result.problems if "nvidia" in p] == [
        "prod/prod-nvidia-device-plugin: no DaemonSet of nvidia-device-plugin lands on the NVIDIA GPU NodePool(s) "
        "prod-h100: their devices would never be advertised"]


def test_an_appproject_without_clusterrole_fails_the_preview(rendered, locator):
    # GIVEN example's AppProject without ClusterRole in its whitelist
    def drop(files):
        spec = files["apps/appproject-example.yaml"]["spec"]
        spec["clusterResourceWhitelist"] = [k for k in spec["clusterResourceWhitelist"] if k["kind"] != "ClusterRole"]
    result = preview_cluster(with_files(rendered["example"], drop), locator)
    # THEN every chart's ClusterRole is a line naming the Application and the object
    lines = [p for p in result.problems if "ClusterRole " in p or p.endswith("ClusterRole")]
    assert lines and all("spec.clusterResourceWhitelist: rbac.authorization.k8s.io/ClusterRole is not permitted" in p
                         for p in lines)
    assert any("example-cert-manager creates ClusterRole/cert-manager-" in p for p in lines)


# --- the proofs on hand-made renders (no SDK, no ../shared) ---------------------------------------

def fake(app: str, chart: str, objects: list[dict], values: dict | None = None, defaults: dict | None = None,
         namespace: str = "kube-system") -> ChartRender:
    source = HelmSource(application=app, repo_url="example.com/charts", chart=chart, version="1.0.0",
                        release_name=chart, namespace=namespace, values=values or {})
    return ChartRender(source=source, origin="test", objects=objects, defaults=defaults or {})


def deployment(name: str, image: str = "quay.io/x/y:v1", **pod: Any) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}], **pod}}}}


def test_images_must_be_pinned_and_from_the_clusters_region(rendered):
    cluster = rendered["training"]  # us-east-1
    renders = [fake("training-x", "x", [
        deployment("ok", "602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/a:v1"),
        deployment("digest", "quay.io/x/y@sha256:" + "0" * 64),
        deployment("other-region", "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/a:v1"),
        deployment("latest", "quay.io/x/y:latest"),
        deployment("untagged", "registry.example.com:5000/x/y"),
    ])]
    # WHEN the image proof runs THEN exactly the three bad images are lines, the others pass
    problems = [p for p in image_problems(cluster, renders) if "training-x" in p]
    assert problems == [
        "training/training-x: Deployment/latest: image quay.io/x/y:latest: not pinned (no tag or digest, or latest)",
        "training/training-x: Deployment/other-region: image 602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/a:v1: "
        "in the ECR of us-west-2, not pullable through us-east-1's endpoints; use the us-east-1 registry",
        "training/training-x: Deployment/untagged: image registry.example.com:5000/x/y: not pinned "
        "(no tag or digest, or latest)",
    ]


def test_value_keys_must_exist_in_the_chart(rendered):
    cluster = rendered["example"]
    defaults = {"controller": {"replicas": 1, "nodeSelector": {}, "extra": None}, "list": [1]}
    schema = {"properties": {"fromSchema": {"type": "string"}}}
    r = fake("example-x", "x", [], values={"controller": {"replicas": 2, "replcas": 3, "nodeSelector": {"a": "b"},
                                                          "extra": "set"},
                                           "fromSchema": "s", "list": {"sub": 1}}, defaults=defaults)
    r.schema = schema
    # THEN the misspelt key and a sub-key of a list are lines; open maps, null defaults and schema keys pass
    assert values_problems(cluster, [r]) == [
        "example/example-x: valuesObject.controller.replcas: no such key in chart x 1.0.0 "
        "(values.yaml, values.schema.json): Helm would ignore it",
        "example/example-x: valuesObject.list.sub: no such key in chart x 1.0.0 "
        "(values.yaml, values.schema.json): Helm would ignore it",
    ]


def test_appproject_permissions_must_be_used(rendered):
    cluster = rendered["example"]

    # GIVEN the AppProject also permits PriorityClass and a namespace nothing uses
    def widen(files):
        spec = files["apps/appproject-example.yaml"]["spec"]
        spec["clusterResourceWhitelist"].append({"group": "scheduling.k8s.io", "kind": "PriorityClass"})
        spec["destinations"].append({"server": "https://kubernetes.default.svc", "namespace": "unused"})
    widened = with_files(cluster, widen)
    problems, notes = project_problems(widened, [], partial=False)
    # THEN both are lines (with the charts not rendered, their kinds show as unused too)
    assert "example/AppProject example: spec.clusterResourceWhitelist: scheduling.k8s.io/PriorityClass is permitted " \
           "but no Application creates one" in problems
    assert "example/AppProject example: spec.destinations: namespace unused is permitted but no Application uses it" in problems
    # AND with a chart not previewed, unused permissions are notes, not failures
    problems, notes = project_problems(widened, [], partial=True)
    assert not any("permitted but" in p for p in problems) and any("PriorityClass" in n for n in notes)


def test_core_components_need_the_placement(rendered):
    cluster = rendered["training"]  # placement: a core nodeSelector and toleration
    place = cluster.spec.placement.pod_spec()
    assert place.get("nodeSelector"), "training has a core placement"
    renders = [fake("training-x", "x", [deployment("placed", **place), deployment("unplaced")])]
    # THEN only the Deployment without the placement is a line
    problems = placement_problems(cluster, renders)
    assert [p.split(": a core")[0] for p in problems] == ["training/training-x: Deployment/unplaced"]


# --- the PR summary's chart section, and the CLI -----------------------------------------------

def test_summary_chart_section_renders_only_what_changed(rendered):
    from slurmgen.review.preview.diff import chart_section
    old = dict(rendered["example"].files)
    # GIVEN no Helm source changed THEN no section, and nothing is rendered (no locator needed)
    assert chart_section("example", old, old, locator=ChartLocator(chart_dir=None, pull=False)) == []
    need_shared(CHART_SOURCES)
    need_sdk()
    # GIVEN KEDA's operator gets two replicas
    new = {rel: __import__("copy").deepcopy(obj) for rel, obj in old.items()}
    new["apps/application-example-keda.yaml"]["spec"]["source"]["helm"]["valuesObject"].setdefault(
        "operator", {})["replicaCount"] = 2
    # WHEN the section is made from both renders of the chart
    lines = chart_section("example", old, new, locator=ChartLocator(chart_dir=CHART_SOURCES, pull=False))
    # THEN it names the changed value and the one object it changes, with the field
    assert lines == ["- `example-keda`: values `operator.replicaCount`",
                     "  - changes 1: Deployment keda/keda-operator (spec.replicas)"]


def test_cli_preview_reports_and_exits_0_on_a_clean_cluster(monkeypatch, capsys, chart_dir):
    need_sdk()
    from slurmgen.cli import main
    monkeypatch.setenv("SLURMGEN_CHART_DIR", str(chart_dir))
    monkeypatch.setenv("SLURMGEN_CHART_PULL", "0")
    # WHEN one cluster is previewed from the chart folder
    assert main([*SPEC_ARGS, "--preview", "--cluster", "dev"]) == 0
    out, err = capsys.readouterr()
    # THEN each chart is one line and the closing line counts them
    assert "dev/dev-slurm-operator: previewed slurm-operator 1.2.1:" in out
    assert err.startswith("preview: ") and " 0 problem(s)" in err


def test_cli_preview_of_an_unknown_cluster_is_one_line(capsys):
    from slurmgen.cli import main
    assert main([*SPEC_ARGS, "--preview", "--cluster", "nope"]) == 2
    assert capsys.readouterr().err == "--cluster: no cluster named 'nope'; rendered: dev, example, prod, training\n"


def test_synth_never_loads_the_helm_sdk(tmp_path):
    import subprocess
    import sys

    from tests.conftest import REPO
    # GIVEN a full render (what `make synth` does, into a scratch folder)
    code = ("import sys; from slurmgen.cli import main; rc = main(['--out', *sys.argv[1:]]); "
            "sys.exit(rc or ('helm_python' in sys.modules and 7))")
    # THEN the Helm SDK's 80 MB library was never imported
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "out"), *SPEC_ARGS], cwd=REPO,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_rendered_manifests_split_and_load_as_helm_does():
    from slurmgen.review.preview.charts import _documents
    # GIVEN a template whose separator carries a comment, a bare `=` value and an empty document
    manifests = {"c/templates/a.yaml": "kind: A\nmetadata: {name: a}\ndata: {op: =}\n---# next\nkind: B\n---\n",
                 "c/templates/NOTES.txt": "not: yaml: at all"}
    # THEN two objects, the `=` a string, NOTES.txt ignored
    assert list(_documents(manifests)) == [{"kind": "A", "metadata": {"name": "a"}, "data": {"op": "="}}, {"kind": "B"}]


def test_charts_render_at_the_clusters_kubernetes_version(tmp_path, rendered):
    need_sdk()
    from slurmgen.review.preview import kube_version
    from slurmgen.review.preview.charts import render
    # GIVEN a chart that prints the Kubernetes version Helm gives it
    (tmp_path / "templates").mkdir()
    (tmp_path / "Chart.yaml").write_text("apiVersion: v2\nname: kv\nversion: 0.1.0\n")
    (tmp_path / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kv}\ndata: {kv: '{{ .Capabilities.KubeVersion.Version }}'}\n")
    source = HelmSource(application="t-kv", repo_url="example.com/c", chart="kv", version="0.1.0",
                        release_name="kv", namespace="ns", values={})
    # WHEN it is rendered for a cluster (as Argo CD passes --kube-version)
    version = kube_version(rendered["training"])
    [obj] = render(source, tmp_path, [], version).objects
    # THEN the template saw the cluster's EKS version, not the SDK's default
    assert version == f"v{rendered['training'].spec.aws.kubernetes_version}.0"
    assert obj["data"]["kv"] == version


def test_cli_preview_without_the_sdk_is_one_line(monkeypatch, capsys):
    from slurmgen.cli import main
    # GIVEN the Helm SDK cannot be imported
    monkeypatch.setitem(__import__("sys").modules, "helm_python", None)
    # WHEN --preview runs THEN one line says how to install it, exit 2
    assert main([*SPEC_ARGS, "--preview", "--cluster", "dev"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("--preview needs the Helm SDK (helm-python-sdk, pinned in requirements-preview.txt): "
                          "run 'make preview-install'") and err.count("\n") == 1


def test_cli_preview_with_no_chart_source_proves_nothing_and_fails(monkeypatch, tmp_path, capsys):
    need_sdk()
    from slurmgen.cli import main
    # GIVEN an empty chart folder, an empty cache and no pull
    monkeypatch.setenv("SLURMGEN_CHART_DIR", str(tmp_path))
    monkeypatch.setenv("SLURMGEN_CHART_PULL", "0")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    # THEN every chart is one line, a problem, and the run fails rather than passing on nothing
    assert main([*SPEC_ARGS, "--preview", "--cluster", "dev"]) == 2
    out, err = capsys.readouterr()
    assert "dev/dev-slurm-operator" not in out
    assert (f"dev/dev-slurm-operator: chart slurm-operator 1.2.1 cannot be proven: no chart source (not in {tmp_path}, "
            f"not cached, pull off); unpack slurm-operator 1.2.1 as {tmp_path}/slurm-operator/\n") in err
    assert err.rstrip().endswith(f"nothing was proven: unpack the pinned charts into SLURMGEN_CHART_DIR={tmp_path}")


# --- issue 20: proofs that cannot lie ----------------------------------------------------------

DATA = TESTS / "data" / "preview"


def render_file(name: str):
    """A cluster rendered from a spec of tests/data/preview/."""
    from slurmgen.synth.build import render as synth
    from slurmgen.spec import parse_text
    path = DATA / name
    [cluster] = synth([parse_text(str(path), path.read_text())])
    return cluster


def daemonset(name: str, **pod: Any) -> dict:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "quay.io/x/y:v1"}],
                                           "tolerations": [{"operator": "Exists"}], **pod}}}}


def instance_types(operator: str, *types: str) -> dict:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "node.kubernetes.io/instance-type", "operator": operator, "values": list(types)}]}]}}}


def test_a_nodepool_of_several_instance_types_launches_each_of_them():
    # GIVEN one NVIDIA NodePool allowing g6.4xlarge and gr6.4xlarge
    cluster = render_file("mixed-types.yaml")
    gpu = {"nodeSelector": {"nvidia.com/gpu.present": "true"}}
    # WHEN the device plugin selects both types, a node agent has no type selector, and another avoids one type
    renders = [fake("t-nvidia-device-plugin", "nvidia-device-plugin", [
                   daemonset("both", affinity=instance_types("In", "g6.4xlarge", "gr6.4xlarge"), **gpu)]),
               fake("t-agents", "agents", [
                   daemonset("anywhere"),
                   daemonset("not-gr6", affinity=instance_types("NotIn", "gr6.4xlarge"))])]
    # THEN the plugin covers the pool (a pod selecting a type lands where the pool allows it), the
    # agent with no selector lands on every node, and the one avoiding gr6 misses exactly those nodes
    assert placement_problems(cluster, renders) == [
        "t/t-agents: DaemonSet/not-gr6: a node agent that cannot land on NodePool(s) "
        "t-gpu (node.kubernetes.io/instance-type=gr6.4xlarge)"]


def test_a_device_plugin_on_one_type_of_a_two_type_pool_leaves_the_other_without_devices():
    cluster = render_file("mixed-types.yaml")
    # GIVEN the NVIDIA plugin selects only one of the pool's two types
    renders = [fake("t-nvidia-device-plugin", "nvidia-device-plugin", [
        daemonset("one", affinity=instance_types("In", "g6.4xlarge"))])]
    # THEN the nodes of the other type are named: their GPUs would never be advertised
    assert placement_problems(cluster, renders) == [
        "t/t-nvidia-device-plugin: no DaemonSet of nvidia-device-plugin lands on the NVIDIA GPU NodePool(s) "
        "t-gpu (node.kubernetes.io/instance-type=gr6.4xlarge): their devices would never be advertised"]


def test_node_variants_are_the_combinations_of_multi_valued_requirements():
    from slurmgen.review.preview.placement import node_variants
    pool = {"metadata": {"name": "p"}, "spec": {"template": {"spec": {"requirements": [
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["b", "a"]},
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["z1", "z2"]},
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["z2", "z3"]},
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}}}}
    # THEN one label set per type, the zones intersected, the single values on every node
    assert [(v["node.kubernetes.io/instance-type"], v["topology.kubernetes.io/zone"], v["kubernetes.io/arch"])
            for v in node_variants(pool)] == [("a", "z2", "amd64"), ("b", "z2", "amd64")]


def test_a_chart_without_a_source_fails_the_preview_unless_allowed(tmp_path, monkeypatch):
    from slurmgen.review.preview import render_sources
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    source = HelmSource(application="t-neuron", repo_url="public.ecr.aws/neuron", chart="neuron-helm-chart",
                        version="1.9.0", release_name="n", namespace="kube-system", values={})
    empty = ChartLocator(chart_dir=tmp_path, pull=False)
    # WHEN no chart source is found
    renders, skipped, problems = render_sources("t", [source], empty)
    # THEN it is a problem: one line naming the chart and how to get its source
    assert renders == [] and problems == [
        f"t/t-neuron: chart neuron-helm-chart 1.9.0 cannot be proven: no chart source (not in {tmp_path}, not cached, "
        f"pull off); unpack neuron-helm-chart 1.9.0 as {tmp_path}/neuron-helm-chart/"]
    # AND allowed by name, it is only reported
    renders, skipped, problems = render_sources("t", [source], empty, allow_unproven={"neuron-helm-chart"})
    assert problems == [] and skipped == [
        "t/t-neuron: not previewed (allowed by --allow-unproven): no chart source for neuron-helm-chart 1.9.0 "
        f"(not in {tmp_path}, not cached, pull off)"]


def test_cli_preview_fails_on_an_unproven_chart_and_allow_unproven_lets_it_pass(tmp_path, monkeypatch, capsys,
                                                                               chart_dir):
    need_sdk()
    from slurmgen.cli import main
    monkeypatch.setenv("SLURMGEN_CHART_DIR", str(chart_dir))
    monkeypatch.setenv("SLURMGEN_CHART_PULL", "0")
    # GIVEN a Trainium cluster, whose Neuron device plugin has no source in ../shared
    spec = tmp_path / "trn.yaml"
    spec.write_text(spec_text(name="trn", nodeset={"name": "trn", "instanceType": "trn1.32xlarge"},
                              partitions=[{"name": "trn", "nodesets": ["trn"]}]))
    args = ["--spec", str(spec), "--preview"]
    # WHEN previewed THEN it fails, naming the chart
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "trn/trn-neuron-device-plugin: chart neuron-helm-chart 1.9.0 cannot be proven" in err
    # AND with --allow-unproven for it, it passes
    assert main([*args, "--allow-unproven", "neuron-helm-chart"]) == 0
    # AND a chart name no Application uses is one line, not an allowance of nothing
    assert main([*args, "--allow-unproven", "neuron-chart"]) == 2
    assert capsys.readouterr().err.splitlines()[-1].startswith(
        "--allow-unproven neuron-chart: no Helm Application of the previewed cluster(s) uses chart neuron-chart; charts: ")


@pytest.mark.parametrize(("name", "version", "why"), [
    ("x", "v0.0.0", "x v0.0.0 (a placeholder, set only at release), the Application pins x 1.0.0"),
    ("y", "1.0.0", "y 1.0.0, the Application pins x 1.0.0"),
    ("x", "0.9.0", "x 0.9.0, the Application pins x 1.0.0"),
])
def test_a_chart_folder_must_be_the_pinned_chart_at_the_pinned_version(tmp_path, monkeypatch, name, version, why):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    # GIVEN a folder x/ whose Chart.yaml names another chart or version (or a placeholder)
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "Chart.yaml").write_text(f"apiVersion: v2\nname: {name}\nversion: {version}\n")
    source = HelmSource(application="t-x", repo_url="example.com/c", chart="x", version="1.0.0",
                        release_name="x", namespace="ns", values={})
    # THEN it is refused, naming both
    path, _notes, reason = ChartLocator(chart_dir=tmp_path, pull=False).locate(source)
    assert path is None and reason == f"{tmp_path}/x/Chart.yaml is {why}, not cached, pull off"


def test_images_passed_as_arguments_or_env_are_checked(rendered):
    cluster = rendered["training"]  # us-east-1
    operator = deployment("op")
    operator["spec"]["template"]["spec"]["containers"][0].update(
        args=["--prometheus-config-reloader=quay.io/p/reloader:latest", "--thanos-default-base-image=quay.io/t/t:v1",
              "--label=node.kubernetes.io/instance-type", "--kubelet-service=kube-system/k", "--image", "quay.io/x/z"],
        env=[{"name": "RELATED_IMAGE_DB", "value": "602401143452.dkr.ecr.us-west-2.amazonaws.com/db:v1"},
             {"name": "FOLDER", "value": "/tmp/dashboards"}])
    # WHEN the image proof runs THEN the images among them are checked like `image:` fields
    assert [p for p in image_problems(cluster, [fake("training-x", "x", [operator])]) if "training-x" in p] == [
        "training/training-x: Deployment/op: image 602401143452.dkr.ecr.us-west-2.amazonaws.com/db:v1 "
        "(in env RELATED_IMAGE_DB): in the ECR of us-west-2, not pullable through us-east-1's endpoints; "
        "use the us-east-1 registry",
        "training/training-x: Deployment/op: image quay.io/p/reloader:latest (in args): not pinned "
        "(no tag or digest, or latest)",
        "training/training-x: Deployment/op: image quay.io/x/z (in args): not pinned (no tag or digest, or latest)",
    ]


def test_a_chart_that_renders_differently_each_time_fails(tmp_path, rendered):
    need_sdk()
    from slurmgen.review.preview.charts import render
    from slurmgen.review.preview.proofs import stability_problems
    # GIVEN a chart whose Secret holds a random value (as grafana's admin password without a Secret)
    (tmp_path / "templates").mkdir()
    (tmp_path / "Chart.yaml").write_text("apiVersion: v2\nname: r\nversion: 0.1.0\n")
    (tmp_path / "templates" / "s.yaml").write_text(
        "apiVersion: v1\nkind: Secret\nmetadata: {name: r}\ndata: {same: YQ==, p: {{ randAlphaNum 8 | b64enc }}}\n"
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: stable}\n")
    source = HelmSource(application="example-r", repo_url="example.com/c", chart="r", version="0.1.0",
                        release_name="r", namespace="ns", values={})
    # WHEN it is rendered THEN the differing object and path are named, and it is a problem
    r = render(source, tmp_path, [])
    assert r.unstable == ["Secret/r: data.p"]
    assert stability_problems(rendered["example"], [r]) == [
        "example/example-r: chart r 0.1.0 renders Secret/r: data.p differently each time: Argo CD would see a change "
        "at every manifest-cache expiry or hard refresh (a random or lookup-based value: give the chart that value, "
        "e.g. an existing Secret)"]


def test_an_archive_of_another_chart_is_refused(tmp_path):
    need_sdk()
    from slurmgen.review.preview.charts import WrongChart, render
    (tmp_path / "templates").mkdir()
    (tmp_path / "Chart.yaml").write_text("apiVersion: v2\nname: r\nversion: 0.2.0\n")
    source = HelmSource(application="t-r", repo_url="example.com/c", chart="r", version="0.1.0",
                        release_name="r", namespace="ns", values={})
    with pytest.raises(WrongChart, match=r"holds chart r 0.2.0, the Application pins r 0.1.0"):
        render(source, tmp_path, [])


# --- Grafana's admin Secret: made in the cluster, never rendered at random -----------------------

def kps_values(cluster) -> dict:
    return cluster.files["apps/application-t-kube-prometheus-stack.yaml"]["spec"]["source"]["helm"]["valuesObject"]


def test_grafana_reads_an_in_cluster_generated_admin_secret():
    cluster = render_file("monitoring.yaml")
    values = kps_values(cluster)
    # THEN Grafana reads its login from grafana-admin, not the chart's random Secret
    assert values["grafana"]["admin"] == {"existingSecret": "grafana-admin", "userKey": "admin-user",
                                          "passwordKey": "admin-password"}
    # AND the kube-prometheus-stack Application itself makes that Secret once, as the Slurm keys are made
    generator, external = values["extraManifests"]
    assert (generator["kind"], generator["metadata"]["namespace"]) == ("Password", "monitoring")
    assert generator["spec"]["secretKeys"] == ["admin-password"] and generator["spec"]["symbols"] == 0
    spec = external["spec"]
    assert spec["refreshPolicy"] == "CreatedOnce" and spec["dataFrom"][0]["sourceRef"]["generatorRef"]["name"] == "grafana-admin"
    assert spec["target"]["creationPolicy"] == "Orphan" and spec["target"]["immutable"] is True
    assert spec["target"]["template"]["data"] == {"admin-user": "admin"}  # the generated key is merged in
    assert spec["target"]["template"]["mergePolicy"] == "Merge"
    assert spec["target"]["template"]["metadata"]["labels"]["slurmgen.dev/backup"] == "required"
    # AND nothing in it is a Helm template (the chart passes extraManifests through tpl)
    assert "{{" not in repr(values["extraManifests"])
    # AND both objects are valid against the pinned External Secrets CRDs (vendored, strict)
    from slurmgen.verify.schemas import Validator
    assert [Validator.create().validate(o) for o in values["extraManifests"]] == [[], []]
    # AND the Application retries until External Secrets' CRDs exist
    app = cluster.files["apps/application-t-kube-prometheus-stack.yaml"]
    assert app["spec"]["syncPolicy"]["retry"]["limit"] == -1


def test_grafana_with_precreated_secrets_reads_the_sites_secret():
    values = kps_values(render_file("monitoring-precreated.yaml"))
    # THEN the same Secret name, created by hand (README), and nothing generated
    assert values["grafana"]["admin"]["existingSecret"] == "grafana-admin"
    assert "extraManifests" not in values


def test_kube_prometheus_stack_renders_the_same_twice_and_no_random_grafana_secret(previews):
    # GIVEN training, which deploys monitoring, previewed (every chart rendered twice)
    result = previews["training"]
    kps = next(r for r in result.renders if r.source.chart == "kube-prometheus-stack")
    # THEN no chart renders differently, and kube-prometheus-stack is clean
    assert [r.source.chart for r in result.renders if r.unstable] == []
    assert [p for p in result.problems if "kube-prometheus-stack" in p] == []
    # AND the chart's random admin Secret is gone; Grafana's pod reads grafana-admin
    names = {(o["kind"], o["metadata"]["name"]) for o in kps.objects}
    assert ("Secret", "kube-prometheus-stack-grafana") not in names
    assert {("Password", "grafana-admin"), ("ExternalSecret", "grafana-admin")} <= names
    deploy = next(o for o in kps.objects if (o["kind"], o["metadata"]["name"]) == ("Deployment", "kube-prometheus-stack-grafana"))
    refs = {e["valueFrom"]["secretKeyRef"]["name"] for c in deploy["spec"]["template"]["spec"]["containers"]
            for e in c.get("env") or [] if "secretKeyRef" in (e.get("valueFrom") or {})}
    assert refs == {"grafana-admin"}


def test_the_efa_plugin_lands_on_exactly_the_efa_nodepools(locator):
    # GIVEN an EFA nodeset beside one of EFA-capable types (g6.8xlarge, gr6.8xlarge) that does not use EFA
    cluster = render_file("efa-beside-efa-capable.yaml")
    values = cluster.files["apps/application-t-aws-efa-k8s-device-plugin.yaml"]["spec"]["source"]["helm"]["valuesObject"]
    # THEN the plugin's affinity names the EFA NodePool, not the chart's list of EFA-capable types
    assert values["supportedInstanceLabels"] == {"keys": ["karpenter.sh/nodepool"], "values": ["t-efa"]}
    # AND rendered, it lands on that pool only (with the chart's type list it also landed on t-l4)
    result = preview_cluster(cluster, locator)
    assert [p for p in result.problems if "efa" in p] == []


# --- issue 21 item 5: offline, each line names its own chart and source ------------------------

def test_failed_pulls_name_each_charts_own_source(tmp_path, monkeypatch):
    """Offline, the first failure used to be repeated for every chart (a ghcr.io chart "failed to fetch quay.io/...")."""
    from slurmgen.review.preview import render_sources
    from slurmgen.review.preview import charts
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    tried: list[str] = []

    class NoNetwork:  # the SDK's pull, as it fails without a network: the error names what it fetched
        @staticmethod
        def pull(ref: str, repo_url: str = "", version: str = "", destination: Any = None) -> None:
            tried.append(f"{repo_url} {ref} {version}".strip())
            raise RuntimeError(f'failed to fetch {repo_url or ref}:{version}: lookup: no such host\nmore detail')

    monkeypatch.setattr(charts, "helm_sdk", lambda: NoNetwork)

    def source(app: str, repo: str, chart: str, version: str) -> HelmSource:
        return HelmSource(application=app, repo_url=repo, chart=chart, version=version, release_name=app,
                          namespace="ns", values={})

    cert = source("t-cert-manager", "quay.io/jetstack/charts", "cert-manager", "v1.21.1")
    crds = source("t-crds", "ghcr.io/slinkyproject/charts", "slurm-operator-crds", "1.2.1")
    operator = source("t-operator", "ghcr.io/slinkyproject/charts", "slurm-operator", "1.2.1")
    keda = source("t-keda", "https://kedacore.github.io/charts", "keda", "2.20.2")
    locator = ChartLocator(chart_dir=None, pull=True)
    # WHEN four charts from three registries cannot be pulled (and cert-manager is asked for twice, as in a fleet)
    renders, _skipped, problems = render_sources("t", [cert, crds, operator, keda, cert], locator)
    # THEN each registry is tried once, not once per chart (offline, each try waits for its own failure)
    assert renders == [] and len(problems) == 5
    assert tried == ["oci://quay.io/jetstack/charts/cert-manager v1.21.1",
                     "oci://ghcr.io/slinkyproject/charts/slurm-operator-crds 1.2.1",
                     "https://kedacore.github.io/charts keda 2.20.2"]
    # AND every line names its own chart and where it comes from, never another chart's
    why = [line.split("no chart source (", 1)[1].rsplit("); ", 1)[0] for line in problems]
    assert why == [
        "SLURMGEN_CHART_DIR unset, not cached, pull of oci://quay.io/jetstack/charts/cert-manager:v1.21.1 failed "
        "(failed to fetch oci://quay.io/jetstack/charts/cert-manager:v1.21.1: lookup: no such host)",
        "SLURMGEN_CHART_DIR unset, not cached, pull of oci://ghcr.io/slinkyproject/charts/slurm-operator-crds:1.2.1 "
        "failed (failed to fetch oci://ghcr.io/slinkyproject/charts/slurm-operator-crds:1.2.1: lookup: no such host)",
        "SLURMGEN_CHART_DIR unset, not cached, oci://ghcr.io/slinkyproject/charts/slurm-operator:1.2.1 not pulled: "
        "ghcr.io did not answer the pull of oci://ghcr.io/slinkyproject/charts/slurm-operator-crds:1.2.1 earlier in "
        "this run",
        "SLURMGEN_CHART_DIR unset, not cached, pull of https://kedacore.github.io/charts keda 2.20.2 failed "
        "(failed to fetch https://kedacore.github.io/charts:2.20.2: lookup: no such host)",
        "SLURMGEN_CHART_DIR unset, not cached, pull of oci://quay.io/jetstack/charts/cert-manager:v1.21.1 failed "
        "earlier in this run (failed to fetch oci://quay.io/jetstack/charts/cert-manager:v1.21.1: lookup: no such "
        "host)"]
    assert locator.unreachable_hosts() == ["ghcr.io", "kedacore.github.io", "quay.io"]


def test_cli_preview_offline_says_it_needs_the_registries_or_a_chart_folder(tmp_path, monkeypatch, capsys):
    from slurmgen.cli import main
    from slurmgen.review.preview import charts
    from tests.conftest import MINIMAL_SPEC

    class NoNetwork:
        @staticmethod
        def pull(ref: str, **_kw: Any) -> None:
            raise RuntimeError(f"failed to fetch {ref}: no such host")

    # GIVEN no chart folder, an empty cache, and registries that do not answer
    monkeypatch.setattr(charts, "helm_sdk", lambda: NoNetwork)
    monkeypatch.delenv("SLURMGEN_CHART_DIR", raising=False)
    monkeypatch.setenv("SLURMGEN_CHART_PULL", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    spec = tmp_path / "t.yaml"
    spec.write_text(MINIMAL_SPEC)
    # WHEN previewed THEN it fails, and says once what preview needs, naming the registries it tried
    assert main(["--preview", "--spec", str(spec)]) == 2
    err = capsys.readouterr().err.splitlines()
    hint = [line for line in err if line.startswith("preview: chart registries not reachable")]
    assert len(hint) == 1 and "ghcr.io" in hint[0] and hint[0].endswith(
        "--preview needs them, or a folder of unpacked charts as SLURMGEN_CHART_DIR")


# --- issue 29 item 7: one whole line per chart, with the one fix that applies -------------------

#: what the Helm SDK (helm-python-sdk 0.2.2) raises for an HTTP repository with no network: 222 characters,
#: which a cut at 200 used to end as "lookup nvidia.githu"
OFFLINE_HTTP_ERROR = ('looks like "https://nvidia.github.io/k8s-device-plugin" is not a valid chart repository or '
                      'cannot be reached: Get "https://nvidia.github.io/k8s-device-plugin/index.yaml": dial tcp: '
                      'lookup nvidia.github.io on 10.255.255.53:53: no such host')
NVIDIA = HelmSource(application="t-nvidia-device-plugin", repo_url="https://nvidia.github.io/k8s-device-plugin",
                    chart="nvidia-device-plugin", version="0.17.0", release_name="nvidia-device-plugin",
                    namespace="kube-system", values={})


def offline_sdk(monkeypatch) -> None:
    """The SDK seam of charts.py: every pull fails as it does without a network."""
    from slurmgen.review.preview import charts

    class NoNetwork:
        @staticmethod
        def pull(ref: str, **_kw: Any) -> None:
            raise RuntimeError(OFFLINE_HTTP_ERROR + "\nsecond line")

    monkeypatch.setattr(charts, "helm_sdk", lambda: NoNetwork)


def test_a_long_error_is_cut_between_words_keeping_its_cause():
    from slurmgen.review.preview.charts import clip
    assert len(OFFLINE_HTTP_ERROR) > 200
    # WHEN an error longer than the bound is clipped
    clipped = clip(OFFLINE_HTTP_ERROR + "\nsecond line")
    # THEN its leading context goes, whole, and the cause stays whole, marked by "…"
    assert clipped == ('…: Get "https://nvidia.github.io/k8s-device-plugin/index.yaml": dial tcp: '
                       'lookup nvidia.github.io on 10.255.255.53:53: no such host')
    # AND a short one is whole, a long one with no `: ` is cut at a space, never inside a word
    assert clip("no such host") == "no such host"
    words = " ".join(f"word{i}" for i in range(60))
    assert clip(words, 40) == "word0 word1 word2 word3 word4 word5 …"
    assert clip("x" * 50, 40) == "x" * 50 + " …" and clip("") == ""


def test_an_unreachable_registry_names_it_and_does_not_suggest_pull_again(tmp_path, monkeypatch):
    from slurmgen.review.preview import render_sources
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    offline_sdk(monkeypatch)
    # GIVEN pulls on (SLURMGEN_CHART_PULL=1), no chart folder, and a registry that does not answer
    renders, skipped, [line] = render_sources("t", [NVIDIA], ChartLocator(chart_dir=None, pull=True))
    # THEN the chart's one line quotes the error whole (its cause), says which registry, and the fix:
    # the network or a chart folder; never SLURMGEN_CHART_PULL=1, which is already on
    assert renders == [] and skipped == []
    assert line == (
        "t/t-nvidia-device-plugin: chart nvidia-device-plugin 0.17.0 cannot be proven: no chart source "
        "(SLURMGEN_CHART_DIR unset, not cached, pull of https://nvidia.github.io/k8s-device-plugin "
        'nvidia-device-plugin 0.17.0 failed (…: Get "https://nvidia.github.io/k8s-device-plugin/index.yaml": '
        "dial tcp: lookup nvidia.github.io on 10.255.255.53:53: no such host)); nvidia.github.io is not reachable: "
        "pulling it needs the network, or set SLURMGEN_CHART_DIR to a folder holding it as nvidia-device-plugin/")
    assert "SLURMGEN_CHART_PULL" not in line


@pytest.mark.parametrize(("setting", "why", "fix"), [
    # pulls off, no folder: turning pulls on is the fix
    ("pull off", "SLURMGEN_CHART_DIR unset, not cached, pull off",
     "set SLURMGEN_CHART_PULL=1 to pull it from https://nvidia.github.io/k8s-device-plugin nvidia-device-plugin 0.17.0"),
    # a folder that holds no such chart: put the chart there
    ("empty folder", "not in {dir}, not cached, pull off", "unpack nvidia-device-plugin 0.17.0 as {dir}/nvidia-device-plugin/"),
    # SLURMGEN_CHART_DIR names no folder (a typo): set it right
    ("missing folder", "SLURMGEN_CHART_DIR={dir}/nope is not a folder, not cached, pull off",
     "set SLURMGEN_CHART_DIR to the folder of unpacked charts"),
    # the folder holds another version: replace it
    ("wrong version", "{dir}/nvidia-device-plugin/Chart.yaml is nvidia-device-plugin 0.16.0, the Application pins "
     "nvidia-device-plugin 0.17.0, not cached, pull off", "replace {dir}/nvidia-device-plugin/ with nvidia-device-plugin 0.17.0"),
    # a folder without the chart and a registry that does not answer: the network, or that folder
    ("folder, offline", "not in {dir}, not cached, pull of https://nvidia.github.io/k8s-device-plugin nvidia-device-plugin "
     "0.17.0 failed (…: Get \"https://nvidia.github.io/k8s-device-plugin/index.yaml\": dial tcp: lookup nvidia.github.io "
     "on 10.255.255.53:53: no such host)",
     "nvidia.github.io is not reachable: pulling it needs the network, or unpack nvidia-device-plugin 0.17.0 as "
     "{dir}/nvidia-device-plugin/"),
])
def test_each_missing_chart_source_gets_the_one_fix_that_applies(tmp_path, monkeypatch, setting, why, fix):
    from slurmgen.review.preview import render_sources
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    offline_sdk(monkeypatch)
    folder = tmp_path / "charts"
    folder.mkdir()
    # GIVEN a run's chart settings
    locator = {"pull off": ChartLocator(chart_dir=None, pull=False),
               "empty folder": ChartLocator(chart_dir=folder, pull=False),
               "missing folder": ChartLocator(chart_dir=folder / "nope", pull=False),
               "wrong version": ChartLocator(chart_dir=folder, pull=False),
               "folder, offline": ChartLocator(chart_dir=folder, pull=True)}[setting]
    if setting == "wrong version":
        (folder / "nvidia-device-plugin").mkdir()
        (folder / "nvidia-device-plugin" / "Chart.yaml").write_text("apiVersion: v2\nname: nvidia-device-plugin\n"
                                                                    "version: 0.16.0\n")
    # WHEN the chart has no source
    _renders, _skipped, [line] = render_sources("t", [NVIDIA], locator)
    # THEN its one line says why and gives exactly the fix for those settings
    assert line == ("t/t-nvidia-device-plugin: chart nvidia-device-plugin 0.17.0 cannot be proven: no chart source "
                    f"({why.format(dir=folder)}); {fix.format(dir=folder)}")
    assert line.count("SLURMGEN_CHART_PULL") == (setting == "pull off")


@pytest.mark.parametrize(("pull", "closing"), [
    ("1", "--preview needs the network to pull the charts, or SLURMGEN_CHART_DIR set to a folder of unpacked charts"),
    ("0", "set SLURMGEN_CHART_PULL=1 to pull the charts, or SLURMGEN_CHART_DIR to a folder of unpacked charts"),
])
def test_cli_preview_prints_each_chart_once_and_a_closing_fix_for_its_settings(tmp_path, monkeypatch, capsys,
                                                                               pull, closing):
    from slurmgen.cli import main
    from tests.conftest import MINIMAL_SPEC
    offline_sdk(monkeypatch)
    monkeypatch.delenv("SLURMGEN_CHART_DIR", raising=False)
    monkeypatch.setenv("SLURMGEN_CHART_PULL", pull)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    spec = tmp_path / "t.yaml"
    spec.write_text(MINIMAL_SPEC)
    # WHEN a cluster is previewed with no chart source at all
    assert main(["--preview", "--spec", str(spec)]) == 2
    out, err = capsys.readouterr()
    lines = (out + err).splitlines()
    # THEN each Helm Application is named on exactly one line
    apps = [line.split(": ", 1)[0] for line in lines if "/" in line.split(": ", 1)[0]]
    assert apps and len(apps) == len(set(apps)), lines
    # AND no line suggests the pull setting the run already has
    if pull == "1":
        assert not [line for line in lines if "SLURMGEN_CHART_PULL" in line]
    # AND the last line is the fix for these settings
    assert lines[-1] == f"preview: no chart could be rendered, so nothing was proven: {closing}"


@pytest.mark.parametrize("template, what", [
    ('{{- range until 6000 }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: "x{{ . }}"}\n{{- end }}\n',
     "in 6001 document(s)"),
    # one huge document: Helm's copies of it reach the 2 GiB bound, or (when Go's collector keeps up, as
    # on an idle machine or a busy one, by turns) the render ends and its 39 MB are refused by size
    ('apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: "{{ repeat 40000000 "y" }}"}\n',
     ("does not render within the preview's bounds (2048 MiB of memory, 300 s)",
      "renders 39062 KiB in uncounted document(s), past the preview's bounds (32 MiB")),
    ('{{- range until 100000000 }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: "x{{ . }}"}\n{{- end }}\n',
     "does not render within the preview's bounds (2048 MiB of memory, 300 s)"),
])
def test_a_render_past_the_bounds_is_refused_before_it_is_parsed(tmp_path, template, what):
    # GIVEN a chart whose template repeats without bound (many documents, one huge one, GiBs in Helm itself)
    need_sdk()
    from slurmgen.review.preview.charts import RenderTooLarge, render
    (tmp_path / "templates").mkdir()
    (tmp_path / "Chart.yaml").write_text("apiVersion: v2\nname: r\nversion: 0.1.0\n")
    (tmp_path / "templates" / "many.yaml").write_text(template)
    source = HelmSource(application="t-r", repo_url="example.com/c", chart="r", version="0.1.0",
                        release_name="r", namespace="ns", values={})
    # WHEN it is rendered (in a child bounded in memory and time) THEN one line naming the bounds, nothing parsed
    # here
    with pytest.raises(RenderTooLarge) as err:
        render(source, tmp_path, [])
    assert any(w in str(err.value) for w in ((what,) if isinstance(what, str) else what)), str(err.value)
    assert "the preview's bounds" in str(err.value)
