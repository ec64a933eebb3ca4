"""Hand a command over to the project's `.venv` when the running Python lacks the pinned packages.

The README says `python main.py …`; with no venv activated that Python has no cdk8s. Rather than
fail with a ModuleNotFoundError, the entry point replaces itself (`os.execv`: same pid, stdin,
stdout, stderr and exit status) with `.venv/bin/python`, keeping the interpreter flags (`-O`, `-X`,
`-W`, ...) and the arguments. Without a `.venv` it prints one line saying what to run, exit 2.
Standard library only: it runs before any pinned package can be imported.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VENV = REPO / ".venv"
# Set in the environment of the handed-over process, so a venv that still lacks the packages
# prints the advice instead of handing over again.
GUARD = "SLURMGEN_VENV_HANDOFF"


def dependencies_present() -> bool:
    """Whether this interpreter can import the pinned packages (cdk8s stands for all of them)."""
    return importlib.util.find_spec("cdk8s") is not None


def _inside(venv: Path) -> bool:
    return Path(sys.prefix).resolve() == venv.resolve()


def _interpreter_flags() -> list[str]:
    """The flags this interpreter was started with (-O, -B, -X, -W, ...), as multiprocessing passes them on."""
    helper = getattr(subprocess, "_args_from_interpreter_flags", None)  # CPython 3.x, private but long-lived
    return list(helper()) if helper else ["-O"] * sys.flags.optimize


def handoff(argv: list[str] | None = None, *, venv: Path = VENV) -> None:
    """Return when this interpreter has the packages; else exec `venv`'s Python on the same script or exit 2."""
    if dependencies_present():
        return
    python = venv / "bin" / "python"
    if python.exists() and not _inside(venv) and os.environ.get(GUARD) != "1":
        script = Path(sys.argv[0]).resolve()
        args = sys.argv[1:] if argv is None else argv
        flags = _interpreter_flags()
        os.environ[GUARD] = "1"
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(python, [str(python), *flags, str(script), *args])
    where = f"{python} lacks them" if python.exists() else f"{venv} does not exist"
    print(f"{Path(sys.argv[0]).name}: the pinned packages (cdk8s, ...) are missing for {sys.executable} and "
          f"{where}: run 'make install' in {REPO} first", file=sys.stderr)
    raise SystemExit(2)
