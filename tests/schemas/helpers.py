"""Small helpers shared by the validation tests."""

from __future__ import annotations

from slurmgen.verify.schemas import Validator


def messages(validator: Validator, obj: dict) -> list[str]:
    """The problems of one object, as the lines a user would read."""
    return [str(problem) for problem in validator.validate(obj)]
