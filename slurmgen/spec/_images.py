"""Slurm images must not move under a pinned tree: no floating `<major>.<minor>-<flavor>` tag.

What SlinkyProject/containers publishes (read at commit 05efda0, 2026-06-25):
`schedmd/slurm/docker-bake.hcl` gives every image two tags, `format_tag(..., slurm_version(v), flavor)`
and `format_tag(..., v, flavor)`, i.e. `26.05-ubuntu26.04` and `26.05.1-ubuntu26.04`, where
`schedmd/slurm/26.05/<flavor>/slurm.hcl` sets `slurm_version = "26.05.1"`. So the short tag is
re-pushed with every patch release: two nodes pulled on different days run different Slurm
while git shows no change. The patch tag is the smallest step up, yet still not immutable: a
rebuild of the same patch re-pushes it (the 2026-06-25 reverts of SACKD_MODE / SSSD_MODE changed
the login image under the same 26.05.1 tags). Only a digest pins the bytes, and each component
has its own digest, so the digest goes on the per-component reference
(`images.overrides.<component>` or `nodesets[].image`: `<repo>:<tag>@sha256:<digest>`), never on
the shared `versions.slurmImageTag`. Digests cannot be looked up at render time (no registry
access), hence the spec carries them.

Decision: refuse a floating tag (it makes the render non-reproducible); accept a patch tag (the
upstream default pin level); accept a digest anywhere an image reference is taken. A bump of
either shows in `--summary` as a `version: image` line (slurmgen/review/summary.py).

The same holds for every other image the tree renders (`floating_image`): a tag short of
major.minor.patch is one its publisher moves. `alpine:3.22` is re-pointed at each Alpine patch
(docker-library/official-images `library/alpine` tags `3.22.5, 3.22` at fe29341, 2026-06-22,
after 3.22.0 to 3.22.4 under the same `3.22`), `latest` and no tag at each release. So the spec
refuses such a tag in every image reference it takes (`pinned_images`), and the static checks
refuse it in every rendered object (slurmgen/verify/objects.py), chart values included.
"""

from __future__ import annotations

import re
from typing import Any, Iterator

from ..rule import Finding, rule

#: `26.05-ubuntu26.04`: major.minor and a flavor, no patch: the tag every patch release moves.
FLOATING = re.compile(r"^(?P<minor>[0-9]+\.[0-9]+)-(?P<flavor>[a-z][a-z0-9.]*)$")
#: The Slurm images the rule guards: SlinkyProject's own repositories (any mirror path is the user's).
SLINKY_REPOS = ("ghcr.io/slinkyproject/",)
#: The patch release named in the fix hint (containers@05efda0 schedmd/slurm/26.05/*/slurm.hcl).
KNOWN_PATCH = {"26.05": "26.05.1", "25.11": "25.11.6"}


def _patch_hint(minor: str, flavor: str) -> str:
    patch = KNOWN_PATCH.get(minor, f"{minor}.<patch>")
    return f"{patch}-{flavor}"


def _why() -> str:
    return ("SlinkyProject/containers re-pushes <major>.<minor>-<flavor> with every patch release "
            "(docker-bake.hcl tags both), so nodes pulled on different days run different Slurm")


def floating_tag(tag: str) -> str | None:
    """The patch tag to write instead when `tag` floats (e.g. '26.05.1-ubuntu26.04'), else None."""
    match = FLOATING.match(tag)
    return _patch_hint(match["minor"], match["flavor"]) if match else None


def image_parts(ref: str) -> tuple[str, str | None, str | None]:
    """(repository, tag, digest) of an image reference: `reg:5000/app:1.2@sha256:…` ->
    (`reg:5000/app`, `1.2`, `sha256:…`). A registry's port is not a tag; no `@` is digest None."""
    name, at, digest = ref.partition("@")
    if ":" in name.rsplit("/", 1)[-1]:
        repository, _, tag = name.rpartition(":")
        return repository, tag, digest if at else None
    return name, None, digest if at else None


