"""Autoscaling with the queue (KEDA): the model functions. The charts built alone are checked beside
it (test_autoscaling.py, test_argocd.py, test_compute.py, test_policy.py)."""

from __future__ import annotations


import pytest

from charts.autoscaling import partitions_of
from slurmgen.spec import parse_text
from tests.spec_builder import spec_text



@pytest.mark.parametrize("autoscale,idle", [({"min": 2, "max": 4}, 0), ({"min": 2, "max": 4, "idleToZero": False}, None)])
def test_idle_replica_count(autoscale, idle):
    from charts.autoscaling import scaled_object_spec

    text = spec_text(nodeset={"autoscale": autoscale}, autoscaling={"prometheusAddress": "http://prom:9090"})
    spec = parse_text("t.yaml", text)
    assert scaled_object_spec(spec, spec.nodesets[0]).get("idleReplicaCount") == idle


def test_autoscaling_counts_every_partition_of_a_nodeset_without_one_of_its_own():
    # GIVEN two nodesets that share their only partition / THEN each scales with that partition's demand
    shared_only = parse_text("t.yaml", spec_text(
        nodesets=[{"name": "gpu", "instanceType": "g5.xlarge"}, {"name": "cpu", "instanceType": "m7i.xlarge"}],
        partitions=[{"name": "all", "nodesets": ["gpu", "cpu"]}]))
    assert partitions_of(shared_only, "gpu") == ["all"]
