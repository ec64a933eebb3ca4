"""Where the summary's "before" comes from: a folder, or the rendered tree committed at a git ref."""

from __future__ import annotations

import re
import subprocess
import threading
from pathlib import Path
from typing import Any, Iterator

import yaml

from .._input import RENDERED_MAX_BYTES
from ..errors import UserError, printable
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
    """The same, for the output folder as committed at `ref`: every blob as git stores it.

    Listed with `git ls-tree` and read with `git cat-file --batch`, which apply no attribute: a
    committed `.gitattributes` with `export-ignore` (or an export filter) hid files from the
    `git archive` this used to read, so a removed PersistentVolume went unmentioned. Only the
    `.yaml` files of cluster folders are read, each at most RENDERED_MAX_BYTES, checked from the
    listed size before a byte is read: a large committed file costs nothing."""
    try:
        out = out.resolve()
        top = subprocess.run(["git", "-C", str(out.parent), "rev-parse", "--show-toplevel"], check=True,
                             capture_output=True, text=True).stdout.strip()
        rel = out.relative_to(Path(top).resolve()).as_posix()
        sha = resolve_ref(ref, top)
        blobs = _listed_blobs(top, sha, rel, ref)
        trees: Trees = {}
        for path, text in _read_blobs(top, blobs):
            _add(trees, path, text)
        return trees
    except subprocess.CalledProcessError as err:
        message = (err.stderr.decode() if isinstance(err.stderr, bytes) else err.stderr or "").strip().splitlines()
        raise BaseUnavailable(f"cannot read {out} at {ref}: {message[-1] if message else err}") from None
    except BaseUnavailable:
        raise
    except (OSError, ValueError, RuntimeError) as err:  # RuntimeError: a symlink loop in --out
        raise BaseUnavailable(f"cannot read {out} at {ref}: {err}") from None


def _listed_blobs(top: str, sha: str, rel: str, ref: str) -> list[tuple[str, str]]:
    """(path under `rel`, blob id) of each regular `.yaml` file of a cluster folder at `sha`; a file
    past the size bound is refused by its listed size, unread (a link or submodule is skipped, as
    the folder reader never follows one). A folder absent at `sha` lists nothing: all is new."""
    # sha: hex digits from rev-parse, never an option; --literal-pathspecs: `rel` is a path, not a glob
    listing = subprocess.run(["git", "--literal-pathspecs", "-C", top, "ls-tree", "-r", "-z", "--long", "--full-tree",
                              sha, "--", rel], check=True, capture_output=True).stdout
    blobs: list[tuple[str, str]] = []
    for record in listing.split(b"\0"):
        if not record:
            continue
        meta, _, raw_path = record.partition(b"\t")
        mode, kind, blob, size = meta.split()
        path = raw_path.decode("utf-8", errors="replace")[len(rel) + 1:]
        if kind != b"blob" or mode not in (b"100644", b"100755") or not path.endswith(".yaml") or "/" not in path:
            continue
        if int(size) > RENDERED_MAX_BYTES:
            raise BaseUnavailable(f"{rel}/{printable(path)} at {ref}: {int(size)} bytes, larger than "
                                  f"{RENDERED_MAX_BYTES // 1024} KiB; no rendered object is that large "
                                  "(restore the file, or compare with --base-dir)")
        blobs.append((path, blob.decode()))
    return blobs


def _read_blobs(top: str, blobs: list[tuple[str, str]]) -> Iterator[tuple[str, str]]:
    """(path, text) of each listed blob, read one at a time from one `git cat-file --batch` (raw
    objects: no attribute or filter applies), so memory holds one file, not the tree."""
    if not blobs:
        return
    proc = subprocess.Popen(["git", "-C", top, "cat-file", "--batch"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    stdin = proc.stdin

    def feed() -> None:  # a thread: git blocks on its output while we would block on its input
        try:
            stdin.write("".join(f"{blob}\n" for _, blob in blobs).encode())
        except OSError:
            pass
        finally:
            stdin.close()

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    try:
        for path, blob in blobs:
            header = proc.stdout.readline(200).split()
            if len(header) != 3 or header[1] != b"blob" or int(header[2]) > RENDERED_MAX_BYTES:
                raise BaseUnavailable(f"cannot read blob {blob} ({path}): git cat-file answered "
                                      f"{b' '.join(header).decode(errors='replace')!r}")
            data = proc.stdout.read(int(header[2]) + 1)[:-1]  # the object, then its newline
            yield path, data.decode("utf-8", errors="replace")
    finally:
        proc.stdout.close()
        proc.kill()
        proc.wait()
        writer.join()
