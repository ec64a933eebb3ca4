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
"""

from __future__ import annotations

import re
from typing import Any, Iterator

Finding = tuple[str, str]

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


def _ref_tag(ref: str) -> tuple[str, str | None, bool]:
    """(repository, tag, has digest) of an image reference; a registry port is not a tag."""
    name, at, _ = ref.partition("@")
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        repo, _, tag = name.rpartition(":")
        return repo, tag, bool(at)
    return name, None, bool(at)


def _image_refs(spec: dict[str, Any]) -> Iterator[tuple[str, str]]:
    for component, ref in sorted(spec["images"].get("overrides", {}).items()):
        yield f"images.overrides.{component}", ref
    for index, ns in enumerate(spec["nodesets"]):
        if ns.get("image"):
            yield f"nodesets[{index}].image", ns["image"]


def pinned_slurm_images(spec: dict[str, Any]) -> Iterator[Finding]:
    """Refuse a floating Slurm image tag in versions.slurmImageTag and in Slinky image references."""
    tag = spec["versions"]["slurmImageTag"]
    fix = floating_tag(tag)
    overridden = set(spec["images"].get("overrides", {}))
    if fix and overridden < {"slurmctld", "slurmd", "slurmrestd", "slurmdbd", "login"}:
        yield ("versions.slurmImageTag",
               f"{tag!r} is a floating tag: {_why()}; pin the patch release, e.g. {fix!r} "
               "(for byte-exact images add the digests in images.overrides.<component>: <repo>:<tag>@sha256:<digest>)")
    for where, ref in _image_refs(spec):
        repo, ref_tag, digest = _ref_tag(ref)
        if digest or ref_tag is None or not repo.startswith(SLINKY_REPOS):
            continue
        fix = floating_tag(ref_tag)
        if fix:
            yield where, (f"{ref!r} has a floating tag: {_why()}; write {repo}:{fix} "
                          f"or pin a digest: {repo}:{fix}@sha256:<digest>")
