"""`python -m rehearse [--cluster NAME ...] [--dist DIR] [--stage api|all]`: what `make rehearse` runs.

Builds the pinned upstream programs when missing (rehearse.build), then plays each dist/<cluster>/
as it is on disk (what you commit, not a fresh render): every object with dry-run on one API
server (play.py), then, per cluster on a fresh one, Argo CD's sync of it and of a second rendering
(sync.py). One line per cluster; exit 0 only when everything held.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from slurmgen._input import UnreadableFile

from slurmgen.review.preview import locator_from_env
from slurmgen.review.preview.charts import HelmSource

from . import build, cluster, crds, play, sync, tree
from . import change as rehearse_change

REPO = Path(__file__).resolve().parents[1]


def say(message: str) -> None:
    """Progress on stderr, so the per-cluster lines on stdout stay clean."""
    print(f"rehearse: {message}", file=sys.stderr, flush=True)


def _relative(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def clusters_in(dist: Path, wanted: list[str]) -> list[Path]:
    """The cluster folders to play: those named, or every folder of `dist` that holds YAML."""
    if wanted:
        return [dist / name for name in wanted]
    if not dist.is_dir():
        return []
    return sorted(p for p in dist.iterdir() if p.is_dir() and any(p.rglob("*.yaml")))


def report(name: str, outcome: play.Outcome, version: str) -> str:
    """The cluster's line, after its refusals (each as the API server words it, with the file)."""
    for obj, message in outcome.refused:
        print(f"  REFUSED {_relative(obj.file)} ({obj.label}): {message}")
    by_text: dict[str, list[str]] = {}
    for obj, message in outcome.warnings:  # one line per distinct warning: Argo CD's finalizer draws 1 per Application
        by_text.setdefault(message, []).append(_relative(obj.file))
    for message, files in by_text.items():
        where = files[0] if len(files) == 1 else f"{len(files)} objects, e.g. {files[0]}"
        print(f"  warning ({where}): {message}")
    return (f"rehearse {name}: {len(outcome.accepted)} objects accepted by kube-apiserver {version} (dry-run), "
            f"{len(outcome.refused)} refused, {outcome.seconds:.1f}s")


def sync_line(name: str, first: str, outcome: sync.SyncOutcome) -> str:
    """The cluster's line once Argo CD converged: the API server's count, the Applications in wave
    order, what was faked and not played, what the second rendering proved, the time."""
    waves: dict[int, list[str]] = {}
    for app in outcome.apps:
        if app.name != outcome.root:
            waves.setdefault(app.wave, []).append(app.name)
    order = " < ".join(f"{w}: {', '.join(names)}" for w, names in sorted(waves.items()))
    order += f"; then the root {outcome.root}"
    faked = ", ".join(f"{kind} x{n}" for kind, n in sorted(outcome.faked.items())) or "nothing"
    left = f"; not played: {len(outcome.rewrites.left_out)} (listed above)" if outcome.rewrites.left_out else ""
    return (f"rehearse {name}: {first}; Argo CD {build.ARGOCD_VERSION}: {len(outcome.apps)} Applications Synced and "
            f"Healthy in wave order [{order}]; {'; '.join(outcome.checks)}; faked status: {faked}; "
            f"{outcome.nodes} kwok nodes{left}; {outcome.seconds:.0f}s")


def sync_cluster(bin_dir: Path, folder: Path, objects: list[tree.TreeObject], accepted: str, locator,
                 vendored: list[crds.Crd], change: bool) -> tuple[list[str], bool]:
    """The sync stage of one cluster (in a thread of its own): its output lines, and whether it held.
    `objects` are the folder's, as the API server stage read them; `accepted` is that stage's count."""
    name = folder.name

    def said(message: str) -> None:
        say(message if message.startswith(f"{name}:") else f"{name}: {message.strip()}")

    said(f"the sync stage (Argo CD {build.ARGOCD_VERSION} on a fresh API server)")
    missing = charts_missing(objects, locator)
    if missing:  # no chart at all: the waves after the charts' CRDs could never converge; say so at once
        return [f"rehearse {name}: FAILED: the sync stage needs the pinned Helm charts and found none of its "
                f"{missing[0]} ({missing[1]}); {missing[2]}"], False
    try:
        with tempfile.TemporaryDirectory(prefix="slurmgen-rehearse-change-") as work:
            second = None
            if change:
                second, changed = rehearse_change.second_rendering(folder, Path(work))
                said(f"second rendering: {'; '.join(changed)}")
            result = sync.rehearse_cluster(bin_dir, folder, locator, said, second, vendored, objects)
    except (sync.SyncFailed, rehearse_change.NoChange, RuntimeError, OSError) as exc:
        return [f"rehearse {name}: FAILED: {exc}"], False
    lines = [f"  {name}: rewritten for loopback: {line}" for line in result.rewrites.lines]
    lines += [f"  {name}: added to a plain Argo CD install: {line}" for line in result.settings]
    lines += [f"  {name}: not played: {line}" for line in result.rewrites.left_out]
    if result.timeline:
        lines.append(f"  {name}: timeline: {result.timeline}")
    return [*lines, sync_line(name, accepted, result)], True


