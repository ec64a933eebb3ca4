"""`python -m rehearse [--cluster NAME ...] [--dist DIR]`: what `make rehearse` runs.

Builds the pinned upstream programs when missing (rehearse.build), starts etcd and kube-apiserver
on loopback, installs the vendored CRDs, and plays each dist/<cluster>/ as it is on disk (what you
commit, not a fresh render). One line per cluster; exit 0 only when the API server accepted every object.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

import yaml

from slurmgen._input import UnreadableFile

from . import build, cluster, crds, play, tree

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


def run(dist: Path, names: list[str]) -> int:
    """Play every cluster of `dist` (or those named) on one fresh API server; 0 when all were accepted."""
    folders = clusters_in(dist, names)
    missing = [f for f in folders if not f.is_dir()]
    if missing or not folders:
        say(f"no cluster folder {', '.join(map(str, missing)) or 'under ' + str(dist)} (render with `make synth`)")
        return 2
    started = time.monotonic()
    try:
        bin_dir = build.build()
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
    refused = 0
    try:
        with cluster.api_server(bin_dir, say) as server:
            say(f"installing the {len(wanted)} CRDs (of {len(vendored)} in rehearse/crds/) that the tree needs")
            crds.install(server.client, wanted)
            for folder in folders:
                outcome = play.play(server.client, folder, say, trees[folder])
                print(report(folder.name, outcome, server.version), flush=True)
                refused += len(outcome.refused)
    except (RuntimeError, OSError) as exc:  # a start that failed, a CRD refused, the server gone
        say(str(exc))
        return 1
    say(f"done in {time.monotonic() - started:.1f}s")
    return 0 if refused == 0 else 1


def _terminated(_signum: int, _frame: object) -> None:
    """SIGTERM unwinds like Ctrl-C: every process started is stopped on the way out."""
    say("terminated: stopping every process started")
    sys.exit(143)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rehearse", description=__doc__.splitlines()[0])
    parser.add_argument("--cluster", action="append", default=[], help="a cluster folder under --dist (repeatable)")
    parser.add_argument("--dist", type=Path, default=REPO / "dist", help="the rendered tree (default: dist/)")
    args = parser.parse_args(argv)
    # Ctrl-C raises KeyboardInterrupt; SIGTERM likewise unwinds, so every process started is stopped
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started with SIGINT ignored
    signal.signal(signal.SIGTERM, _terminated)
    names = [n for arg in args.cluster for n in arg.split(",") if n]
    try:
        return run(args.dist.resolve(), names)
    except KeyboardInterrupt:
        say("interrupted: every process started was stopped")
        return 130


if __name__ == "__main__":
    sys.exit(main())
