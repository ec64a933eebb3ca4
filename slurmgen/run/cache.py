"""Render cache: a cluster whose every input is unchanged is not rendered again.

Why: every synth and `--check` used to re-render every cluster, so a change to one cluster of
forty paid for forty. An entry holds what a successful render produced for one cluster (objects
and their YAML texts, after every per-cluster check passed), filed under a key that hashes
everything that can change those bytes:

- the spec file and every file it `extends` (bytes, followed recursively), and its path;
- the generator itself: every file of the `slurmgen` package, which includes the vendored CRD
  schemas and the instance catalog; the site `instance-types.csv` beside the specs;
- the Python and npm lock files (`requirements.txt` pins cdk8s, jsii, jsonschema, PyYAML, ...;
  `package-lock.json`), the Python version and implementation;
- the environment that changes the output (`CDK8S_*`, `JSII_*`); `--crd-dir` disables the cache.

A hit is written to dist/ without running the schema, policy and secret checks again, so an
entry must be proven, not merely consistent (a checksum is recomputed by whoever edits the file):

- the cache folder must be a real folder owned by the user, mode 0700 (tightened when it is ours,
  ignored otherwise), so no other account can plant an entry;
- every entry carries an HMAC-SHA256 under a per-user random key kept in that folder (`key`,
  0600, created O_EXCL): an entry not written by this user's slurmgen, or edited since, does not
  verify and is ignored (re-checking instead would cost what the cache saves: the checks and
  schema validation are most of a render once cdk8s is warm);
- every file name an entry holds must be a plain relative path inside the cluster folder
  (output.unsafe_relative_path), checked on load, and the writer checks them again.

Anything else (truncated, edited, another version's, unproven) is ignored, never used.
The cache lives outside the repository: `$SLURMGEN_CACHE_DIR`, else `slurmgen/render` under
`$XDG_CACHE_HOME` (default `~/.cache`; a relative value is ignored, as the XDG spec says).
Only rendered output is cached there, never CRD schemas. Whoever can read the key (the user,
or a CI cache that saves the whole folder) can forge entries: never restore a cache folder from
a less trusted run.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping


from .._input import UnreadableFile, read_text
from ..catalog.catalog import SITE_CSV_MAX_BYTES
from ..write.output import spec_label, unsafe_relative_path
from ..spec import YamlSyntaxError, load_yaml
from ..user_cache import user_cache_root

FORMAT = 5  # bump when the entry layout changes (3: the validated spec data; 4: the shared names; 5: HMAC)
KEY_FILE = "key"  # the per-user HMAC key in the cache folder
_KEY_BYTES = 32
KEEP_PER_CLUSTER = 4  # entries kept per cluster name (others are removed when a new one is stored)
PACKAGE = Path(__file__).resolve().parents[1]  # slurmgen/
REPO = PACKAGE.parent
#: Everything that renders: the pipeline's package and the construct layers beside it (charts/, apps/)
GENERATOR_PACKAGES = (PACKAGE, REPO / "charts", REPO / "apps")
LOCK_FILES = (REPO / "requirements.txt", REPO / "package-lock.json")


def cache_dir() -> Path:
    """Where entries live: never inside the repository (a relative `$SLURMGEN_CACHE_DIR` is ignored too)."""
    explicit = os.environ.get("SLURMGEN_CACHE_DIR")
    if explicit and os.path.isabs(explicit):
        return Path(explicit)
    return user_cache_root() / "render"


def placement_problem(root: Path, out: Path, repository: Path = REPO) -> str | None:
    """Why the cache folder `root` may not be used with output folder `out`, or None.

    Checked before anything is created: the cache holds the HMAC key that proves its entries, and
    a cache inside the output folder or the repository would put that key (and entries anyone
    could then forge) in git. Paths are compared resolved, so a link or `..` cannot hide it."""
    cache_at, out_at, repo_at = (os.path.realpath(os.path.abspath(p)) for p in (root, out, repository))

    def within(inner: str, outer: str) -> bool:
        return inner == outer or inner.startswith(os.path.join(outer, ""))

    if within(cache_at, out_at) or within(out_at, cache_at):
        return (f"the render cache {root} and the output folder {out} overlap; the cache holds its signing key, "
                "which must never be committed: set SLURMGEN_CACHE_DIR to a folder outside both, or pass --no-cache")
    if within(cache_at, repo_at):
        return (f"the render cache {root} is inside the repository {repository}; the cache holds its signing key, "
                "which must never be committed: set SLURMGEN_CACHE_DIR to a folder outside it, or pass --no-cache")
    return None


def private_dir(root: Path, *, create: bool) -> bool:
    """Whether `root` is a folder only this user can write (made 0700 when `create` and absent).

    A real folder (not a link) owned by the user; group/other bits of a folder we own are removed
    (older versions made it with the umask's 0755). Anything else is not used at all."""
    try:
        if create and not os.path.lexists(root):
            root.parent.mkdir(parents=True, exist_ok=True)
            root.mkdir(mode=0o700, exist_ok=True)
        info = root.lstat()
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            return False
        if info.st_mode & 0o077:
            os.chmod(root, 0o700)
        return True
    except OSError:
        return False


def _key(root: Path, *, create: bool) -> bytes | None:
    """The per-user HMAC key in `root` (a private folder), made once; None when absent or not trustworthy.

    Opened with O_NOFOLLOW and checked on the open descriptor: a regular file of the user's, 0600,
    of the right length."""
    path = os.fspath(root / KEY_FILE)
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    try:
        if create and not os.path.lexists(path):
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | nofollow, 0o600)
            except FileExistsError:
                pass  # another run made it just now
            else:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(os.urandom(_KEY_BYTES))
        fd = os.open(path, os.O_RDONLY | nofollow | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if (not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077
                    or info.st_size != _KEY_BYTES):
                return None
            key = handle.read(_KEY_BYTES + 1)
        return key if len(key) == _KEY_BYTES else None
    except OSError:
        return None


def _mac(key: bytes, name: str, entry_key: str, payload: bytes) -> str:
    return hmac.new(key, f"{FORMAT}\0{name}\0{entry_key}\0".encode() + payload, hashlib.sha256).hexdigest()


def tree_digest(root: Path, *, suffixes: tuple[str, ...] = ()) -> str:
    """sha256 over every file under `root` (relative path and bytes), in path order.

    Byte-code caches are skipped: they follow from the sources and differ between `-O` and not.
    """
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        if "__pycache__" in path.parts or path.suffix in (".pyc", ".pyo"):
            continue
        if suffixes and path.suffix not in suffixes:
            continue
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def _file_digest(path: Path | None) -> str:
    if path is None or not path.is_file():
        return "absent"
    try:
        return hashlib.sha256(read_text(path, max_bytes=SITE_CSV_MAX_BYTES).encode()).hexdigest()
    except (OSError, UnreadableFile):
        return "unreadable"  # the loader reports it; a key that never matches a stored entry


def generator_digest(packages: Iterable[Path] = GENERATOR_PACKAGES, lock_files: Iterable[Path] = LOCK_FILES) -> str:
    """What every cluster's key shares: the generator's sources and data, the lock files, Python."""
    h = hashlib.sha256()
    h.update(f"format {FORMAT}\0{sys.implementation.name} {sys.version}\0".encode())
    for package in packages:
        h.update(f"{package.name}\0{tree_digest(package)}\0".encode())
    for path in lock_files:
        h.update(f"{path.name}\0{_file_digest(path)}\0".encode())
    return h.hexdigest()


def environment_options(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The environment that can change rendered bytes: cdk8s's switches (CDK8S_DISABLE_SORT sorts
    no keys) and jsii's (JSII_NODE picks the Node.js). CDK8S_OUTDIR only moves the output."""
    return {k: v for k, v in sorted(environ.items())
            if k.startswith(("CDK8S_", "JSII_")) and k != "CDK8S_OUTDIR"}


def extends_chain(path: Path) -> list[Path] | None:
    """The spec file and every file it extends, recursively, in reading order.

    Mirrors `spec.loader._extend` (names relative to the file naming them). None when the chain
    cannot be followed (then the cluster is simply not cached).
    """
    chain: list[Path] = []
    seen: set[Path] = set()

    def follow(p: Path) -> bool:
        if p.resolve() in seen:
            return True  # already in the chain (named twice, or a cycle the loader refuses): not again
        seen.add(p.resolve())
        chain.append(p)
        try:
            # The loader's own bounded reader: a FIFO, a device or an oversized file is no key (and the
            # loader then reports it), never a read that blocks or fills memory.
            text = read_text(p)
            if "extends" not in text and "\\" not in text:
                # no key named extends: nothing to follow (and no YAML to parse). Not with a
                # backslash: a double-quoted key spelt with escapes ("ext\x65nds") is `extends` too.
                return True
            data = load_yaml(text)  # the loader's own bounded reader: an alias bomb costs no more here
        except (OSError, UnreadableFile, YamlSyntaxError, UnicodeDecodeError):
            return False
        bases = data.get("extends") if isinstance(data, dict) else None
        if bases is None:
            return True
        bases = [bases] if isinstance(bases, str) else bases
        if not isinstance(bases, list):
            return False
        return all(isinstance(b, str) and follow(p.parent / b) for b in bases)

    return chain if follow(path) else None


def cluster_key(spec_path: Path, shared: str, site_csv: Path | None, options: Mapping[str, str]) -> str | None:
    """The key of one cluster's render, or None when its inputs cannot all be read."""
    chain = extends_chain(spec_path)
    if chain is None:
        return None
    h = hashlib.sha256()
    # The label each file's header names the spec by: the same path string from another folder is another file.
    h.update(f"{shared}\0{spec_path}\0{spec_label(str(spec_path))}\0".encode())
    for path in chain:
        h.update(f"{path}\0{_file_digest(path)}\0".encode())
    h.update(f"site-csv\0{_file_digest(site_csv)}\0".encode())
    h.update(json.dumps(dict(options), sort_keys=True).encode())
    return h.hexdigest()


class LazyObjects(Mapping[str, Any]):
    """A cached cluster's objects, decoded from the (already verified) entry on first use.

    Why: on a hit the writer and `--check` need only the texts, and the guards skip an unchanged
    tree, so decoding every object of an unchanged fleet would be most of a hit's cost.
    """

    def __init__(self, raw: bytes, paths: Iterable[str]) -> None:
        self._raw: bytes | None = raw
        self._paths = list(paths)
        self._objects: dict[str, Any] | None = None

    def _load(self) -> dict[str, Any]:
        if self._objects is None:
            assert self._raw is not None
            objects = json.loads(self._raw)
            if not isinstance(objects, dict) or list(objects) != self._paths:
                raise ValueError("render cache entry: objects do not match their texts")
            self._objects, self._raw = objects, None
        return self._objects

    def __getitem__(self, key: str) -> Any:
        return self._load()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._paths)

    def __eq__(self, other: object) -> bool:
        return dict(self.items()) == (dict(other.items()) if isinstance(other, Mapping) else other)

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True)
class Entry:
    """A cached render of one cluster: objects and YAML texts by relative path, the spec data
    (merged, defaulted) that passed every check, so a hit is built without checking it again, and
    the names it shares with other clusters (collisions.keys), so checking those decodes no object."""

    files: Mapping[str, Any]
    texts: dict[str, str]
    spec_data: dict[str, Any]
    shared_names: dict[tuple[str, ...], str]