def charts_missing(objects: list[tree.TreeObject], locator) -> tuple[int, str, str] | None:
    """When not one chart of the tree's Helm Applications can be found: (how many there are, why the
    first was not found, the fix); None when one was found, or there are none."""
    sources = [source for obj in objects if obj.group_kind == ("argoproj.io", "Application")
               if (source := HelmSource.of(obj.body)) is not None]
    found = [locator.find(source) for source in sources]
    if not sources or any(f.path is not None for f in found):
        return None
    fix = found[0].fix or "let them be pulled (make preview-install, SLURMGEN_CHART_PULL=1)"
    if locator.chart_dir is None:
        fix += ", or set SLURMGEN_CHART_DIR to a folder of the charts unpacked (as for --preview)"
    return len(sources), found[0].why, fix


def run(dist: Path, names: list[str], stages: str = "all", change: bool = True, jobs: int = 2) -> int:
    """Play every cluster of `dist` (or those named): first every object with dry-run on one API
    server, then (stages "all") Argo CD's sync of each cluster on a fresh one; 0 when all held."""
    folders = clusters_in(dist, names)
    missing = [f for f in folders if not f.is_dir()]
    if missing or not folders:
        say(f"no cluster folder {', '.join(map(str, missing)) or 'under ' + str(dist)} (render with `make synth`)")
        return 2
    started = time.monotonic()
    try:
        bin_dir = build.build(build.API_SERVER if stages == "api" else build.PROGRAMS)
        vendored = crds.load()
    except (build.BuildError, crds.CrdError) as exc:
        say(str(exc))
        return 1
    try:  # each folder read once: for the CRDs its kinds need, then played
        trees = {folder: tree.read_cluster(folder) for folder in folders}
    except (yaml.YAMLError, UnreadableFile) as exc:
        say(f"a file of the tree cannot be read: {exc}")
        return 1
    kinds = {obj.group_kind for objects in trees.values() for obj in objects}
    wanted = crds.needed(vendored, kinds)
    failed = 0
    first: dict[Path, str] = {}
    try:
        with cluster.api_server(bin_dir, say) as server:
            say(f"installing the {len(wanted)} CRDs (of {len(vendored)} in rehearse/crds/) that the tree needs")
            crds.install(server.client, wanted)
            for folder in folders:
                outcome = play.play(server.client, folder, say, trees[folder])
                line = report(folder.name, outcome, server.version)
                if outcome.refused or stages == "api":
                    print(line, flush=True)
                    failed += bool(outcome.refused)
                else:
                    first[folder] = line.split(": ", 1)[1].rsplit(", ", 1)[0]
    except (RuntimeError, OSError) as exc:  # a start that failed, a CRD refused, the server gone
        say(str(exc))
        return 1
    locator = locator_from_env()
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:  # each cluster has its own processes and ports
        futures = [pool.submit(sync_cluster, bin_dir, folder, trees[folder], accepted, locator, vendored, change)
                   for folder, accepted in first.items()]
        try:
            for future in futures:  # in cluster order, each as soon as it can be
                lines, ok = future.result()
                print("\n".join(lines), flush=True)
                failed += not ok
        except BaseException:  # Ctrl-C, SIGTERM: the clusters still syncing stop at their next poll
            sync.STOP.set()
            for future in futures:
                future.cancel()
            raise
    say(f"done in {time.monotonic() - started:.1f}s")
    return 0 if failed == 0 else 1


def _terminated(_signum: int, _frame: object) -> None:
    """SIGTERM unwinds like Ctrl-C: every process started is stopped on the way out."""
    say("terminated: stopping every process started")
    sys.exit(143)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rehearse", description=__doc__.splitlines()[0])
    parser.add_argument("--cluster", action="append", default=[], help="a cluster folder under --dist (repeatable)")
    parser.add_argument("--dist", type=Path, default=REPO / "dist", help="the rendered tree (default: dist/)")
    parser.add_argument("--stage", choices=("api", "all"), default="all",
                        help="api: the API server's dry-run only; all: then Argo CD's sync of each cluster")
    parser.add_argument("--no-change", action="store_true", help="skip the second rendering (change and prune)")
    parser.add_argument("--jobs", type=int, default=2, help="clusters whose sync stage runs at once (default 2)")
    args = parser.parse_args(argv)
    # Ctrl-C raises KeyboardInterrupt; SIGTERM likewise unwinds, so every process started is stopped
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started with SIGINT ignored
    signal.signal(signal.SIGTERM, _terminated)
    names = [n for arg in args.cluster for n in arg.split(",") if n]
    try:
        return run(args.dist.resolve(), names, args.stage, not args.no_change, args.jobs)
    except KeyboardInterrupt:
        say("interrupted: every process started was stopped")
        return 130


if __name__ == "__main__":
    sys.exit(main())
