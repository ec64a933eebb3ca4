"""Many clusters from one repo: shared defaults through `extends:`, remote destinations."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmgen.cli import cluster_files
from slurmgen.spec import SpecError, load_spec
from slurmgen.spec.loader import merge
from tests.conftest import SPECS


def test_files_starting_with_underscore_are_defaults_not_clusters():
    names = [p.name for p in cluster_files(SPECS)]
    assert "_research-fleet.yaml" not in names and {"dev.yaml", "prod.yaml"} <= set(names)


def test_merge_maps_by_key_and_replaces_lists():
    base = {"a": {"x": 1, "y": [1, 2]}, "b": 1}
    assert merge(base, {"a": {"y": [3]}, "c": 2}) == {"a": {"x": 1, "y": [3]}, "b": 1, "c": 2}


def test_dev_and_prod_share_the_fleet_defaults(rendered):
    dev, prod = rendered["dev"].spec, rendered["prod"].spec
    # shared: repo, AMI, policy, keys
    assert dev.gitops.repo_url == prod.gitops.repo_url
    assert dev.compute.ami_alias == prod.compute.ami_alias == "al2023@v20260724"
    assert dev.policy == prod.policy and dev.policy is not None
    assert dev.login.ssh_authorized_keys == prod.login.ssh_authorized_keys
    # own: account, region, and a cluster's own setting wins over the default
    assert (dev.aws.account_id, dev.aws.region) == ("111111111111", "eu-west-1")
    assert (prod.aws.account_id, prod.aws.region) == ("222222222222", "us-east-2")
    assert dev.compute.consolidate_after == "5m" and prod.compute.consolidate_after == "10m"


def test_each_cluster_has_its_own_root_and_project(rendered):
    for name, cluster in rendered.items():
        assert f"bootstrap/application-{name}-root.yaml" in cluster.files
        assert f"apps/appproject-{name}.yaml" in cluster.files


def test_prod_deploys_to_its_remote_cluster_from_the_hub(rendered):
    files = rendered["prod"].files
    remote = "https://4A9F1C0DE2B3A4F5.gr7.us-east-2.eks.amazonaws.com"
    root = files["bootstrap/application-prod-root.yaml"]["spec"]
    assert root["destination"]["server"] == "https://kubernetes.default.svc"  # Applications live on the hub
    for rel, obj in files.items():
        if rel.startswith("apps/application-"):
            assert obj["spec"]["destination"]["server"] == remote, rel
    project = files["apps/appproject-prod.yaml"]["spec"]
    assert {d["server"] for d in project["destinations"]} == {remote}


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_extends_cycle_is_reported(tmp_path):
    write(tmp_path, "_a.yaml", "extends: _b.yaml\n")
    write(tmp_path, "_b.yaml", "extends: _a.yaml\n")
    spec = write(tmp_path, "c.yaml", "extends: _a.yaml\nname: c\n")
    with pytest.raises(SpecError) as err:
        load_spec(spec)
    [problem] = err.value.problems
    assert problem.path == "extends" and "extends itself through" in problem.what


def test_missing_base_is_reported(tmp_path):
    spec = write(tmp_path, "c.yaml", "extends: _nope.yaml\nname: c\n")
    with pytest.raises(SpecError) as err:
        load_spec(spec)
    assert str(err.value) == f"{spec}: extends: cannot read {tmp_path / '_nope.yaml'}: No such file or directory"


def test_base_syntax_error_names_the_base_file(tmp_path):
    base = write(tmp_path, "_base.yaml", "gitops: [\n")
    spec = write(tmp_path, "c.yaml", "extends: _base.yaml\nname: c\n")
    with pytest.raises(SpecError) as err:
        load_spec(spec)
    assert str(err.value).startswith(f"{base}: line ")