#: The version a tag starts with (`v0.5.20`, `3.13.7-alpine3.22` -> `3.13.7`): its dot parts count.
_VERSION = re.compile(r"^[vV]?(?P<version>[0-9]+(?:\.[0-9]+)*)(?P<rest>.*)$")
#: major.minor.patch: fewer parts name a line of releases, which the publisher moves.
PATCH_PARTS = 3


def _patch_of(tag: str | None) -> str:
    """The tag to write instead of a floating one: `3.22` -> `3.22.<patch>`, `1-x` -> `1.<minor>.<patch>-x`."""
    match = _VERSION.match(tag or "")
    if not match:
        return "<major>.<minor>.<patch>"
    parts = match["version"].split(".")
    missing = ["<major>", "<minor>", "<patch>"][len(parts):]
    prefix = tag[:1] if tag and tag[0] in "vV" else ""
    return prefix + ".".join(parts + missing) + match["rest"]


def floating_image(ref: str) -> str | None:
    """Why `ref` can pull other bytes tomorrow, or None when it is pinned: by a sha256 digest, or by
    a tag whose version has major.minor.patch (`3.22.5`, `v0.5.20`, `3.13.7-alpine3.22`)."""
    _, tag, digest = image_parts(ref)
    if digest is not None and digest.startswith("sha256:"):
        return None
    if tag is None:
        return "has no tag (a floating tag: the registry serves whatever latest is)"
    match = _VERSION.match(tag)
    if match and len(match["version"].split(".")) >= PATCH_PARTS:
        return None
    return f"has the floating tag {tag!r} (fewer than major.minor.patch: its publisher moves it to each new release)"


def pin_hint(ref: str) -> str:
    """What to write instead of a floating `ref`: the patch tag, or the same with a digest."""
    repo, tag, _ = image_parts(ref)
    fix = f"{repo}:{_patch_of(tag)}"
    return f"write {fix} or pin a digest: {fix}@sha256:<digest>"


def _image_refs(spec: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(field, reference) of every image the spec takes whole."""
    images = spec["images"]
    if images.get("sidecar"):
        yield "images.sidecar", images["sidecar"]
    for component, ref in sorted(images.get("overrides", {}).items()):
        yield f"images.overrides.{component}", ref
    for index, ns in enumerate(spec["nodesets"]):
        if ns.get("image"):
            yield f"nodesets[{index}].image", ns["image"]
    labeler = (spec.get("topology") or {}).get("labelerImage")
    if labeler:
        yield "topology.labelerImage", labeler
    bridge_labeler = (spec.get("bridge") or {}).get("labelerImage")
    if bridge_labeler:
        yield "bridge.labelerImage", bridge_labeler


@rule("versions", "images", "nodesets", "topology", "bridge")
def pinned_images(spec: dict[str, Any]) -> Iterator[Finding]:
    """Refuse a floating tag in versions.slurmImageTag and in every image reference the spec takes."""
    tag = spec["versions"]["slurmImageTag"]
    fix = floating_tag(tag)
    overridden = set(spec["images"].get("overrides", {}))
    if fix and overridden < {"slurmctld", "slurmd", "slurmrestd", "slurmdbd", "login"}:
        yield ("versions.slurmImageTag",
               f"{tag!r} is a floating tag: {_why()}; pin the patch release, e.g. {fix!r} "
               "(for byte-exact images add the digests in images.overrides.<component>: <repo>:<tag>@sha256:<digest>)")
    for where, ref in _image_refs(spec):
        repo, ref_tag, digest = image_parts(ref)
        slinky_fix = floating_tag(ref_tag) if ref_tag and repo.startswith(SLINKY_REPOS) else None
        if digest is None and slinky_fix:
            yield where, (f"{ref!r} has a floating tag: {_why()}; write {repo}:{slinky_fix} "
                          f"or pin a digest: {repo}:{slinky_fix}@sha256:<digest>")
        elif reason := floating_image(ref):
            yield where, f"{ref!r} {reason}; {pin_hint(ref)}"
