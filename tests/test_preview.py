"""`--preview`: every Helm Application rendered offline at its pinned version, and the proofs on it.

The deep tests render the shipped examples against ../shared/chart-sources (research copies of the
pinned charts); the others feed the proofs hand-made renders and need neither ../shared nor the SDK.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from typing import Any

import pytest

from slurmgen.preview import preview_cluster
from slurmgen.preview.charts import ChartLocator, ChartRender, HelmSource
from slurmgen.preview.proofs import image_problems, placement_problems, project_problems, values_problems
from tests.conftest import REQUIRE_SHARED, SHARED, need_shared

CHART_SOURCES = SHARED / "chart-sources"


def need_sdk() -> None:
    """The Helm SDK (requirements-preview.txt, installed by `make test`); required where ../shared is."""
    if importlib.util.find_spec("helm_python") is None:
        reason = "needs helm-python-sdk (make preview-install) to render charts"
        if REQUIRE_SHARED:
            pytest.fail(f"{reason}; SLURMGEN_REQUIRE_SHARED=1 forbids skipping it")
        pytest.skip(reason)


@pytest.fixture(scope="module")
def locator():
    """The pinned chart sources in ../shared, never a pull; renders are shared by the tests of this module."""
    need_shared(CHART_SOURCES)
    need_sdk()
    found = ChartLocator(chart_dir=CHART_SOURCES, pull=False)
    yield found
    found.close()


@pytest.fixture(scope="module")
def previews(rendered, locator):
    return {name: preview_cluster(cluster, locator) for name, cluster in rendered.items()}


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


def test_every_helm_application_is_previewed_or_says_why(rendered, previews):
    for name, cluster in rendered.items():
        apps = {o["metadata"]["name"] for rel, o in cluster.files.items()
                if rel.startswith("apps/") and o["kind"] == "Application" and "chart" in o["spec"]["source"]}
        preview = previews[name]
        done = {r.source.application for r in preview.renders}
        skipped = {line.split(": ", 1)[0].split("/", 1)[1] for line in preview.not_previewed}
        # THEN each Helm Application is exactly one of previewed / not previewed
        assert done | skipped == apps and not done & skipped, name
    # AND the charts with no usable source in ../shared are named, with the reason, not failed
    training = "\n".join(previews["training"].not_previewed)
    assert "training-neuron-device-plugin: not previewed: no chart source for neuron-helm-chart 1.9.0" in training
    assert "kube-prometheus-stack" in training and "lacks its dependencies" in training


def test_chart_source_differences_are_handled(previews):
    example = {r.source.chart: r for r in previews["example"].renders}
    # GIVEN cert-manager's source carries the placeholder version v0.0.0
    # THEN it renders as the pinned release would: images tagged with the pinned version
    from slurmgen.rendered import images
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
    from slurmgen.preview.diff import chart_section
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


def test_cli_preview_reports_and_exits_0_on_a_clean_cluster(monkeypatch, capsys):
    need_shared(CHART_SOURCES)
    need_sdk()
    from slurmgen.cli import main
    monkeypatch.setenv("SLURMGEN_CHART_DIR", str(CHART_SOURCES))
    monkeypatch.setenv("SLURMGEN_CHART_PULL", "0")
    # WHEN one cluster is previewed from the chart folder
    assert main(["--preview", "--cluster", "dev"]) == 0
    out, err = capsys.readouterr()
    # THEN each chart is one line and the closing line counts them
    assert "dev/dev-slurm-operator: previewed slurm-operator 1.2.1:" in out
    assert err.startswith("preview: ") and " 0 problem(s)" in err


def test_cli_preview_of_an_unknown_cluster_is_one_line(capsys):
    from slurmgen.cli import main
    assert main(["--preview", "--cluster", "nope"]) == 2
    assert capsys.readouterr().err == "--cluster: no cluster named 'nope'; rendered: dev, example, prod, training\n"


def test_synth_never_loads_the_helm_sdk(tmp_path):
    import subprocess
    import sys

    from tests.conftest import REPO
    # GIVEN a full render (what `make synth` does, into a scratch folder)
    code = ("import sys; from slurmgen.cli import main; rc = main(['--out', sys.argv[1]]); "
            "sys.exit(rc or ('helm_python' in sys.modules and 7))")
    # THEN the Helm SDK's 80 MB library was never imported
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "out")], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_rendered_manifests_split_and_load_as_helm_does():
    from slurmgen.preview.charts import _documents
    # GIVEN a template whose separator carries a comment, a bare `=` value and an empty document
    manifests = {"c/templates/a.yaml": "kind: A\nmetadata: {name: a}\ndata: {op: =}\n---# next\nkind: B\n---\n",
                 "c/templates/NOTES.txt": "not: yaml: at all"}
    # THEN two objects, the `=` a string, NOTES.txt ignored
    assert list(_documents(manifests)) == [{"kind": "A", "metadata": {"name": "a"}, "data": {"op": "="}}, {"kind": "B"}]


def test_charts_render_at_the_clusters_kubernetes_version(tmp_path, rendered):
    need_sdk()
    from slurmgen.preview import kube_version
    from slurmgen.preview.charts import render
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
    assert main(["--preview", "--cluster", "dev"]) == 2
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
    # THEN every chart is "not previewed", and the run fails rather than passing on nothing
    assert main(["--preview", "--cluster", "dev"]) == 2
    out, err = capsys.readouterr()
    assert "dev/dev-slurm-operator: not previewed: no chart source for slurm-operator 1.2.1" in out
    assert err.rstrip().endswith("nothing was proven: set SLURMGEN_CHART_DIR to a folder of unpacked charts or let "
                                 "--preview pull them (SLURMGEN_CHART_PULL)")
