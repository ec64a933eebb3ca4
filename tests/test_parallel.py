"""Rendering in worker processes: same bytes whatever the number of processes; how many are chosen."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass

import pytest

from pathlib import Path

from slurmgen.run import parallel
from slurmgen.run.pipeline import run
from tests.conftest import EXAMPLES, REPO, SPECS
from tests.spec_builder import variant


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (state first, then the parent), or None."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _pids() -> list[int]:
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def children(pid: int) -> list[int]:
    """Direct children of `pid` (Linux /proc)."""
    return [p for p in _pids() if (stat := _stat(p)) is not None and int(stat[1]) == pid]


def running(pid: int) -> bool:
    """Whether `pid` exists and has not exited (an orphan's zombie may wait for a reaper that never comes)."""
    stat = _stat(pid)
    return stat is not None and stat[0] not in ("Z", "X")


def cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")



@pytest.fixture(scope="module")
def alone():
    """The example clusters rendered in this process alone: what every process count must reproduce."""
    return run(EXAMPLES, processes=1)


def test_clusters_are_taken_heaviest_first_then_by_name():
    # GIVEN four clusters of different sizes
    @dataclass
    class Spec:
        name: str
        nodesets: tuple = ()

    specs = [Spec("a", (1, 2)), Spec("b"), Spec("c", (1,)), Spec("e", (1, 2)), Spec("d", (1, 2, 3))]
    # WHEN ordered for taking / THEN the most nodesets first, ties by name
    assert [s.name for s in parallel.heaviest_first(specs)] == ["d", "a", "e", "c", "b"]  # type: ignore[arg-type]


def test_every_cluster_is_taken_exactly_once_across_processes():
    # GIVEN a counter shared with two spawned processes that each take indexes until none is left
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("spawn")
    claims = parallel.Claims(context)
    specs = list(range(400))
    pools = [ProcessPoolExecutor(max_workers=1, mp_context=context, initializer=parallel._adopt, initargs=(claims,))
             for _ in range(2)]
    try:
        futures = [pool.submit(_take_all, specs) for pool in pools]
        # WHEN this process takes too
        mine = list(claims.each(specs))  # type: ignore[arg-type]
        theirs = [i for f in futures for i in f.result(timeout=60)]
    finally:
        for pool in pools:
            pool.shutdown()
    # THEN each index went to exactly one process
    assert sorted(mine + theirs) == specs


def _take_all(specs: list) -> list:
    return list(parallel._CLAIMS[0].each(specs))


def test_a_worker_renders_the_same_bytes_as_this_process(alone):
    # GIVEN the example clusters rendered here alone
    from slurmgen.catalog.catalog import load_catalog
    from slurmgen.spec import load_specs

    specs = parallel.heaviest_first(load_specs(EXAMPLES, catalog=load_catalog()))
    # WHEN one worker takes every cluster (this process takes none)
    with parallel.Workers(1, None) as workers:
        rendered = {r.name: r for f in workers.render(specs + specs[:1], None, None) for r in f.result()}
        worker = next(iter(workers.pools[0]._processes.values())).pid
    # (and the worker, with its jsii kernel, is gone once the run is over)
    deadline = time.monotonic() + 10
    while running(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not running(worker)
    # THEN its files and texts are those of this process, cluster by cluster
    assert sorted(rendered) == [c.spec.name for c in alone.clusters]
    for cluster in alone.clusters:
        assert rendered[cluster.spec.name].files == dict(cluster.files)
        assert rendered[cluster.spec.name].texts == alone.rendered_texts[cluster.spec.name]
        assert rendered[cluster.spec.name].problems == []


@pytest.mark.parametrize(("clusters", "cpus", "budget", "expected"), [
    (40, 2, parallel.MEMORY_BUDGET_MB, 2),  # the default budget holds two processes, each with its jsii kernel
    (1, 2, 2000, 1),      # one cluster: a worker's start would cost more than it saves
    (7, 8, 2000, 1),      # too few clusters per process
    (8, 2, 2000, 2),      # two CPUs: two processes
    (40, 2, 2000, 2),
    (40, 1, 2000, 1),     # one CPU: never more than one
    (40, 16, 930, 4),     # memory: 270 MB for the first process, 220 MB for each more
    (40, 16, 489, 1),     # one MB short of a second process
])
def test_process_count_follows_cpus_fleet_size_and_memory(monkeypatch, clusters, cpus, budget, expected):
    # GIVEN no override / WHEN choosing / THEN the count is bounded by CPUs, work and memory
    monkeypatch.delenv("SLURMGEN_WORKERS", raising=False)
    assert parallel.choose_processes(clusters, cpus, budget) == expected


def test_the_memory_budget_comes_from_the_environment(monkeypatch):
    # GIVEN SLURMGEN_MEMORY_MB / WHEN choosing for a large fleet on many CPUs / THEN it bounds the count
    monkeypatch.delenv("SLURMGEN_WORKERS", raising=False)
    monkeypatch.setenv("SLURMGEN_MEMORY_MB", "300")
    assert parallel.choose_processes(40, 8) == 1
    monkeypatch.setenv("SLURMGEN_MEMORY_MB", "930")
    assert parallel.choose_processes(40, 8) == 4
    monkeypatch.delenv("SLURMGEN_MEMORY_MB")
    assert parallel.choose_processes(40, 8) == 2


def test_the_environment_can_force_a_process_count(monkeypatch):
    # GIVEN SLURMGEN_WORKERS / WHEN choosing / THEN it wins, but never exceeds the clusters
    monkeypatch.setenv("SLURMGEN_WORKERS", "3")
    assert parallel.choose_processes(40, 1) == 3
    assert parallel.choose_processes(2, 1) == 2


def test_a_failure_in_a_worker_is_one_plain_line_like_in_one_process(tmp_path):
    # GIVEN CRD schemas that cannot be read (an empty --crd-dir)
    from slurmgen.run.pipeline import InputError

    empty = tmp_path / "crds"
    empty.mkdir()
    # WHEN the examples render in one process, then in three
    lines = []
    for processes in (1, 3):
        with pytest.raises(InputError) as err:
            run(EXAMPLES, crd_dir=empty, processes=processes)
        lines.append(err.value.lines)
    # THEN both report the same plain line(s), naming the problem
    assert lines[0] == lines[1]
    assert lines[0] and all(line.startswith("cannot validate the rendered objects: ") for line in lines[0])


def test_a_spec_error_with_workers_warming_up_is_the_plain_line_of_one_process(tmp_path):
    # GIVEN the examples plus one spec with an unknown top-level field; workers start before the specs load
    from slurmgen.run.pipeline import InputError

    bad = tmp_path / "broken.yaml"
    bad.write_text(variant((SPECS / "example.yaml").read_text(), name="broken", notAField=1))
    # WHEN run alone and with two workers warming up
    lines = []
    for processes in (1, 3):
        with pytest.raises(InputError) as err:
            run([*EXAMPLES, bad], processes=processes)
        lines.append(err.value.lines)
    # THEN the same plain lines, naming the file and the field
    assert lines[0] == lines[1]
    assert any(str(bad) in line and "notAField" in line for line in lines[0])


def test_workers_not_needed_are_stopped_and_none_are_started_for_none():
    # GIVEN no extra process wanted, THEN no pool at all, and this process takes every cluster
    with parallel.Workers(0, None) as workers:
        assert workers.pools == [] and workers.render([], None, None) == []
        assert list(workers.claims.each(["a", "b"])) == ["a", "b"]  # type: ignore[arg-type]
    # GIVEN two warming workers and two clusters, WHEN rendering, THEN one worker takes part
    # (with this process), the other is shut down
    with parallel.Workers(2, None) as workers:
        futures = workers.render([], None, None)
        assert futures == []
    from slurmgen.catalog.catalog import load_catalog
    from slurmgen.spec import load_specs

    two = load_specs(EXAMPLES[:2], catalog=load_catalog())
    with parallel.Workers(2, None) as workers:
        workers.claims.take(), workers.claims.take()  # this process took both clusters already
        futures = workers.render(two, None, None)
        assert len(futures) == 1 and futures[0].result() == []
        with pytest.raises(RuntimeError):  # a shut-down pool takes no more work
            workers.pools[1].submit(int)


def test_a_failed_run_stops_its_workers_instead_of_waiting_for_them():
    # GIVEN a worker warming up (importing cdk8s, starting its kernel)
    with pytest.raises(RuntimeError, match="spec error"):
        with parallel.Workers(1, None) as workers:
            processes = list(workers.pools[0]._processes.values())  # spawned at the warm-up's submit
            assert processes
            # WHEN the run fails before the worker is done
            raise RuntimeError("spec error")
    # THEN the worker is terminated, not left to finish what nobody will read. (The pool's own
    # thread may reap it at the same moment; its exit code is then set a moment later: wait for it.)
    import time

    for process in processes:
        deadline = time.monotonic() + 20
        while process.exitcode is None and time.monotonic() < deadline:
            process.join(timeout=0.1)
        assert not process.is_alive()
        assert process.exitcode is not None and process.exitcode < 0  # ended by a signal, not by finishing


@pytest.mark.parametrize(("allowed", "processes", "expected"), [
    ({0, 1}, 2, [0, 1]),        # as many processes as CPUs: one each, in order
    ({3, 5}, 2, [3, 5]),        # the CPUs this process may use, not 0..n-1
    ({0, 1, 2, 3}, 2, [None, None]),  # more CPUs than processes: nothing pinned
    ({0, 1}, 1, [None]),        # one process: nothing pinned (its checks use the other CPU)
])
def test_each_rendering_process_keeps_to_a_cpu_of_its_own_when_they_are_as_many(monkeypatch, allowed, processes,
                                                                                expected):
    # GIVEN the CPUs this process may run on / WHEN asking for each process's CPU / THEN
    monkeypatch.setattr(parallel.os, "sched_getaffinity", lambda pid: set(allowed))
    assert [parallel.cpu_for(i, processes) for i in range(processes)] == expected


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs Linux CPU affinity")
def test_kept_to_pins_this_thread_and_what_it_starts_then_restores_it():
    # GIVEN this thread's CPUs / WHEN kept to the last of them
    before = os.sched_getaffinity(0)
    cpu = max(before)
    seen = []
    with parallel.kept_to(cpu):
        inside = os.sched_getaffinity(0)
        thread = threading.Thread(target=lambda: seen.append(os.sched_getaffinity(0)))
        thread.start()
        thread.join()
    # THEN it and a thread it started ran on that CPU only, and its CPUs are back afterwards
    assert inside == {cpu} and seen == [{cpu}]
    assert os.sched_getaffinity(0) == before


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) != 2,
                    reason="needs exactly two CPUs (one worker beside this process)")
