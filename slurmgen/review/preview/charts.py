"""Find each pinned chart locally and render it offline with a Helm v4 SDK (no helm binary).

Where a chart comes from, first match wins:
1. `SLURMGEN_CHART_DIR/<chart>/` (unpacked chart folders, e.g. the chart sources at their release tags), whose
   Chart.yaml must carry the pinned chart name and version (a placeholder such as `v0.0.0` is refused:
   it proves no release);
2. the local cache, `$XDG_CACHE_HOME/slurmgen/charts/<chart>-<version>.tgz`;
3. a pull into that cache from the Application's repository (OCI or HTTP), when `pull` is on and
   the repository is reachable.
Otherwise the chart cannot be proven, which fails the preview unless `--allow-unproven CHART`.

`helm_python` (PyPI `helm-python-sdk`, requirements-preview.txt) is imported here only, lazily:
synth never loads its 80 MB native library.
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import yaml

from ...errors import UserError
from ..._input import UnreadableFile, read_text
from ...user_cache import user_cache_root
from ...kube.documents import load_document, load_documents
from .placement import helm_merge

Obj = dict[str, Any]
PLACEHOLDER_VERSIONS = {"v0.0.0", "0.0.0"}


class PreviewUnavailable(UserError):
    """The Helm SDK is not installed: one line saying how to get it."""


def helm_sdk() -> Any:
    """The `helm_python` module, or PreviewUnavailable naming the install command."""
    try:
        import helm_python  # noqa: PLC0415  (lazy on purpose: synth must not load it)
    except ImportError as err:
        raise PreviewUnavailable(
            "--preview needs the Helm SDK (helm-python-sdk, pinned in requirements-preview.txt): "
            f"run 'make preview-install' ({err})") from err
    return helm_python


@dataclass(frozen=True)
class HelmSource:
    """What one Argo CD Application asks Helm to render."""

    application: str
    repo_url: str
    chart: str
    version: str
    release_name: str
    namespace: str
    values: Obj

    @classmethod
    def of(cls, app: Obj) -> "HelmSource | None":
        """The Helm source of an Application, None for a directory source."""
        source = app["spec"]["source"]
        if "chart" not in source:
            return None
        helm = source.get("helm") or {}
        return cls(application=app["metadata"]["name"], repo_url=source["repoURL"], chart=source["chart"],
                   version=str(source["targetRevision"]), release_name=helm.get("releaseName") or app["metadata"]["name"],
                   namespace=app["spec"]["destination"].get("namespace") or "default",
                   values=helm.get("valuesObject") or {})


@dataclass
class ChartRender:
    """The objects one chart renders with our values, and what the chart declares."""

    source: HelmSource
    origin: str                               # where the chart came from (folder or archive)
    objects: list[Obj]                        # templates (hooks included) and crds/, in a stable order
    defaults: Obj                             # the chart's default values, subcharts coalesced
    schema: Obj | None = None                 # its values.schema.json
    schema_errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # differences of a chart source from its archive
    assumed_kinds: set[tuple[str, str]] = field(default_factory=set)  # kinds the archive adds, absent here
    unstable: list[str] = field(default_factory=list)  # what a second render changed: `Kind/name: path, ...`


class WrongChart(Exception):
    """The chart found is not the one pinned (its Chart.yaml names another chart or version)."""


class RenderTooLarge(WrongChart):
    """A chart whose rendered output passes the preview's bounds: reported, never parsed."""


#: What one chart's render may hold before a byte of it is parsed: the largest pinned chart
#: (kube-prometheus-stack, its CRDs included) renders about 5 MiB in a few hundred documents;
#: a template that repeats without bound (`range until 1000000`) would otherwise cost GiBs of
#: parsed objects, and a second render to compare.
RENDER_MAX_BYTES = 32 * 1024 * 1024
RENDER_MAX_DOCUMENTS = 5000


def _norm(version: str) -> str:
    return version[1:] if version.startswith("v") else version


def cache_dir() -> Path:
    """Downloaded chart archives, beside the render cache."""
    return user_cache_root() / "charts"


