"""One cluster from spec to checked YAML text: what this process and each worker run per cluster.

Imports cdk8s (starts the jsii kernel): import it only where clusters are rendered.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from ..verify import objects as verify
from ..synth.build import render_one
from ..catalog.catalog import InstanceType
from ..write.output import render_texts
from ..synth.rendered import Rendered
from ..verify import slurm_files as slurmconf_checks
from ..spec import ClusterSpec
from .timing import Stopwatch


def render_cluster(spec: ClusterSpec, catalog: Mapping[str, InstanceType], crd_dir: Path | None,
                   stopwatch: Stopwatch) -> Rendered:
    """Render, check, validate and dump one spec; raises verify.SchemaUnavailable when the CRD
    schemas cannot be read."""
    with stopwatch.timer("render"):
        cluster = render_one(spec, catalog)
    with stopwatch.timer("checks"):
        problems = verify.static_checks([cluster], catalog)
        problems += slurmconf_checks.blocking(slurmconf_checks.problems(spec.name, cluster.files))
    with stopwatch.timer("validate"):
        problems += verify.schema_checks([cluster], crd_dir=crd_dir)
    with stopwatch.timer("dump"):
        texts = render_texts(cluster.files, spec.source)
    return Rendered(spec.name, dict(cluster.plans), dict(cluster.files), texts, problems)
