"""Helm silently ignores a misspelt key: every value we set must exist in the pinned chart's defaults."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Iterator

import jsonschema
import pytest
import yaml

from slurmgen.review.preview.proofs import leaf_paths
from slurmgen.spec.loader import merge
from tests.conftest import CHARTS, SHARED, need_shared
from tests.scheduling import UNVENDORED, pinned_defaults


def helm_apps(rendered) -> Iterator[tuple[str, dict[str, Any]]]:
    for cluster in rendered.values():
        for rel, obj in cluster.files.items():
            if obj["kind"] == "Application" and "chart" in obj["spec"]["source"]:
                yield f"{cluster.spec.name}/{rel}", obj["spec"]["source"]


# Maps whose keys are data (label names), not chart settings.
FREE_FORM = {"nodeSelector", "labels", "annotations", "podLabels", "podAnnotations"}


def exists(defaults: Any, path: tuple[str, ...]) -> bool:
    """True when the chart reads `path`: every key exists, or we fill a map the chart leaves open."""
    node = defaults
    for index, key in enumerate(path):
        if index and path[index - 1] in FREE_FORM and isinstance(node, dict):
            return True
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
        more = index < len(path) - 1
        if more and isinstance(node, dict) and not node:  # free-form map such as nodeSelector: {}
            return True
        if more and not isinstance(node, dict):  # setting sub-keys of a scalar or a list
            return False
    return True


def test_there_are_helm_applications(rendered):
    assert len(list(helm_apps(rendered))) >= 5


def test_every_value_key_exists_in_the_pinned_chart(rendered):
    for where, source in helm_apps(rendered):
        # GIVEN the chart's default values at the pinned version
        chart_dir = CHARTS / source["chart"] / source["targetRevision"]
        defaults = pinned_defaults(CHARTS, source)
        assert defaults is not None, f"{where}: no pinned copy of {source['chart']} {source['targetRevision']} in {CHARTS}"
        if chart_dir.is_dir():
            chart = yaml.safe_load((chart_dir / "Chart.yaml").read_text())
            assert chart["name"] == source["chart"], where
            # cert-manager's source tree says v0.0.0 (set by its release tool); the folder is the pinned release
            assert str(chart["version"]) in (source["targetRevision"], "v0.0.0"), where
        values = source["helm"].get("valuesObject", {})
        # THEN every key path we set is one the chart reads
        unknown = [".".join(p) for p in leaf_paths(values) if p and not exists(defaults, p)]
        assert not unknown, f"{where}: keys not in {source['chart']} values.yaml: {unknown}"
        # AND where the chart ships a values schema, the values validate against it
        schema_file = chart_dir / "values.schema.json"
        if schema_file.exists():
            merged = merge(defaults, values)
            jsonschema.validate(merged, json.loads(schema_file.read_text()))


def vendored_charts() -> list[dict[str, Any]]:
    return json.loads((CHARTS / "SOURCES.json").read_text())["charts"]


def test_vendored_chart_files_are_the_recorded_upstream_bytes(rendered):
    # GIVEN the vendored chart defaults and their provenance file
    charts = vendored_charts()
    for chart in charts:
        folder = CHARTS / chart["chart"] / chart["version"]
        # THEN each folder holds exactly the recorded files, each with its recorded sha256 ...
        assert sorted(p.name for p in folder.iterdir()) == sorted(chart["files"]), folder
        for name, pin in chart["files"].items():
            assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == pin["sha256"], folder / name
            # ... fetched from the raw file of the chart's folder at the pinned commit
            repo = chart["repository"].removeprefix("https://github.com/")
            assert pin["url"] == f"https://raw.githubusercontent.com/{repo}/{chart['commit']}/{chart['path']}/{name}"
    # AND exactly the charts the examples deploy are vendored, at the versions they pin, except the
    # Neuron chart, whose defaults are inlined with their citation (tests/scheduling.UNVENDORED)
    deployed = {(source["chart"], source["targetRevision"]) for _, source in helm_apps(rendered)}
    vendored = {(chart["chart"], chart["version"]) for chart in charts}
    assert set(UNVENDORED) == {("neuron-helm-chart", "1.9.0")} and not vendored & set(UNVENDORED)
    assert vendored | set(UNVENDORED) == deployed
    assert len(deployed) == 13


def test_vendored_chart_files_equal_the_shared_copies():
    # GIVEN (deep test) the chart defaults beside the checkout, or for a chart they lack (slurm-bridge)
    # the chart source at the pinned tag
    shared = need_shared(SHARED / "charts")
    sources = SHARED / "chart-sources"
    # THEN every vendored file is byte for byte the shared one
    for chart in vendored_charts():
        for name in chart["files"]:
            rel = f"{chart['chart']}/{chart['version']}/{name}"
            other = shared / rel
            if not (shared / chart["chart"]).exists():
                other = need_shared(sources / chart["chart"]) / name
            assert (CHARTS / rel).read_bytes() == other.read_bytes(), rel


@pytest.mark.parametrize("path,expected", [(("crds", "enabled"), True), (("nope",), False), (("operator", "x", "y"), False)])
def test_exists_helper(path, expected):
    assert exists({"crds": {"enabled": False}, "operator": {"x": 1}}, path) is expected
