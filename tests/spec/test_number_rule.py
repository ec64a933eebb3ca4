"""The one number rule (issue 32, class 5): a number spelt in text (a Slurm duration, a TRES count, a
Kubernetes quantity or duration) is read as its consumer reads it and compared with the consumer
type's range, declared in the schema (`x-range`); integers carry `maximum` with the consumer in
`$comment`. Bad specs with 20-digit numbers are in tests/cases/bad/*past_their_consumers_range.yaml."""

from __future__ import annotations

import pytest

from slurmgen.spec import _numbers, _schema
from slurmgen.spec._text import unsafe_values

INT32_SECONDS = {"kind": "slurm-time", "max": 2 ** 31 - 1, "consumer": "time_str2secs"}


@pytest.mark.parametrize("text, seconds", [
    ("35791394", 35791394 * 60),             # bare minutes (Slurm's MaxTime)
    ("7-0", 7 * 86400),                       # days-hours (PriorityDecayHalfLife)
    ("2-03:04:05", 2 * 86400 + 3 * 3600 + 4 * 60 + 5),
    ("04:00:00", 4 * 3600),                   # hours:minutes:seconds
    ("10:30", 10 * 60 + 30),                  # minutes:seconds
    ("UNLIMITED", None), ("INFINITE", None),
])
def test_slurm_durations_read_as_time_str2secs_reads_them(text, seconds):
    assert _numbers.slurm_seconds(text) == seconds


@pytest.mark.parametrize("text, refused", [
    ("35791394", False), ("35791395", True),                 # minutes: 60 x 35791395 passes 2^31-1 seconds
    ("24855-03:14:07", False), ("24855-03:14:08", True),
    ("99999999999999999999", True), ("9" * 5000, True),      # no int() of 5,000 digits either
])
def test_the_slurm_time_range_is_a_signed_32_bit_count_of_seconds(text, refused):
    assert (_numbers.out_of_range(text, INT32_SECONDS) is not None) == refused


@pytest.mark.parametrize("path, kind", [
    (("partitions", 0, "maxTime"), "slurm-time"),
    (("scheduling", "fairShare", "decayHalfLife"), "slurm-time"),
    (("policy", "qos", 0, "maxWallDurationPerJob"), "slurm-time"),
    (("policy", "qos", 0, "maxTRESPerUser", "cpu"), "tres-count"),
    (("policy", "accounts", 0, "grpTRES", "mem"), "tres-count"),
    (("compute", "expireAfter"), "go-duration"),
    (("compute", "terminationGracePeriod"), "go-duration"),
    (("storage", "shm", "sizeLimit"), "quantity"),
    (("controller", "persistence", "size"), "quantity"),
    (("monitoring", "kubePrometheusStack", "retention"), "prometheus-duration"),
])
def test_the_schema_declares_each_fields_range(path, kind):
    limits = _schema.string_range(path)
    assert limits is not None and limits["kind"] == kind and limits["consumer"]


def test_every_declared_range_has_a_reader():
    found = []

    def walk(node):
        if isinstance(node, dict):
            if "x-range" in node:
                found.append(node["x-range"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(_schema.schema())
    assert len(found) >= 10
    assert all(r["kind"] in _numbers.PARSERS and isinstance(r["max"], int) and r["consumer"] for r in found)


def test_twenty_digits_are_refused_with_the_field_and_the_range():
    data = {"partitions": [{"maxTime": "99999999999999999999"}],
            "policy": {"qos": [{"maxTRESPerJob": {"gres/gpu": "99999999999999999999"}}]}}
    found = dict(unsafe_values(data, string_range=_schema.string_range))
    assert found["partitions[0].maxTime"].endswith("at most 24855-03:14:07 (2147483647 seconds)")
    assert "uint64" in found["policy.qos[0].maxTRESPerJob.gres/gpu"]
