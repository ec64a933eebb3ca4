"""`make bench` reports and succeeds; `make bench-gate` fails when a target is missed.

The benchmark itself is too heavy for the test suite: its verdict and exit status are tested on
made-up rows, and the Makefile wiring on the recipes.
"""

from __future__ import annotations

import importlib.util
import re

import pytest

from tests.conftest import REPO


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("synth_bench", REPO / "bench" / "synth_bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def row(clusters: int, ours: float, baseline: float, mem: float = 200, **extra) -> dict:
    return {"label": f"{clusters} cluster(s)", "clusters": clusters, "ours": ours, "baseline": baseline,
            "mem_ours": mem, **extra}


def test_every_missed_target_is_named(bench):
    # GIVEN 10 clusters at 2x the bare app, 40 at 1.1x growing 5x, at 450 MB, and a slow one-cluster edit
    rows = [row(10, 2.0, 1.0), row(40, 10.0, 9.0, mem=450),
            {**row(40, 1.4, 1.0, alone=1.0), "label": "edit 1 of 40: synth"}]
    # THEN the verdict names each missed target, with its figure
    assert bench.missed_targets(rows) == [
        "10 cluster(s): 2.00x the bare cdk8s app (target 1.5x)",
        "40 cluster(s): 1.11x the bare cdk8s app (target 1.0x)",
        "40 vs 10 clusters: 5.00x (target 4.4x)",
        "peak memory, 40 cluster(s): 450 MB (target <= 400)",
        "edit 1 of 40: synth: 1.40x the cluster alone (target 1.3x)",
    ]


def test_targets_met_and_sizes_not_run_are_not_failures(bench):
    assert bench.missed_targets([row(10, 1.4, 1.0), row(40, 5.0, 5.0, mem=400),
                                 {**row(40, 1.3, 9.0, alone=1.0), "label": "edit 1 of 40: --check"}]) == []
    assert bench.missed_targets([row(1, 1.2, 1.0)]) == []  # growth needs 10 and 40


def test_only_the_gate_turns_a_missed_target_into_a_failure(bench):
    assert bench.exit_status(["x"], gate=False) == 0
    assert bench.exit_status(["x"], gate=True) == 1
    assert bench.exit_status([], gate=True) == 0


def recipe(makefile: str, target: str) -> str:
    match = re.search(rf"^{re.escape(target)}:[^\n]*\n((?:\t[^\n]*\n)+)", makefile, re.M)
    assert match, f"no target {target}"
    return match.group(1)


def test_make_bench_reports_and_make_bench_gate_gates():
    makefile = (REPO / "Makefile").read_text()
    assert "bench/synth_bench.py" in recipe(makefile, "bench") and "--gate" not in recipe(makefile, "bench")
    assert "bench/synth_bench.py --gate" in recipe(makefile, "bench-gate")


def test_a_variant_row_is_shown_but_not_judged(bench):
    # GIVEN the largest fleet also run with --workers 2, over the memory budget and slower
    rows = [row(40, 4.0, 5.0), {**row(40, 9.0, 5.0, mem=600), "label": "40 cluster(s), --workers 2", "variant": True}]
    # THEN only the default run is judged
    assert bench.missed_targets(rows) == []
