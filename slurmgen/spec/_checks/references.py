"""References to what lives elsewhere: image references and the GitOps repository path."""

from __future__ import annotations

import re
from typing import Any, Iterator

from ...rule import Finding, rule

# An image reference as the kubelet parses it (github.com/distribution/reference v0.6.0 regexp.go:
# domain components, path components separated by one `.`, `_`, `__` or dashes, tag, digest); the
# schema's pattern is wider (it takes `a..b/x` and `./x`), which the kubelet refuses (InvalidImageName).
_DOMAIN_PART = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_PATH_PART = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*"
_NAME = rf"(?:{_DOMAIN_PART}(?:\.{_DOMAIN_PART})*(?::[0-9]+)?/)?{_PATH_PART}(?:/{_PATH_PART})*"
_IMAGE_REF = re.compile(rf"{_NAME}(?::[\w][\w.-]{{0,127}})?(?:@sha256:[0-9a-f]{{64}})?")
_REGISTRY = re.compile(rf"{_DOMAIN_PART}(?:\.{_DOMAIN_PART})*(?::[0-9]+)?(?:/{_PATH_PART})*")


@rule("images", "nodesets", "topology", "bridge")
def image_references(spec: dict[str, Any]) -> Iterator[Finding]:
    """Every image reference (and the Slurm registry prefix) in the grammar the kubelet reads."""
    images = spec["images"]
    refs = [("images.sidecar", images.get("sidecar"))]
    refs += [(f"images.overrides.{k}", v) for k, v in sorted(images.get("overrides", {}).items())]
    refs += [(f"nodesets[{i}].image", ns.get("image")) for i, ns in enumerate(spec["nodesets"])]
    refs += [("topology.labelerImage", (spec.get("topology") or {}).get("labelerImage"))]
    refs += [("bridge.labelerImage", (spec.get("bridge") or {}).get("labelerImage"))]
    for where, ref in refs:
        if isinstance(ref, str) and (not _IMAGE_REF.fullmatch(ref) or len(ref.split("@")[0].rsplit(":", 1)[0]) > 255):
            yield where, f"{ref!r} is not an image reference the kubelet can pull (empty, '..' or doubled separators)"
    registry = images.get("registry")
    if isinstance(registry, str) and not _REGISTRY.fullmatch(registry):
        yield "images.registry", f"{registry!r} is not a registry and path an image can start with ('..' or doubled separators)"


@rule("gitops")
def gitops_path(spec: dict[str, Any]) -> Iterator[Finding]:
    """gitops.path names a folder inside the repository: no `.` or `..` part (Argo CD resolves the
    Application's path inside the checkout and refuses one that leaves it)."""
    path = spec["gitops"]["path"]
    if any(part in (".", "..") for part in path.split("/")):
        yield "gitops.path", f"{path!r} holds '.' or '..'; name the folder from the repository's root (e.g. dist)"
