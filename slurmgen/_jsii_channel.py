"""Talk to jsii's kernel over one socket, without the relay Node process stock jsii puts in between.

Stock jsii (Python runtime 1.142.0) starts `node jsii-runtime.js`; that process starts a second
Node running the kernel (`lib/program.js`, which reads and writes its protocol on fd 3) and relays
every message between Python's pipes and the kernel's fd 3. A 40-cluster render makes ~10,000
calls, each crossing the relay twice, and the relay holds ~60 MB. Here the kernel is started
directly with fd 3 = one end of a socket pair, Python holding the other: the same kernel and
protocol, one process and one hop fewer. Measured on the 2-core machine (bench fleet of 40
clusters, one process): 7.3 s -> 6.0 s wall, 317 MB -> 240 MB peak.

This replaces a private method (`_NodeProcess.start`), so it is applied only to the jsii version
it was read against (`JSII_VERSION`, pinned in requirements.txt; tests/test_jsii_channel.py fails
when the two part); any other version, a JSII_RUNTIME of the user's, or `SLURMGEN_JSII_RELAY=1`
keeps the stock runtime. `install()` runs at `import slurmgen` but imports nothing: it applies the
change when jsii's process module is first imported (by cdk8s, in whatever order a module imports
things), so a run that renders nothing (a warm cache) never loads jsii.

Over the same channel, `direct()` sends the three calls that emit every object as the kernel's own
JSON requests, without jsii's Python-side conversions (charts/_objects.emit): the same kernel calls
and the same bytes as through jsii's API (tests/test_jsii_channel.py renders through both).

One difference on purpose: the relay passed JavaScript's console.log to Python's stdout; here all
of the kernel's console output goes to our stderr, so our stdout holds only what we print
(`--check` lines, `--explain` text, the summary).
"""

from __future__ import annotations

import atexit
import codecs
import errno
import importlib.abc
import importlib.machinery
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Mapping, Sequence

JSII_VERSION = "1.142.0"
#: jsii's module that defines `_NodeProcess`.
TARGET = "jsii._kernel.providers.process"
#: Node flags for the kernel. jsii passes the first; a 2 MB young generation keeps a long render's
#: Node at ~110 MB instead of ~170 MB at no measured cost in time (bench, 40 clusters). Growing the
#: old generation's limit by 25 % (`--heap-growing-percent=25`) saved ~18 MB more per kernel but
#: cost ~0.3 s of CPU a fleet (more full collections): measured, not kept.
NODE_FLAGS = ("--max-old-space-size=4069", "--max-semi-space-size=2")
#: How the kernel is started (`sh -c EXEC node FLAGS... program.js`): fd 3 becomes the socket we
#: pass as its stdin, its stdin then reads nothing, and its stdout joins its stderr.
EXEC = 'exec "$0" "$@" 3<&0 </dev/null 1>&2'
#: The shell, by absolute path: looked up on PATH, an `sh` planted in any PATH folder (the
#: repository's node_modules/.bin, a tool folder) would run on every synth. POSIX systems have it.
SHELL = "/bin/sh"


def _allowed() -> bool:
    """No opt-out, no kernel runtime of the user's, and a shell to start the kernel with."""
    if os.environ.get("SLURMGEN_JSII_RELAY") == "1" or os.environ.get("JSII_RUNTIME"):
        return False
    return os.access(SHELL, os.X_OK)


def _pinned() -> bool:
    """Whether the installed jsii is the version this was read against."""
    try:
        import jsii
    except ImportError:
        return False
    return getattr(jsii, "__version__", None) == JSII_VERSION


def wanted() -> bool:
    """Whether to start the kernel directly: allowed, and the jsii version this was read against."""
    return _allowed() and _pinned()


def forward(stream: io.BufferedReader) -> None:
    """Copy the kernel's console output to our stderr as it comes (what the relay did, unwrapped).

    It keeps draining when writing to our stderr fails: a full pipe would block the kernel."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")  # for a text-only stderr
    for chunk in iter(lambda: stream.read1(65536), b""):
        try:
            target = sys.stderr
            if hasattr(target, "buffer"):
                target.buffer.write(chunk)
            else:  # a replaced stderr (a test's capture) may take text only
                target.write(decoder.decode(chunk))
            target.flush()
        except Exception:  # noqa: BLE001 - a closed or odd stderr loses the text, never the kernel
            continue


def _node(env: dict[str, str]) -> str:
    """The Node to run, resolved now: started through `sh`, a missing one would only show as a
    failed handshake. Raises FileNotFoundError as stock jsii's Popen does."""
    node = env.get("JSII_NODE", "node")
    found = shutil.which(node, path=env.get("PATH"))
    if found is None:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory (JSII_NODE or PATH)", node)
    return found


def node_problem(environ: Mapping[str, str] = os.environ) -> str | None:
    """One line when the Node.js cdk8s needs cannot be found (JSII_NODE, else `node` on PATH), else None:
    checked before anything starts, so a missing Node is a line, not a traceback from an import."""
    node = environ.get("JSII_NODE", "node")
    if shutil.which(node, path=environ.get("PATH")) is not None:
        return None
    where = f"JSII_NODE={node!r}" if "JSII_NODE" in environ else "`node` on PATH"
    return f"Node.js not found ({where}): cdk8s runs on it; install Node.js or set JSII_NODE to its path"


