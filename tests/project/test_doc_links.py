"""Every reference a reader follows resolves: relative links and anchors in README.md and docs/*.md, and
the `docs/...`, `README.md#...` and `README: <heading>` references in the comments of the starter spec,
the examples' specs (tests/specs/, the shapes of clusters/) and the schema's descriptions (what an
editor shows beside a field)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import REPO, SPECS

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
_FENCE = re.compile(r"^\s*(```|~~~)")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
# In comments and descriptions: docs/x.md or README.md, with an optional #anchor; or README: Heading.
_FILE_REF = re.compile(r"(?<![\w/.-])((?:docs/[\w.-]+\.md)|README\.md)(#[\w-]+)?")
_README_HEADING_REF = re.compile(r"\bREADME: ([^;,.)\n]+)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, punctuation dropped (not '-' or '_'), spaces as '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def headings(page: Path) -> list[str]:
    """The page's headings as written, outside code blocks."""
    found, fence = [], False
    for line in page.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line):
            fence = not fence
        elif not fence and (m := re.match(r"#{1,6} (.+)", line)):
            found.append(m.group(1).strip())
    return found


def anchors(page: Path) -> set[str]:
    """Every anchor GitHub gives the page's headings (a repeated one gets -1, -2, ...)."""
    seen: dict[str, int] = {}
    out = set()
    for heading in headings(page):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return out


def broken_links(page: Path, folder: Path | None = None) -> list[str]:
    """The relative links (`[text](path#anchor)`) of a Markdown page that name no file or no heading,
    resolved from `folder` (default: the page's own)."""
    folder = folder or page.parent
    bad, fence = [], False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if _FENCE.match(line):
            fence = not fence
            continue
        if fence:
            continue
        for target in _LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            where = (folder / path) if path else page
            if not where.exists() or (anchor and (where.suffix != ".md" or anchor not in anchors(where))):
                bad.append(f"{page.name}:{number}: {target}")
    return bad


def broken_references(text: str, source: str) -> list[str]:
    """`docs/x.md#anchor`, `README.md#anchor` and `README: Heading` references in `text` that do not resolve."""
    bad = []
    for path, anchor in _FILE_REF.findall(text):
        where = REPO / path
        if not where.exists() or (anchor and anchor[1:] not in anchors(where)):
            bad.append(f"{source}: {path}{anchor}")
    readme = {h.lower() for h in headings(REPO / "README.md")}
    bad += [f"{source}: README: {ref}" for ref in _README_HEADING_REF.findall(text) if ref.strip().lower() not in readme]
    return bad


def comments(path: Path) -> str:
    """The comment text of a YAML file (what follows a `#` at a line start or after a space)."""
    return "\n".join(m.group(1) for line in path.read_text(encoding="utf-8").splitlines()
                     if (m := re.search(r"(?:^|\s)#(.*)$", line)))


def descriptions(node: object) -> list[str]:
    """Every `description` string of a JSON Schema."""
    if isinstance(node, dict):
        own = [node["description"]] if isinstance(node.get("description"), str) else []
        return own + [d for value in node.values() for d in descriptions(value)]
    if isinstance(node, list):
        return [d for value in node for d in descriptions(value)]
    return []


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_relative_link_of_the_docs_resolves(page):
    # GIVEN a page of the README or docs/ / WHEN its relative links are followed
    # THEN each names a file, and each anchor a heading of it
    assert broken_links(page) == []


@pytest.mark.parametrize("spec", [REPO / "docs" / "starter.yaml", *sorted(SPECS.glob("*.yaml"))],
                         ids=lambda p: p.name)
def test_every_doc_reference_in_a_spec_comment_resolves(spec):
    # GIVEN the starter a user copies, or an example's spec / WHEN the docs its comments name are looked up
    # THEN each exists, with the anchor or README heading named
    assert broken_references(comments(spec), spec.name) == []


def test_every_doc_reference_in_the_schema_resolves():
    # GIVEN the descriptions an editor shows beside each field / THEN the docs they name exist
    for name in ("cluster.schema.json", "cluster-defaults.schema.json"):
        schema = json.loads((REPO / "slurmgen" / "spec" / name).read_text(encoding="utf-8"))
        assert broken_references("\n".join(descriptions(schema)), name) == []


def test_the_checks_find_a_broken_link_anchor_and_reference(tmp_path):
    # GIVEN a page linking a missing file and a missing anchor, and comments naming a missing page,
    # a missing anchor and a README heading that does not exist
    page = REPO / "docs" / "bootstrap.md"
    text = "[a](nope.md) [b](compute.md#no-such-heading) [c](compute.md#topology-aware-placement) `[d](x.md)`\n"
    fake = tmp_path / "page.md"
    fake.write_text(text)
    # WHEN they are checked (the page as if it stood in docs/)
    bad = [b.split(": ", 1)[1] for b in broken_links(fake, page.parent)]
    refs = broken_references("# see docs/nope.md, docs/compute.md#nope, docs/iam.md and README: No such part\n", "x")
    # THEN exactly the broken ones are reported, never the good ones or what a code span holds
    assert bad == ["nope.md", "compute.md#no-such-heading"]
    assert refs == ["x: docs/nope.md", "x: docs/compute.md#nope", "x: README: No such part"]


def test_the_bootstrap_page_ends_with_a_smoke_test():
    # GIVEN the bootstrap page / THEN its last section is the smoke test: ssh to the login node, sinfo, a first srun
    page = REPO / "docs" / "bootstrap.md"
    assert headings(page)[-1] == "Smoke test"
    last = page.read_text(encoding="utf-8").rsplit("## Smoke test", 1)[1]
    assert all(word in last for word in ("ssh root@", "sinfo", "srun "))
