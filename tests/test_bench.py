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


def row(nodesets: int, ours: float, baseline: float, mem: float = 200) -> dict:
    return {"nodesets": nodesets, "ours": ours, "baseline": baseline, "mem_ours": mem}


def test_every_missed_target_is_named(bench):
    # GIVEN a run 2x the baseline at 100, growing 5x to 400, at 450 MB
    rows = [row(100, 2.0, 1.0), row(400, 10.0, 8.0, mem=450)]
    # THEN the verdict names each missed target, with its figure
    assert bench.missed_targets(rows) == [
        "100 nodesets: 2.00x the baseline (target 1.5x)",
        "400 vs 100 nodesets: 5.00x (target 4.4x)",
        "peak memory at 400 nodesets: 450 MB (target < 400)",
    ]


def test_targets_met_and_sizes_not_run_are_not_failures(bench):
    assert bench.missed_targets([row(100, 1.4, 1.0), row(400, 6.0, 4.1, mem=399)]) == []
    assert bench.missed_targets([row(1, 1.2, 1.0)]) == []  # growth and memory need 100 and 400


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
