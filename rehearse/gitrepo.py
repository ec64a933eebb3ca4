"""The local git repository Argo CD syncs from in the sync stage: the committed tree, on loopback.

Argo CD reads a `file://` repository as it reads any other (its own end-to-end tests do so). The
tree is committed unchanged but for the rewrites listed in `Rewrites`, each of which the rehearsal
prints:
- every `repoURL` naming the tree's git remote becomes the local repository (and the AppProject's
  `sourceRepos` gains it);
- a Helm Application's chart, whose registry cannot be reached, becomes a path in the repository
  holding the chart unpacked (the folder `SLURMGEN_CHART_DIR` or the preview's cache gives, as
  `--preview` finds it), made what its release publishes (`_chart_into`); one with no chart found
  is left out of the repository and listed;
- a remote destination cluster (one Argo CD reaches through its cluster Secret) becomes the
  rehearsal's API server, in the Applications and the AppProject.
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from slurmgen.review.preview.charts import ChartLocator, HelmSource

BRANCH = "main"
IN_CLUSTER = "https://kubernetes.default.svc"
#: Chart sources whose CRD templates the release generates (so the source's templates/crds/ holds
#: only a README), and the folder of rehearse/crds/ with the pinned upstream CRD files that release
#: generates them from: external-secrets (hack/helm.generate.sh turns config/crds/bases/ into
#: templates/crds/ at release).
RELEASE_GENERATED_CRDS = {"external-secrets": "external-secrets"}
CRD_DIR = Path(__file__).resolve().parent / "crds"
GIT_ENV = {"GIT_AUTHOR_NAME": "rehearse", "GIT_AUTHOR_EMAIL": "rehearse@localhost", "GIT_COMMITTER_NAME": "rehearse",
           "GIT_COMMITTER_EMAIL": "rehearse@localhost", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}


@dataclass
class Rewrites:
    """What the committed copy changes, for the report: each line names the file and the change."""

    lines: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)  # Applications whose chart was not found: not played


class Repository:
    """A bare repository at `<work>/repo.git` and a work tree beside it; `commit()` adds a revision."""

    def __init__(self, work: Path) -> None:
        self.bare = work / "repo.git"
        self.tree = work / "checkout"
        self.url = self.bare.as_uri()
        self._git("init", "--quiet", "--bare", f"--initial-branch={BRANCH}", str(self.bare), cwd=work)
        self._git("init", "--quiet", f"--initial-branch={BRANCH}", str(self.tree), cwd=work)
        self._git("remote", "add", "origin", self.url)

    def _git(self, *args: str, cwd: Path | None = None) -> str:
        env = {"PATH": "/usr/bin:/bin", **GIT_ENV}
        done = subprocess.run(["git", *args], cwd=cwd or self.tree, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"git {' '.join(args[:2])} failed: {done.stderr.strip()}")
        return done.stdout.strip()

    def commit(self, message: str) -> str:
        """Commit the work tree as it is and push it; the new revision."""
        # --force: a chart source's own .gitignore (kube-prometheus-stack ignores charts/*) must not
        # keep its subcharts out, as the published archive holds them
        self._git("add", "--all", "--force", ".")
        self._git("commit", "--quiet", "--allow-empty", "-m", message)
        self._git("push", "--quiet", "--force", "origin", BRANCH)
        return self._git("rev-parse", "HEAD")


def _remote_of(objects: list[dict[str, Any]]) -> str | None:
    """The tree's own git remote: the repoURL of the root Application (bootstrap/)."""
    for doc in objects:
        if doc.get("kind") == "Application":
            source = (doc.get("spec") or {}).get("source") or {}
            if source.get("path") and not source.get("chart"):
                return str(source["repoURL"])
    return None


def _chart_into(located: Path, destination: Path, values: dict[str, Any]) -> list[str]:
    """Copy an unpacked chart folder, or unpack a chart archive, to `destination`, as the published
    chart would be; what had to change, one line each. ChartMissing when it cannot be.

    A published chart carries its dependencies in charts/; an unpacked chart *source* may not. A
    `file://` dependency is copied from beside it (what `helm dependency build` does); a remote one
    that the Application's values disable is dropped from Chart.yaml (helm renders nothing of a
    disabled subchart, but checks that every declared one is there)."""
    if not located.is_dir():
        with tarfile.open(located) as archive:
            staging = destination.parent / f".{destination.name}.unpack"
            archive.extractall(staging, filter="data")
            (inner,) = [p for p in staging.iterdir() if p.is_dir()]
            inner.rename(destination)
            staging.rmdir()
        return []
    shutil.copytree(located, destination, symlinks=False)
    said = _release_crds(destination)
    chart_file = destination / "Chart.yaml"
    chart = yaml.safe_load(chart_file.read_text()) or {}
    merged = _merge(yaml.safe_load((destination / "values.yaml").read_text()) or {}
                    if (destination / "values.yaml").is_file() else {}, values)
    kept: list[dict[str, Any]] = []
    for dep in chart.get("dependencies") or []:
        name, repo = str(dep["name"]), str(dep.get("repository", ""))
        if (destination / "charts" / name).is_dir() or list((destination / "charts").glob(f"{name}-*.tgz")):
            kept.append(dep)
        elif repo.startswith("file://") and (located / repo[len("file://"):]).is_dir():
            shutil.copytree(located / repo[len("file://"):], destination / "charts" / name, symlinks=False)
            kept.append(dep)
            said.append(f"dependency {name} copied from {repo} into charts/ (as helm dependency build does)")
        elif not _enabled(dep, merged):
            said.append(f"dependency {name} {dep.get('version', '')} ({repo}, disabled by {dep.get('condition')}) "
                        "dropped from Chart.yaml: the chart source does not hold it")
        else:
            raise ChartMissing(f"its dependency {name} {dep.get('version', '')} from {repo} is enabled and not in "
                               "the chart source")
    if len(kept) != len(chart.get("dependencies") or []):
        chart["dependencies"] = kept
        chart_file.write_text(yaml.safe_dump(chart, sort_keys=False))
        (destination / "Chart.lock").unlink(missing_ok=True)  # it lists what the folder no longer declares
    return said


