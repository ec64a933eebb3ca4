"""Write rendered trees: deterministic YAML, one object per file, each cluster folder replaced in one step.

A cluster is written into a temporary sibling folder, then renamed into `dist/<cluster>/` (the old
tree renamed aside just before), so an interrupted run never leaves a half-written tree, and files
of objects removed from the spec disappear. A run killed between those two renames leaves the old
tree whole under its temporary name; the next run finds it by that name and puts it back (survey).

The writer only touches an output folder it owns: one holding the `.slurmgen` marker, or a new or
empty folder (it then writes the marker), or an unmarked one holding nothing but cluster trees it
rendered (an output folder from before the marker existed). Anything else in the way is refused
(`survey`), so `--out .` or `--out ~` can never replace a folder the tool did not write.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from ..errors import UserError

#: libyaml's emitter (in the pinned PyYAML wheel, `yaml.__with_libyaml__`); PyYAML's own in Python
#: only where the wheel was built without it.
_Base: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_Base):  # type: ignore[misc, valid-type]
    """Block-style YAML; multi-line strings as literal blocks so config files stay readable in diffs;
    a value used twice is written twice, never as an `&id001` anchor and `*id001` alias."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value and not value.startswith(" ") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump(obj: Any) -> str:
    """One object as YAML text: key order as given (apiVersion, kind, metadata first), no line folding."""
    return yaml.dump(obj, Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                     allow_unicode=True, width=1 << 30)


def write_tree(root: Path, files: Mapping[str, Any]) -> None:
    """Write files (relative path -> object, or its YAML text) under a folder `root`.

    Plain os calls, each folder made once: a fleet writes thousands of small files, and pathlib's
    per-file objects and mkdir probes cost more than the writes."""
    base = os.fspath(root)
    made: set[str] = set()
    for rel, obj in files.items():
        if problem := unsafe_relative_path(rel):
            raise OutputError([f"{root}: refusing to write {rel[:80]!r}: {problem}"])
        path = os.path.join(base, rel)
        folder = os.path.dirname(path)
        if folder not in made:
            os.makedirs(folder, exist_ok=True)
            made.add(folder)
        _write_file(path, obj if isinstance(obj, str) else dump(obj))


def unsafe_relative_path(rel: object) -> str | None:
    """Why `rel` is no name of a file inside a cluster folder (None when it is one).

    Every name the writer joins onto a folder passes here, whoever produced it (a render, the
    render cache): an absolute name, `..`, an empty or `.` part or a backslash could reach outside.
    """
    if not isinstance(rel, str) or not rel:
        return "not a file name"
    if rel.startswith("/") or "\\" in rel or "\0" in rel:
        return "not a relative path"
    if any(part in ("", ".", "..") for part in rel.split("/")):
        return "a path must not hold '..', '.' or empty parts"
    return None


def _write_file(path: str, text: str) -> None:
    """Write one new file (the seam the fault-injection tests replace).

    Mode "x" (O_CREAT|O_EXCL): the file is always created here, so a link or FIFO already at
    `path` is an error, never followed."""
    with open(path, "x", encoding="utf-8") as handle:
        handle.write(text)


