"""What holds for every chart of the rendered examples at once: stateful objects are kept, no secret value
is written. The checks of one chart's FSx, secrets and database fields are in tests/charts/."""

from __future__ import annotations

import re

KEEP = "Prune=false,Delete=false"
OPTIONS = "argocd.argoproj.io/sync-options"


def test_every_stateful_object_is_never_pruned_or_deleted(rendered):
    kinds = set()
    for cluster in rendered.values():
        for rel, obj in cluster.files.items():
            if obj["kind"] in ("PersistentVolume", "PersistentVolumeClaim", "StorageClass", "MariaDB", "Controller"):
                assert KEEP in obj["metadata"]["annotations"][OPTIONS], rel
                kinds.add(obj["kind"])
    assert kinds == {"PersistentVolume", "PersistentVolumeClaim", "StorageClass", "MariaDB", "Controller"}


def test_no_secret_value_anywhere_in_dist(dist_tree):
    # GIVEN every file the command line writes for the examples
    files = sorted(dist_tree.rglob("*.yaml"))
    assert len(files) > 100
    for path in files:
        text = path.read_text()
        # THEN no Secret object, and nothing that looks like key material or a password value
        # (an External Secrets template that transforms the value in the cluster is not one)
        assert not re.search(r"^kind: Secret$", text, re.M), path
        assert not re.search(r"^\s*(password|slurm\.key|jwt\.key):\s*(?!'\{\{ )\S", text, re.M), path
        assert not re.search(r"[A-Za-z0-9+/]{200,}", text), path