def _entry_path(root: Path, name: str, key: str) -> Path:
    return root / f"{name}-{key}.json"


def exists(name: str, key: str, root: Path | None = None) -> bool:
    """Whether an entry file is there (a quick look before it is read and checked)."""
    return _entry_path(root or cache_dir(), name, key).is_file()


def load(name: str, key: str, root: Path | None = None) -> Entry | None:
    """The entry for `key`, or None when there is none or it cannot be trusted (see the module's doc)."""
    root = root or cache_dir()
    secret = _key(root, create=False) if private_dir(root, create=False) else None
    if secret is None:
        return None
    path = _entry_path(root, name, key)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return None
            raw = handle.read()
        head, _, payload = raw.partition(b"\n")
        header = json.loads(head)
        if (not isinstance(header, dict) or header.get("format") != FORMAT or header.get("key") != key
                or header.get("cluster") != name or not isinstance(header.get("hmac"), str)
                or not hmac.compare_digest(header["hmac"], _mac(secret, name, key, payload))):
            return None
        texts_part, _, rest = payload.partition(b"\n")
        spec_part, _, rest = rest.partition(b"\n")
        names_part, _, files_part = rest.partition(b"\n")
        texts = json.loads(texts_part)
        spec_data = json.loads(spec_part)
        names = json.loads(names_part)
        if (not isinstance(texts, dict) or not all(isinstance(t, str) for t in texts.values()) or not files_part
                or not isinstance(spec_data, dict) or not isinstance(names, list)
                or not all(isinstance(n, list) and len(n) > 1 and all(isinstance(p, str) for p in n) for n in names)
                or any(unsafe_relative_path(rel) for rel in texts)):
            return None
        return Entry(files=LazyObjects(files_part, texts), texts=texts, spec_data=spec_data,
                     shared_names={tuple(n[:-1]): n[-1] for n in names})
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store(name: str, key: str, files: Mapping[str, Any], texts: Mapping[str, str], spec_data: Mapping[str, Any],
          shared_names: Mapping[tuple[str, ...], str], root: Path | None = None) -> None:
    """Save one cluster's render (atomically: a reader sees the whole entry or none); errors are ignored."""
    root = root or cache_dir()
    try:
        secret = _key(root, create=True) if private_dir(root, create=True) else None
        if secret is None or list(files) != list(texts):
            return
        # texts on one line, the spec data, the shared names, objects on the last (JSON escapes
        # newlines): a hit decodes the objects only when something reads them (LazyObjects)
        payload = (json.dumps(dict(texts), separators=(",", ":")) + "\n"
                   + json.dumps(dict(spec_data), separators=(",", ":")) + "\n"
                   + json.dumps([[*k, v] for k, v in shared_names.items()], separators=(",", ":")) + "\n"
                   + json.dumps(dict(files), separators=(",", ":"))).encode()
        header = json.dumps({"format": FORMAT, "key": key, "cluster": name,
                             "hmac": _mac(secret, name, key, payload)}).encode()
        fd, tmp = tempfile.mkstemp(prefix=f".{name}-", dir=root)
        with os.fdopen(fd, "wb") as f:
            f.write(header + b"\n" + payload)
        os.replace(tmp, _entry_path(root, name, key))
        _prune(root, name)
    except (OSError, TypeError, ValueError):
        pass


def _prune(root: Path, name: str) -> None:
    """Keep the newest KEEP_PER_CLUSTER entries of a cluster name (several checkouts may share a cache)."""
    entries = [p for p in root.glob(f"{name}-*.json") if len(p.stem) == len(name) + 65]
    entries.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[KEEP_PER_CLUSTER:]:
        old.unlink(missing_ok=True)
