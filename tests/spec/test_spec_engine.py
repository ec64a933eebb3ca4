"""One schema engine: the spec is checked by jsonschema-rs, as every rendered object is
(slurmgen/verify/schemas/core.py). Python's jsonschema is installed (kubernetes-validate, whose schema
files we read, depends on it) but never imported by a render; the tests use it as a second opinion."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import MINIMAL_SPEC, REPO



def test_checking_a_spec_imports_no_python_jsonschema():
    # GIVEN a fresh interpreter that checks a valid spec and a spec with a schema error
    code = (
        "import sys\n"
        "from slurmgen.spec import SpecError, parse_text\n"
        f"parse_text('t.yaml', {MINIMAL_SPEC!r})\n"
        "try:\n"
        f"    parse_text('t.yaml', {MINIMAL_SPEC + 'unknownKey: 1' + chr(10)!r})\n"
        "except SpecError:\n"
        "    pass\n"
        "else:\n"
        "    sys.exit('the unknown key was not refused')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'jsonschema'))\n"
    )
    # WHEN it runs
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=False)
    # THEN it succeeded without loading Python's jsonschema
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_whole_render_imports_no_python_jsonschema(tmp_path):
    # GIVEN a fresh interpreter that renders, validates and writes a cluster as `make synth` does
    spec = tmp_path / "t.yaml"
    spec.write_text(MINIMAL_SPEC)
    code = ("import sys\n"
            "from slurmgen.cli import main\n"
            f"assert main(['--spec', {str(spec)!r}, '--out', {str(tmp_path / 'out')!r}, '--no-cache']) == 0\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'jsonschema'))\n")
    # WHEN it runs
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=False)
    # THEN the objects were validated (by jsonschema-rs) without loading Python's jsonschema
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
