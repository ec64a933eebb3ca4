"""Checks on the rendered objects themselves, run on every synth before anything is written.

- schema: every object against the Kubernetes and upstream CRD schemas, strictly;
- placement: every NodeSet lands on exactly its NodePool and fits it (consistency.py);
- policy: no Secret carrying data, every image pinned.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from ..synth.rendered import RenderedCluster, floating_image, images
from ..spec.secrets_scan import scan_rendered
from ..catalog.catalog import InstanceType, load_catalog
from ..errors import Problem, lines
from .consistency import check_placement
from ..plan.nodesets import reserve_of
from .schemas import SchemaUnavailable

__all__ = ["SchemaUnavailable", "verify", "static_checks", "schema_checks"]

Obj = dict[str, Any]
GLOB_CHARACTERS = frozenset("*?[]{}!\\")


@lru_cache(maxsize=4)
def _validator(crd_dir: Path | None, kubernetes_version: str) -> Any:
    """The vendored CRD schemas, or the CRD YAML under `crd_dir` (`--crd-dir`)."""
    from .schemas import Validator

    return Validator.create(crd_dir, kubernetes_version=kubernetes_version)


def schema_problems(cluster: RenderedCluster, crd_dir: Path | None) -> Iterator[Problem]:
    validator = _validator(crd_dir, cluster.spec.aws.kubernetes_version)
    for rel, obj in cluster.files.items():
        for problem in validator.validate(obj):  # `Kind ns/name: path: what`, in the file that holds it
            yield Problem(f"{cluster.spec.name}/{rel}: {problem.where}", problem.path, problem.what)


def policy_problems(cluster: RenderedCluster) -> Iterator[Problem]:
    for rel, obj in cluster.files.items():
        where = f"{cluster.spec.name}/{rel}"
        if obj.get("kind") == "Secret" and (obj.get("data") or obj.get("stringData")):
            yield Problem(where, "", "a Secret with data would put a secret value in git", fix="reference it instead")
        for finding in scan_rendered(obj):  # backstop: the spec's own scan names the field and the fix
            yield Problem(where, "", f"{finding}, which would land in git", fix="keep it in a Secret and reference it")
        for image in images(obj):  # chart values' image maps too
            if reason := floating_image(image):
                yield Problem(where, "", f"image {image!r} {reason}", fix="pin a patch release or a sha256 digest")


def placement_problems(cluster: RenderedCluster, catalog: Mapping[str, InstanceType]) -> Iterator[Problem]:
    reserve = reserve_of(cluster.spec)
    for line in check_placement(cluster.files, catalog, reserve):  # `<file>: what`
        rel, _, what = line.partition(": ")
        yield Problem(f"{cluster.spec.name}/{rel}", "", what)


def project_problems(cluster: RenderedCluster) -> Iterator[Problem]:
    """The AppProject must name what it allows: a glob character would let a child deploy elsewhere.

    Argo CD matches sourceRepos and destinations as globs (argo-cd v3.5.1 util/glob over gobwas/glob:
    `* ? [ ] { }`, `\\` escapes, a leading `!` negates), so none of them may appear in an entry."""
    for rel, obj in cluster.files.items():
        if obj["kind"] != "AppProject":
            continue
        spec = obj["spec"]
        entries = [*spec.get("sourceRepos", []),
                   *(d.get(k, "") for d in spec.get("destinations", []) for k in ("server", "namespace", "name")),
                   *(w.get(k, "") for w in spec.get("clusterResourceWhitelist", []) for k in ("group", "kind"))]
        if any(set(str(e)) & GLOB_CHARACTERS for e in entries):
            yield Problem(f"{cluster.spec.name}/{rel}", "", "the AppProject must list repositories, destinations and "
                          "kinds explicitly (no glob character: * ? [ ] { } ! \\)")


def static_checks(clusters: Sequence[RenderedCluster],
                  catalog: Mapping[str, InstanceType] | None = None) -> list[str]:
    """Policy and placement checks, one line per problem; `catalog` is the one the clusters were rendered with."""
    catalog = catalog if catalog is not None else load_catalog()
    problems: list[Problem] = []
    for cluster in clusters:
        problems += policy_problems(cluster)
        problems += project_problems(cluster)
        problems += placement_problems(cluster, catalog)
    return lines(problems)


def schema_checks(clusters: Sequence[RenderedCluster], *, crd_dir: Path | None = None) -> list[str]:
    """Every object against its schema; raises SchemaUnavailable when the CRD schemas cannot be read."""
    return lines(problem for cluster in clusters for problem in schema_problems(cluster, crd_dir))


def verify(clusters: Sequence[RenderedCluster], *, crd_dir: Path | None = None,
           catalog: Mapping[str, InstanceType] | None = None) -> list[str]:
    """Every problem in every rendered cluster, one line each (empty when all is well)."""
    return static_checks(clusters, catalog) + schema_checks(clusters, crd_dir=crd_dir)
