"""Where the summary's "before" comes from: a folder, or the rendered tree committed at a git ref."""

from __future__ import annotations

import io
import re
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import yaml

from ..errors import UserError
from ..verify.guards import UnreadableTree, parse_object, read_tree

Trees = dict[str, dict[str, dict[str, Any]]]


class BaseUnavailable(UserError):
    """The base to compare with cannot be read (not a git checkout, unknown ref, ...)."""


def _add(trees: Trees, rel: str, text: str) -> None:
    cluster, _, path = rel.partition("/")
    if not path.endswith(".yaml") or "/" not in path:
        return
    try:
        obj = parse_object(text)
    except yaml.YAMLError as err:
        raise BaseUnavailable(f"{rel}: cannot parse the base's file: {str(err).splitlines()[0]}") from None
    if obj is not None:
        trees.setdefault(cluster, {})[path] = obj


def trees_from_dir(root: Path) -> Trees:
    """{cluster: {unit/file.yaml: object}} of an output folder.

    A missing folder is an error, not an empty base (a typo would show every object as added);
    symbolic links are never followed; an unreadable file is an error naming it.
    """
    try:
        if root.is_symlink() or not root.is_dir():
            raise BaseUnavailable(f"{root}: --base-dir: not a folder (does it exist?)")
        folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink())
        trees = {folder.name: {rel: obj for rel, obj in read_tree(folder).items() if "/" in rel} for folder in folders}
    except UnreadableTree as err:
        raise BaseUnavailable(err.lines[0]) from None
    except OSError as err:
        raise BaseUnavailable(f"{root}: --base-dir: cannot read: {err.strerror or err}") from None
    return {name: tree for name, tree in trees.items() if tree}


# A revision as a user writes one (HEAD, HEAD~2, origin/main, v1.2, a sha, main@{1}): never an
# option (no leading '-'), no whitespace, no `:path`, no range.
_REF = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./@{}~^+-]*$")


def resolve_ref(ref: str, top: str) -> str:
    """The commit a --base names, checked: the value reaches git only after --end-of-options."""
    if not _REF.match(ref) or ".." in ref or len(ref) > 256:
        raise BaseUnavailable(f"--base {ref!r}: not a git revision (a branch, tag, commit or HEAD~N)")
    run = subprocess.run(["git", "-C", top, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
                         capture_output=True, text=True)
    sha = run.stdout.strip()
    if run.returncode != 0 or not re.fullmatch(r"[0-9a-f]{40,64}", sha):
        raise BaseUnavailable(f"--base {ref!r}: no such commit in {top}")
    return sha


def trees_from_git(ref: str, out: Path) -> Trees:
    """The same, for the output folder as committed at `ref` (read with `git archive`, no checkout)."""
    try:
        out = out.resolve()
        top = subprocess.run(["git", "-C", str(out.parent), "rev-parse", "--show-toplevel"], check=True,
                             capture_output=True, text=True).stdout.strip()
        rel = out.relative_to(Path(top).resolve()).as_posix()
        sha = resolve_ref(ref, top)
        # sha: hex digits from rev-parse, never an option (git archive has no --end-of-options before `--`)
        archive = subprocess.run(["git", "-C", top, "archive", "--format=tar", sha, "--", rel], check=True,
                                 capture_output=True).stdout
    except subprocess.CalledProcessError as err:
        message = (err.stderr.decode() if isinstance(err.stderr, bytes) else err.stderr or "").strip().splitlines()
        if message and "did not match any files" in message[-1]:
            return {}  # the folder did not exist at that ref: everything is new
        raise BaseUnavailable(f"cannot read {out} at {ref}: {message[-1] if message else err}") from None
    except BaseUnavailable:
        raise
    except (OSError, ValueError, RuntimeError) as err:  # RuntimeError: a symlink loop in --out
        raise BaseUnavailable(f"cannot read {out} at {ref}: {err}") from None
    trees: Trees = {}
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            handle = tar.extractfile(member) if member.isfile() else None
            if handle is not None:
                _add(trees, member.name[len(rel) + 1:], handle.read().decode("utf-8", errors="replace"))
    return trees
