"""No raw control or invisible character from user-supplied text reaches the terminal (issue 32,
class 9): `--allow-destroy`, `--out` and file names in dist/ are echoed escaped, on stdout and stderr;
documents (the summary, --explain) keep their line breaks and tabs."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmgen.cli import main
from slurmgen.errors import printable
from tests.conftest import MINIMAL_SPEC

ESC = "\x1b]0;owned\x07\x1b[2J"
SHOWN = "\\x1b]0;owned\\x07\\x1b[2J"


@pytest.fixture
def rendered(tmp_path) -> tuple[Path, Path]:
    spec = tmp_path / "t.yaml"
    spec.write_text(MINIMAL_SPEC)
    out = tmp_path / "dist"
    assert main(["--no-cache", "--spec", str(spec), "--out", str(out)]) == 0
    return spec, out


def _printed(capsys) -> str:
    captured = capsys.readouterr()
    return captured.out + captured.err


def test_allow_destroy_is_echoed_escaped(rendered, capsys):
    spec, out = rendered
    capsys.readouterr()
    assert main(["--no-cache", "--spec", str(spec), "--out", str(out),
                 "--allow-destroy", f"t:PersistentVolumeClaim/x{ESC}"]) == 2
    printed = _printed(capsys)
    assert "\x1b" not in printed and "\x07" not in printed and SHOWN in printed


def test_out_is_echoed_escaped(rendered, tmp_path, capsys):
    spec, _out = rendered
    foreign = tmp_path / f"d{ESC}"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("not ours\n")
    capsys.readouterr()
    assert main(["--no-cache", "--spec", str(spec), "--out", str(foreign)]) == 2
    printed = _printed(capsys)
    assert "\x1b" not in printed and SHOWN in printed


def test_file_names_in_dist_are_echoed_escaped(rendered, capsys):
    # GIVEN a file whose name holds escape sequences, planted in a rendered tree
    spec, out = rendered
    (out / "t" / "slurm" / f"x{ESC}.yaml").write_text("kind: ConfigMap\n")
    capsys.readouterr()
    # WHEN --check reports it THEN the name is escaped
    assert main(["--no-cache", "--spec", str(spec), "--out", str(out), "--check"]) == 1
    printed = _printed(capsys)
    assert "\x1b" not in printed and f"x{SHOWN}.yaml" in printed


@pytest.mark.parametrize("text, shown", [
    ("a\x1b[31mb", "a\\x1b[31mb"),
    ("bidi\u202eoverride", "bidi\\u202eoverride"),
    ("filler\u3164 and selector\ufe0f\U000e0100", "filler\\u3164 and selector\\ufe0f\\U000e0100"),
    ("line\nbreak\ttab", "line\\x0abreak\\x09tab"),
    ("plain ascii: unchanged", "plain ascii: unchanged"),
])
def test_the_one_escaper(text, shown):
    assert printable(text) == shown
    assert printable(shown) == shown  # idempotent: a line escaped twice reads the same


def test_documents_keep_their_line_breaks(rendered, capsys):
    spec, _out = rendered
    capsys.readouterr()
    assert main(["--no-cache", "--spec", str(spec), "--explain", "slurm.conf"]) == 0
    text = capsys.readouterr().out
    assert text.count("\n") > 5 and "\\x0a" not in text
