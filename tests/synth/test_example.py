"""Checks on the whole written tree of the embedded example (tests/specs/example.yaml): what no one
chart decides (the checks of each chart's fields are in tests/charts/)."""

from __future__ import annotations


def test_cluster_scoped_objects_have_no_namespace(example):
    for rel, obj in example.items():
        if obj["kind"] in ("NodePool", "EC2NodeClass", "PersistentVolume", "StorageClass"):
            assert "namespace" not in obj["metadata"], rel
        else:
            assert obj["metadata"].get("namespace"), rel


def test_no_names_carry_cdk8s_hashes_and_files_are_named_after_objects(example):
    for rel, obj in example.items():
        assert rel.endswith(f"/{obj['kind'].lower()}-{obj['metadata']['name']}.yaml")
        assert not any(len(part) == 8 and part.isalnum() and not part.isalpha()
                       for part in obj["metadata"]["name"].split("-")), rel
