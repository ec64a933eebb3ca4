"""Rendering in a process pool: same bytes whatever the number of processes; how many are chosen;
a worker killed, a failure or a stop signal leaves no process behind."""

from __future__ import annotations

import os
import multiprocessing
import signal
import time
from dataclasses import dataclass

import pytest

from pathlib import Path

from slurmgen.run import pipeline
from slurmgen.run.pipeline import InputError, run
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


def test_clusters_are_handed_out_heaviest_first_then_by_name():
    # GIVEN four clusters of different sizes
    @dataclass
    class Spec:
        name: str
        nodesets: tuple = ()

    specs = [Spec("a", (1, 2)), Spec("b"), Spec("c", (1,)), Spec("e", (1, 2)), Spec("d", (1, 2, 3))]
    # WHEN ordered for the pool / THEN the most nodesets first, ties by name
    assert [s.name for s in pipeline.heaviest_first(specs)] == ["d", "a", "e", "c", "b"]  # type: ignore[arg-type]


def _workers_gone(seconds: float = 20) -> list:
    """This process's multiprocessing children still alive after waiting up to `seconds`."""
    deadline = time.monotonic() + seconds
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    return multiprocessing.active_children()


@pytest.mark.parametrize("processes", [2, 3])
def test_a_pool_renders_the_same_bytes_as_this_process(alone, processes):
    # GIVEN the example clusters rendered here alone
    # WHEN they render in a pool of workers
    pooled = run(EXAMPLES, processes=processes)
    # THEN the files, texts and order are those of this process, and no worker is left
    assert [c.spec.name for c in pooled.clusters] == [c.spec.name for c in alone.clusters]
    assert pooled.rendered_texts == alone.rendered_texts
    for mine, theirs in zip(alone.clusters, pooled.clusters, strict=True):
        assert dict(theirs.files) == dict(mine.files)
    assert pooled.notes == alone.notes
    assert "worker render" in pooled.timings  # the workers' own steps are reported too
    assert _workers_gone() == []


@pytest.mark.parametrize(("clusters", "cpus", "budget", "expected"), [
    (40, 2, pipeline.MEMORY_BUDGET_MB, 1),  # the default budget (400 MB) holds one process, not a pool of two
    (40, 2, 500, 2),      # 500 MB hold two workers, each with its jsii kernel
    (1, 2, 2000, 1),      # one cluster: a worker's start would cost more than it saves
    (7, 8, 2000, 1),      # too few clusters per process
    (8, 2, 2000, 2),      # two CPUs: two processes
    (40, 2, 2000, 2),
    (40, 1, 2000, 1),     # one CPU: never more than one
    (40, 16, 940, 4),     # memory: 60 MB for this process, 220 MB for each worker
    (40, 16, 499, 1),     # one MB short of two workers: this process renders alone
])
def test_process_count_follows_cpus_fleet_size_and_memory(monkeypatch, clusters, cpus, budget, expected):
    # GIVEN no override / WHEN choosing / THEN the count is bounded by CPUs, work and memory
    monkeypatch.delenv("SLURMGEN_WORKERS", raising=False)
    assert pipeline.choose_processes(clusters, cpus, budget) == expected


def test_the_memory_budget_comes_from_the_environment(monkeypatch):
    # GIVEN SLURMGEN_MEMORY_MB / WHEN choosing for a large fleet on many CPUs / THEN it bounds the count
    monkeypatch.delenv("SLURMGEN_WORKERS", raising=False)
    monkeypatch.setenv("SLURMGEN_MEMORY_MB", "300")
    assert pipeline.choose_processes(40, 8) == 1
    monkeypatch.setenv("SLURMGEN_MEMORY_MB", "940")
    assert pipeline.choose_processes(40, 8) == 4
    monkeypatch.delenv("SLURMGEN_MEMORY_MB")
    assert pipeline.choose_processes(40, 8) == 1


def test_the_environment_can_force_a_process_count(monkeypatch):
    # GIVEN SLURMGEN_WORKERS / WHEN choosing / THEN it wins, but never exceeds the clusters
    monkeypatch.setenv("SLURMGEN_WORKERS", "3")
    assert pipeline.choose_processes(40, 1) == 3
    assert pipeline.choose_processes(2, 1) == 2


def test_a_failure_in_a_worker_is_one_plain_line_like_in_one_process_and_ends_the_workers(tmp_path):
    # GIVEN CRD schemas that cannot be read (an empty --crd-dir)
    empty = tmp_path / "crds"
    empty.mkdir()
    # WHEN the examples render in one process, then in three
    lines = []
    for processes in (1, 3):
        with pytest.raises(InputError) as err:
            run(EXAMPLES, crd_dir=empty, processes=processes)
        lines.append(err.value.lines)
    # THEN both report the same plain line(s), naming the problem, and no worker is left running
    assert lines[0] == lines[1]
    assert lines[0] and all(line.startswith("cannot validate the rendered objects: ") for line in lines[0])
    assert _workers_gone() == []


def test_a_spec_error_is_the_plain_line_of_one_process_and_starts_no_worker(tmp_path):
    # GIVEN the examples plus one spec with an unknown top-level field
    bad = tmp_path / "broken.yaml"
    bad.write_text(variant((SPECS / "example.yaml").read_text(), name="broken", notAField=1))
    # WHEN run alone and with three processes
    lines = []
    for processes in (1, 3):
        with pytest.raises(InputError) as err:
            run([*EXAMPLES, bad], processes=processes)
        lines.append(err.value.lines)
    # THEN the same plain lines, naming the file and the field, and no worker was started (the
    # specs load before any pool exists)
    assert lines[0] == lines[1]
    assert any(str(bad) in line and "notAField" in line for line in lines[0])
    assert multiprocessing.active_children() == []


def killed_on_second(spec, crd_dir):
    """A worker's task that kills its own process on the cluster KILLED (as the OOM
    killer would, mid-render), and renders every other cluster as usual."""
    if spec.name == KILLED:
        os.kill(os.getpid(), signal.SIGKILL)
    return REAL_TASK(spec, crd_dir)


KILLED = "prod"
REAL_TASK = pipeline._render_in_worker


def test_a_worker_killed_mid_render_leaves_its_clusters_to_this_process(monkeypatch, alone):
    # GIVEN a run whose worker is killed outright while it renders one cluster (the task is looked up
    # by name in the spawned worker: this module's killed_on_second)
    assert KILLED in [c.spec.name for c in alone.clusters]
    monkeypatch.setattr(pipeline, "_render_in_worker", killed_on_second)
    # WHEN the run goes on
    shared = run(EXAMPLES, processes=2)
    # THEN every cluster is there with the same bytes (the lost ones rendered here), and the run says so
    assert shared.rendered_texts == alone.rendered_texts
    assert len(shared.notes) == 1
    assert shared.notes[0].startswith("a worker process ended abruptly (killed? out of memory?); ")
    assert shared.notes[0].endswith("cluster(s) were rendered by the main process")
    assert _workers_gone() == []


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