def pull_reference(source: HelmSource) -> str:
    """What a pull of this chart asks for, as a user would type it: `oci://host/path/chart:version` or `url chart version`.

    Argo CD reads a scheme-less repoURL of a Helm source as an OCI registry.
    """
    if "://" in source.repo_url:
        return f"{source.repo_url} {source.chart} {source.version}"
    return f"oci://{source.repo_url}/{source.chart}:{source.version}"


def registry_host(repo_url: str) -> str:
    """The host a repoURL is served from (`https://a.b/c` and `a.b/c` -> `a.b`): pulls fail per host."""
    rest = repo_url.split("://", 1)[-1]
    return rest.split("/", 1)[0].lower()


def sdk_pull(source: HelmSource, destination: Path) -> None:
    """Pull one chart archive with the Helm SDK (OCI or HTTP repository)."""
    helm = helm_sdk()
    if "://" in source.repo_url:
        helm.pull(source.chart, repo_url=source.repo_url, version=source.version, destination=destination)
    else:  # Argo CD reads a scheme-less repoURL of a Helm source as an OCI registry
        helm.pull(f"oci://{source.repo_url}/{source.chart}", version=source.version, destination=destination)


ERROR_MAX_CHARS = 200  # of an SDK error quoted in a chart's line


def clip(text: str, limit: int = ERROR_MAX_CHARS) -> str:
    """The first line of an error, whole when it fits in `limit`; else its most specific end.

    Go wraps errors as `context: cause` (helm's "looks like ... cannot be reached: Get "...": dial tcp:
    lookup host on ...: no such host"), so the end says what failed: whole `: ` parts are dropped
    from the front; failing that, the words that fit are kept from the front. "…" marks the cut,
    never inside a word.
    """
    line = text.strip().splitlines()[0].strip() if text.strip() else ""
    if len(line) <= limit:
        return line
    parts = line.split(": ")
    for start in range(1, len(parts)):
        tail = "…: " + ": ".join(parts[start:])
        if len(tail) <= limit:
            return tail
    kept: list[str] = []
    for word in line.split(" "):  # the first word is kept whole, even when longer than the limit
        if kept and len(" ".join([*kept, word])) + 2 > limit:
            break
        kept.append(word)
    return " ".join(kept) + " …"


@dataclass
class Located:
    """A chart's source (path), or why there is none and the one fix that applies."""

    path: Path | None
    notes: list[str] = field(default_factory=list)
    why: str = ""
    fix: str = ""


