"""Fixture shared by the validation tests: one Validator per module, on the pinned CRDs."""

from __future__ import annotations

import pytest

from slurmgen.validate import Validator
from tests.conftest import CRDS


@pytest.fixture(scope="module")
def validator() -> Validator:
    return Validator.create(CRDS)
