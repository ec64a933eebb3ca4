"""Write rendered trees: deterministic YAML, one object per file, each cluster folder replaced in one step.

A cluster is rendered into a temporary sibling folder, then swapped with `dist/<cluster>/` by an
atomic exchange (renameat2 RENAME_EXCHANGE on Linux), so a reader or an interrupted run never sees
a half-written tree and files of objects removed from the spec disappear.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Mapping

import yaml

_Dumper: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper2(_Dumper):  # type: ignore[misc, valid-type]
    """Block-style YAML; multi-line strings as literal blocks so config files stay readable in diffs."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value and not value.startswith(" ") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper2.add_representer(str, _str)


def dump(obj: Any) -> str:
    """One object as YAML text: key order as given (apiVersion, kind, metadata first), no line folding."""
    return yaml.dump(obj, Dumper=_Dumper2, sort_keys=False, default_flow_style=False,
                     allow_unicode=True, width=1 << 30)


def write_tree(root: Path, files: Mapping[str, Any]) -> None:
    """Write files (relative path -> object, or its YAML text) under a folder `root`."""
    for rel, obj in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(obj if isinstance(obj, str) else dump(obj), encoding="utf-8")


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two existing paths (Linux renameat2); False when the platform cannot."""
    libc_name = ctypes.util.find_library("c")
    if not libc_name:
        return False
    libc = ctypes.CDLL(libc_name, use_errno=True)
    fn = getattr(libc, "renameat2", None)
    if fn is None:
        return False
    rc = fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    return rc == 0


def replace_dir(target: Path, files: Mapping[str, Any]) -> None:
    """Make `target` hold exactly `files`, switching from the old tree to the new one in one step."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.new-", dir=target.parent))
    try:
        write_tree(staging, files)
        if not target.exists():
            os.rename(staging, target)
            return
        if not _exchange(staging, target):
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
            os.rename(target, old / target.name)
            os.rename(staging, target)
            staging = old
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def read_tree(root: Path) -> dict[str, str]:
    """Every file under `root` as relative path -> text (for --check and tests)."""
    if not root.is_dir():
        return {}
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(root.rglob("*")) if p.is_file()}
