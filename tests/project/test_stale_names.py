"""No source, test or doc names a module, folder or document that does not exist."""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO

#: names that once existed (or never shipped): the package `slurmgen.validate`, the folder `slurmgen/charts/`
#: (the charts are the top-level `charts/`; `~/.cache/slurmgen/charts/` is the Helm chart cache and is fine),
#: the network refresh's old home, and a design note that is not in the repository
STALE = {
    "slurmgen.validate": re.compile(r"slurmgen\.validate\b"),
    "slurmgen/charts/": re.compile(r"(?<![/.])\bslurmgen/charts/"),
    "slurmgen.verify.schemas.sources": re.compile(r"slurmgen[./]verify[./]schemas[./]sources\b"),
    "slinky-operator.md": re.compile(r"slinky-operator\.md"),
}
TEXTS = sorted(p for pattern in ("slurmgen/**/*.py", "slurmgen/**/*.json", "charts/**/*.py", "apps/*.py", "tests/**/*.py",
                                 "docs/*.md", "README.md", "Makefile", "main.py")
               for p in REPO.glob(pattern) if p.name != "test_stale_names.py")


@pytest.mark.parametrize("name", sorted(STALE))
def test_no_text_names_a_stale_module_or_document(name: str) -> None:
    # GIVEN every source, test and doc / WHEN searched for the stale name
    hits = [str(p.relative_to(REPO)) for p in TEXTS if STALE[name].search(p.read_text(encoding="utf-8"))]
    # THEN none names it
    assert hits == []
