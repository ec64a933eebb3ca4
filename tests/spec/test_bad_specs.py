"""Bad input as data: every tests/cases/bad/*.yaml states the exact lines it must produce (`# expect:`).

A case whose bytes cannot hold a comment (UTF-16, invalid UTF-8) keeps its lines in `<case>.expect`.
A case judged against a previous render (a size change) writes its objects as `# base: PATH: {object}`
lines, one file each under the output folder's `t/` (made a marked output folder with t's root
Application, as synth leaves it). Each case must exit 2, print exactly those lines
on stderr (no traceback), and leave the output folder byte-for-byte as it was.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from slurmgen.cli import main
from slurmgen.write.output import MARKER, MARKER_TEXT, read_tree
from tests.conftest import TESTS

CASES = sorted((TESTS / "cases" / "bad").glob("*.yaml"))


def expected_lines(case: Path) -> list[str]:
    """The `# expect:` lines; a case that cannot hold a comment (UTF-16, invalid bytes) has them in X.expect."""
    sidecar = case.with_suffix(".expect")
    text = sidecar.read_text(encoding="utf-8") if sidecar.exists() else case.read_text(encoding="utf-8")
    lines = [line[len("# expect: "):] for line in text.splitlines() if line.startswith("# expect: ")]
    return [line.replace("FILE", shown_path(case)) for line in lines]


ROOT_APP = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: t-root, namespace: argocd}\n"


def base_files(case: Path) -> dict[str, str]:
    """PATH -> YAML of each `# base: PATH: {object}` line: the previous render the case is judged against."""
    lines = [line[len("# base: "):] for line in case.read_text(encoding="utf-8", errors="replace").splitlines()
             if line.startswith("# base: ")]
    return {path: yaml.safe_dump(yaml.safe_load(obj), sort_keys=False)
            for path, obj in (line.split(": ", 1) for line in lines)}


def shown_path(path: Path) -> str:
    """How an error line names a file: relative to the current directory when under it, else absolute."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def test_there_are_enough_cases():
    assert len(CASES) >= 25


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_bad_spec_exits_2_with_exact_lines_and_touches_nothing(case, tmp_path, capsys):
    # GIVEN an output folder that already holds a previous render
    out = tmp_path / "dist"
    (out / "t" / "slurm").mkdir(parents=True)
    (out / "t" / "slurm" / "keep.yaml").write_text("kind: ConfigMap\n")
    base = base_files(case)
    if base:
        (out / MARKER).write_text(MARKER_TEXT)
        base["bootstrap/application-t-root.yaml"] = ROOT_APP
    for rel, text in base.items():
        (out / "t" / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / "t" / rel).write_text(text)
    before = read_tree(out)
    expected = expected_lines(case)
    assert expected, f"{case.name} has no '# expect:' line"
    # WHEN the bad spec is rendered
    rc = main(["--spec", str(case), "--out", str(out)])
    # THEN exit 2, exactly the expected lines, and the output folder is untouched
    err = capsys.readouterr().err.splitlines()
    assert rc == 2
    assert err == expected
    assert "Traceback" not in "\n".join(err)
    assert read_tree(out) == before