@dataclass
class ChartLocator:
    """Where charts are read from; one instance per run shares its renders across the fleet."""

    chart_dir: Path | None = None
    pull: bool = False
    renders: dict[str, ChartRender] = field(default_factory=dict)  # one render per chart and values (fleets share them)
    # A failed pull per registry host: (what was pulled, first line of the error). Later charts of that
    # host are not tried again (offline, each would wait for its own failure) but say whose pull failed,
    # so every line names its own chart and source.
    _failed_hosts: dict[str, tuple[str, str]] = field(default_factory=dict)

    def locate(self, source: HelmSource) -> tuple[Path | None, list[str], str]:
        """(chart path or None, notes, why not found)."""
        found = self.find(source)
        return found.path, found.notes, found.why

    def find(self, source: HelmSource) -> "Located":
        """Where the chart is, or why it is not and the one fix that applies to this run's settings."""
        unusable = ""
        if self.chart_dir is not None:
            folder = self.chart_dir / source.chart
            if (folder / "Chart.yaml").is_file():
                path, notes, unusable = self._from_folder(folder, source)
                if path is not None:
                    return Located(path, notes)
                # a folder of another version, or one missing subcharts: try the cache
        archive = cache_dir() / f"{source.chart}-{source.version}.tgz"
        if archive.is_file():
            return Located(archive)
        why = f"{unusable or self._folder_absence(source)}, not cached"
        fix = self._folder_fix(source, unusable)
        if not self.pull:
            return Located(None, [], why + ", pull off",
                           fix or f"set SLURMGEN_CHART_PULL=1 to pull it from {pull_reference(source)}")
        host, ref = registry_host(source.repo_url), pull_reference(source)
        offline = (f"{host} is not reachable: pulling it needs the network, or "
                   + (fix or f"set SLURMGEN_CHART_DIR to a folder holding it as {source.chart}/"))
        if host not in self._failed_hosts:
            try:
                return Located(self._pull(source, archive))
            except Exception as err:  # noqa: BLE001  (any SDK error means: not reachable now)
                self._failed_hosts[host] = (ref, clip(str(err)) or type(err).__name__)
                return Located(None, [], f"{why}, pull of {ref} failed ({self._failed_hosts[host][1]})", offline)
        first, error = self._failed_hosts[host]
        if first == ref:
            return Located(None, [], f"{why}, pull of {ref} failed earlier in this run ({error})", offline)
        return Located(None, [], f"{why}, {ref} not pulled: {host} did not answer the pull of {first} earlier in "
                       "this run", offline)

    def _folder_absence(self, source: HelmSource) -> str:
        """Why SLURMGEN_CHART_DIR did not hold the chart, when it held no folder of that name."""
        if self.chart_dir is None:
            return "SLURMGEN_CHART_DIR unset"
        if not self.chart_dir.is_dir():
            return f"SLURMGEN_CHART_DIR={self.chart_dir} is not a folder"
        return f"not in {self.chart_dir}"

    def _folder_fix(self, source: HelmSource, unusable: str) -> str:
        """What to do with SLURMGEN_CHART_DIR when one is set ('' when none is): it is the source the user chose."""
        if self.chart_dir is None:
            return ""
        if not self.chart_dir.is_dir():
            return "set SLURMGEN_CHART_DIR to the folder of unpacked charts"
        where = self.chart_dir / source.chart
        if unusable:
            return f"replace {where}/ with {source.chart} {source.version}"
        return f"unpack {source.chart} {source.version} as {where}/"

    def unreachable_hosts(self) -> list[str]:
        """The registry hosts a pull failed from, sorted (for the run's closing hint)."""
        return sorted(self._failed_hosts)

    def _from_folder(self, folder: Path, source: HelmSource) -> tuple[Path | None, list[str], str]:
        """The folder when its Chart.yaml is the pinned chart at the pinned version; else None and why.

        A chart *source* with a placeholder version (cert-manager's `v0.0.0`, set only at release)
        is refused like any other version: nothing in the folder says which release it is, so it
        cannot prove the pinned one (stamp a copy's Chart.yaml, or use the archive).
        """
        unusable = _folder_problem(folder)
        if unusable:
            return None, [], unusable
        meta, why = _mapping_file(folder / "Chart.yaml")
        if meta is None:
            return None, [], why
        name, version = str(meta.get("name", "")), str(meta.get("version", ""))
        if name != source.chart or _norm(version) != _norm(source.version):
            placeholder = " (a placeholder, set only at release)" if version in PLACEHOLDER_VERSIONS else ""
            return None, [], (f"{folder}/Chart.yaml is {name or '(no name)'} {version or '(no version)'}{placeholder}, "
                              f"the Application pins {source.chart} {source.version}")
        try:
            missing = _missing_dependencies(folder, meta, source.values)
        except ValueError as err:
            return None, [], str(err)
        if missing:
            return None, [], (f"{folder} lacks its dependencies {', '.join(missing)} (declared in Chart.yaml, "
                              "absent from charts/)")
        return folder, [], ""

    def _pull(self, source: HelmSource, archive: Path) -> Path:
        archive.parent.mkdir(parents=True, exist_ok=True)
        sdk_pull(source, archive.parent)
        if not archive.is_file():
            raise FileNotFoundError(f"the pull wrote no {archive.name}")
        return archive

    def close(self) -> None:
        """Drop the renders kept for the fleet (a run's locator holds every chart's objects)."""
        self.renders.clear()


# Helm's own manifest separator (pkg/release/v1/util/manifest.go SplitManifests @ v4): `---` at
# a line start ends a document even when a comment follows it on the same line. Documents are read
# by the bounded loader (kube/documents.load_document: libyaml, a bare `=` is the string "=").
_SEPARATOR = re.compile(r"(?:^|\s*\n)---\s*")


CHART_FILE_MAX_BYTES = 8 * 1024 * 1024  # kube-prometheus-stack's values.yaml is ~0.2 MiB
CHART_FOLDER_MAX_BYTES = 256 * 1024 * 1024  # what Helm's loader may read of a chart folder


