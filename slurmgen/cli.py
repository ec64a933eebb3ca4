"""Command line: load specs, render, verify, then write (or compare, with --check).

Exit status: 0 done (or --check clean), 1 --check found drift, 2 invalid input or a render that
failed verification. On 2 nothing is written.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence, TextIO

from .errors import UserError, printable

if TYPE_CHECKING:  # only for annotations: importing them at start would slow `--help`
    from .write.output import Survey
    from .run.pipeline import Result

REPO = Path(__file__).resolve().parent.parent


def shown(line: str, cwd: str | None = None) -> str:
    """`line` with every path under the current directory written relative to it (`clusters/dev.yaml: ...`).

    Specs found by default are absolute paths (the repository's clusters/); a message reads as the
    user would type the path. Paths elsewhere stay absolute."""
    try:
        base = os.path.join(cwd or os.getcwd(), "")
    except OSError:  # the current directory is gone
        return line
    if base == os.sep:
        return line
    return re.sub(rf"(?<![\w./-]){re.escape(base)}(?=[^\s:/])", "", line)


def cluster_files(folder: Path) -> list[Path]:
    """Every cluster spec in a folder; files starting with `_` are shared defaults, not clusters."""
    return sorted(p for p in folder.glob("*.yaml") if not p.name.startswith("_"))


def fleet_files(spec_paths: Sequence[Path]) -> list[Path]:
    """The other specs a render of some of `clusters/` is compared with (what must be unique across the
    fleet: verify/collisions.TABLE): every `clusters/*.yaml` cluster spec not in the run. None when no
    spec of the run is in `clusters/`: specs kept elsewhere (a test's folder, a scratch copy) form a
    fleet of their own, the run."""
    folder = REPO / "clusters"
    members = {p.resolve(): p for p in cluster_files(folder)} if folder.is_dir() else {}
    ours = {p.resolve() for p in spec_paths}
    if not ours & set(members):
        return []
    return [path for resolved, path in sorted(members.items()) if resolved not in ours]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="main.py", description="Render clusters/*.yaml into an Argo CD tree under dist/.")
    p.add_argument("--spec", action="append", type=Path, metavar="FILE",
                   help="spec file to render (repeatable); default: every clusters/*.yaml not starting with _")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help="output root; default: $CDK8S_OUTDIR, else dist/")
    p.add_argument("--check", action="store_true",
                   help="render into a temporary folder and compare with the output root; exit 1 on drift")
    p.add_argument("--allow-destroy", action="append", default=[], metavar="CLUSTER:KIND/NAME",
                   help="approve removing a stateful object, shrinking its volume or changing an immutable field "
                        "of it, in one cluster (repeatable); KIND/NAME alone only when one cluster has that change")
    p.add_argument("--timings", action="store_true", help="print how long each step took (stderr)")
    p.add_argument("--summary", action="store_true",
                   help="print a Markdown summary of what changes against the base, write nothing")
    base = p.add_mutually_exclusive_group()
    base.add_argument("--base", metavar="GIT_REF", default=None,
                      help="with --summary: compare with the output folder committed at this ref (default HEAD)")
    base.add_argument("--base-dir", type=Path, metavar="DIR", help="with --summary: compare with this folder")
    p.add_argument("--max-chars", type=int, metavar="N",
                   help="with --summary: print at most N characters, what needs attention first (a PR comment: "
                        "60000; GitHub refuses more than 65536)")
    p.add_argument("--full-summary", type=Path, metavar="FILE",
                   help="with --summary: also write the whole summary, never shortened, to FILE")
    p.add_argument("--explain", metavar="NAME",
                   help=f"print one of {', '.join(explain_names())}: a file the operator will write, "
                        f"{SSSD_CONF} (the login and slurmd pods', bind password as a placeholder), "
                        f"or {IDENTITY} (IAM roles, policies and Pod Identity associations, JSON); write nothing")
    p.add_argument("--preview", action="store_true",
                   help="render every Helm Application offline at its pinned chart version (charts from "
                        "$SLURMGEN_CHART_DIR, the cache, or their repository) and prove the AppProject, placement, "
                        "images and value keys; write nothing (needs 'make preview-install')")
    p.add_argument("--cluster", metavar="NAME", help="with --explain or --preview: only this cluster")
    p.add_argument("--allow-unproven", action="append", default=[], metavar="CHART",
                   help="with --preview: a chart (by chart name, repeatable) whose source cannot be found is "
                        "reported but does not fail the preview; without it, every chart must render")
    p.add_argument("--crd-dir", type=Path, metavar="DIR",
                   help="validate against the CRD YAML files in DIR instead of the vendored, pinned schemas")
    p.add_argument("--no-cache", action="store_true",
                   help="render every cluster, neither reading nor writing the render cache (CI)")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="processes that render (default: from the CPUs, the number of clusters to render and "
                        "the memory budget $SLURMGEN_MEMORY_MB, 400 MB: one process)")
    p.add_argument("--argocd-settings", choices=("plain", "helm", "operator"), metavar="INSTALL",
                   help="print the Argo CD health checks the sync waves need, for a kubectl-installed (plain), "
                        "Helm-installed (helm) or operator-managed (operator) Argo CD; render nothing")
    p.add_argument("--verify-argocd", metavar="FILE",
                   help="check that `kubectl get cm argocd-cm -o yaml` output (FILE, or - for stdin) holds "
                        "those health checks; exit 1 when it does not; render nothing")
    return p


def _argocd(args: argparse.Namespace) -> int:
    """--argocd-settings / --verify-argocd: no spec is read, nothing rendered."""
    from .review import argocd_settings

    if args.argocd_settings:
        sys.stdout.write(argocd_settings.settings(args.argocd_settings))
        return 0
    from ._input import UnreadableFile, decode, read_bytes, read_stream

    source = args.verify_argocd
    limit, advice = 2 * 1024 * 1024, "argocd-cm is a ConfigMap, at most 1 MiB of data (pass kubectl's output)"
    try:
        data = (read_stream(sys.stdin.buffer, max_bytes=limit, advice=advice) if source == "-"
                else read_bytes(Path(source), max_bytes=limit, advice=advice + "; - reads standard input",
                                follow_links=True))
        text = decode(data)
    except (OSError, UnreadableFile) as err:
        why = err.strerror if isinstance(err, OSError) and err.strerror else err
        raise UserError(f"--verify-argocd: cannot read {source}: {why}") from None
    problems = argocd_settings.verify(text)
    for line in problems:
        print(f"{source}: {line}")
    if not problems:
        print(f"{source}: argocd-cm has slurmgen's health checks (Application and the Slinky kinds)")
    return 1 if problems else 0


IDENTITY = "identity"  # --explain identity: not a Slurm file
SSSD_CONF = "sssd.conf"  # --explain sssd.conf: the login/slurmd pods' file, not the operator's


def explain_names() -> tuple[str, ...]:
    """Every name --explain accepts, sorted: the one list its check, its error line and --help print."""
    from .review.explain import FILES

    return tuple(sorted((*FILES, SSSD_CONF, IDENTITY)))


#: What `cdk8s synth` finds in its own output folder (cdk8s.yaml: build/cdk8s), which it empties first.
CDK8S_POINTER = "rendered-into-dist.yaml"


def _cdk8s_scratch(out: Path) -> None:
    """Under `cdk8s synth` with `--out` (cdk8s.yaml's app): the CLI empties its `output` before the app
    runs and then requires it to exist (cdk8s-cli 2.207.60 lib/cli/cmds/synth.js, lib/util.js synthApp),
    so it is not the tree: the render goes to `out` with every guarantee of `make synth`, and the CLI's
    folder gets one pointer file."""
    scratch = os.environ.get("CDK8S_OUTDIR")
    if not scratch or Path(scratch).resolve() == out.resolve():
        return
    Path(scratch).mkdir(parents=True, exist_ok=True)
    (Path(scratch) / CDK8S_POINTER).write_text(
        f"# slurmgen renders into {out}/ (main.py --out), not here: the cdk8s CLI empties this folder first.\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; a `UserError` from any stage is printed, one line per problem, as its exit status."""
    real_stdout, real_stderr = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Escaping(real_stdout, stdout=True), _Escaping(real_stderr, stdout=False)
    try:
        args = _parser().parse_args(argv)
        try:
            status = _command(args)
        except UserError as err:
            for line in err.lines:
                print(printable(shown(line)), file=sys.stdout if err.stdout else sys.stderr)
            status = err.status
        sys.stdout.flush()
        return status
    except StdoutUnwritable as err:
        _discard_stdout(real_stdout)
        print(f"standard output: cannot write: {err.reason}; nothing more was printed", file=sys.stderr)
        return 2
    finally:
        sys.stdout, sys.stderr = real_stdout, real_stderr


class StdoutUnwritable(Exception):
    """Standard output refused a write (a full disk, `> /dev/full`, a closed pipe): one line, exit 2."""

    def __init__(self, err: OSError) -> None:
        self.reason = err.strerror or str(err)
        super().__init__(self.reason)


class _Escaping:
    """sys.stdout and sys.stderr while a command runs: no control or invisible character reaches the
    terminal unescaped (line breaks and tabs pass: the summary and --explain are documents), since
    spec names, --out, --allow-destroy and dist/ file names reach many lines; a failed write to
    standard output is StdoutUnwritable (one line, no traceback), one to standard error is dropped
    (there is nowhere left to say it)."""

    def __init__(self, stream: TextIO, *, stdout: bool) -> None:
        self._stream = stream
        self._stdout = stdout

    def write(self, text: str) -> int:
        try:
            return self._stream.write(printable(text, keep="\n\t"))
        except OSError as err:
            if self._stdout:
                raise StdoutUnwritable(err) from None
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as err:
            if self._stdout:
                raise StdoutUnwritable(err) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _discard_stdout(stream: TextIO) -> None:
    """After a failed write the interpreter would flush the rest at exit and fail again ("Exception
    ignored ..."): point the process's stdout at /dev/null so that flush succeeds."""
    try:
        if stream.fileno() == 1:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def _command(args: argparse.Namespace) -> int:
    """Check the flags, render every spec once, then hand the result to the one command asked for."""
    if args.argocd_settings or args.verify_argocd:
        return _argocd(args)
    _check_flags(args)
    out = args.out or Path(os.environ.get("CDK8S_OUTDIR") or REPO / "dist")
    _cache_placement(args, out)
    if args.out is not None:
        _cdk8s_scratch(args.out)
    spec_paths = args.spec or cluster_files(REPO / "clusters")
    result = _render(args, spec_paths)
    for note in result.notes:
        print(f"warning: {note}", file=sys.stderr)
    if args.explain == IDENTITY:
        return _explain_identity(result, args.cluster)
    if args.explain == SSSD_CONF:
        return _explain_sssd(result, args.cluster)
    if args.explain:
        return _explain(result, args.explain, args.cluster)
    if args.preview:
        return _preview(result, args.cluster, args.allow_unproven)
    if args.summary:
        return _summary(result, out, args.base, args.base_dir, subset=bool(args.spec), spec_paths=spec_paths,
                        max_chars=args.max_chars, full_file=args.full_summary)
    survey = _guarded(result, out, args)
    status = _check(result, out, survey, full=not args.spec) if args.check else _synth(result, out, survey, args)
    if args.timings:
        from .run.timing import Stopwatch

        for line in Stopwatch(result.timings).lines():
            print(line, file=sys.stderr)
    return status


def _check_flags(args: argparse.Namespace) -> None:
    """Flags that only mean something together, and a render with no spec at all: one line, exit 2."""
    folder = REPO / "clusters"
    if not args.spec and not cluster_files(folder):
        # Exit 2, not 0: with no spec every dist/<cluster> would silently become an orphan.
        raise UserError(f"{folder}: no cluster spec (a *.yaml whose name does not start with '_'): "
                        f"add {folder.name}/<name>.yaml or pass --spec FILE")
    if (args.max_chars is not None or args.full_summary) and not args.summary:
        raise UserError("--max-chars, --full-summary: only with --summary")
    if args.max_chars is not None and args.max_chars < 2000:
        raise UserError(f"--max-chars {args.max_chars}: too small for the headlines; use 2000 or more (60000 for a "
                        "PR comment)")
    if args.cluster and not (args.explain or args.preview):
        raise UserError("--cluster: only with --explain NAME or --preview")
    if args.allow_unproven and not args.preview:
        raise UserError("--allow-unproven: only with --preview")
    if args.explain and args.explain not in explain_names():
        raise UserError(f"--explain: unknown name {args.explain!r} (one of {', '.join(explain_names())})")


def _cache_placement(args: argparse.Namespace, out: Path) -> None:
    """A render cache inside the output folder or the repository: one line, exit 2, before anything
    (the cache's key included) is created."""
    from .write import output

    if args.no_cache or args.crd_dir is not None or output.forbidden(out, REPO):
        return  # a forbidden output folder (/, the home folder) is refused as such, and never written
    from .run import cache

    why = cache.placement_problem(cache.cache_dir(), out)
    if why:
        raise UserError(why)


def _render(args: argparse.Namespace, spec_paths: Sequence[Path]) -> Result:
    """Load, plan, render and verify every spec (the cache and the worker processes decide how)."""
    # Imported only here, so `--help` and argument errors stay instant.
    from ._runtime import node_problem

    if (missing_node := node_problem()) is not None:
        raise UserError(missing_node)
    # SIGTERM, SIGHUP and Ctrl-C while rendering unwind as SystemExit too: the run then ends its
    # worker processes (the default action would leave them, and their kernels, behind).
    with _signals_unwind():
        from .run.pipeline import run

        return run(spec_paths, crd_dir=args.crd_dir, use_cache=not args.no_cache,
                   processes=max(1, args.workers) if args.workers is not None else None,
                   fleet=fleet_files(spec_paths))


def _guarded(result: Result, out: Path, args: argparse.Namespace) -> Survey:
    """What is in `out` now, once the output folder, shared names and the destroy guard allow the
    render; a run killed mid-write is put back first (synth only). --check reads what it cannot
    judge as drift (stdout, exit 1); synth refuses it (stderr, exit 2)."""
    from .verify import guards
    from .write import output

    why = output.forbidden(out, REPO)
    if why:
        raise UserError(f"{out}: refusing to use it as the output folder: {why}; pass --out with a folder of its own "
                        "(default dist/)")
    found = output.survey(out, [c.spec.name for c in result.clusters])
    if found.problems:
        # Not (entirely) ours: synth refuses; --check reports it without reading what is in the way.
        raise UserError(found.problems, status=1 if args.check else 2, stdout=args.check)
    if not args.check:
        try:  # a run killed mid-write left a cluster's previous tree aside: back in place before it is judged
            output.restore(found)
        except OSError as err:
            raise UserError(f"{out}: cannot put back a previous tree: {err.strerror or err}") from None
    try:
        refused = _collisions(result, out) + result.guard(out, args.allow_destroy) + result.sync_problems(out)
    except guards.UnreadableTree as err:
        raise UserError(err.lines, status=1 if args.check else 2, stdout=args.check) from None
    if refused:
        raise UserError(refused)
    return found


def _check(result: Result, out: Path, found: Survey, *, full: bool) -> int:
    """`--check`: every difference between `out` and the render on stdout; 1 on drift or an orphan."""
    from .write import output

    orphans = result.orphans(out) if full else []  # every spec rendered: a folder without a spec is stale
    drift = [output.leftover_line(p) for p in found.leftovers]
    drift += [output.interrupted_line(out, name, old) for name, old in sorted(found.restore.items())]
    if os.path.lexists(out) and not found.marked:
        drift.append(f"added:   {out / output.MARKER} (synth writes the marker that makes {out} slurmgen's)")
    drift += result.compare(out)
    for line in drift + [_orphan_line(out, name) for name in orphans]:
        print(line)
    if drift:
        print(f"dist is stale: run `make synth` and commit {out}", file=sys.stderr)
    if orphans:
        # synth never deletes a cluster folder, so `make synth` cannot clear this drift.
        print(f"{len(orphans)} orphaned cluster folder(s) in {out}: no spec renders them and synth never removes "
              "them; delete each by hand once its Argo CD root Application is gone "
              "(it may hold stateful objects; see docs/guarantees.md)", file=sys.stderr)
    if drift or orphans:
        return 1
    print(f"{out}: up to date ({result.object_count} objects in {len(result.clusters)} cluster(s))")
    return 0


def _synth(result: Result, out: Path, found: Survey, args: argparse.Namespace) -> int:
    """Write every changed cluster folder into `out` (all of them or none), then warn about orphans."""
    from .write import output

    orphans = result.orphans(out) if not args.spec else []  # every spec rendered: a folder without one is stale
    try:
        with result.timer("write"), _signals_unwind():
            output.write_all(out, result.changed_trees(out), found)
    except OSError as err:
        where = f" ({err.filename})" if err.filename else ""
        raise UserError(f"{out}: cannot write: {err.strerror or err}{where}; no cluster folder was changed") from None
    print(f"wrote {result.object_count} objects for {len(result.clusters)} cluster(s) into {out}")
    for name in orphans:
        print(f"warning: {_orphan_line(out, name)}", file=sys.stderr)
    return 0


def _quiet_while_stopping(_unraisable: object) -> None:
    """`sys.unraisablehook` once a stop signal arrived: a finaliser of an object the signal caught half
    built may fail as it is collected (jsii's kernel process object, when the signal lands while it
    starts Node, has no process to stop). The run ends with 128 + the signal, which says why; the
    "Exception ignored ... Traceback" lines Python would print say nothing more."""


@contextmanager
def _signals_unwind() -> Iterator[None]:
    """While writing, SIGTERM, SIGHUP and SIGINT unwind as SystemExit(128 + signal), so the writer
    swaps back what it swapped and removes its temporary folders, with no traceback (the default
    action would end the process on the spot, or print one for Ctrl-C)."""
    def _exit(signum: int, _frame: object) -> None:
        sys.unraisablehook = _quiet_while_stopping
        raise SystemExit(128 + signum)

    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers (main() called from a worker thread)
        return
    previous = {sig: signal.signal(sig, _exit) for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _collisions(result: Result, out: Path) -> list[str]:
    """Shared names between the rendered clusters, and with the other cluster trees already in `out/`."""
    from .verify import collisions, guards
    from .write import output

    trees = [collisions.Tree(c.spec.source, c.files, c.shared_names) for c in result.clusters]
    rendered = {c.spec.name for c in result.clusters}
    if os.path.isdir(out):
        for entry in sorted(os.listdir(out)):
            folder = out / entry
            if entry not in rendered and not entry.startswith(".") and output.cluster_problem(folder, entry) is None:
                try:
                    trees.append(collisions.Tree(str(folder), guards.read_tree(folder)))
                except guards.UnreadableTree:
                    continue  # not ours to judge: --check reports it, synth never writes it
    return collisions.problems(trees)


def _orphan_line(out: Path, name: str) -> str:
    """The advice for a cluster folder whose spec is gone: by hand, because synth never deletes one."""
    return (f"orphaned: {out / name}: no spec renders it (no clusters/{name}.yaml); delete the folder by hand "
            "once its Argo CD root Application is gone (it may hold stateful objects; see docs/guarantees.md)")


def _explain_identity(result: Result, cluster: str | None) -> int:
    """Print the IAM identity plan (`--explain identity`); exit 2 with one line for an unknown cluster."""
    from .plan.identity import explain

    specs = [c.spec for c in result.clusters]
    try:
        sys.stdout.write(explain(specs, cluster))
    except KeyError:
        raise UserError(f"--cluster: no cluster {cluster!r} (rendered: {', '.join(sorted(s.name for s in specs))})"
                        ) from None
    return 0


def _explain_sssd(result: Result, cluster: str | None) -> int:
    """Print sssd.conf (`--explain sssd.conf`): with secrets mode precreated, the text for the site's Secret."""
    from charts.secrets import effective_sssd_conf

    specs = {c.spec.name: c.spec for c in result.clusters}
    if cluster is not None and cluster not in specs:
        raise UserError(f"--cluster: no cluster {cluster!r} (rendered: {', '.join(sorted(specs))})")
    names = [cluster] if cluster is not None else sorted(specs)
    if len(names) == 1:
        text, why = effective_sssd_conf(specs[names[0]])
        if text is None:
            raise UserError(f"{names[0]}: sssd.conf: {why}")
        sys.stdout.write(text)
        return 0
    parts = []
    for name in names:
        text, why = effective_sssd_conf(specs[name])
        parts.append(f"# ==> {name}: sssd.conf <==\n{text if text is not None else f'# {why}' + chr(10)}")
    sys.stdout.write("\n".join(parts))
    return 0


def _explain(result: Result, name: str, cluster: str | None) -> int:
    """Print one effective Slurm file (`--explain`); exit 2 with one line for an unknown cluster."""
    from .review.explain import explain

    sys.stdout.write(explain({c.spec.name: c.files for c in result.clusters}, name, cluster))
    return 0


def _preview(result: Result, cluster: str | None, allow_unproven: Sequence[str] = ()) -> int:
    """`--preview`: report per chart on stdout, one line per problem on stderr; exit 2 on a problem."""
    import time

    from .review.preview import helm_sources, locator_from_env, nothing_proven, preview_clusters
    from .review.preview.charts import helm_sdk

    clusters = [c for c in result.clusters if cluster in (None, c.spec.name)]
    if not clusters:
        names = ", ".join(c.spec.name for c in result.clusters)
        raise UserError(f"--cluster: no cluster named {cluster!r}; rendered: {names}")
    charts = sorted({s.chart for c in clusters for s in helm_sources(dict(c.files))})
    for name in allow_unproven:
        if name not in charts:  # a misspelt allowance would silently allow nothing
            raise UserError(f"--allow-unproven {name}: no Helm Application of the previewed cluster(s) uses chart "
                            f"{name}; charts: {', '.join(charts)}")
    start = time.perf_counter()
    helm_sdk()  # before any work: a missing SDK is one line, whatever the chart sources
    locator = locator_from_env()
    previews = preview_clusters(clusters, locator, frozenset(allow_unproven))
    problems = [line for p in previews for line in p.problems]
    for p in previews:
        for line in p.lines():
            print(line)
    for line in problems:
        print(line, file=sys.stderr)
    rendered = sum(len(p.renders) for p in previews)
    skipped = sum(p.charts - len(p.renders) for p in previews)
    print(f"preview: {rendered} chart render(s) in {len(previews)} cluster(s), {skipped} not previewed, "
          f"{len(problems)} problem(s), {time.perf_counter() - start:.1f} s", file=sys.stderr)
    hosts = locator.unreachable_hosts()
    if hosts:
        alternative = (" for the charts SLURMGEN_CHART_DIR does not hold" if locator.chart_dir is not None
                       else ", or a folder of unpacked charts as SLURMGEN_CHART_DIR")
        print(f"preview: chart registries not reachable ({', '.join(hosts)}): --preview needs them{alternative}",
              file=sys.stderr)
    unproven = any(" cannot be proven: " in line for line in problems)
    if unproven:
        print("preview: a chart that cannot be proven fails the run; to accept it unproven, pass --allow-unproven "
              "CHART (repeatable)", file=sys.stderr)
    if not rendered and (unproven or any(p.not_previewed for p in previews)):
        print(nothing_proven(locator), file=sys.stderr)
        return 2
    return 2 if problems else 0


def _summary(result: Result, out: Path, ref: str | None, base_dir: Path | None, *, subset: bool,
             spec_paths: Sequence[Path] = (), max_chars: int | None = None, full_file: Path | None = None) -> int:
    """Print the PR summary; with --spec, only the named clusters are compared. Prices: the packaged
    table plus the prices.csv beside the specs; with --max-chars it fits a PR comment."""
    from .catalog.pricing import site_prices
    from .review.base import trees_from_dir, trees_from_git
    from .review.summary import fit_comment, full_text, sections

    prices = site_prices(spec_paths)
    old = trees_from_dir(base_dir) if base_dir else trees_from_git(ref or "HEAD", out)
    new = {c.spec.name: dict(c.files) for c in result.clusters}
    if subset:
        old = {name: tree for name, tree in old.items() if name in new}
    from .review.preview.diff import chart_section

    catalog = result.catalog
    parts = sections(old, new, catalog=catalog, charts=chart_section, prices=prices)
    full = full_text(parts)
    if full_file is not None:
        try:
            full_file.write_text(full, encoding="utf-8")
        except OSError as err:
            raise UserError(f"{full_file}: --full-summary: cannot write: {err.strerror or err}") from None
    if max_chars is not None and len(full) > max_chars:
        full = fit_comment(parts, max_chars)
    sys.stdout.write(full)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
