"""Slurm keys ignore case (issue 23 C): what the generator adds is not added again beside a
user's key in another spelling."""

from __future__ import annotations

from slurmgen.spec._slurm import slurm_key
from slurmgen.spec.model import Partition


def _partition(extra: tuple[tuple[str, str], ...]) -> Partition:
    return Partition(name="p", nodesets=("a",), default=False, max_time="UNLIMITED", priority_tier=1,
                     extra_config=extra, all_nodesets=False, allow_qos=(), topology=None)


def test_a_user_state_in_any_case_replaces_ours():
    # GIVEN a partition whose extra parameters set state in lower case
    tokens = _partition((("state", "DOWN"),)).config_tokens()
    # THEN the line holds one State key, the user's
    assert [t for t in tokens if slurm_key(t.split("=")[0]) == "state"] == ["state=DOWN"]


def test_a_derived_key_in_another_spelling_is_left_to_the_user():
    tokens = _partition((("oversubscribe", "NO"),)).config_tokens(derived=("OverSubscribe=EXCLUSIVE",))
    assert [t for t in tokens if slurm_key(t.split("=")[0]) == "oversubscribe"] == ["oversubscribe=NO"]
