"""Any catalog type renders end to end; a site's clusters/instance-types.csv is passed down explicitly;
spec validation gives one answer however it is called."""

from __future__ import annotations

import re

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from slurmgen.catalog.catalog import COLUMNS, OPTIONAL_COLUMNS
from slurmgen.cli import main
from slurmgen.run.pipeline import InputError, run
from tests import spec_builder
from tests.conftest import REPO

HEADER = ",".join(c for c in COLUMNS if c not in OPTIONAL_COLUMNS)

# (nodeset name, instance type, extra nodeset keys) of types the hand-written catalog refused
NEW_TYPES: list[tuple[str, str, dict[str, Any]]] = [
    ("hopper", "p5.4xlarge", {"efa": True}),
    ("cpu", "c7i.48xlarge", {"efa": True}),
    ("hpc", "hpc7a.96xlarge", {"efa": True}),
    ("tesla", "g4dn.12xlarge", {"gpusPerPod": 4}),
    ("trainium", "trn2.48xlarge", {"efa": True}),
    ("graviton", "c7g.16xlarge", {}),
]
NEURON_PLUGIN_ELSEWHERE = {"devicePlugins": {"neuronInstalledSeparately": True}}


def spec_text(nodesets: list[tuple[str, str, dict[str, Any]]], *, name: str = "t",
              compute: dict[str, Any] = NEURON_PLUGIN_ELSEWHERE) -> str:
    """A cluster of 2 replicas of each (name, type, extra keys) nodeset, all in one default partition."""
    return spec_builder.spec_text(
        name=name, compute=compute, partitions=[{"name": "all", "nodesets": ["ALL"], "default": True}],
        nodesets=[{"name": n, "instanceType": t, "replicas": 2, **extra} for n, t, extra in nodesets])


def write_spec(folder: Path, text: str, name: str = "t.yaml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def new_types_cluster(tmp_path_factory: pytest.TempPathFactory):
    """One cluster with a nodeset on each representative new type, through the whole pipeline."""
    path = write_spec(tmp_path_factory.mktemp("clusters"), spec_text(NEW_TYPES))
    [cluster] = run([path]).clusters
    return cluster.files


def nodeset(files: dict, name: str) -> dict:
    return files[f"slurm/nodeset-slurm-worker-{name}.yaml"]


def test_new_types_render_and_verify_end_to_end(new_types_cluster: dict) -> None:
    # given the cluster above, rendered and verified (schemas, placement) without error
    files = new_types_cluster
    # then each NodeSet asks for its type's devices, and its NodePool allows exactly that type and arch
    limits = {n: nodeset(files, n)["spec"]["slurmd"]["resources"].get("limits", {}) for n, _, _ in NEW_TYPES}
    assert limits == {
        "hopper": {"nvidia.com/gpu": "1", "vpc.amazonaws.com/efa": "1"},
        "cpu": {"vpc.amazonaws.com/efa": "1"},
        "hpc": {"vpc.amazonaws.com/efa": "2"},
        "tesla": {"nvidia.com/gpu": "4"},
        "trainium": {"aws.amazon.com/neuron": "16", "vpc.amazonaws.com/efa": "16"},
        "graviton": {},
    }
    pool = files["compute/nodepool-t-graviton.yaml"]["spec"]["template"]["spec"]["requirements"]
    assert {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]} in pool
    assert {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["c7g.16xlarge"]} in pool


def test_gpu_model_names_reach_slurm_as_karpenters_gpu_name(new_types_cluster: dict) -> None:
    # given the rendered cluster, then Slurm's Gres uses Karpenter's gpu-name label (h100, t4), every
    # node offers all its GPUs, Neuron nodes an untyped gpu count (gpu/nrt types them), CPU nodes no Gres
    conf = {n: nodeset(new_types_cluster, n)["spec"]["extraConf"] for n, _, _ in NEW_TYPES}
    assert conf["hopper"].endswith("Gres=gpu:h100:1")
    assert "CPUs=" not in conf["tesla"] and conf["tesla"].endswith("Gres=gpu:t4:4")
    assert not any("Gres" in conf[n] for n in ("cpu", "hpc", "graviton"))
    assert re.search(r"(^| )Gres=gpu:\d+( |$)", conf["trainium"]), conf["trainium"]


def test_site_csv_beside_the_specs_adds_a_type(tmp_path: Path) -> None:
    # given a folder with a spec on a type Karpenter's page does not have, and the site csv describing it
    folder = tmp_path / "clusters"
    spec = write_spec(folder, spec_text([("own", "zz1.24xlarge", {})]))
    (folder / "instance-types.csv").write_text(
        f"# our preview hardware\n{HEADER}\nzz1.24xlarge,96,393216,amd64,737,nvidia.com/gpu,4,l40s,46068,0,0,site\n",
        encoding="utf-8")
    # when the pipeline runs on the spec alone (it finds the csv itself)
    result = run([spec])
    # then the type renders with the site's figures, and the result carries the merged catalog
    [cluster] = result.clusters
    assert nodeset(cluster.files, "own")["spec"]["extraConf"].endswith("Gres=gpu:l40s:4")
    assert result.catalog is not None and result.catalog["zz1.24xlarge"].source == "site"


