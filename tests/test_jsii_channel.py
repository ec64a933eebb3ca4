"""jsii's kernel started directly on a socket pair (slurmgen/_jsii_channel.py), not behind jsii's relay.

Each case runs in a fresh interpreter: the kernel starts once per process, at the first `import cdk8s`.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from slurmgen import _jsii_channel
from tests.conftest import REPO, SPECS

KERNEL_PROBE = textwrap.dedent("""\
    import os, sys
    import slurmgen
    import cdk8s
    from jsii._runtime import kernel
    app = cdk8s.App()
    cdk8s.Chart(app, "probe")
    node = kernel.provider._process._process
    print(node.pid, flush=True)
    """)


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO), **env})


def children(pid: int) -> list[int]:
    """Direct children of `pid` (Linux /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def running(pid: int) -> bool:
    """Whether `pid` exists and has not exited (an orphan's zombie may wait for a reaper that never comes)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")


needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc to see processes")


def test_the_channel_is_read_against_the_pinned_jsii():
    # GIVEN the pinned requirements, THEN the jsii version the channel replaces a private method of is that pin
    pins = dict(line.split("==") for line in (REPO / "requirements.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    assert pins["jsii"] == _jsii_channel.JSII_VERSION
    # and the running jsii is that version, so the tests below exercise the direct channel
    assert _jsii_channel.wanted()


@needs_proc
def test_the_kernel_runs_as_one_node_process_without_a_relay():
    # GIVEN a fresh interpreter that imports slurmgen, WHEN cdk8s starts jsii's kernel in it
    code = KERNEL_PROBE + textwrap.dedent("""\
        import time
        print(os.getpid(), flush=True)
        time.sleep(3)
        """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        kernel_pid, python_pid = int(proc.stdout.readline()), int(proc.stdout.readline())
        # THEN Python's one Node child is the kernel itself (program.js, not the jsii-runtime.js relay),
        # and it has no Node child of its own
        node_children = [pid for pid in children(python_pid) if "node" in Path(cmdline(pid)[0]).name]
        assert node_children == [kernel_pid]
        argv = cmdline(kernel_pid)
        assert argv[-2].endswith(os.path.join("lib", "program.js")) or argv[-1].endswith(os.path.join("lib", "program.js"))
        assert not any("jsii-runtime" in arg for arg in argv)
        assert "--max-semi-space-size=2" in argv
        assert children(kernel_pid) == []
    finally:
        proc.kill()
        proc.wait()


@needs_proc
def test_a_worker_can_stop_its_kernel_before_it_exits():
    # GIVEN an interpreter whose kernel is running
    code = KERNEL_PROBE + textwrap.dedent("""\
        from slurmgen import _jsii_channel
        # WHEN it stops the kernel (a worker after its last render), and asks again
        print(_jsii_channel.stop_kernel(), _jsii_channel.stop_kernel(), flush=True)
        print(node.poll(), flush=True)
        """)
    run = run_python(code)
    # THEN the first call stopped it (it has exited, status 0) and the second found none to stop
    assert run.returncode == 0, run.stderr
    kernel_pid, stopped, again, status = run.stdout.split()
    assert (stopped, again, status) == ("True", "False", "0")
    assert not running(int(kernel_pid))


@needs_proc
def test_the_stock_relay_stays_available():
    # GIVEN SLURMGEN_JSII_RELAY=1, WHEN the kernel starts, THEN Python talks to jsii's own relay, as stock jsii does
    code = KERNEL_PROBE + "print(' '.join(open(f'/proc/{node.pid}/cmdline').read().split(chr(0))))\n"
    run = run_python(code, SLURMGEN_JSII_RELAY="1")
    assert run.returncode == 0, run.stderr
    assert "jsii-runtime.js" in run.stdout.splitlines()[1]
    # and without it, the process Python talks to is the kernel
    run = run_python(code)
    assert "program.js" in run.stdout.splitlines()[1] and "jsii-runtime.js" not in run.stdout


@needs_proc
def test_the_kernel_exits_with_the_interpreter():
    # GIVEN an interpreter that started the kernel, WHEN it exits normally
    run = run_python(KERNEL_PROBE)
    assert run.returncode == 0, run.stderr
    kernel_pid = int(run.stdout.split()[0])
    # THEN the kernel is gone too (jsii's stop at exit, over the socket)
    for _ in range(50):
        if not running(kernel_pid):
            break
        time.sleep(0.1)
    assert not running(kernel_pid)


def test_the_kernel_gets_the_socket_as_fd_3_and_its_stdout_goes_to_our_stderr():
    # GIVEN the command shape the kernel is started with, running a tiny script instead of program.js
    node = _jsii_channel._node(dict(os.environ))
    script = "process.stdout.write('console output\\n'); require('fs').writeSync(3, 'protocol line\\n')"
    ours, theirs = socket.socketpair()
    with theirs:
        proc = subprocess.Popen(["sh", "-c", _jsii_channel.EXEC, node, "-e", script], stdin=theirs.fileno(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    # WHEN it writes to its stdout and to fd 3
    _, err = proc.communicate(timeout=60)
    with ours, ours.makefile("rb") as channel:
        line = channel.readline()
    # THEN fd 3 is our socket (the protocol channel) and console output arrives on the stderr we drain
    assert proc.returncode == 0, err
    assert line == b"protocol line\n"
    assert err == b"console output\n"


def test_kernel_debug_output_goes_to_stderr_never_to_stdout():
    # GIVEN the kernel's debug trace on (it writes every message it handles to its stderr)
    run = run_python(KERNEL_PROBE, JSII_DEBUG="1")
    # THEN our stdout holds only what the script printed, and the trace arrived on stderr
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().isdigit()
    assert '"api":"create"' in run.stderr and "[@jsii/kernel] create" in run.stderr


def test_a_missing_node_is_named_like_stock_jsii_names_it():
    # GIVEN JSII_NODE pointing nowhere, WHEN the kernel starts
    run = run_python(KERNEL_PROBE, JSII_NODE="/nonexistent/node")
    # THEN the error names the file (not a failed handshake), as stock jsii's FileNotFoundError does
    assert run.returncode != 0
    assert "FileNotFoundError" in run.stderr and "/nonexistent/node" in run.stderr
    assert "JSONDecodeError" not in run.stderr


@needs_proc
@pytest.mark.parametrize("module", ["slurmgen.build", "slurmgen.parallel", "slurmgen.charts.login"])
def test_every_render_path_gets_the_direct_kernel(module):
    # GIVEN a fresh interpreter importing a module that renders (each imports cdk8s in its own order)
    code = textwrap.dedent(f"""\
        import importlib
        importlib.import_module({module!r})
        import cdk8s
        from jsii._runtime import kernel
        print(open(f"/proc/{{kernel.provider._process._process.pid}}/cmdline").read().replace(chr(0), " "))
        """)
    # WHEN cdk8s has started jsii's kernel
    run = run_python(code)
    # THEN it is program.js with our flags, not jsii's relay
    assert run.returncode == 0, run.stderr
    assert "lib/program.js" in run.stdout and "--max-semi-space-size=2" in run.stdout
    assert "jsii-runtime.js" not in run.stdout


def test_importing_slurmgen_does_not_import_jsii():
    # GIVEN a fresh interpreter, WHEN it imports the package and the CLI (a warm-cache run needs no more)
    run = run_python("import sys, slurmgen, slurmgen.cli, slurmgen.pipeline; print('jsii' in sys.modules)")
    # THEN jsii is not loaded: the channel takes effect when cdk8s imports it
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "False"


def test_direct_and_relayed_kernels_render_the_same_bytes(tmp_path, dist_tree):
    # GIVEN the example spec rendered once through each channel
    trees = {}
    for mode, env in (("direct", {}), ("relay", {"SLURMGEN_JSII_RELAY": "1"})):
        out = tmp_path / mode
        run = subprocess.run([sys.executable, str(REPO / "main.py"), "--spec", str(SPECS / "example.yaml"),
                              "--out", str(out), "--no-cache"], capture_output=True, text=True, timeout=300,
                             env={**os.environ, **env})
        assert run.returncode == 0, run.stderr
        trees[mode] = {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    # THEN the trees are identical, file for file, and match the in-process render
    assert trees["direct"] == trees["relay"]
    committed = dist_tree / "example" / "slurm" / "controller-slurm.yaml"
    assert trees["direct"]["example/slurm/controller-slurm.yaml"] == committed.read_bytes()


@needs_proc
def test_the_kernel_exits_when_the_interpreter_is_killed():
    # GIVEN an interpreter holding a started kernel
    proc = subprocess.Popen([sys.executable, "-c", KERNEL_PROBE + "import time\ntime.sleep(60)\n"],
                            stdout=subprocess.PIPE, text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    kernel_pid = int(proc.stdout.readline())
    # WHEN it is killed outright (no atexit, no exit message)
    proc.kill()
    proc.wait()
    # THEN the kernel reads the end of its socket and exits: no Node left behind
    for _ in range(100):
        if not running(kernel_pid):
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"kernel {kernel_pid} still runs 10 s after its interpreter was killed")


def test_kernel_output_is_drained_even_when_our_stderr_fails(monkeypatch):
    # GIVEN a stderr that refuses every write, and a kernel writing far more than a pipe holds
    import io
    import threading

    class Broken(io.StringIO):
        def write(self, text):
            raise OSError("stderr closed")

    monkeypatch.setattr(sys, "stderr", Broken())
    reader, writer = os.pipe()

    def kernel() -> None:
        with os.fdopen(writer, "wb") as sink:
            sink.write(b"x" * (1 << 20))  # blocks until the forwarder has read all but the pipe's 64 KiB

    writing = threading.Thread(target=kernel)
    writing.start()
    # WHEN the forwarder reads it, THEN it reads to the end (the writer finishes) instead of stopping
    with os.fdopen(reader, "rb") as source:
        _jsii_channel.forward(source)
    writing.join(timeout=10)
    assert not writing.is_alive()


def test_direct_requests_go_to_the_kernel_and_its_refusals_are_errors():
    # GIVEN this process's kernel on the direct channel (the pinned jsii), and a chart
    import cdk8s

    from slurmgen.charts._objects import emit

    assert _jsii_channel.direct() is not None
    chart = cdk8s.Chart(cdk8s.App(), "direct", disable_resource_name_hashes=True)
    # WHEN an object is emitted through it / THEN cdk8s holds it, exactly as sent
    emit(chart, api_version="v1", kind="ConfigMap", name="a", namespace="n", annotations={"x": "1"},
         finalizers=["f"], body={"data": {"k": "v"}})
    assert chart.to_json() == [{"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"},
                                "metadata": {"name": "a", "namespace": "n", "annotations": {"x": "1"},
                                             "finalizers": ["f"], "labels": {"app.kubernetes.io/managed-by": "slurmgen"}}}]
    # AND a request the kernel refuses (the same construct twice) raises its message
    with pytest.raises(_jsii_channel.KernelError, match="already a Construct"):
        emit(chart, api_version="v1", kind="ConfigMap", name="a", namespace="n")
    # AND a label or annotation without a string value is refused, as jsii's own API refuses it
    with pytest.raises(TypeError, match="metadata value of 'x' is None"):
        emit(chart, api_version="v1", kind="ConfigMap", name="b", annotations={"x": None})  # type: ignore[dict-item]


@needs_proc
def test_a_kernel_that_failed_to_start_is_never_written_to():
    # GIVEN a Node that fails its first start (as when the OOM killer or EAGAIN hits it), then works
    code = textwrap.dedent("""\
        import os, sys, stat, tempfile
        real = __import__("shutil").which("node", path=os.environ["PATH"]) or ""
        folder = tempfile.mkdtemp()
        flaky, flag = os.path.join(folder, "node"), os.path.join(folder, "started-once")
        with open(flaky, "w") as script:
            script.write(f'#!/bin/sh\\n[ -e {flag} ] || {{ touch {flag}; exit 3; }}\\nexec "{real}" "$@"\\n')
        os.chmod(flaky, 0o755)
        os.environ["JSII_NODE"] = flaky
        import slurmgen
        try:
            import cdk8s
        except RuntimeError as err:
            print("first start failed:", "before its handshake" in str(err))
        for name in [m for m in sys.modules if m == "cdk8s" or m.startswith(("cdk8s.", "constructs", "jsii"))]:
            del sys.modules[name]
        from slurmgen import _jsii_channel
        print("direct after the failure:", _jsii_channel.direct())
        """)
    run = run_python(code)
    # THEN the failed kernel is not the one direct requests would go to
    assert run.returncode == 0, run.stderr
    assert "first start failed: True" in run.stdout and "direct after the failure: None" in run.stdout


def test_no_direct_requests_through_the_stock_relay():
    # GIVEN stock jsii (the relay): WHEN cdk8s started its kernel / THEN there is no direct channel,
    # and emit goes through jsii's own API (the same bytes: test_direct_and_relayed_kernels_render_the_same_bytes)
    code = KERNEL_PROBE + "from slurmgen import _jsii_channel\nprint(_jsii_channel.direct() is None)\n"
    run = run_python(code, SLURMGEN_JSII_RELAY="1")
    assert run.returncode == 0, run.stderr
    assert run.stdout.split()[-1] == "True"
