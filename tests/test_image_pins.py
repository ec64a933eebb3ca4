"""Slurm images are pinned: a floating `<major>.<minor>-<flavor>` tag is refused, a digest is
accepted per component, and any image change shows in the review summary."""

from __future__ import annotations

import pytest

from slurmgen.synth.build import render
from slurmgen.spec import SpecError, parse_text
from slurmgen.review.summary import summarize
from tests.conftest import MINIMAL_SPEC
from tests.spec_builder import spec_text

DIGEST = "sha256:" + "ab" * 32
OTHER = "sha256:" + "cd" * 32


def problems(text: str) -> list[str]:
    with pytest.raises(SpecError) as err:
        parse_text("t.yaml", text)
    return [str(p) for p in err.value.problems]


def slurm_images(cluster) -> set[str]:
    from slurmgen.synth.rendered import images
    return {ref for obj in cluster.files.values() for ref in images(obj) if "slinkyproject" in ref}


def test_floating_slurm_image_tag_is_refused_with_the_patch_tag_to_write():
    # GIVEN the tag that upstream re-pushes with every patch release
    text = MINIMAL_SPEC + "versions: {slurmImageTag: 26.05-ubuntu26.04}\n"
    # THEN one line names the field, says why and what to write
    [line] = problems(text)
    assert "versions.slurmImageTag" in line and "floating" in line and "'26.05.1-ubuntu26.04'" in line, line


def test_floating_tag_in_a_per_component_or_nodeset_image_is_refused():
    text = spec_text(nodeset={"image": "ghcr.io/slinkyproject/slurmd:26.05-ubuntu24.04"},
                     images={"overrides": {"login": "ghcr.io/slinkyproject/login:25.11-rockylinux9"}})
    lines = problems(text)
    assert any("nodesets[gpu].image" in line and "26.05.1-ubuntu24.04" in line for line in lines), lines
    assert any("images.overrides.login" in line and "25.11.6-rockylinux9" in line for line in lines), lines


def test_default_tag_is_a_patch_release():
    spec = parse_text("t.yaml", MINIMAL_SPEC)
    assert spec.images.for_component("slurmd") == "ghcr.io/slinkyproject/slurmd:26.05.1-ubuntu26.04"


def test_a_tag_and_digest_pin_per_component_reaches_the_rendered_objects():
    # GIVEN slurmd pinned by tag and digest, the spec carrying the digest (no registry access at render)
    ref = f"ghcr.io/slinkyproject/slurmd:26.05.1-ubuntu26.04@{DIGEST}"
    [cluster] = render([parse_text("t.yaml", MINIMAL_SPEC + f"images: {{overrides: {{slurmd: '{ref}'}}}}\n")])
    # THEN the NodeSet pulls exactly those bytes
    assert ref in slurm_images(cluster)


def test_latest_is_still_refused_with_a_digest():
    lines = problems(MINIMAL_SPEC + f"images: {{overrides: {{slurmd: 'ghcr.io/slinkyproject/slurmd:latest@{DIGEST}'}}}}\n")
    assert any("images.overrides.slurmd" in line for line in lines), lines


def _cluster(overrides: str):
    [cluster] = render([parse_text("t.yaml", MINIMAL_SPEC + f"images: {{overrides: {{slurmd: '{overrides}'}}}}\n")])
    return dict(cluster.files)


def test_summary_shows_a_digest_bump_under_the_same_tag():
    old = _cluster(f"ghcr.io/slinkyproject/slurmd:26.05.1-ubuntu26.04@{DIGEST}")
    new = _cluster(f"ghcr.io/slinkyproject/slurmd:26.05.1-ubuntu26.04@{OTHER}")
    text = summarize({"t": old}, {"t": new})
    assert (f"version: image ghcr.io/slinkyproject/slurmd 26.05.1-ubuntu26.04@{DIGEST} → "
            f"26.05.1-ubuntu26.04@{OTHER}") in text, text


def test_summary_shows_an_image_moving_to_a_mirror():
    # GIVEN slurmd moving from the upstream registry to a private mirror (a repository change)
    old = _cluster("ghcr.io/slinkyproject/slurmd:26.05.1-ubuntu26.04")
    new = _cluster(f"123456789012.dkr.ecr.us-west-2.amazonaws.com/mirror/slurmd:26.05.1-ubuntu26.04@{DIGEST}")
    text = summarize({"t": old}, {"t": new})
    # THEN the reviewer sees which component now pulls what
    assert ("version: image slurmd ghcr.io/slinkyproject/slurmd:26.05.1-ubuntu26.04 → "
            f"123456789012.dkr.ecr.us-west-2.amazonaws.com/mirror/slurmd:26.05.1-ubuntu26.04@{DIGEST}") in text, text
