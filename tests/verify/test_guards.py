"""Drift and data-loss guards, as a user meets them on the command line."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from slurmgen import cli
from slurmgen.cli import main
from slurmgen.verify.guards import destructive_changes
from slurmgen.write.output import read_tree
from tests.conftest import SPECS
from tests.spec_builder import variant

EXAMPLE = SPECS / "example.yaml"


@pytest.fixture
def rendered_example(tmp_path):
    """A fresh output folder holding the example's current render."""
    out = tmp_path / "dist"
    assert main(["--spec", str(EXAMPLE), "--out", str(out)]) == 0
    return out


def edited(tmp_path, **changes: Any):
    """The example spec with `changes` merged in (tests/spec_builder.variant), written beside the test."""
    spec = tmp_path / "example.yaml"
    spec.write_text(variant(EXAMPLE.read_text(), **changes))
    return spec


def test_removing_fsx_is_refused_until_allowed(tmp_path, rendered_example, capsys):
    # GIVEN a spec that drops FSx (its PV and PVC would be pruned)
    spec = edited(tmp_path, storage={"fsx": {"enabled": False}})
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
    spec = edited(tmp_path, slurm={"clusterName": "renamed"})
    assert main(["--spec", str(spec), "--out", str(rendered_example)]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line == ("example: refusing to change spec.clusterName of Controller slurm/slurm ('slurm-on-eks' -> 'renamed'): "
                    "it forces a re-creation or the operator refuses it; pass --allow-destroy example:Controller/slurm if you mean it")
    # --check reports the same refusal (CI fails before anything merges)
    assert main(["--spec", str(spec), "--out", str(rendered_example), "--check"]) == 2


def test_harmless_changes_pass(tmp_path, rendered_example):
    spec = edited(tmp_path, nodeset={"replicas": 6})  # slinky, 4 before
    assert main(["--spec", str(spec), "--out", str(rendered_example)]) == 0


@pytest.mark.parametrize("kind,path,old,new", [
    ("NodeSet", ("spec", "controllerRef"), {"name": "slurm"}, {"name": "other"}),
    ("PersistentVolumeClaim", ("spec", "storageClassName"), "", "gp3"),
    ("StorageClass", ("parameters",), {"a": "1"}, {"a": "2"}),
    ("MariaDB", ("spec", "storage", "storageClassName"), "gp3", "io2"),
    ("PersistentVolumeClaim", ("spec", "volumeMode"), "Filesystem", "Block"),
    ("Controller", ("spec", "jwtHs256KeyRef"), {"name": "a", "key": "k"}, {"name": "b", "key": "k"}),
    ("Accounting", ("spec", "jwtHs256KeyRef"), {"name": "a", "key": "k"}, {"name": "b", "key": "k"}),
])
def test_immutable_field_table(kind, path, old, new):
    [change] = destructive_changes("c", [_sized(kind, path, old)], [_sized(kind, path, new)])
    assert change.key == f"{kind}/x" and ".".join(path) in change.what
    assert destructive_changes("c", [_sized(kind, path, old)], [_sized(kind, path, old)]) == []


def test_a_cluster_folder_without_spec_is_reported_not_deleted(tmp_path, capsys, dist_tree, monkeypatch):
    # GIVEN a repository whose clusters/ holds the examples, their tree, and an extra, orphaned folder
    shutil.copytree(SPECS, tmp_path / "clusters")
    monkeypatch.setattr(cli, "REPO", tmp_path)
    out = tmp_path / "dist"
    shutil.copytree(dist_tree, out)
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


def _sized(kind: str, path: tuple[str, ...], value: object) -> dict:
    """A minimal object of `kind` whose only field is `value` at `path`."""
    body: dict = {}
    node = body
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    return {"apiVersion": "v1", "kind": kind, "metadata": {"name": "x", "namespace": "ns"}, **body}


@pytest.mark.parametrize("kind,path", [
    ("PersistentVolumeClaim", ("spec", "resources", "requests", "storage")),
    ("PersistentVolume", ("spec", "capacity", "storage")),
    ("MariaDB", ("spec", "storage", "size")),
])
def test_shrinking_a_volume_is_refused_and_growing_it_is_not(kind, path):
    # GIVEN a volume of 1200Gi, WHEN it shrinks to 1Ti (1024Gi), THEN refused; growing to 2400Gi passes
    [change] = destructive_changes("c", [_sized(kind, path, "1200Gi")], [_sized(kind, path, "1Ti")])
    assert change.what.startswith(f"shrink {'.'.join(path)} of {kind} ns/x ('1200Gi' -> '1Ti')")
    assert destructive_changes("c", [_sized(kind, path, "1200Gi")], [_sized(kind, path, "2400Gi")]) == []
    assert destructive_changes("c", [_sized(kind, path, "1024Gi")], [_sized(kind, path, "1Ti")]) == []


def test_any_change_of_the_controller_volume_is_refused():
    # The operator copies persistence into the StatefulSet's volumeClaimTemplates, which Kubernetes never updates.
    path = ("spec", "persistence", "resources")
    [change] = destructive_changes("c", [_sized("Controller", path, "4Gi")], [_sized("Controller", path, "2Gi")])
    assert change.key == "Controller/x" and "spec.persistence.resources" in change.what


def test_shrinking_the_example_fsx_is_refused_on_the_command_line(tmp_path, rendered_example, capsys):
    spec = edited(tmp_path, storage={"fsx": {"sizeGiB": 1200}})  # 2400 before
    before = read_tree(rendered_example)
    assert main(["--spec", str(spec), "--out", str(rendered_example)]) == 2
    err = capsys.readouterr().err.splitlines()
    # the spec line, not an --allow-destroy offer: no approval makes FSx or Kubernetes shrink a volume
    assert err == [f"{spec}:101: storage.fsx.sizeGiB: 1200 GiB is less than the 2400 GiB of the claim slurm/fsx: an FSx "
                   "for Lustre file system cannot shrink and Kubernetes refuses a smaller claim; set it back to 2400"]
    assert read_tree(rendered_example) == before


def _change(cluster: str, kind: str = "PersistentVolumeClaim", name: str = "fsx"):
    from slurmgen.verify.guards import Change
    return Change(cluster, kind, "slurm", name, "remove it")


def test_approvals_are_scoped_to_one_cluster():
    from slurmgen.verify.guards import unapproved
    changes = [_change("a"), _change("b")]
    # GIVEN the same change in two clusters, WHEN one is approved by CLUSTER:KIND/NAME, THEN the other stays refused
    assert unapproved(changes, ["a:PersistentVolumeClaim/fsx"]) == [_change("b")]
    assert unapproved(changes, ["a:PersistentVolumeClaim/fsx", "b:PersistentVolumeClaim/fsx"]) == []
    # AND the old KIND/NAME form approves a change only one cluster has
    assert unapproved([_change("a")], ["PersistentVolumeClaim/fsx"]) == []


@pytest.mark.parametrize("approval,expected", [
    ("PersistentVolumeClaim/fsx", "--allow-destroy PersistentVolumeClaim/fsx: ambiguous, clusters a, b all have this "
                                  "change; name each one: --allow-destroy a:PersistentVolumeClaim/fsx, "
                                  "--allow-destroy b:PersistentVolumeClaim/fsx"),
    ("a:MariaDB/mariadb", "--allow-destroy a:MariaDB/mariadb: matches no destructive change of this run; remove it "
                          "(or check the cluster, kind and name)"),
    ("c:PersistentVolumeClaim/fsx", "--allow-destroy c:PersistentVolumeClaim/fsx: matches no destructive change of "
                                    "this run; remove it (or check the cluster, kind and name)"),
    ("fsx", "--allow-destroy fsx: expected CLUSTER:KIND/NAME (e.g. example:PersistentVolumeClaim/fsx)"),
])
def test_an_ambiguous_malformed_or_unmatched_approval_is_an_error(approval, expected):
    from slurmgen.verify.guards import BadApproval, unapproved
    with pytest.raises(BadApproval) as err:
        unapproved([_change("a"), _change("b")], [approval])
    # THEN the approval's line first, then every change still refused (all problems at once)
    assert err.value.lines[0] == expected
    refused = [str(_change("b"))] if approval.startswith("a:P") else [str(_change("a")), str(_change("b"))]
    assert err.value.lines[1:] == refused


def test_an_unmatched_approval_fails_the_command_line(tmp_path, rendered_example, capsys):
    assert main(["--spec", str(EXAMPLE), "--out", str(rendered_example), "--allow-destroy", "MariaDB/mariadb"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "--allow-destroy MariaDB/mariadb: matches no destructive change of this run; remove it "
        "(or check the cluster, kind and name)"]


def test_the_summary_flags_a_shrink_with_the_scoped_approval():
    from slurmgen.review.summary import _attention
    path = ("spec", "resources", "requests", "storage")
    old = {"storage/pvc.yaml": _sized("PersistentVolumeClaim", path, "2400Gi")}
    new = {"storage/pvc.yaml": _sized("PersistentVolumeClaim", path, "1200Gi")}
    notes = [n for n in _attention("c", old, new) if n.startswith("shrinks:")]
    assert len(notes) == 1 and notes[0].endswith(
        "spec.resources.requests.storage '2400Gi' -> '1200Gi'; synth needs --allow-destroy c:PersistentVolumeClaim/x")
    assert [n for n in _attention("c", new, old) if n.startswith("shrinks:")] == []
