"""Imports point down the pipeline: spec -> plan -> charts/apps -> synth -> verify -> write -> review,
with `run` stringing the stages together and `cli` on top. A module may import its own layer or any
layer below it, never one above (no cycle, and a newcomer reads the packages in order).

The layers are data: a new package must be placed here before its first import passes.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO

#: module prefix -> layer, lowest first; the longest matching prefix decides
LAYERS: dict[str, float] = {
    "slurmgen": 0, "slurmgen.errors": 0, "slurmgen._input": 0, "slurmgen._runtime": 0, "slurmgen._venv": 0,
    "slurmgen.user_cache": 0, "slurmgen.kube": 0,
    "slurmgen.catalog": 1,
    "slurmgen.spec": 2,
    "slurmgen.slurmconf": 2.5,  # the operator's slurm.conf, as the checks and the review read it
    "slurmgen.plan": 3,
    "charts": 4, "apps": 4.5,
    "slurmgen.synth": 5,
    "slurmgen.verify": 6,
    "slurmgen.write": 7,
    "slurmgen.review": 8,
    # a run: this process or a worker renders a cluster with `render`; `pipeline` runs the whole
    "slurmgen.run": 9, "slurmgen.run.render": 9.1, "slurmgen.run.pipeline": 9.4,
    "slurmgen.cli": 10,
    "slurmgen.maintain": 11,  # maintenance commands (the network refresh of the CRD schemas): no render imports them
}
SOURCES = sorted([*REPO.glob("slurmgen/**/*.py"), *REPO.glob("charts/*.py"), *REPO.glob("apps/*.py")])


def layer(module: str) -> tuple[float, str]:
    prefix = max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len, default=None)
    if prefix is None:
        raise AssertionError(f"{module}: in no layer of tests/project/test_layers.py LAYERS: add its package there")
    return LAYERS[prefix], prefix


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(source: str, name: str, is_package: bool = False) -> set[str]:
    """Every project module the module `name` imports, anywhere in its source (function-level and
    import_module too), relative imports resolved."""
    package = name.split(".") if is_package else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = ".".join(package[:len(package) - node.level + 1] + [node.module or ""]).strip(".") \
                if node.level else node.module or ""
            found |= {f"{base}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module" and node.args:
            value = getattr(node.args[0], "value", None)
            if isinstance(value, str):
                found.add(value)
    return {m for m in found if m.split(".")[0] in ("slurmgen", "charts", "apps")}


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(REPO)))
def test_a_module_imports_only_its_own_layer_and_those_below(path):
    # GIVEN a module of the generator and its layer
    own, prefix = layer(module_name(path))
    # WHEN its imports are read / THEN none reaches a layer above it
    found = imported(path.read_text(), module_name(path), path.name == "__init__.py")
    upward = sorted(f"{m} ({layer(m)[1]})" for m in found if layer(m)[0] > own)
    assert upward == [], f"{module_name(path)} ({prefix}) imports upward"


@pytest.mark.parametrize(("source", "name", "upward"), [
    ("from ..write.output import dump\n", "slurmgen.plan.probe", ["slurmgen.write.output.dump"]),
    ("def f():\n    from slurmgen.review import summary\n", "charts.probe", ["slurmgen.review.summary"]),
    ("import importlib\nimportlib.import_module('slurmgen.run.pipeline')\n", "slurmgen.run.render",
     ["slurmgen.run.pipeline"]),
    ("from . import naming\nfrom ..spec import model\n", "slurmgen.plan.probe", []),
])
def test_the_rule_sees_every_form_of_an_upward_import(source, name, upward):
    # GIVEN a module's source that imports relatively, inside a function, or by import_module
    # WHEN its imports are judged against its layer / THEN exactly the upward ones are found
    own = layer(name)[0]
    assert sorted(m for m in imported(source, name) if layer(m)[0] > own) == upward


def _module_of(name: str, known: set[str]) -> str:
    """The module an imported name lives in: `pkg.mod.func` -> `pkg.mod` (a name may be a module itself)."""
    while name not in known and "." in name:
        name = name.rpartition(".")[0]
    return name


def import_cycles(sources: dict[str, tuple[str, bool]]) -> list[list[str]]:
    """Every cycle of module imports (lazy and TYPE_CHECKING ones too) among `sources`: name -> (text, package)."""
    known = set(sources)
    graph = {name: {_module_of(m, known) for m in imported(text, name, package)} & known - {name}
             for name, (text, package) in sources.items()}
    cycles, done, path = [], set(), []

    def visit(node: str) -> None:
        if node in path:
            cycles.append(path[path.index(node):] + [node])
            return
        if node in done:
            return
        path.append(node)
        for nxt in sorted(graph[node]):
            # a package's __init__ importing its own submodules is how a package is built, not a cycle
            if not (nxt == node.rpartition(".")[0] and sources[nxt][1]):
                visit(nxt)
        path.pop()
        done.add(node)

    for name in sorted(graph):
        visit(name)
    return cycles


def test_no_module_imports_one_that_imports_it_back():
    # GIVEN every module of the generator, with its lazy and type-only imports
    sources = {module_name(p): (p.read_text(), p.name == "__init__.py") for p in SOURCES}
    # WHEN the import graph is walked / THEN it has no cycle (a lazy import that hides one is a cycle too)
    assert import_cycles(sources) == []


def test_the_cycle_rule_sees_a_cycle_hidden_behind_a_lazy_import():
    # GIVEN two modules, one importing the other inside a function, the other back for type checking only
    sources = {"slurmgen.a": ("def f():\n    from . import b\n", False),
               "slurmgen.b": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import T\n", False)}
    # WHEN the cycles are searched / THEN that one is found
    assert import_cycles(sources) == [["slurmgen.a", "slurmgen.b", "slurmgen.a"]]