def _replace_own_file(path: Path, text: str) -> None:
    """Put `text` at `path` (the marker) without ever opening what is there.

    Written into a new temporary file (mkstemp: O_EXCL, mode 0600 then 0644) and renamed over
    `path`: rename replaces a symbolic link or FIFO itself, it never writes through one (a
    committed `dist/.slurmgen -> ~/.bashrc` must not truncate the target)."""
    fd, tmp = tempfile.mkstemp(prefix=f"{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# --- ownership --------------------------------------------------------------------------------

MARKER = ".slurmgen"
MARKER_TEXT = ("slurmgen output folder: every <cluster>/ folder here is rendered by slurmgen from "
               "clusters/<cluster>.yaml and replaced whole by each synth. Put nothing else here.\n")
# Temporary folders of a run: `.<cluster>.new-XXXX` (the tree being written) and `.<cluster>.old-XXXX`
# (the tree it replaces, kept until every cluster of the run is in). A SIGKILL can leave them: an
# `.old-` folder whose cluster folder is missing is that cluster's previous tree (Survey.restore).
_LEFTOVER = re.compile(r"^\.(?P<cluster>[^/]+)\.(?P<kind>new|old)-(?P<token>[A-Za-z0-9_]+)$")


class OutputError(UserError):
    """The output folder cannot be written (not ours, not a folder, a write failed): one line each."""


def forbidden(out: Path, repo: Path) -> str | None:
    """Why `out` can never be an output folder (/, the home folder, the repository or above it), or None."""
    try:
        target = out.resolve()
        home = Path.home().resolve()
    except (OSError, RuntimeError) as err:  # a symlink loop, no home directory
        return f"it cannot be resolved ({err})"
    if target == Path(target.anchor):
        return "it is the filesystem root"
    if target == home or target in home.parents:
        return "it is the home folder (or a folder above it)"
    repo = repo.resolve()
    if target == repo or target in repo.parents:
        return f"it is the repository {repo} (or a folder above it), where clusters/, slurmgen/ and .git/ live"
    return None


def _foreign_entry(root: Path) -> str | None:
    """The first thing under `root` (depth first, by name) that is neither a folder nor a regular
    file (a symbolic link, a socket...). os.scandir: the kind of an entry comes with the listing,
    so a fleet's 3,000 files cost no stat call each."""
    folders = [os.fspath(root)]
    while folders:
        folder = folders.pop()
        subfolders = []
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            if entry.is_dir(follow_symlinks=False):
                subfolders.append(entry.path)
            elif not entry.is_file(follow_symlinks=False):
                kind = "a symbolic link" if entry.is_symlink() else "not a regular file"
                return f"{entry.path} is {kind}"
        folders += reversed(subfolders)
    return None


def cluster_problem(folder: Path, name: str) -> str | None:
    """Why `folder` is not a cluster tree slurmgen rendered for `name` (None when it is).

    Ours: a real folder (no symlink anywhere inside) holding the root Application every render
    writes (`bootstrap/application-<name>-root.yaml`).
    """
    try:
        mode = folder.lstat().st_mode
        if not stat.S_ISDIR(mode):
            return f"{folder}: exists and is not a folder slurmgen rendered"
        root_app = folder / "bootstrap" / f"application-{name}-root.yaml"
        if not (root_app.is_file() and not root_app.is_symlink()):
            return f"{folder}: exists but is not a cluster tree slurmgen rendered (no bootstrap/{root_app.name})"
        inside = _foreign_entry(folder)
        return f"{folder}: not a tree slurmgen writes: {inside}" if inside else None
    except OSError as err:
        return f"{folder}: cannot inspect: {err.strerror or err}"


@dataclass
class Survey:
    """What is in an output folder before a write: problems refuse it; leftovers are a crash's temp folders."""

    out: Path
    problems: list[str] = field(default_factory=list)
    leftovers: list[Path] = field(default_factory=list)
    marked: bool = False
    # cluster -> its previous tree, renamed aside by a run killed before the new one was renamed in
    restore: dict[str, Path] = field(default_factory=dict)


def survey(out: Path, names: list[str]) -> Survey:
    """Check that `out` is ours (or new/empty) and that each `out/<name>` is absent or a tree we rendered."""
    result = Survey(out)
    advice = "move it away, or pass --out with a new or empty folder"
    for name in names:
        if not name or name.startswith(".") or "/" in name or name in ("..", "."):
            result.problems.append(f"{out}: cannot write cluster {name!r}: not a plain folder name")
    try:
        if not os.path.lexists(out):
            return result
        if out.is_symlink():
            result.problems.append(f"{out}: is a symbolic link; slurmgen writes only into a real folder: "
                                   "pass --out with the folder it points to")
            return result
        if not out.is_dir():
            result.problems.append(f"{out}: exists and is not a folder; {advice}")
            return result
        entries = sorted(os.listdir(out))
    except OSError as err:
        result.problems.append(f"{out}: cannot read the output folder: {err.strerror or err}")
        return result
    marker = out / MARKER
    if MARKER in entries:
        try:
            if not marker.is_symlink() and marker.is_file():
                with marker.open("rb") as handle:
                    result.marked = handle.read(len(MARKER_TEXT)).startswith(b"slurmgen output folder")
        except OSError:
            result.marked = False
        if not result.marked:
            result.problems.append(f"{marker}: not slurmgen's marker; {advice}")
            return result
    for entry in entries:
        path = out / entry
        match = _LEFTOVER.match(entry)
        if match and path.is_dir() and not path.is_symlink():
            cluster = match["cluster"]
            if match["kind"] == "old" and not os.path.lexists(out / cluster) and cluster not in result.restore:
                if problem := cluster_problem(path, cluster):
                    result.problems.append(f"{problem}; {advice}")
                    return result
                result.restore[cluster] = path
            elif match["kind"] == "old" and cluster in result.restore:
                result.problems.append(f"{out / cluster}: missing, and both {result.restore[cluster].name} and {entry} "
                                       "could be its previous tree; move the wrong one away")
                return result
            else:
                result.leftovers.append(path)
        elif not result.marked and entry != MARKER:
            # An unmarked folder is adopted only when it holds nothing but cluster trees we rendered.
            if cluster_problem(path, entry):
                result.problems.append(f"{out}: not a slurmgen output folder: no {MARKER} marker, and {entry!r} in it "
                                       f"is not a cluster tree slurmgen rendered; {advice}")
                return result
    if result.marked:
        for name in names:
            if os.path.lexists(out / name):
                problem = cluster_problem(out / name, name)
                if problem:
                    result.problems.append(f"{problem}; {advice}")
    return result


def leftover_line(path: Path) -> str:
    """--check's line for a temporary folder an interrupted synth left."""
    return f"leftover: {path}: temporary folder of an interrupted synth; the next synth removes it"


def interrupted_line(out: Path, name: str, old: Path) -> str:
    """--check's line for a synth killed between renaming a cluster's old tree aside and its new one in."""
    return (f"interrupted: {out / name}: missing, a synth was killed while replacing it; its previous tree is "
            f"{old}: the next synth puts it back")


def restore(found: Survey) -> None:
    """Put back the previous tree of each cluster a killed run left without one (Survey.restore),
    before anything reads `out/<cluster>` (the guards judge the change against that tree)."""
    for name, old in sorted(found.restore.items()):
        os.rename(old, found.out / name)
    found.restore.clear()


# --- writing ------------------------------------------------------------------------------------


def write_all(out: Path, trees: Mapping[str, Mapping[str, Any]], survey_: Survey | None = None) -> None:
    """Replace `out/<cluster>/` for every cluster of `trees`, all or nothing.

    Every tree is first written into a temporary sibling; only then are they renamed in. A failure
    (or SIGTERM, raised as SystemExit) while renaming puts the old trees back, so the folder holds
    every new tree or every old one. Temporary folders are removed on every exit path; those a
    SIGKILL left behind are removed (or, for a missing cluster's old tree, put back) by the next
    write. Raises OutputError when `out` is not ours; OSError when the file system fails (nothing
    changed then).
    """
    found = survey_ or survey(out, list(trees))
    if found.problems:
        raise OutputError(found.problems)
    restore(found)
    created = not os.path.lexists(out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        _replace_all(out, trees)
    except BaseException:
        if created:
            shutil.rmtree(out, ignore_errors=True)  # nothing of ours in it: leave no empty folder behind
        raise
    # Only once the new trees are in: a failed run leaves the folder exactly as it was.
    if not found.marked:
        _replace_own_file(out / MARKER, MARKER_TEXT)
    for leftover in found.leftovers:
        shutil.rmtree(leftover, ignore_errors=True)


def _replace_all(out: Path, trees: Mapping[str, Mapping[str, Any]]) -> None:
    """Stage every tree beside its target, then rename them all in (put back on any failure).

    The old trees stay aside (`.<cluster>.old-`) until every new one is in, then are removed: a
    SIGKILL in between leaves them, which the next run's survey reports and removes.
    """
    staged: dict[str, Path] = {}
    swapped: list[tuple[str, Path | None]] = []
    try:
        _stage_all(out, trees, staged)
        try:
            for name in trees:
                swapped.append((name, _swap(staged[name], out / name)))
        except BaseException:
            _rollback(out, staged, swapped)
            raise
    finally:
        for path in [*staged.values(), *(old for _, old in swapped if old is not None)]:
            shutil.rmtree(path, ignore_errors=True)


def _stage_all(out: Path, trees: Mapping[str, Mapping[str, Any]], staged: dict[str, Path]) -> None:
    """Write every tree into a new staging folder, named in `staged` first (the caller removes them
    whatever happens), two trees at a time (one tree: in this thread).

    Why two: creating a file is kernel CPU time with the GIL released. Measured (issue 22), 40 trees
    of 75 files on the shared 2-CPU machine, 10 interleaved runs: 1.02 -> 0.62 s (load ~3.6; at
    load ~6 only 1.43 -> 1.33 s). On a failure or SIGTERM (SystemExit here) the trees not started
    are cancelled and the one being written is waited for, so nothing writes into a staging folder
    once the caller removes it.
    """
    mode = 0o777 & ~_umask()  # before any thread: reading the umask sets it for a moment
    for name in trees:
        staged[name] = _staging_folder(out, name, mode)
    if len(trees) == 1:  # the usual edit: no thread to start
        for name, files in trees.items():
            write_tree(staged[name], files)
        return
    pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="slurmgen-stage")
    try:
        for job in [pool.submit(write_tree, staged[name], files) for name, files in trees.items()]:
            job.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _umask() -> int:
    """The process umask (os.umask can only be read by setting it)."""
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def _staging_folder(out: Path, name: str, mode: int) -> Path:
    """A new temporary sibling `.<name>.new-XXXX` of `out/<name>`, to write its tree into.

    mkdtemp makes the folder 0700 whatever the umask; it becomes `out/<name>/` itself, so it is
    given `mode` (0777 less the umask), as mkdir would (0755 under umask 022).
    """
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.new-", dir=out))
    staging.chmod(mode)
    return staging


def _swap(staging: Path, target: Path) -> Path | None:
    """Rename `staging` to `target`; an existing `target` is first renamed aside to
    `.<name>.old-<staging's token>` (returned; None when there was none).

    Two renames, each atomic (a directory cannot be renamed over a non-empty one without Linux's
    renameat2): killed between them, `target` is missing and its old tree is whole under the `.old-`
    name, which the next survey puts back (Survey.restore).
    """
    if not os.path.lexists(target):
        os.rename(staging, target)
        return None
    old = target.parent / f".{target.name}.old-{staging.name.rsplit('.new-', 1)[1]}"
    os.rename(target, old)
    try:
        os.rename(staging, target)
    except BaseException:
        os.rename(old, target)
        raise
    return old


def _rollback(out: Path, staged: Mapping[str, Path], swapped: list[tuple[str, Path | None]]) -> None:
    """Put back the old trees of the clusters already renamed in; when that fails too, say which."""
    stuck: list[str] = []
    for name, old in reversed(swapped):
        try:
            os.rename(out / name, staged[name])
            if old is not None:
                os.rename(old, out / name)
        except OSError:
            stuck.append(name)
    if stuck:
        raise OutputError([f"{out / name}: the write failed and this cluster's previous tree could not be put back "
                           "(it may hold the new render, or be missing with its old tree in a .old- folder beside "
                           "it); run synth again" for name in sorted(stuck)])


def replace_dir(target: Path, files: Mapping[str, Any]) -> None:
    """Make `target` hold exactly `files`, switching from the old tree to the new one by renames.

    The bare primitive, no ownership check: the command line goes through `write_all`.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    _replace_all(target.parent, {target.name: files})


# --- reading ------------------------------------------------------------------------------------

NOT_A_FILE = "\0not a regular file\0"  # read_tree's value for a symlink, socket... (never followed)


def read_tree(root: Path) -> dict[str, str]:
    """Every entry under `root` as relative path -> text (for --check and tests).

    Symbolic links are never followed (a link out of the repository must not be read or shown):
    a link, or anything not a regular file, reads as NOT_A_FILE; bytes that are not UTF-8 are
    replaced, so a broken file shows as a change, never as a traceback.
    """
    if root.is_symlink() or not root.is_dir():
        return {}
    tree: dict[str, str] = {}
    folders = [(os.fspath(root), "")]
    while folders:  # os.scandir: the kind of each entry comes with the listing, no stat per file
        folder, prefix = folders.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:  # as os.walk: a folder that cannot be listed shows its files as missing
            continue
        for entry in entries:
            rel = prefix + entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    folders.append((entry.path, rel + "/"))
                elif entry.is_file(follow_symlinks=False):
                    with open(entry.path, "rb") as handle:
                        tree[rel] = handle.read().decode("utf-8", errors="replace")
                else:
                    tree[rel] = NOT_A_FILE
            except OSError as err:
                tree[rel] = f"\0unreadable: {err.strerror or err}\0"
    return dict(sorted(tree.items()))
