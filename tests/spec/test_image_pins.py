"""Images are pinned: a floating `<major>.<minor>-<flavor>` Slurm tag is refused, a digest is
accepted per component, and any image change shows in the review summary. Every image a cluster
renders (chart values' image maps too) names major.minor.patch or a sha256 digest."""

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


# --- every image the tree renders: a patch release or a digest -----------------------------------

def rendered_images(rendered) -> dict[str, set[str]]:
    """{image: {cluster/file, ...}} over every rendered cluster, chart values included."""
    from slurmgen.synth.rendered import images
    found: dict[str, set[str]] = {}
    for name, cluster in rendered.items():
        for rel, obj in cluster.files.items():
            for ref in images(obj):
                found.setdefault(ref, set()).add(f"{name}/{rel}")
    return found


def test_every_rendered_image_is_a_patch_release_or_a_digest(rendered):
    # GIVEN every image of every test cluster, ours and those we set in Helm chart values
    from slurmgen.synth.rendered import floating_image
    found = rendered_images(rendered)
    # THEN none floats: no tag, or one short of major.minor.patch, moves under the same name
    floating = {ref: sorted(where)[0] for ref, where in found.items() if floating_image(ref)}
    assert floating == {}, floating


def test_the_image_list_holds_our_sidecar_and_the_chart_values_images(rendered):
    # GIVEN the images listed by the walk the pin test relies on
    found = rendered_images(rendered)
    # THEN the logfile sidecar and the EFA device plugin (image.repository + image.tag in its
    # Application's valuesObject) are in it, so the pin test sees both kinds
    assert "docker.io/library/alpine:3.22.5" in found
    efa = [ref for ref in found if "/eks/aws-efa-k8s-device-plugin" in ref]
    assert efa and all(ref.endswith("/eks/aws-efa-k8s-device-plugin:v0.5.20") for ref in efa), efa


def test_the_efa_plugin_tag_is_the_pinned_charts_own_default():
    # GIVEN the chart's values.yaml at the version we deploy (vendored, tests/data/charts)
    import yaml
    from slurmgen.spec import parse_text as parse
    from apps.helm import efa_device_plugin
    from tests.conftest import CHARTS
    release = efa_device_plugin(parse("t.yaml", MINIMAL_SPEC))
    defaults = yaml.safe_load((CHARTS / release.chart / release.version / "values.yaml").read_text())
    # THEN the tag we write is the one the chart would pull anyway (we only move the registry)
    assert release.values["image"]["tag"] == defaults["image"]["tag"]


@pytest.mark.parametrize(("ref", "floats"), [
    ("docker.io/library/alpine:3.22", True),
    ("docker.io/library/alpine:3.22.5", False),
    ("docker.io/library/alpine:3.22@" + DIGEST, False),
    ("docker.io/library/alpine", True),
    ("docker.io/library/alpine:latest", True),
    ("docker.io/library/alpine:LATEST", True),
    ("busybox:1", True),
    ("ghcr.io:443/x/y:1.2", True),          # the port's colon is no tag separator: the tag is 1.2
    ("ghcr.io:443/x/y", True),              # no tag at all (not the tag "443/x/y")
    ("ghcr.io:443/x/y:1.2.3", False),
    ("registry.local:5000/y@" + DIGEST, False),
    ("x/y:1.2@sha512:" + "ab" * 64, True),   # only a sha256 digest pins
    ("public.ecr.aws/docker/library/python:3.13.7-alpine3.22", False),
    ("ghcr.io/slinkyproject/slurmd:26.05.1-ubuntu26.04", False),
    ("ghcr.io/slinkyproject/slurmd:26.05-ubuntu26.04", True),
    ("x/aws-efa-k8s-device-plugin:v0.5.20", False),
    ("x/y:v1.2", True),
])
def test_a_tag_floats_unless_it_has_major_minor_patch_or_a_digest(ref, floats):
    from slurmgen.synth.rendered import floating_image
    assert bool(floating_image(ref)) is floats, (ref, floating_image(ref))


@pytest.mark.parametrize(("where", "ref", "fix"), [
    ("images.sidecar", "docker.io/library/alpine:3.22", "docker.io/library/alpine:3.22.<patch>"),
    ("topology.labelerImage", "public.ecr.aws/docker/library/python:3.13-alpine",
     "public.ecr.aws/docker/library/python:3.13.<patch>-alpine"),
    ("nodesets[gpu].image", "registry.local:5000/hpc/slurmd:26.05-ubuntu26.04",
     "registry.local:5000/hpc/slurmd:26.05.<patch>-ubuntu26.04"),
    ("images.overrides.slurmctld", "ghcr.io:443/acme/slurmctld:1", "ghcr.io:443/acme/slurmctld:1.<minor>.<patch>"),
])
def test_a_floating_tag_in_any_image_the_spec_takes_is_refused_in_one_line(where, ref, fix):
    # GIVEN a spec that sets one image reference to a tag the registry moves
    fields = {
        "images.sidecar": {"images": {"sidecar": ref}},
        "topology.labelerImage": {"topology": {"labelerImage": ref}},
        "nodesets[gpu].image": {"nodeset": {"image": ref}},
        "images.overrides.slurmctld": {"images": {"overrides": {"slurmctld": ref}}},
    }[where]
    # WHEN it is read / THEN one line names the field, says it floats and what to write
    [line] = problems(spec_text(**fields))
    assert where in line and "floating" in line and fix in line and "@sha256:<digest>" in line, line
    assert "\n" not in line