def _folder_problem(folder: Path) -> str:
    """Why a chart folder is not handed to Helm ('' when it may be): Helm's loader follows links and
    reads every file whole, so a link (to /dev/zero, to ~/.ssh), a FIFO or a device, or a folder
    beyond CHART_FOLDER_MAX_BYTES would hang it or fill memory. Nothing is followed here."""
    total = 0
    folders = [os.fspath(folder)]
    while folders:
        for entry in os.scandir(folders.pop()):
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode):
                folders.append(entry.path)
            elif not stat.S_ISREG(info.st_mode):
                kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a regular file"
                return f"{entry.path} is {kind}; a chart folder is read only when it holds plain files"
            else:
                total += info.st_size
                if total > CHART_FOLDER_MAX_BYTES:
                    return f"{folder} holds more than {CHART_FOLDER_MAX_BYTES // 2**20} MiB; not a chart folder"
    return ""


def _mapping_file(path: Path) -> tuple[Obj | None, str]:
    """A chart folder's YAML file (Chart.yaml, values.yaml) as a mapping, or None and why, in one line:
    a regular file (never through a link), size-capped, read by the bounded loader."""
    try:
        doc = load_document(read_text(path, max_bytes=CHART_FILE_MAX_BYTES, advice="not a chart file"))
    except (OSError, UnreadableFile, yaml.YAMLError) as err:
        what = err.strerror if isinstance(err, OSError) and err.strerror else str(err).splitlines()[0]
        return None, f"{path}: {clip(what)}"
    if doc is None:
        return {}, ""
    if not isinstance(doc, dict):
        return None, f"{path}: not a mapping of chart fields"
    return doc, ""


def _missing_dependencies(folder: Path, meta: Obj, values: Obj) -> list[str]:
    """Declared dependencies that our values enable but the chart folder does not hold (ValueError: why not readable)."""
    raw: Obj = {}
    if os.path.lexists(folder / "values.yaml"):
        found, why = _mapping_file(folder / "values.yaml")
        if found is None:
            raise ValueError(why)
        raw = found
    merged = helm_merge(raw, values)
    missing = []
    dependencies = meta.get("dependencies") or []
    if not isinstance(dependencies, list) or not all(isinstance(d, dict) and isinstance(d.get("name"), str)
                                                     for d in dependencies):
        raise ValueError(f"{folder}/Chart.yaml: dependencies must be a list of mappings with a name")
    for dep in dependencies:
        name = dep["name"]
        enabled: Any = True
        for cond in filter(None, str(dep.get("condition") or "").split(",")):
            node: Any = merged
            for key in cond.strip().split("."):
                node = node.get(key) if isinstance(node, dict) else None
            if isinstance(node, bool):
                enabled = node
                break
        if enabled and not (folder / "charts" / name).is_dir() and not list((folder / "charts").glob(f"{name}-*.tgz")):
            missing.append(name)
    return missing


def _documents(manifests: dict[str, str]) -> Iterator[Obj]:
    """Every object of the rendered templates, in template path order (NOTES.txt and empty docs dropped)."""
    for path in sorted(manifests):
        if not path.endswith((".yaml", ".yml", ".json")):
            continue
        for doc in (load_document(part) for part in _SEPARATOR.split(manifests[path]) if part.strip()):
            if isinstance(doc, dict) and doc.get("kind"):
                if doc["kind"].endswith("List") and isinstance(doc.get("items"), list):
                    yield from (item for item in doc["items"] if isinstance(item, dict))
                else:
                    yield doc


def _source_gaps(path: Path, source: HelmSource, values: Obj) -> tuple[list[str], set[tuple[str, str]]]:
    """What a chart *source* lacks against its archive, known per chart (each chart repository's release tooling)."""
    crds = path / "templates" / "crds"
    if path.is_dir() and crds.is_dir() and not any(crds.glob("*.yaml")):
        # external-secrets: CRDs are generated into templates/crds/ at release (hack/helm.generate.sh),
        # rendered when installCRDs is true.
        if values.get("installCRDs", True):
            return ([f"chart source lacks the CRDs its archive renders into {crds.relative_to(path)}/: "
                     "counted as CustomResourceDefinition"], {("apiextensions.k8s.io", "CustomResourceDefinition")})
    return [], set()


