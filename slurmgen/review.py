"""Where the summary's "before" comes from: a folder, or the rendered tree committed at a git ref."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path
from typing import Any

from .guards import parse_object, read_tree

Trees = dict[str, dict[str, dict[str, Any]]]


class BaseUnavailable(RuntimeError):
    """The base to compare with cannot be read (not a git checkout, unknown ref, ...)."""


def _add(trees: Trees, rel: str, text: str) -> None:
    cluster, _, path = rel.partition("/")
    if not path.endswith(".yaml") or "/" not in path:
        return
    obj = parse_object(text)
    if obj is not None:
        trees.setdefault(cluster, {})[path] = obj


def trees_from_dir(root: Path) -> Trees:
    """{cluster: {unit/file.yaml: object}} of an output folder (empty when it does not exist)."""
    if not root.is_dir():
        return {}
    trees = {folder.name: {rel: obj for rel, obj in read_tree(folder).items() if "/" in rel}
             for folder in sorted(p for p in root.iterdir() if p.is_dir())}
    return {name: tree for name, tree in trees.items() if tree}


def trees_from_git(ref: str, out: Path) -> Trees:
    """The same, for the output folder as committed at `ref` (read with `git archive`, no checkout)."""
    out = out.resolve()
    try:
        top = subprocess.run(["git", "-C", str(out.parent), "rev-parse", "--show-toplevel"], check=True,
                             capture_output=True, text=True).stdout.strip()
        rel = out.relative_to(Path(top).resolve()).as_posix()
        archive = subprocess.run(["git", "-C", top, "archive", "--format=tar", ref, "--", rel], check=True,
                                 capture_output=True).stdout
    except subprocess.CalledProcessError as err:
        message = (err.stderr.decode() if isinstance(err.stderr, bytes) else err.stderr or "").strip().splitlines()
        if message and "did not match any files" in message[-1]:
            return {}  # the folder did not exist at that ref: everything is new
        raise BaseUnavailable(f"cannot read {out} at {ref}: {message[-1] if message else err}") from None
    except (OSError, ValueError) as err:
        raise BaseUnavailable(f"cannot read {out} at {ref}: {err}") from None
    trees: Trees = {}
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            handle = tar.extractfile(member) if member.isfile() else None
            if handle is not None:
                _add(trees, member.name[len(rel) + 1:], handle.read().decode("utf-8"))
    return trees
