"""The parts of the rehearsal (rehearse/) that need no Go and no API server: its CRD files, how it
reads a tree as Argo CD would, its cache key. The rehearsal itself runs in tests/rehearse/."""

from __future__ import annotations

import textwrap
from pathlib import Path

from rehearse import build, crds
from rehearse.tree import read_cluster
from slurmgen.maintain.crd_schemas import verify_dir
from slurmgen.verify.schemas.pins import load_sources
from tests.conftest import REPO


def test_the_rehearsal_crds_are_the_pinned_upstream_files_and_nothing_else():
    # GIVEN the CRD files the rehearsal installs; WHEN checked against crd_sources.json
    # THEN every pinned file is there with its sha256 (a pin moved without them fails here, not in CI's rehearsal)
    assert verify_dir(crds.CRD_DIR) == []
    on_disk = {p.relative_to(crds.CRD_DIR).as_posix() for p in crds.CRD_DIR.rglob("*") if p.is_file()}
    assert on_disk == {s.path for s in load_sources()}
    # AND each loads as a CRD with its group and kind
    loaded = crds.load()
    assert {(c.body["spec"]["group"], c.body["spec"]["names"]["kind"]) for c in loaded} >= {
        ("karpenter.sh", "NodePool"), ("slinky.slurm.net", "NodeSet"), ("argoproj.io", "Application"),
        ("argoproj.io", "AppProject")}
    # AND a tree gets the CRDs of its own kinds, and Argo CD's (its bootstrap), no more
    assert sorted(c.group_kind for c in crds.needed(loaded, {("karpenter.sh", "NodePool"), ("", "ConfigMap")})) == [
        ("argoproj.io", "AppProject"), ("argoproj.io", "Application"), ("karpenter.sh", "NodePool")]


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def test_each_object_takes_its_applications_namespace_and_apply_mode(tmp_path):
    # GIVEN a tree whose root syncs apps/ and whose child Application syncs slurm/ into ns-x with
    # ServerSideApply=true; one object there opts out by its sync-options annotation
    _write(tmp_path, "c/bootstrap/root.yaml", """\
        apiVersion: argoproj.io/v1alpha1
        kind: Application
        metadata: {name: c-root, namespace: argocd}
        spec:
          destination: {namespace: argocd}
          source: {path: dist/c/apps}
        """)
    _write(tmp_path, "c/apps/slurm.yaml", """\
        apiVersion: argoproj.io/v1alpha1
        kind: Application
        metadata: {name: c-slurm, namespace: argocd}
        spec:
          destination: {namespace: ns-x}
          source: {path: dist/c/slurm}
          syncPolicy: {syncOptions: [CreateNamespace=true, ServerSideApply=true]}
        """)
    _write(tmp_path, "c/slurm/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    _write(tmp_path, "c/slurm/job.yaml", """\
        apiVersion: batch/v1
        kind: Job
        metadata:
          name: b
          annotations: {argocd.argoproj.io/sync-options: "Prune=false,ServerSideApply=false,Validate=false"}
        """)
    # WHEN the rehearsal reads it
    objects = {o.name: o for o in read_cluster(tmp_path / "c")}
    # THEN slurm/ objects belong to c-slurm, default to ns-x, and apply server-side unless opted out
    assert (objects["a"].owner, objects["a"].default_namespace, objects["a"].server_side) == ("c-slurm", "ns-x", True)
    assert (objects["b"].owner, objects["b"].server_side) == ("c-slurm", False)
    # AND fields are checked strictly (Argo CD's default) unless the object says Validate=false
    assert (objects["a"].validate, objects["b"].validate) == (True, False)
    # AND the root syncs apps/ (client-side), while bootstrap/ is applied by hand with kubectl
    assert (objects["c-slurm"].owner, objects["c-slurm"].server_side) == ("c-root", False)
    assert objects["c-root"].owner == "bootstrap (kubectl apply)"


def test_the_build_cache_is_outside_the_repository_and_keyed_by_go_and_the_module(tmp_path, monkeypatch):
    # GIVEN XDG_CACHE_HOME; THEN binaries go under it, never into the checkout
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert build.cache_root() == tmp_path / "slurmgen" / "rehearse"
    assert REPO not in build.cache_root().parents
    # AND another Go version gives another key (the module's files are the same)
    assert build.module_key("kubernetes", "go1.26.8") != build.module_key("kubernetes", "go1.26.9")
    assert build.module_key("kubernetes", "go1.26.8") == build.module_key("kubernetes", "go1.26.8")
    # AND each upstream product's module has a key of its own: a new Argo CD pin rebuilds no kube-apiserver
    keys = {module: build.module_key(module, "go1.26.8") for module in ("kubernetes", "kwok", "argocd", "helm")}
    assert len(set(keys.values())) == 4


def test_each_program_is_built_from_the_module_that_pins_its_upstream_at_the_version_docs_name():
    import re

    # GIVEN the programs the rehearsal builds; THEN each module folder has a go.mod and go.sum
    modules = {p.module for p in build.PROGRAMS.values()}
    assert modules == {"kubernetes", "kwok", "argocd", "helm"}
    for module in modules:
        assert (build.UPSTREAM / module / "go.sum").is_file(), module
    # AND each pins the upstream release the build stamps and docs/rehearse.md names
    pins = {"argocd": ("github.com/argoproj/argo-cd/v3", build.ARGOCD_VERSION),
            "helm": ("helm.sh/helm/v3", build.HELM_VERSION), "kwok": ("sigs.k8s.io/kwok", "v0.7.0"),
            "kubernetes": ("k8s.io/kubernetes", build.KUBERNETES_VERSION)}
    docs = (REPO / "docs" / "rehearse.md").read_text()
    for module, (path, version) in pins.items():
        gomod = (build.UPSTREAM / module / "go.mod").read_text()
        assert re.search(rf"^(\s+|require ){re.escape(path)} {re.escape(version)}( //.*)?$", gomod, re.M), module
        assert f"{path}" in docs and version in docs, (module, version)
    # AND helm's Kubernetes stamp is the minor of the client-go it links, as helm's Makefile sets it
    client_go = re.search(r"^\s+k8s\.io/client-go v0\.(\d+)\.", (build.UPSTREAM / "helm" / "go.mod").read_text(), re.M)
    assert client_go is not None and client_go.group(1) == build.HELM_CLIENT_GO_MINOR
    # AND a program named by package path is a `tool` of its module (go mod tidy keeps what it needs)
    for name, program in build.PROGRAMS.items():
        if not program.package.startswith("./"):
            assert program.package in (build.UPSTREAM / program.module / "go.mod").read_text(), name


def test_the_pinned_kubernetes_is_one_patch_everywhere_and_the_minor_the_specs_target():
    import re

    from tests.conftest import EXAMPLES

    # GIVEN the rehearsal's go.mod
    gomod = (build.UPSTREAM / "kubernetes" / "go.mod").read_text()
    kubernetes = re.search(r"^\s+k8s\.io/kubernetes (v1\.(\d+)\.(\d+))$", gomod, re.M)
    assert kubernetes is not None
    _, minor, patch = kubernetes.groups()
    # THEN every staging module is replaced by its release of the same patch (v0.<minor>.<patch>)
    replaced = re.findall(r"^\s+(k8s\.io/[\w-]+) => (k8s\.io/[\w-]+) (v\S+)$", gomod, re.M)
    assert len(replaced) >= 20
    assert {(a == b, v) for a, b, v in replaced} == {(True, f"v0.{minor}.{patch}")}
    # AND the version stamp the build sets is that release
    assert build.KUBERNETES_VERSION == kubernetes.group(1)
    # AND it is the minor the tests' specs target (aws.kubernetesVersion)
    targeted = {re.search(r'kubernetesVersion: "?([\d.]+)', p.read_text()).group(1) for p in EXAMPLES}
    assert targeted == {f"1.{minor}"}