def test_unknown_type_says_where_to_add_it_and_a_bad_site_csv_names_its_line(tmp_path: Path) -> None:
    # given a spec on an unknown type, first without a site csv, then with a malformed one
    folder = tmp_path / "clusters"
    spec = write_spec(folder, spec_text([("own", "zz1.24xlarge", {})]))
    with pytest.raises(InputError) as err:
        run([spec])
    assert err.value.lines == [
        f"{spec}:10: nodesets[own].instanceType: unknown instance type 'zz1.24xlarge': not in the catalog "
        "(Karpenter v1.14.1 reference); add it to clusters/instance-types.csv; "
        "did you mean z1d.2xlarge, z1d.12xlarge, vt1.24xlarge?"]
    (folder / "instance-types.csv").write_text(f"{HEADER}\nzz1.24xlarge,96,lots,amd64,737,,0,,0,0,0,site\n",
                                               encoding="utf-8")
    # when run, then the csv's problem is one line naming file:line, and nothing else is attempted
    with pytest.raises(InputError) as err:
        run([spec])
    assert err.value.lines == [f"{folder / 'instance-types.csv'}:2: memory_mib must be a positive integer, got 'lots'"]


def test_specs_from_folders_with_different_site_csvs_are_refused(tmp_path: Path) -> None:
    # given two spec folders, each with its own instance-types.csv
    paths = []
    for name in ("a", "b"):
        folder = tmp_path / name
        paths.append(write_spec(folder, spec_text([("cpu", "m7i.xlarge", {})], name=name), f"{name}.yaml"))
        (folder / "instance-types.csv").write_text(f"{HEADER}\n", encoding="utf-8")
    # when rendered together, then it is refused: one type could mean two things in one run
    with pytest.raises(InputError, match="different instance-types.csv; render them in separate runs"):
        run(paths)


def test_cli_exits_2_on_a_bad_site_csv_and_leaves_the_output_alone(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    # given a spec whose folder holds a site csv with a wrong header, and an output folder
    folder = tmp_path / "clusters"
    spec = write_spec(folder, spec_text([("cpu", "m7i.xlarge", {})]))
    (folder / "instance-types.csv").write_text("name,cpus\n", encoding="utf-8")
    out = tmp_path / "dist"
    # when the CLI runs, then exit 2, one line, no traceback, nothing written
    assert main(["--spec", str(spec), "--out", str(out)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"{folder / 'instance-types.csv'}:1: header must name the columns")
    assert not out.exists()


def test_parse_text_checks_instance_types_without_importing_the_planner() -> None:
    # given a fresh interpreter that imports only the spec layer (nothing registers rules any more)
    code = textwrap.dedent("""\
        import sys
        from slurmgen.spec import SpecError, parse_text
        from tests.spec_builder import spec_text
        try:
            parse_text("x.yaml", spec_text(nodeset={"instanceType": "nope.xlarge"}))
        except SpecError as err:
            print("\\n".join(map(str, err.problems)))
        print("plan imported:", "slurmgen.plan.nodesets" in sys.modules)
        """)
    # when parse_text sees an unknown instance type
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    # then it is refused, and slurmgen.plan.nodesets was never imported
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("x.yaml:10: nodesets[gpu].instanceType: unknown instance type 'nope.xlarge': not in the catalog")
    assert lines[-1] == "plan imported: False"


def test_parse_text_uses_the_catalog_it_is_given(tmp_path: Path) -> None:
    # given a site catalog with one extra type, and a spec on that type
    from slurmgen.catalog.catalog import load_catalog
    from slurmgen.spec import SpecError, parse_text

    csv_path = tmp_path / "instance-types.csv"
    csv_path.write_text(f"{HEADER}\nzz2.xlarge,4,16384,amd64,58,,0,,0,0,0,site\n", encoding="utf-8")
    text = spec_builder.spec_text(nodeset={"instanceType": "zz2.xlarge"})
    # when parsed with and without that catalog, then only the default refuses it
    assert parse_text("x.yaml", text, catalog=load_catalog(csv_path)).nodesets[0].instance_type == "zz2.xlarge"
    with pytest.raises(SpecError, match="unknown instance type 'zz2.xlarge'"):
        parse_text("x.yaml", text)


def test_amd_and_habana_types_render_once_their_plugins_are_declared(tmp_path: Path) -> None:
    # given AMD (g4ad) and Habana (dl1, with EFA) nodesets, their device plugins declared as installed
    text = spec_text([("radeon", "g4ad.16xlarge", {}), ("gaudi", "dl1.24xlarge", {"efa": True})],
                     compute={"devicePlugins": {"installedSeparately": ["amd.com/gpu", "habana.ai/gaudi"]}})
    [cluster] = run([write_spec(tmp_path, text)]).clusters
    files = cluster.files
    # then each pool is tainted with its device resource, which slurmd tolerates, and there is no Gres
    for name, resource in (("radeon", "amd.com/gpu"), ("gaudi", "habana.ai/gaudi")):
        pool = files[f"compute/nodepool-t-{name}.yaml"]["spec"]["template"]["spec"]
        assert pool["taints"] == [{"key": resource, "effect": "NoSchedule"}]
        pod = nodeset(files, name)["spec"]["template"]["spec"]
        assert {"key": resource, "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
        assert "Gres" not in nodeset(files, name)["spec"]["extraConf"]
    # and the EFA device plugin tolerates every compute pool's taint of the cluster, Habana's too (dl1 has EFA)
    efa_app = files["apps/application-t-aws-efa-k8s-device-plugin.yaml"]
    keys = [t["key"] for t in efa_app["spec"]["source"]["helm"]["valuesObject"]["tolerations"]]
    assert keys == ["aws.amazon.com/neuron", "nvidia.com/gpu", "slurmgen.dev/compute", "amd.com/gpu",
                    "habana.ai/gaudi"]
