"""Write rendered trees: deterministic YAML, one object per file, each cluster folder replaced in one step.

A cluster is rendered into a temporary sibling folder, then swapped with `dist/<cluster>/` by an
atomic exchange (renameat2 RENAME_EXCHANGE on Linux), so a reader or an interrupted run never sees
a half-written tree and files of objects removed from the spec disappear.

The writer only touches an output folder it owns: one holding the `.slurmgen` marker, or a new or
empty folder (it then writes the marker), or an unmarked one holding nothing but cluster trees it
rendered (an output folder from before the marker existed). Anything else in the way is refused
(`survey`), so `--out .` or `--out ~` can never replace a folder the tool did not write.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import os
import re
import shutil
import stat
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import yaml

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
    """Put `text` at `path` (the marker, the journal) without ever opening what is there.

    Written into a new temporary file (mkstemp: O_EXCL, mode 0600 then 0644) and renamed over
    `path`: rename replaces a symbolic link or FIFO itself, it never writes through one (a
    committed `dist/.slurmgen.swapping -> ~/.bashrc` must not truncate the target)."""
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


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


@functools.lru_cache(maxsize=1)
def _renameat2() -> Any:
    """libc's renameat2, looked up once (find_library runs ldconfig: ~3 ms a call); None when absent."""
    libc_name = ctypes.util.find_library("c")
    if not libc_name:
        return None
    return getattr(ctypes.CDLL(libc_name, use_errno=True), "renameat2", None)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two existing paths (Linux renameat2); False when the platform cannot."""
    fn = _renameat2()
    if fn is None:
        return False
    rc = fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    return rc == 0


# --- ownership --------------------------------------------------------------------------------

MARKER = ".slurmgen"
MARKER_TEXT = ("slurmgen output folder: every <cluster>/ folder here is rendered by slurmgen from "
               "clusters/<cluster>.yaml and replaced whole by each synth. Put nothing else here.\n")
# Written just before the swaps, removed right after: a SIGKILL between two swaps leaves it, naming
# the clusters that may hold either render (the only window where a reader could see a mix).
JOURNAL = ".slurmgen.swapping"
# Temporary folders of a run: `.<cluster>.new-XXXX` (the tree being written, or the old one after
# the swap) and `.<cluster>.old-XXXX` (without renameat2). A crash (SIGKILL) can leave them.
_LEFTOVER = re.compile(r"^\.(?P<cluster>[^/]+)\.(?:new|old)-[A-Za-z0-9_]+$")


class OutputError(Exception):
    """The output folder cannot be written (not ours, not a folder, a write failed): one line each."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        super().__init__("\n".join(lines))


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


def _not_regular(path: Path) -> str | None:
    """What `path` is when it is not a regular file (lstat: a link is never followed), else None."""
    try:
        mode = path.lstat().st_mode
    except OSError as err:
        return f"cannot be inspected ({err.strerror or err})"
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "a folder" if stat.S_ISDIR(mode) else "not a regular file (a FIFO, socket or device)"


@dataclass
class Survey:
    """What is in an output folder before a write: problems refuse it; leftovers are a crash's temp folders."""

    out: Path
    problems: list[str] = field(default_factory=list)
    leftovers: list[Path] = field(default_factory=list)
    marked: bool = False
    interrupted: list[str] = field(default_factory=list)  # clusters an interrupted swap may have left mixed


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
        if entry == JOURNAL and (kind := _not_regular(path)):
            result.problems.append(f"{path}: {kind}, not the journal slurmgen writes; remove it")
            return result
        if entry == JOURNAL:
            try:
                with path.open("rb") as handle:  # a few names; a huge file is read no further
                    names = handle.read(1 << 16).decode("utf-8", errors="replace").split()
                result.interrupted = sorted({n for n in names if n and not n.startswith(".") and "/" not in n})
            except OSError as err:
                result.problems.append(f"{path}: cannot read: {err.strerror or err}")
            continue
        match = _LEFTOVER.match(entry)
        if match and path.is_dir() and not path.is_symlink():
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


def interrupted_line(out: Path, names: list[str]) -> str:
    """--check's line for a synth killed between two swaps."""
    return (f"interrupted: {out}: a synth was killed while swapping in {', '.join(names)}; each may hold the new or "
            "the old render: run synth again")


# --- writing ------------------------------------------------------------------------------------


def _swap(staging: Path, target: Path, olds: list[Path]) -> Callable[[], None]:
    """Put `staging` at `target` in one step; returns how to undo it (the old tree ends in `staging`).

    Without renameat2 the old tree moves to a `.old-` folder first (appended to `olds`, removed later).
    """
    if not os.path.lexists(target):
        os.rename(staging, target)
        return lambda: os.rename(target, staging)
    if _exchange(staging, target):
        def exchange_back() -> None:
            if not _exchange(staging, target):
                raise OSError(f"cannot swap {target} back")
        return exchange_back
    old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
    olds.append(old)
    os.rename(target, old / target.name)
    os.rename(staging, target)

    def undo() -> None:
        os.rename(target, staging)
        os.rename(old / target.name, target)

    return undo