def test_a_worker_and_its_kernel_keep_to_the_second_cpu():
    # GIVEN two CPUs and one worker (so this process and the worker are one per CPU)
    cpus = sorted(os.sched_getaffinity(0))
    with parallel.Workers(1, None) as workers:
        pool = workers.pools[0]
        worker = pool.submit(os.getpid).result(timeout=120)  # runs after the warm-up (one process, in order)
        kernels = [pid for pid in children(worker) if "node" in Path(cmdline(pid)[0]).name]
        # THEN the worker and its jsii kernel run on the second CPU only
        assert os.sched_getaffinity(worker) == {cpus[1]}
        assert len(kernels) == 1 and os.sched_getaffinity(kernels[0]) == {cpus[1]}
        parallel._stop(pool)


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) != 2,
                    reason="needs exactly two CPUs (this process and one worker)")
def test_the_callers_kernel_keeps_to_the_first_cpu_and_the_caller_gets_its_cpus_back():
    # GIVEN a fresh interpreter that renders the examples in two processes (its kernel starts in run)
    import json
    import subprocess
    import sys

    # (its Node processes found as descendants through /proc: jsii's internals are not ours to read)
    code = ("import os, json; from slurmgen.run.pipeline import run; from tests.conftest import EXAMPLES\n"
            "from tests.test_parallel import children, cmdline\n"
            "run(EXAMPLES, processes=2)\n"
            "def nodes(pid):\n"
            "    return [p for p in children(pid) if 'node' in os.path.basename(cmdline(p)[0])]\n"
            "found = nodes(os.getpid())\n"  # this process's own: jsii's relay, then its kernel (not a worker's)
            "found += [k for p in found for k in nodes(p)]\n"
            "print(json.dumps([[sorted(os.sched_getaffinity(p)) for p in found], sorted(os.sched_getaffinity(0))]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    # THEN its Node processes (jsii's relay and kernel) ran on the first CPU only, and the caller may use
    # both CPUs again
    cpus = sorted(os.sched_getaffinity(0))
    nodes, caller = json.loads(done.stdout)
    assert nodes and all(affinity == [cpus[0]] for affinity in nodes), nodes
    assert caller == cpus


def test_a_worker_killed_after_taking_a_cluster_leaves_it_to_this_process(monkeypatch, alone):
    # GIVEN the examples rendered in this process alone, and a run with one worker that is killed
    # (out of memory, SIGKILL) right after it took its first cluster, before handing anything back
    import signal
    import time

    from slurmgen.run.launch import launch

    started = launch(EXAMPLES, use_cache=False, processes=2)
    worker = next(iter(started.workers.pools[0]._processes.values()))
    take_here = parallel.Claims.each

    def each_after_the_kill(self, specs):
        deadline = time.monotonic() + 120
        while self._shared.value < 1 and time.monotonic() < deadline:  # the worker has taken one
            time.sleep(0.005)
        os.kill(worker.pid, signal.SIGKILL)
        worker.join(timeout=30)
        yield from take_here(self, specs)

    monkeypatch.setattr(parallel.Claims, "each", each_after_the_kill)
    # WHEN the run goes on
    shared = run(EXAMPLES, processes=2, launched=started)
    # THEN every cluster is there with the same bytes (the lost one rendered here), and the run says so
    assert shared.rendered_texts == alone.rendered_texts
    assert shared.notes == ("1 worker process(es) ended abruptly (killed? out of memory?); "
                            "its clusters were rendered by the main process",)


def test_collect_keeps_what_came_back_and_names_the_workers_lost():
    # GIVEN results from two workers, one of which ended abruptly
    from concurrent.futures import Future
    from concurrent.futures.process import BrokenProcessPool

    done, broken = Future(), Future()
    done.set_result(["a"])
    broken.set_exception(BrokenProcessPool("gone"))
    # WHEN collected / THEN what came back, and one line naming the loss
    assert parallel.collect([done, broken]) == (["a"], "1 worker process(es) ended abruptly (killed? out of memory?)")
    assert parallel.collect([done]) == (["a"], "")


def _tagged(tag: str) -> list[int]:
    """Running processes whose environment carries `tag` (a run's Python processes and their Node kernels)."""
    def carries(pid: int) -> bool:
        try:
            return tag.encode() in Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            return False

    return [p for p in _pids() if carries(p) and running(p)]


def _fleet_run(tmp_path: Path, tag: str):
    """main.py rendering 10 generated clusters in two processes, its processes tagged; returns once
    the worker's kernel runs (two Node processes carry the tag)."""
    import importlib.util
    import subprocess
    import sys
    import time

    spec = importlib.util.spec_from_file_location("synth_bench", REPO / "bench" / "synth_bench.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)  # type: ignore[union-attr]
    (tmp_path / "specs").mkdir()
    specs = bench.fleet(tmp_path / "specs", 10)
    args = [a for p in specs for a in ("--spec", str(p))]
    proc = subprocess.Popen([sys.executable, "-O", "main.py", *args, "--out", str(tmp_path / "out"), "--no-cache",
                             "--workers", "2"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "SLURMGEN_TEST_TAG": tag, "SLURMGEN_CACHE_DIR": str(tmp_path / "c")})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        nodes = [pid for pid in _tagged(tag) if "node" in Path(cmdline(pid)[0]).name]
        if len(nodes) >= 2:
            return proc
        time.sleep(0.02)
    proc.kill()
    pytest.fail(f"the run never had two kernels: {proc.communicate()}")


def _gone(tag: str, seconds: float = 10) -> list[int]:
    import time

    deadline = time.monotonic() + seconds
    while _tagged(tag) and time.monotonic() < deadline:
        time.sleep(0.05)
    return _tagged(tag)


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_a_run_stopped_while_rendering_leaves_no_process_and_no_traceback(tmp_path, sig):
    # GIVEN a fleet rendering in two processes, each with its kernel
    import signal
    import uuid

    tag = f"stop-{uuid.uuid4()}"
    proc = _fleet_run(tmp_path, tag)
    # WHEN the run is told to stop (a CI job cancelled, Ctrl-C)
    proc.send_signal(getattr(signal, sig))
    _, err = proc.communicate(timeout=60)
    # THEN it exits 128 + the signal, quietly, writes nothing, and none of its processes is left
    assert proc.returncode == 128 + getattr(signal, sig) and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()
    assert _gone(tag) == []


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux /proc")
def test_a_killed_run_leaves_no_worker_and_no_kernel(tmp_path):
    # GIVEN a fleet rendering in two processes
    import uuid

    tag = f"kill-{uuid.uuid4()}"
    proc = _fleet_run(tmp_path, tag)
    # WHEN the main process is killed outright (the OOM killer, SIGKILL): no unwinding at all
    proc.kill()
    proc.communicate(timeout=60)
    # THEN its worker dies with it (it watches its parent's sentinel) and every kernel with its interpreter
    assert _gone(tag) == []


def test_a_claim_counter_whose_lock_cannot_be_had_stops_the_taking(monkeypatch):
    # GIVEN a counter shared with a worker, whose lock is held (as by a process killed holding it)
    import multiprocessing

    claims = parallel.Claims(multiprocessing.get_context("spawn"))
    monkeypatch.setattr(parallel, "CLAIM_TIMEOUT", 0.1)
    lock = claims._shared.get_lock()
    assert lock.acquire()
    # WHEN this process takes clusters (from another thread: the lock is this thread's) / THEN it
    # stops instead of waiting forever (what nobody took is rendered at the end of the run)
    taken = []
    thread = threading.Thread(target=lambda: taken.extend(claims.each(["a", "b"])))  # type: ignore[arg-type]
    thread.start()
    thread.join(timeout=10)
    lock.release()
    assert not thread.is_alive() and taken == []


def test_a_cpu_the_system_refuses_is_only_not_pinned(monkeypatch):
    # GIVEN a system that refuses to pin (a sandbox, a changed cpuset)
    def refuse(pid, cpus):
        raise OSError(22, "Invalid argument")

    monkeypatch.setattr(parallel.os, "sched_setaffinity", refuse)
    # WHEN kept to a CPU / THEN the work runs anyway, unpinned, and nothing is raised
    ran = []
    with parallel.kept_to(0):
        ran.append(True)
    assert ran == [True]
