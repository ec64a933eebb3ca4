"""Fixture shared by the validation tests: one Validator per module, on the vendored CRD schemas."""

from __future__ import annotations

import pytest

from slurmgen.verify.schemas import Validator


@pytest.fixture(scope="module")
def validator() -> Validator:
    return Validator.create()