def write_all(out: Path, trees: Mapping[str, Mapping[str, Any]], survey_: Survey | None = None) -> None:
    """Replace `out/<cluster>/` for every cluster of `trees`, all or nothing.

    Every tree is first written into a temporary sibling; only then are they swapped in, one
    rename each. A failure (or SIGTERM, raised as SystemExit) while swapping swaps the done ones
    back, so a reader sees either every new tree or every old one. Temporary folders are removed
    on every exit path; those a SIGKILL left behind are removed by the next write. Raises
    OutputError when `out` is not ours; OSError when the file system fails (nothing changed then).
    """
    found = survey_ or survey(out, list(trees))
    if found.problems:
        raise OutputError(found.problems)
    created = not os.path.lexists(out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        _swap_in(out, trees, journal=out / JOURNAL, pending=found.interrupted)
    except BaseException:
        if created:
            shutil.rmtree(out, ignore_errors=True)  # nothing of ours in it: leave no empty folder behind
        raise
    # Only once the new trees are in: a failed run leaves the folder exactly as it was.
    if not found.marked:
        _replace_own_file(out / MARKER, MARKER_TEXT)
    for leftover in found.leftovers:
        shutil.rmtree(leftover, ignore_errors=True)
    # Every tree of this run is in; clusters an earlier interrupted run left mixed and that this
    # run (--spec) did not rewrite stay named.
    _write_journal(out / JOURNAL, [name for name in found.interrupted if name not in trees])


def _write_journal(journal: Path, names: Iterable[str]) -> None:
    """Name `names` in the journal (remove it when there is none)."""
    names = sorted(set(names))
    if names:
        _replace_own_file(journal, "".join(f"{n}\n" for n in names))
    else:
        journal.unlink(missing_ok=True)


def _swap_in(out: Path, trees: Mapping[str, Mapping[str, Any]], journal: Path | None = None,
             pending: Iterable[str] = ()) -> None:
    """Stage every tree beside its target, then swap them all in (rolled back on any failure).

    `journal`, when given, names the clusters being swapped (and the `pending` ones an earlier
    interrupted run left) while the swaps run (see JOURNAL); after a rollback only `pending`.
    """
    pending = list(pending)
    staged: dict[str, Path] = {}
    undo: list[tuple[str, Callable[[], None]]] = []
    olds: list[Path] = []
    try:
        _stage_all(out, trees, staged)
        try:
            if journal is not None:
                _write_journal(journal, [*pending, *trees])
            for name in trees:
                undo.append((name, _swap(staged[name], out / name, olds)))
        except BaseException:
            _rollback(out, undo)
            if journal is not None:
                _write_journal(journal, pending)
            raise
    finally:
        for path in [*staged.values(), *olds]:
            shutil.rmtree(path, ignore_errors=True)


def _umask() -> int:
    """The process umask. Read once per write, before the helper thread starts: os.umask can only be
    read by setting it, which would briefly change the mode of files another thread creates."""
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def _stage(out: Path, trees: Iterable[tuple[str, Mapping[str, Any]]], staged: dict[str, Path],
           stop: threading.Event, mode: int) -> None:
    """Write each tree into a new temporary sibling, named in `staged` (which the caller removes).

    mkdtemp makes the sibling 0700 whatever the umask; it becomes `out/<cluster>/` itself, so it is
    given `mode` (0777 less the umask), as mkdir would (0755 under umask 022).
    """
    for name, files in trees:
        if stop.is_set():
            return
        staged[name] = Path(tempfile.mkdtemp(prefix=f".{name}.new-", dir=out))
        staged[name].chmod(mode)
        write_tree(staged[name], files)


def _stage_all(out: Path, trees: Mapping[str, Mapping[str, Any]], staged: dict[str, Path]) -> None:
    """Stage every tree: half of them (by name order, every other one) from a helper thread.

    Why: creating a file costs the kernel CPU time (~0.1 ms a file here, 3,000 files for a fleet of
    40), and the GIL is released meanwhile; at the end of a run the other CPUs are idle, so two
    writers take about half the time. On any failure or interruption (SIGTERM raised as SystemExit
    in this thread), the helper is told to stop and waited for before the caller removes what was
    staged; a helper that cannot be waited for (stuck in the file system) is a daemon thread, and
    a folder it creates after the cleanup is a leftover the next write removes (survey).
    """
    items = list(trees.items())
    stop = threading.Event()
    failure: list[BaseException] = []
    mode = 0o777 & ~_umask()

    def helper() -> None:
        try:
            _stage(out, items[1::2], staged, stop, mode)
        except BaseException as err:  # noqa: BLE001 - handed to the caller's thread, raised there
            failure.append(err)
            stop.set()

    thread = threading.Thread(target=helper, name="slurmgen-stage", daemon=True) if len(items) > 1 else None
    if thread is not None:
        thread.start()
    try:
        _stage(out, items[0::2] if thread is not None else items, staged, stop, mode)
        if thread is not None:
            thread.join()
    except BaseException:
        stop.set()
        if thread is not None:
            thread.join(timeout=30)
        raise
    if failure:
        raise failure[0]


def _rollback(out: Path, undo: list[tuple[str, Callable[[], None]]]) -> None:
    """Swap back the trees already swapped in; when that fails too, say exactly which are new."""
    stuck: list[str] = []
    for name, step in reversed(undo):
        try:
            step()
        except OSError:
            stuck.append(name)
    if stuck:
        raise OutputError([f"{out / name}: written with the new render, while the other clusters kept the old one "
                           "(the write failed and this one could not be put back); run synth again"
                           for name in sorted(stuck)])


def replace_dir(target: Path, files: Mapping[str, Any]) -> None:
    """Make `target` hold exactly `files`, switching from the old tree to the new one in one step.

    The bare primitive, no ownership check: the command line goes through `write_all`.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    _swap_in(target.parent, {target.name: files})


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