def _render_manifests(helm: Any, chart: Any, source: HelmSource, kube_version: str | None) -> dict[str, str]:
    """Template the chart; with the cluster's Kubernetes version when known.

    Argo CD passes the destination's version (`helm template --kube-version`); the SDK's
    `Chart.render` has no keyword for it, but its native call takes `kube_version` in the same
    options object (helm-python-sdk 0.2.2 chart.py render -> helm_render), so it is passed there.
    """
    if kube_version is None:
        return dict(chart.render(source.values, name=source.release_name, namespace=source.namespace, is_install=True))
    from helm_python import _native  # noqa: PLC0415  (pinned 0.2.2; see the docstring)

    opts = {"name": source.release_name, "namespace": source.namespace, "is_install": True, "kube_version": kube_version}
    manifests: dict[str, str] = json.loads(_native.call_string("helm_render", chart._raw(), json.dumps(source.values),
                                                               json.dumps(opts)))
    return manifests


def differing_paths(a: Any, b: Any, prefix: str = "") -> list[str]:
    """Every dotted path (list items by index, metadata included) where two objects differ."""
    if a == b:
        return []
    if isinstance(a, dict) and isinstance(b, dict):
        return [p for key in sorted(set(a) | set(b), key=str)
                for p in differing_paths(a.get(key), b.get(key), f"{prefix}.{key}" if prefix else str(key))]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [p for i, (x, y) in enumerate(zip(a, b, strict=True)) for p in differing_paths(x, y, f"{prefix}[{i}]")]
    return [prefix or "(whole object)"]


def unstable_objects(first: dict[str, str], second: dict[str, str]) -> list[str]:
    """What differs between two renders of one chart with the same values, one `Kind/name: paths` each.

    Objects are paired by template and position, so a random name shows as `metadata.name`.
    A chart that renders differently each time (randAlphaNum, genCA, a `lookup` that finds nothing
    offline, as under Argo CD's `helm template`) is OutOfSync after every manifest-cache expiry.
    """
    if first == second:
        return []
    out = []
    for path in sorted(set(first) | set(second)):
        if first.get(path) == second.get(path):
            continue
        a, b = list(_documents({path: first.get(path, "")})), list(_documents({path: second.get(path, "")}))
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} object(s), then {len(b)}")
            continue
        for x, y in zip(a, b, strict=True):
            if x != y:
                name = (x.get("metadata") or {}).get("name")
                out.append(f"{x.get('kind')}/{name}: {', '.join(differing_paths(x, y))}")
    return out or ["(the manifests differ only in layout)"]


def _check_size(source: HelmSource, manifests: dict[str, str], crds: dict[str, str]) -> None:
    """RenderTooLarge when the templates and CRDs of one render pass RENDER_MAX_BYTES or
    RENDER_MAX_DOCUMENTS; counted on the text, before anything is parsed or rendered again."""
    texts = [*manifests.values(), *crds.values()]
    size = sum(len(text) for text in texts)
    documents = sum(len(_SEPARATOR.findall(text)) + 1 for text in texts if text.strip()) if size <= RENDER_MAX_BYTES else 0
    if size > RENDER_MAX_BYTES or documents > RENDER_MAX_DOCUMENTS:
        raise RenderTooLarge(f"chart {source.chart} {source.version} renders {size // 1024} KiB in "
                             f"{documents or 'uncounted'} document(s), past the preview's bounds "
                             f"({RENDER_MAX_BYTES // 2**20} MiB, {RENDER_MAX_DOCUMENTS} documents); not previewed "
                             "(a template that repeats without bound?)")


#: The process that renders one chart: Helm's template engine has no bound of its own (`range
#: until`, `repeat` make what they are told), so it runs in a child with this much address space
#: (the largest pinned chart, kube-prometheus-stack, peaks near 200 MB resident; Go reserves more
#: address space than it uses) and this much time; past either, the chart is not previewed.
RENDER_ADDRESS_SPACE = 2 * 1024 ** 3
RENDER_SECONDS = 300

