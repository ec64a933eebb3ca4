"""Command line: load specs, render, verify, then write (or compare, with --check).

Exit status: 0 done (or --check clean), 1 --check found drift, 2 invalid input or a render that
failed verification. On 2 nothing is written.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Sequence

REPO = Path(__file__).resolve().parent.parent


def cluster_files(folder: Path) -> list[Path]:
    """Every cluster spec in a folder; files starting with `_` are shared defaults, not clusters."""
    return sorted(p for p in folder.glob("*.yaml") if not p.name.startswith("_"))


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="main.py", description="Render clusters/*.yaml into an Argo CD tree under dist/.")
    p.add_argument("--spec", action="append", type=Path, metavar="FILE",
                   help="spec file to render (repeatable); default: every clusters/*.yaml not starting with _")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help="output root; default: $CDK8S_OUTDIR, else dist/")
    p.add_argument("--check", action="store_true",
                   help="render into a temporary folder and compare with the output root; exit 1 on drift")
    p.add_argument("--allow-destroy", action="append", default=[], metavar="KIND/NAME",
                   help="approve removing a stateful object or changing an immutable field of it (repeatable)")
    p.add_argument("--timings", action="store_true", help="print how long each step took (stderr)")
    p.add_argument("--summary", action="store_true",
                   help="print a Markdown summary of what changes against the base, write nothing")
    base = p.add_mutually_exclusive_group()
    base.add_argument("--base", metavar="GIT_REF", default=None,
                      help="with --summary: compare with the output folder committed at this ref (default HEAD)")
    base.add_argument("--base-dir", type=Path, metavar="DIR", help="with --summary: compare with this folder")
    p.add_argument("--explain", metavar="FILE",
                   help="print the effective slurm.conf, cgroup.conf, gres.conf or slurmdbd.conf the operator "
                        "will write, write nothing")
    p.add_argument("--cluster", metavar="NAME", help="with --explain: only this cluster")
    p.add_argument("--crd-dir", type=Path, metavar="DIR",
                   help="validate against the CRD YAML files in DIR instead of the vendored, pinned schemas")
    p.add_argument("--no-cache", action="store_true",
                   help="render every cluster, neither reading nor writing the render cache (CI)")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="processes that render (default: from the CPUs and the number of clusters to render)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    out = args.out or Path(os.environ.get("CDK8S_OUTDIR") or REPO / "dist")
    folder = REPO / "clusters"
    spec_paths = args.spec or cluster_files(folder)
    if not spec_paths:
        # Exit 2, not 0: with no spec every dist/<cluster> would silently become an orphan.
        print(f"{folder}: no cluster spec (a *.yaml whose name does not start with '_'): "
              f"add {folder.name}/<name>.yaml or pass --spec FILE", file=sys.stderr)
        return 2

    if args.cluster and not args.explain:
        print("--cluster: only with --explain FILE", file=sys.stderr)
        return 2
    if args.explain:
        from .slurmconf.explain import ExplainError, check_file
        try:
            check_file(args.explain)
        except ExplainError as err:
            print(err, file=sys.stderr)
            return 2

    # Imported here so `--help` and argument errors stay instant (cdk8s starts a Node.js process).
    from .pipeline import InputError, run

    try:
        result = run(spec_paths, crd_dir=args.crd_dir, use_cache=not args.no_cache,
                     processes=max(1, args.workers) if args.workers is not None else None)
    except InputError as err:
        for line in err.lines:
            print(line, file=sys.stderr)
        return 2
    if args.explain:
        return _explain(result, args.explain, args.cluster)
    if args.summary:
        return _summary(result, out, args.base, args.base_dir, subset=bool(args.spec))
    refused = result.guard(out, args.allow_destroy) + result.sync_problems(out)
    if refused:
        for line in refused:
            print(line, file=sys.stderr)
        return 2
    full = not args.spec  # every spec rendered: a cluster folder without a spec is stale
    orphans = result.orphans(out) if full else []
    if args.check:
        drift = result.compare(out)
        for line in drift + [_orphan_line(out, name) for name in orphans]:
            print(line)
        if drift:
            print(f"dist is stale: run `make synth` and commit {out}", file=sys.stderr)
        if orphans:
            # synth never deletes a cluster folder, so `make synth` cannot clear this drift.
            print(f"{len(orphans)} orphaned cluster folder(s) in {out}: no spec renders them and synth never removes "
                  "them; delete each by hand once its Argo CD root Application is gone "
                  "(it may hold stateful objects; see README, 'Guarantees')", file=sys.stderr)
        if drift or orphans:
            return 1
        print(f"{out}: up to date ({result.object_count} objects in {len(result.clusters)} cluster(s))")
    else:
        with result.timer("write"):
            result.write(out)
        print(f"wrote {result.object_count} objects for {len(result.clusters)} cluster(s) into {out}")
        for name in orphans:
            print(f"warning: {_orphan_line(out, name)}", file=sys.stderr)
    if args.timings:
        for line in result.timing_lines():
            print(line, file=sys.stderr)
    return 0


def _orphan_line(out: Path, name: str) -> str:
    """The advice for a cluster folder whose spec is gone: by hand, because synth never deletes one."""
    return (f"orphaned: {out / name}: no spec renders it (no clusters/{name}.yaml); delete the folder by hand "
            "once its Argo CD root Application is gone (it may hold stateful objects; see README)")


def _explain(result: object, name: str, cluster: str | None) -> int:
    """Print one effective Slurm file (`--explain`); exit 2 with one line for an unknown cluster."""
    from .slurmconf.explain import ExplainError, explain

    trees = {c.spec.name: c.files for c in result.clusters}  # type: ignore[attr-defined]
    try:
        sys.stdout.write(explain(trees, name, cluster))
    except ExplainError as err:
        print(err, file=sys.stderr)
        return 2
    return 0


def _summary(result: object, out: Path, ref: str | None, base_dir: Path | None, *, subset: bool) -> int:
    """Print the PR summary; with --spec, only the named clusters are compared."""
    from .review import BaseUnavailable, trees_from_dir, trees_from_git
    from .summary import summarize

    try:
        old = trees_from_dir(base_dir) if base_dir else trees_from_git(ref or "HEAD", out)
    except BaseUnavailable as err:
        print(err, file=sys.stderr)
        return 2
    new = {c.spec.name: dict(c.files) for c in result.clusters}  # type: ignore[attr-defined]
    if subset:
        old = {name: tree for name, tree in old.items() if name in new}
    sys.stdout.write(summarize(old, new, catalog=result.catalog))  # type: ignore[attr-defined]
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
