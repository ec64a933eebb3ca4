"""Drift and data-loss guards, as a user meets them on the command line."""

from __future__ import annotations

import shutil

import pytest

from slurmgen.cli import main
from slurmgen.guards import destructive_changes
from slurmgen.output import read_tree
from tests.conftest import REPO

EXAMPLE = REPO / "clusters" / "example.yaml"


@pytest.fixture
def rendered_example(tmp_path):
    """A fresh output folder holding the example's current render."""
    out = tmp_path / "dist"
    assert main(["--spec", str(EXAMPLE), "--out", str(out)]) == 0
    return out


def edited(tmp_path, old: str, new: str):
    spec = tmp_path / "example.yaml"
    text = EXAMPLE.read_text()
    assert old in text
    spec.write_text(text.replace(old, new))
    return spec


def test_removing_fsx_is_refused_until_allowed(tmp_path, rendered_example, capsys):
    # GIVEN a spec that drops FSx (its PV and PVC would be pruned)
    spec = edited(tmp_path, "    enabled: true\n    mode: static", "    enabled: false\n    mode: static")
    before = read_tree(rendered_example)
    # WHEN synthesized without approval
    assert main(["--spec", str(spec), "--out", str(rendered_example)]) == 2
    err = capsys.readouterr().err.splitlines()
    # THEN each stateful object is named with the flag that approves it, and nothing is written
    assert "example: refusing to remove PersistentVolumeClaim slurm/fsx, which holds state (its data would go with it); " \
           "pass --allow-destroy example:PersistentVolumeClaim/fsx if you mean it" in err
    assert any("PersistentVolume example-fsx" in line for line in err)
    assert read_tree(rendered_example) == before
    # AND with every approval it goes through
    assert main(["--spec", str(spec), "--out", str(rendered_example), "--allow-destroy", "PersistentVolumeClaim/fsx",
                 "--allow-destroy", "PersistentVolume/example-fsx"]) == 0
    assert not (rendered_example / "example" / "storage").exists()


def test_changing_an_immutable_controller_field_is_refused(tmp_path, rendered_example, capsys):
    spec = edited(tmp_path, "clusterName: slurm-on-eks", "clusterName: renamed")
    assert main(["--spec", str(spec), "--out", str(rendered_example)]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line == ("example: refusing to change spec.clusterName of Controller slurm/slurm ('slurm-on-eks' -> 'renamed'): "
                    "it forces a re-creation or the operator refuses it; pass --allow-destroy example:Controller/slurm if you mean it")
    # --check reports the same refusal (CI fails before anything merges)
    assert main(["--spec", str(spec), "--out", str(rendered_example), "--check"]) == 2


def test_harmless_changes_pass(tmp_path, rendered_example):
    spec = edited(tmp_path, "    replicas: 4\n", "    replicas: 6\n")
    assert main(["--spec", str(spec), "--out", str(rendered_example)]) == 0


@pytest.mark.parametrize("kind,path,old,new", [
    ("NodeSet", ("spec", "controllerRef"), {"name": "slurm"}, {"name": "other"}),
    ("PersistentVolumeClaim", ("spec", "storageClassName"), "", "gp3"),
    ("StorageClass", ("parameters",), {"a": "1"}, {"a": "2"}),
    ("MariaDB", ("spec", "storage", "storageClassName"), "gp3", "io2"),
])
def test_immutable_field_table(kind, path, old, new):
    def obj(value):
        body: dict = {}
        node = body
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value
        return {"apiVersion": "v1", "kind": kind, "metadata": {"name": "x", "namespace": "ns"}, **body}
    [change] = destructive_changes("c", [obj(old)], [obj(new)])
    assert change.key == f"{kind}/x" and ".".join(path) in change.what
    assert destructive_changes("c", [obj(old)], [obj(old)]) == []


def test_a_cluster_folder_without_spec_is_reported_not_deleted(tmp_path, capsys):
    # GIVEN the repo's clusters and an extra, orphaned folder in the output
    out = tmp_path / "dist"
    shutil.copytree(REPO / "dist", out)
    (out / "gone" / "slurm").mkdir(parents=True)
    (out / "gone" / "slurm" / "x.yaml").write_text("kind: ConfigMap\n")
    # THEN --check fails on it, and a full synth warns but keeps it
    assert main(["--out", str(out), "--check"]) == 1
    assert f"orphaned: {out / 'gone'}" in capsys.readouterr().out
    assert main(["--out", str(out)]) == 0
    assert "(no clusters/gone.yaml); delete the folder by hand" in capsys.readouterr().err
    assert (out / "gone" / "slurm" / "x.yaml").exists()


def test_missing_crd_schemas_fail_plainly(tmp_path, capsys):
    assert main(["--spec", str(EXAMPLE), "--out", str(tmp_path), "--crd-dir", str(tmp_path / "none")]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line == f"cannot validate the rendered objects: CRD directory {tmp_path / 'none'} does not exist"
    assert main(["--spec", str(EXAMPLE), "--out", str(tmp_path), "--check", "--crd-dir", str(tmp_path / "none")]) == 2
