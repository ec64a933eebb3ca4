"""Clusters from spec to checked YAML text: the one routine the main process and each worker run.

Rendering is jsii round trips (the GIL is released while the kernel answers), so while cluster n+1
renders, one helper thread checks, validates and dumps cluster n. Imports cdk8s (starts the jsii
kernel): import it only where clusters are rendered.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Iterable, Mapping

from ..verify import objects as verify
from ..synth.build import render_one
from ..catalog.catalog import InstanceType
from ..write.output import render_texts
from ..synth.rendered import Rendered, RenderedCluster
from ..verify import slurm_files as slurmconf_checks
from ..spec import ClusterSpec
from .timing import Stopwatch


def check(cluster: RenderedCluster, crd_dir: Path | None, catalog: Mapping[str, InstanceType],
          stopwatch: Stopwatch) -> tuple[list[str], dict[str, str]]:
    """Checks, schema validation and YAML of one cluster: (problems, path -> text)."""
    with stopwatch.timer("checks"):
        problems = verify.static_checks([cluster], catalog)
        problems += slurmconf_checks.blocking(slurmconf_checks.problems(cluster.spec.name, cluster.files))
    with stopwatch.timer("validate"):
        problems += verify.schema_checks([cluster], crd_dir=crd_dir)
    with stopwatch.timer("dump"):
        texts = render_texts(cluster.files, cluster.spec.source)
    return problems, texts


def render_all(specs: Iterable[ClusterSpec], catalog: Mapping[str, InstanceType], crd_dir: Path | None,
               stopwatch: Stopwatch) -> list[Rendered]:
    """Render, check, validate and dump each spec (taken one at a time: `specs` may be a claim
    iterator); raises verify.SchemaUnavailable when the CRD schemas cannot be read. The helper
    thread builds the validator of a Kubernetes version before the first check that needs it."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="slurmgen-check") as pool:
        prepared: dict[str, Future] = {}
        jobs = []
        with stopwatch.timer("render"):
            for spec in specs:
                version = spec.aws.kubernetes_version
                if version not in prepared:  # queued before this cluster's check: the thread runs in order
                    prepared[version] = pool.submit(verify.prepare, crd_dir, version)
                cluster = render_one(spec, catalog)
                jobs.append((cluster, pool.submit(check, cluster, crd_dir, catalog, stopwatch)))
        for ready in prepared.values():
            ready.result()
        done = []
        for cluster, job in jobs:
            problems, texts = job.result()
            done.append(Rendered(cluster.spec.name, dict(cluster.plans), dict(cluster.files), texts, problems))
        return done
