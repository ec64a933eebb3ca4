"""Cluster-scoped names shared by two clusters on one destination: an error naming both specs."""

from __future__ import annotations

from slurmgen.cli import main
from slurmgen.write.output import read_tree
from slurmgen.run.pipeline import run
from tests.spec_builder import nodeset_named, spec_text


def _spec(tmp_path, cluster: str, nodeset: str, server: str | None = None, eks: str = "eks"):
    text = spec_text(name=cluster, gitops={"destinationServer": server} if server else {},
                     aws={"eksClusterName": eks}, **nodeset_named(nodeset))
    path = tmp_path / f"{cluster}.yaml"
    path.write_text(text)
    return path


def test_two_clusters_rendering_the_same_nodepool_name_are_refused(tmp_path, capsys):
    # GIVEN `foo` with nodeset `slurm-spot` and `foo-slurm` with nodeset `spot`: both NodePools are `foo-slurm-spot`,
    # both for `kubernetes.default.svc` (two EKS clusters: one spec per cluster holds, the names are compared
    # as Argo CD names the destination)
    a, b = _spec(tmp_path, "foo", "slurm-spot"), _spec(tmp_path, "foo-slurm", "spot", eks="other")
    out = tmp_path / "dist"
    # WHEN both render to the same API server
    rc = main(["--spec", str(a), "--spec", str(b), "--out", str(out)])
    # THEN exit 2, each shared name once, naming both spec files; nothing written
    err = capsys.readouterr().err.splitlines()
    assert rc == 2 and not out.exists()
    assert f"{a}: name: cluster-scoped NodePool foo-slurm-spot on https://kubernetes.default.svc is also rendered " \
           f"by {b}; names must be unique per destination: rename this cluster or the nodeset" in err
    assert any("EC2NodeClass foo-slurm-spot" in line for line in err)
    assert all(str(a) in line and str(b) in line for line in err)


def test_the_same_names_on_different_destinations_are_fine(tmp_path, capsys):
    a = _spec(tmp_path, "foo", "slurm-spot")
    b = _spec(tmp_path, "foo-slurm", "spot", server="https://ABCDEF.gr7.us-west-2.eks.amazonaws.com", eks="remote")
    assert main(["--spec", str(a), "--spec", str(b), "--out", str(tmp_path / "dist")]) == 0


def test_a_collision_with_a_cluster_already_in_the_output_folder_is_refused(tmp_path, capsys):
    # GIVEN foo rendered alone, WHEN foo-slurm is rendered alone into the same folder
    out = tmp_path / "dist"
    assert main(["--spec", str(_spec(tmp_path, "foo", "slurm-spot")), "--out", str(out)]) == 0
    before = read_tree(out)
    rc = main(["--spec", str(_spec(tmp_path, "foo-slurm", "spot")), "--out", str(out)])
    # THEN refused, naming the folder of the other cluster
    assert rc == 2 and f"is also rendered by {out / 'foo'}" in capsys.readouterr().err
    assert read_tree(out) == before


def test_two_cached_clusters_sharing_a_name_are_still_refused(tmp_path, capsys, monkeypatch):
    # GIVEN the two colliding clusters rendered once (refused, but each cluster's render is cached)
    monkeypatch.setenv("SLURMGEN_CACHE_DIR", str(tmp_path / "cache"))
    a, b = _spec(tmp_path, "foo", "slurm-spot"), _spec(tmp_path, "foo-slurm", "spot", eks="other")
    out = tmp_path / "dist"
    args = ["--spec", str(a), "--spec", str(b), "--out", str(out)]
    assert main(args) == 2
    first = capsys.readouterr().err.splitlines()
    assert run([a, b], use_cache=True).cached == {"foo", "foo-slurm"}  # both are cache hits now
    # WHEN run again: both come from the cache, their shared names from the entries
    rc = main(args)
    err = capsys.readouterr().err.splitlines()
    # THEN the same refusal, line for line, and nothing written
    assert rc == 2 and err == first
    assert not out.exists()
