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
    p.add_argument("--crd-dir", type=Path, metavar="DIR",
                   help="validate against the CRD YAML files in DIR instead of the vendored, pinned schemas")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    out = args.out or Path(os.environ.get("CDK8S_OUTDIR") or REPO / "dist")
    spec_paths = args.spec or cluster_files(REPO / "clusters")

    # Imported here so `--help` and argument errors stay instant (cdk8s starts a Node.js process).
    from .pipeline import InputError, run

    try:
        result = run(spec_paths, crd_dir=args.crd_dir)
    except InputError as err:
        for line in err.lines:
            print(line, file=sys.stderr)
        return 2
    if args.summary:
        return _summary(result, out, args.base, args.base_dir, subset=bool(args.spec))
    refused = result.guard(out, args.allow_destroy)
    if refused:
        for line in refused:
            print(line, file=sys.stderr)
        return 2
    full = not args.spec  # every spec rendered: a cluster folder without a spec is stale
    orphans = result.orphans(out) if full else []
    if args.check:
        drift = result.compare(out) + [f"orphaned: {out / name} (no clusters/{name}.yaml)" for name in orphans]
        for line in drift:
            print(line)
        if drift:
            print(f"dist is stale: run `make synth` and commit {out}", file=sys.stderr)
            return 1
        print(f"{out}: up to date ({result.object_count} objects in {len(result.clusters)} cluster(s))")
    else:
        with result.timer("write"):
            result.write(out)
        print(f"wrote {result.object_count} objects for {len(result.clusters)} cluster(s) into {out}")
        for name in orphans:
            print(f"warning: {out / name} has no clusters/{name}.yaml; delete it by hand once its Argo CD root "
                  "Application is gone (it holds stateful objects)", file=sys.stderr)
    if args.timings:
        for line in result.timing_lines():
            print(line, file=sys.stderr)
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
    sys.stdout.write(summarize(old, new))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
