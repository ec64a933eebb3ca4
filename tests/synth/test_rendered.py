"""slurmgen/synth/rendered.py: what every check reads of a render (here: image references)."""

from __future__ import annotations

import pytest

from slurmgen.synth.rendered import image_parts, images


@pytest.mark.parametrize(("ref", "parts"), [
    ("ghcr.io/slinkyproject/slurmctld:25.11-ubuntu24.04", ("ghcr.io/slinkyproject/slurmctld", "25.11-ubuntu24.04", None)),
    ("busybox", ("busybox", None, None)),
    ("registry.local:5000/team/app", ("registry.local:5000/team/app", None, None)),  # a port is not a tag
    ("registry.local:5000/team/app:1.2", ("registry.local:5000/team/app", "1.2", None)),
    ("app@sha256:abc", ("app", None, "sha256:abc")),
    ("app:1.2@sha256:abc", ("app", "1.2", "sha256:abc")),
    ("app@", ("app", None, "")),  # an empty digest is still a digest, to be refused as one
])
def test_image_parts_split_repository_tag_and_digest(ref, parts):
    assert image_parts(ref) == parts


def test_images_are_found_at_any_depth():
    # GIVEN an object with images in containers, init containers and a Slinky wrapper
    obj = {"spec": {"slurmd": {"image": "a:1"}, "template": {"spec": {
        "initContainers": [{"image": "b:2"}], "containers": [{"name": "c", "image": "c:3"}]}}}}
    # THEN every one is listed, in document order
    assert list(images(obj)) == ["a:1", "b:2", "c:3"]
