"""The spec layer: defaults from the schema, an immutable model, every problem of every file at once."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from slurmgen.spec import SpecError, load_specs, parse_text
from tests.spec_builder import spec_text

ALL = [{"name": "all", "nodesets": ["ALL"], "default": True}]
MINIMAL = spec_text(partitions=ALL)


def test_minimal_spec_gets_documented_defaults():
    spec = parse_text("t.yaml", MINIMAL)
    assert spec.namespace == "slurm" and spec.slurm_cluster_name == "slurm"
    assert spec.versions.slinky == "1.2.1" and spec.versions.slurm_image_tag == "26.05.1-ubuntu26.04"
    assert spec.images.for_component("slurmctld") == "ghcr.io/slinkyproject/slurmctld:26.05.1-ubuntu26.04"
    assert spec.gitops.target_revision == "main" and spec.gitops.path == "dist"
    assert spec.compute.node_role == "KarpenterNodeRole-eks" and spec.compute.ami_alias == "al2023@v20260724"
    assert spec.accounting.enabled and spec.login.enabled and spec.metrics.enabled
    assert spec.partitions[0].nodesets == ("gpu",) and spec.partitions[0].all_nodesets


def test_model_is_immutable():
    spec = parse_text("t.yaml", MINIMAL)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.name = "other"  # type: ignore[misc]


def test_image_overrides_per_component_and_per_nodeset():
    text = spec_text(partitions=ALL, nodeset={"image": "r.io/me/slurmd:1.0.0"},
                     images={"overrides": {"slurmctld": "r.io/me/slurmctld:2.0.0"}})
    spec = parse_text("t.yaml", text)
    assert spec.nodesets[0].image == "r.io/me/slurmd:1.0.0"
    assert spec.images.for_component("slurmctld") == "r.io/me/slurmctld:2.0.0"
    assert spec.images.for_component("slurmrestd").endswith("/slurmrestd:26.05.1-ubuntu26.04")


def test_problems_of_all_files_are_reported_together(tmp_path: Path):
    (tmp_path / "a.yaml").write_text(spec_text(partitions=ALL, name="Bad"))
    (tmp_path / "b.yaml").write_text(spec_text(partitions=ALL, nodeset={"replica": 2}))
    with pytest.raises(SpecError) as err:
        load_specs(sorted(tmp_path.glob("*.yaml")))
    lines = [str(p) for p in err.value.problems]
    assert any(line.startswith(f"{tmp_path / 'a.yaml'}:2: name:") for line in lines)
    assert f"{tmp_path / 'b.yaml'}:11: nodesets[gpu].replica: unknown key; did you mean 'replicas'?" in lines


def test_two_files_with_the_same_cluster_name(tmp_path: Path):
    (tmp_path / "a.yaml").write_text(MINIMAL)
    (tmp_path / "b.yaml").write_text(MINIMAL)
    with pytest.raises(SpecError) as err:
        load_specs([tmp_path / "a.yaml", tmp_path / "b.yaml"])
    assert [str(p) for p in err.value.problems] == [
        f"{tmp_path / 'b.yaml'}: name: cluster name 't' is already used by {tmp_path / 'a.yaml'}"]


def test_the_spec_schema_is_a_valid_2020_12_schema():
    from jsonschema import Draft202012Validator

    from slurmgen.spec._schema import schema

    Draft202012Validator.check_schema(schema())


@pytest.mark.parametrize(("model", "field", "schema_path"), [
    ("AwsIdentity", "mode", ("aws", "identity", "mode")),
    ("GitOpsSettings", "root_destination_server", ("gitops", "rootDestinationServer")),
    ("GitOpsSettings", "argocd_install", ("gitops", "argocdInstall")),
    ("NodeSetSpec", "scaling_mode", ("nodesets", "scalingMode")),
    ("Directory", "shell_fallback", ("directory", "shell", "fallback")),
    ("MariaDbSettings", "max_user_connections", ("accounting", "database", "inCluster", "maxUserConnections")),
    ("Database", "password_revision", ("accounting", "database", "passwordRevision")),
])
def test_a_default_the_schema_holds_is_not_repeated_in_the_model(model, field, schema_path):
    # GIVEN a spec key whose default the schema declares, and the model field it fills
    import dataclasses

    from slurmgen.spec import _schema, model as models
    node = _schema.schema()
    for key in schema_path:
        node = node["properties"][key]
        node = node.get("items", node) if key == "nodesets" else node
    assert "default" in node
    # THEN the model's field has no default of its own: the value is written once, in the schema
    spec_field = next(f for f in dataclasses.fields(getattr(models, model)) if f.name == field)
    assert spec_field.default is dataclasses.MISSING
