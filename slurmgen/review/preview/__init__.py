"""`main.py --preview`: render every Helm Application offline at its pinned version, then prove the tree.

`preview_clusters` renders each chart with its valuesObject (slurmgen/review/preview/charts.py) and runs
the proofs (slurmgen/review/preview/proofs.py) per cluster. Nothing here is imported by synth; the Helm
SDK is loaded only when a chart is rendered.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Collection, Iterable

from ...synth.rendered import RenderedCluster
from .charts import ChartLocator, ChartRender, HelmSource, PreviewUnavailable, WrongChart, render
from .proofs import image_problems, placement_problems, project_problems, stability_problems, values_problems

__all__ = ["ClusterPreview", "PreviewUnavailable", "helm_sources", "locator_from_env", "nothing_proven",
           "preview_cluster", "preview_clusters", "render_sources"]


@dataclass
class ClusterPreview:
    """One cluster's preview: what rendered, what could not, and what the proofs found."""

    cluster: str
    renders: list[ChartRender] = field(default_factory=list)
    not_previewed: list[str] = field(default_factory=list)  # allowed by --allow-unproven (the others are problems)
    charts: int = 0                                          # Helm Applications: previewed or not
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def lines(self) -> list[str]:
        """The report (stdout): one line per chart, then notes."""
        out = []
        for r in self.renders:
            out.append(f"{self.cluster}/{r.source.application}: previewed {r.source.chart} {r.source.version}: "
                       f"{len(r.objects)} objects")
            out += [f"{self.cluster}/{r.source.application}: note: {n}" for n in r.notes]
        out += self.not_previewed + [f"{self.cluster}: note: {n}" for n in self.notes]
        return out


def locator_from_env(pull: bool | None = None) -> ChartLocator:
    """SLURMGEN_CHART_DIR (a folder of unpacked charts) and SLURMGEN_CHART_PULL=0 (never pull)."""
    folder = os.environ.get("SLURMGEN_CHART_DIR")
    if pull is None:
        pull = os.environ.get("SLURMGEN_CHART_PULL", "1") != "0"
    return ChartLocator(chart_dir=Path(folder) if folder else None, pull=pull)


def helm_sources(files: dict) -> list[HelmSource]:
    """The Helm sources of a cluster tree's child Applications, in file order."""
    out = []
    for rel, obj in sorted(files.items()):
        if rel.startswith("apps/") and obj.get("kind") == "Application":
            source = HelmSource.of(obj)
            if source is not None:
                out.append(source)
    return out


def unproven(cluster: str, source: HelmSource, why: str, fix: str) -> str:
    """The one line that fails a preview for a chart it could not render: why, and the fix for this run's settings."""
    return f"{cluster}/{source.application}: chart {source.chart} {source.version} cannot be proven: no chart source ({why}); {fix}"


def nothing_proven(locator: ChartLocator) -> str:
    """The closing line of a run that rendered no chart: the fix for this run's settings (never a setting already on)."""
    if locator.chart_dir is not None:
        fix = (f"unpack the pinned charts into SLURMGEN_CHART_DIR={locator.chart_dir}" if locator.chart_dir.is_dir()
               else f"SLURMGEN_CHART_DIR={locator.chart_dir} is not a folder: point it at the folder of unpacked charts")
    elif locator.pull:
        fix = "--preview needs the network to pull the charts, or SLURMGEN_CHART_DIR set to a folder of unpacked charts"
    else:
        fix = "set SLURMGEN_CHART_PULL=1 to pull the charts, or SLURMGEN_CHART_DIR to a folder of unpacked charts"
    return f"preview: no chart could be rendered, so nothing was proven: {fix}"


def render_sources(cluster: str, sources: Iterable[HelmSource], locator: ChartLocator,
                   kube_version: str | None = None, allow_unproven: Collection[str] = ()
                   ) -> tuple[list[ChartRender], list[str], list[str]]:
    """(renders, not-previewed lines, problems) of some Helm sources.

    A chart with no source is a problem unless its name is in `allow_unproven`: a preview that
    renders nothing of a chart proves nothing of it, and must not pass as if it had. Each chart is
    one line: an allowed one among the not-previewed lines, any other among the problems.
    """
    renders, skipped, failures = [], [], []
    for source in sources:
        found = locator.find(source)
        path, notes = found.path, found.notes
        if path is None:
            if source.chart in allow_unproven:
                skipped.append(f"{cluster}/{source.application}: not previewed (allowed by --allow-unproven): no "
                               f"chart source for {source.chart} {source.version} ({found.why})")
            else:
                failures.append(unproven(cluster, source, found.why, found.fix))
            continue
        key = json.dumps([str(path), source.release_name, source.namespace, source.values, kube_version], sort_keys=True)
        try:
            if key not in locator.renders:
                locator.renders[key] = render(source, path, notes, kube_version)
            cached = locator.renders[key]
            renders.append(cached if cached.source == source else dataclasses.replace(cached, source=source))
        except PreviewUnavailable:
            raise
        except WrongChart as err:
            failures.append(f"{cluster}/{source.application}: {err}")
        except Exception as err:  # noqa: BLE001  (the SDK's errors: a template or values failure)
            failures.append(f"{cluster}/{source.application}: chart {source.chart} {source.version} does not render "
                            f"with our values: {str(err).splitlines()[0]}")
    return renders, skipped, failures


def kube_version(cluster: RenderedCluster) -> str:
    """The EKS version as Helm's `--kube-version` takes it: `1.34` -> `v1.34.0`."""
    version = cluster.spec.aws.kubernetes_version.lstrip("v")
    return f"v{version}.0" if version.count(".") == 1 else f"v{version}"


def preview_cluster(cluster: RenderedCluster, locator: ChartLocator,
                    allow_unproven: Collection[str] = ()) -> ClusterPreview:
    """Render one cluster's charts and run every proof on them; `allow_unproven`: chart names that may lack a source."""
    start = time.perf_counter()
    result = ClusterPreview(cluster.spec.name)
    sources = helm_sources(dict(cluster.files))
    result.charts = len(sources)
    result.renders, result.not_previewed, failures = render_sources(
        cluster.spec.name, sources, locator, kube_version=kube_version(cluster), allow_unproven=allow_unproven)
    problems, notes = project_problems(cluster, result.renders, partial=result.charts > len(result.renders))
    result.problems = (failures + stability_problems(cluster, result.renders) + problems
                       + placement_problems(cluster, result.renders)
                       + image_problems(cluster, result.renders) + values_problems(cluster, result.renders))
    result.notes = notes
    result.seconds = time.perf_counter() - start
    return result


def preview_clusters(clusters: Iterable[RenderedCluster], locator: ChartLocator,
                     allow_unproven: Collection[str] = ()) -> list[ClusterPreview]:
    try:
        return [preview_cluster(c, locator, allow_unproven) for c in clusters]
    finally:
        locator.close()