def _release_crds(chart: Path) -> list[str]:
    """For a chart source whose release generates its CRD templates: the pinned upstream CRD files
    (rehearse/crds/<folder>/) put in the chart's crds/, which Helm installs as they are, first."""
    name = (yaml.safe_load((chart / "Chart.yaml").read_text()) or {}).get("name")
    folder = RELEASE_GENERATED_CRDS.get(str(name))
    generated = chart / "templates" / "crds"
    if folder is None or (generated.is_dir() and any(generated.glob("*.yaml"))):
        return []
    files = sorted((CRD_DIR / folder).glob("*.yaml"))
    (chart / "crds").mkdir(exist_ok=True)
    for path in files:
        shutil.copyfile(path, chart / "crds" / path.name)
    return [f"crds/: the {len(files)} pinned upstream CRDs of rehearse/crds/{folder}/ (the chart source has "
            "none: its release generates them from these files)"]


class ChartMissing(RuntimeError):
    """A chart, or a dependency it needs, that the rehearsal cannot find."""


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Helm's coalescing of values, for reading a condition: `override` wins, maps merge."""
    out = dict(base)
    for key, value in override.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _enabled(dep: dict[str, Any], values: dict[str, Any]) -> bool:
    """A dependency's `condition` as helm reads it: the first of its comma-separated paths that is
    a boolean decides; none, or no condition, means enabled."""
    for path in str(dep.get("condition") or "").split(","):
        node: Any = values
        for part in path.strip().split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, bool):
            return node
    return True


def stage(tree: Path, checkout: Path, url: str, locator: ChartLocator, rewrites: Rewrites) -> None:
    """Write dist/<cluster>/ (`tree`) into `checkout` at the same relative path, rewritten for loopback.

    The copy keeps each file's bytes except the rewritten documents, which are written back as YAML
    (Argo CD parses them; their bytes are not what is rehearsed)."""
    cluster = tree.name
    target = checkout / "dist" / cluster
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(tree, target, symlinks=False)
    docs_by_file = {path: list(yaml.safe_load_all(path.read_text())) for path in sorted(target.rglob("*.yaml"))}
    remote = _remote_of([d for docs in docs_by_file.values() for d in docs if isinstance(d, dict)])
    for path, docs in docs_by_file.items():
        changed = False
        rel = path.relative_to(checkout)
        for doc in docs:
            if not isinstance(doc, dict):
                continue
            if doc.get("kind") == "AppProject" and remote is not None:
                repos = doc.setdefault("spec", {}).setdefault("sourceRepos", [])
                if remote in repos and url not in repos:
                    repos.append(url)
                    rewrites.lines.append(f"{rel}: sourceRepos gains the local repository")
                    changed = True
            if doc.get("kind") == "AppProject":
                remote_servers = sorted({d.get("server") for d in doc["spec"].get("destinations") or []} - {IN_CLUSTER, "*", None})
                for dest in doc["spec"].get("destinations") or []:
                    if dest.get("server") in remote_servers:
                        dest["server"] = IN_CLUSTER
                if remote_servers:
                    rewrites.lines.append(f"{rel}: destinations on {', '.join(remote_servers)} -> the rehearsal's API server")
                    changed = True
            if doc.get("kind") != "Application":
                continue
            destination = (doc.get("spec") or {}).get("destination") or {}
            if destination.get("server", IN_CLUSTER) != IN_CLUSTER or destination.get("name"):
                where = destination.pop("server", None) or destination.pop("name", None)
                destination.pop("name", None)
                destination["server"] = IN_CLUSTER
                rewrites.lines.append(f"{rel}: destination {where} -> the rehearsal's API server (a cluster "
                                      "Argo CD would reach through its cluster Secret)")
                changed = True
            source = (doc.get("spec") or {}).get("source") or {}
            if remote is not None and source.get("repoURL") == remote:
                source["repoURL"] = url
                changed = True
                rewrites.lines.append(f"{rel}: repoURL {remote} -> the local repository")
            elif "chart" in source:
                helm = HelmSource.of(doc)
                assert helm is not None
                found = locator.find(helm)
                if found.path is None:
                    path.unlink()
                    rewrites.left_out.append(f"{rel}: chart {helm.chart} {helm.version} not found ({found.why}); "
                                             f"{found.fix}")
                    changed = False
                    break
                folder = checkout / "charts" / f"{helm.chart}-{helm.version}"
                if not folder.exists():
                    try:
                        changes = _chart_into(found.path, folder, helm.values)
                    except ChartMissing as exc:
                        shutil.rmtree(folder, ignore_errors=True)
                        path.unlink()
                        rewrites.left_out.append(f"{rel}: chart {helm.chart} {helm.version}: {exc}")
                        break
                    rewrites.lines += [f"charts/{folder.name}: {change}" for change in changes]
                del source["chart"]
                source.update(repoURL=url, path=f"charts/{folder.name}", targetRevision=BRANCH)
                rewrites.lines.append(f"{rel}: chart {helm.chart} {helm.version} from {helm.repo_url} -> "
                                      f"charts/{folder.name} (from {found.path})")
                changed = True
        if changed:
            path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