#: The kernel this process started (jsii starts one per process), for stop_kernel.
_STARTED: list[Any] = []


class KernelError(RuntimeError):
    """The kernel refused a direct request (what jsii raises as RuntimeError for the same call)."""


def direct() -> Callable[[Mapping[str, Any]], Any] | None:
    """A function sending one request to this process's kernel and returning its `ok` payload, or
    None when this process talks to its kernel through stock jsii (relay, another version).

    Why: for the three calls that emit every object (create the ApiObject, `JsonPatch.add`,
    `addJsonPatch`), jsii's Python side walked each body twice more (its `$jsii.map` wrapping, then
    cattrs over the whole request) and built a proxy object nobody reads: ~0.2 s of CPU per 20
    clusters, measured. The request is the kernel's own protocol (one JSON line each way, as jsii
    sends it); only calls that never call back into Python may use it, on the thread using jsii.
    """
    if not _STARTED:
        return None
    node = _STARTED[0]
    write, flush, readline = node._process.stdin.write, node._process.stdin.flush, node._process.stdout.readline

    def send(request: Mapping[str, Any]) -> Any:
        write(json.dumps(request).encode() + b"\n")
        flush()
        response = json.loads(readline())
        if "ok" in response:
            return response["ok"]
        if "callback" in response:  # nothing we render has Python resolvers or jsii overrides
            raise KernelError("jsii's kernel called back into Python during a direct request (a resolver or an "
                              "overridden jsii method?): direct requests cannot serve it; SLURMGEN_JSII_RELAY=1 can")
        raise KernelError(response.get("error") or f"unexpected kernel response to a direct request: {response!r}")

    return send


def stop_kernel() -> bool:
    """Stop this process's kernel now instead of at exit; False when this module started none.

    For a worker process that has rendered its last cluster: its kernel (~90 MB by then) is gone
    before the worker hands its results over, when a fleet's memory would otherwise peak. Nothing
    may use jsii in this process afterwards (jsii cannot start a second kernel)."""
    stopped = bool(_STARTED)
    while _STARTED:
        _STARTED.pop().stop()
    return stopped


def _start(self: Any) -> None:
    """`_NodeProcess.start`, with the kernel's fd 3 on a socket pair instead of behind the relay."""
    env = {**os.environ, "JSII_AGENT": f"Python/{sys.version.split()[0]}"}
    node = _node(env)
    runtime = Path(self._jsii_runtime())  # the embedded files, unpacked: .../bin/jsii-runtime.js
    program = runtime.parent.parent / "lib" / "program.js"
    ours, theirs = socket.socketpair()
    with theirs:
        self._process = subprocess.Popen(
            [SHELL, "-c", EXEC, node, *NODE_FLAGS, "--preserve-symlinks", str(program)],
            stdin=theirs.fileno(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    self._socket = ours
    # jsii reads replies with stdout.readline() and writes requests to stdin; stop() closes both.
    self._process.stdin = ours.makefile("wb")
    self._process.stdout = ours.makefile("rb")
    self.sink_thread = threading.Thread(name="jsii-kernel-stderr", target=forward,
                                        args=(self._process.stderr,), daemon=True)
    self.sink_thread.start()
    atexit.register(self.stop)
    try:
        self.handshake()
    except ValueError:  # EOF or garbage instead of the kernel's hello (json.JSONDecodeError)
        try:
            status: int | str = self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            status = "still running"
        raise RuntimeError(f"jsii's kernel ({program}) exited before its handshake (status {status}); "
                           "its own message, if any, is above") from None
    # Only a kernel that answered is one to talk to directly: after a failed start jsii may start
    # another, and direct() must not write to the dead one.
    _STARTED.append(self)


def _patch(process: ModuleType) -> bool:
    """Replace `_NodeProcess.start`/`stop` in jsii's process module (the pinned jsii only; `install`
    has checked the rest)."""
    if not _pinned():
        return False
    node_process = process._NodeProcess
    if getattr(node_process.start, "__module__", None) == __name__:
        return True
    stock_stop = node_process.stop

    def stop(self: Any) -> None:
        try:
            stock_stop(self)
        except BrokenPipeError:  # the kernel is gone already (it died or was killed): nothing to tell it
            atexit.unregister(self.stop)
            self._process.poll()  # reap it
        finally:
            sock = getattr(self, "_socket", None)
            if sock is not None:
                sock.close()

    setattr(node_process, "start", _start)  # noqa: B010 - replacing a method of jsii's class on purpose
    setattr(node_process, "stop", stop)  # noqa: B010
    return True


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds jsii's process module as usual, and patches it right after it has run."""

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None,
                  ) -> importlib.machinery.ModuleSpec | None:
        if fullname != TARGET:
            return None
        sys.meta_path.remove(self)  # once
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run_module = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run_module(module)
            _patch(module)

        setattr(loader, "exec_module", exec_module)  # noqa: B010 - this one loader, this one module
        return spec


def install() -> None:
    """Start jsii's kernel directly from its first start on; call it before `import cdk8s`."""
    if not _allowed():
        return
    loaded = sys.modules.get(TARGET)
    if loaded is not None:
        _patch(loaded)
    elif not any(isinstance(finder, _PatchOnImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())
