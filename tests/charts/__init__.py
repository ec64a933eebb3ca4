"""One chart at a time, as cdk8s-plus tests its constructs (`Testing.chart()`, explicit field checks).

`unit(ChartClass, **changes)` parses the minimal spec with `changes` merged in (tests/spec_builder.py),
plans it (slurmgen/plan) and builds only that chart in a `cdk8s.Testing.app()`: no other chart, no
Argo CD layer, no verify stage. It returns the chart's objects by `<kind>/<name>`.
"""

from __future__ import annotations

import atexit
import inspect
import shutil
import tempfile
from functools import cache
from typing import Any, Callable

from cdk8s import App, Chart, Testing

from charts.unit import UnitChart
from slurmgen.plan.nodesets import plan_cluster
from slurmgen.spec import ClusterSpec, parse_text
from tests.spec_builder import spec_text

Obj = dict[str, Any]


@cache
def _outdir() -> str:
    """One empty folder per test process for the apps' outdir: Testing.app() without one makes a
    folder per call under /tmp and leaves it there (nothing is synthesized to disk here)."""
    folder = tempfile.mkdtemp(prefix="slurmgen-chart-tests-")
    atexit.register(shutil.rmtree, folder, True)
    return folder


def new_app() -> App:
    """An empty cdk8s app for test charts (`Testing.app()` with the shared outdir)."""
    return Testing.app(outdir=_outdir())


def synth(chart: Chart) -> dict[str, Obj]:
    """The objects of `chart` alone: {"<Kind>/<name>": object}."""
    return {f"{o['kind']}/{o['metadata']['name']}": o for o in Testing.synth(chart)}


def model(**changes: Any) -> ClusterSpec:
    """The minimal spec with `changes` (spec_builder.spec_text keywords), parsed and checked."""
    return parse_text("t.yaml", spec_text(**changes))


def build(chart_class: type[UnitChart], spec: ClusterSpec) -> dict[str, Obj]:
    """`chart_class` built alone from `spec` and its plan: {"<Kind>/<name>": object}."""
    app = new_app()
    if "plans" in inspect.signature(chart_class.__init__).parameters:  # compute, the Slurm cluster
        chart = chart_class(app, spec, plan_cluster(spec))  # type: ignore[call-arg]
    else:
        chart = chart_class(app, spec)  # type: ignore[call-arg]
    return synth(chart)


def unit(chart_class: type[UnitChart], **changes: Any) -> dict[str, Obj]:
    """build() of the minimal spec with `changes`."""
    return build(chart_class, model(**changes))


def part(emitter: Callable[..., None], spec: ClusterSpec, *args: Any) -> dict[str, Obj]:
    """What one emitter (charts/policy.emit_policy, topology.emit_labeler, ...) adds to an empty chart
    (what `cdk8s.Testing.chart()` makes), called as emitter(chart, spec, *args): {"<Kind>/<name>": object}."""
    chart = Chart(new_app(), "test")
    emitter(chart, spec, *args)
    return synth(chart)