_CHILD = """
import pickle, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))
from slurmgen.review.preview.charts import WrongChart, render_here
try:
    result = ("ok", render_here(*pickle.loads(sys.stdin.buffer.read())))
except WrongChart as err:
    result = (type(err).__name__, str(err))
except MemoryError:
    result = ("memory", "")
except Exception as err:
    result = ("error", str(err) or type(err).__name__)
sys.stdout.buffer.write(pickle.dumps(result))
"""


def render(source: HelmSource, path: Path, notes: list[str], kube_version: str | None = None) -> ChartRender:
    """render_here in a child process bounded in memory and time (RENDER_ADDRESS_SPACE, RENDER_SECONDS):
    a template that repeats without end ends in RenderTooLarge, never in GiBs of this process."""
    helm_sdk()  # a missing SDK is one line (PreviewUnavailable) before any process starts
    import pickle  # noqa: PLC0415  (our own child's answer, never another's)
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    package_root = str(Path(__file__).resolve().parents[3])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (package_root, os.environ.get("PYTHONPATH"))))}
    too_large = (f"chart {source.chart} {source.version} does not render within the preview's bounds "
                 f"({RENDER_ADDRESS_SPACE // 2**20} MiB of memory, {RENDER_SECONDS} s); not previewed "
                 "(a template that repeats without bound?)")
    try:
        run = subprocess.run([sys.executable, "-c", _CHILD, str(RENDER_ADDRESS_SPACE)],
                             input=pickle.dumps((source, str(path), notes, kube_version)), capture_output=True,
                             timeout=RENDER_SECONDS, env=env)
    except subprocess.TimeoutExpired:
        raise RenderTooLarge(too_large) from None
    if run.returncode != 0 or not run.stdout:
        stderr = run.stderr.decode("utf-8", errors="replace")
        if "out of memory" in stderr or "MemoryError" in stderr or run.returncode < 0 or run.returncode == 134:
            raise RenderTooLarge(too_large)
        raise RuntimeError(clip(stderr.strip().splitlines()[-1] if stderr.strip() else f"exit {run.returncode}"))
    kind, payload = pickle.loads(run.stdout)
    if kind == "ok":
        return payload  # type: ignore[no-any-return]
    if kind == "memory":
        raise RenderTooLarge(too_large)
    raise {"WrongChart": WrongChart, "RenderTooLarge": RenderTooLarge}.get(kind, RuntimeError)(payload)


def render_here(source: HelmSource, path: str | Path, notes: list[str], kube_version: str | None = None) -> ChartRender:
    """Render one chart as Argo CD does (`helm template --include-crds`, release name, destination namespace).

    Twice: what differs between the two renders is `unstable` (Argo CD renders again at every
    manifest-cache expiry and hard refresh, and would see a change each time).
    """
    path = Path(path)
    helm = helm_sdk()
    with helm.Chart.load(str(path)) as chart:
        if chart.name != source.chart or _norm(str(chart.version)) != _norm(source.version):
            raise WrongChart(f"{path} holds chart {chart.name} {chart.version}, the Application pins "
                             f"{source.chart} {source.version}")
        # Coalescing drops keys whose default is null (nvidia mofedEnabled): overlay the raw values.yaml.
        defaults = helm_merge(chart.merge_values({}), chart.values)
        schema_errors: list[str] = []
        try:
            chart.validate_schema(source.values)
        except helm.HelmValuesError as err:
            schema_errors.append(str(err).splitlines()[0])
        manifests = _render_manifests(helm, chart, source, kube_version)
        _check_size(source, manifests, {item["filename"]: item["data"] for item in chart.crds})
        unstable = unstable_objects(manifests, _render_manifests(helm, chart, source, kube_version))
        crds = [doc for item in sorted(chart.crds, key=lambda c: c["filename"])
                for doc in load_documents(item["data"]) if isinstance(doc, dict) and doc.get("kind")]
        merged = chart.merge_values(source.values)
        schema = chart.schema
    gap_notes, assumed = _source_gaps(path, source, merged)
    return ChartRender(source=source, origin=str(path), objects=crds + list(_documents(manifests)),
                       defaults=defaults, schema=schema, schema_errors=schema_errors, notes=notes + gap_notes,
                       assumed_kinds=assumed, unstable=unstable)
