"""The files slurm-operator v1.2.1 writes from our CRs, rebuilt in Python so a review reads slurm.conf.

Reviewers reason about slurm.conf, not about Controller/NodeSet fields. This module mirrors, line
for line, the operator's builders at tag v1.2.1 (github.com/SlinkyProject/slurm-operator):

- internal/builder/controllerbuilder/controller_config.go: BuildControllerConfig, buildSlurmConf,
  buildNodeSetConf, buildCgroupConf
- internal/builder/accountingbuilder/accounting_config.go: buildSlurmdbdConf
- internal/builder/common/common.go: BuildMergedConfig, parseSlurmConfKV, GetSlurmNodeSetName
- internal/builder/workerbuilder/worker_app.go: slurmdConfArgs (the `slurmd -Z --conf` of a NodeSet)
- internal/utils/config/config.go: configBuilder.Build (lines joined by "\\n", final newline)
- api/v1beta1/{controller,accounting}_keys.go: ClusterName, PrimaryName, ServiceFQDNShort, ServiceKey

Input is a rendered tree (relative path -> object), in memory or read back from disk or git.
The LoginSet and RestApi add nothing to these files: login pods and slurmrestd read slurm.conf
from slurmctld (configless).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

Obj = dict[str, Any]
Tree = Mapping[str, Obj]

API_GROUP = "slinky.slurm.net"

# internal/builder/common/const.go@v1.2.1
SLURM_USER, SLURMD_USER = "slurm", "root"
SLURMCTLD_PORT, SLURMD_PORT, SLURMDBD_PORT = 6817, 6818, 6819
SLURMD_SPOOL_DIR, SLURMCTLD_SPOOL_DIR = "/var/spool/slurmd", "/var/spool/slurmctld"
SLURMCTLD_LOG, SLURMD_LOG = "/var/log/slurm/slurmctld.log", "/var/log/slurm/slurmd.log"
AUTH_TYPE, CRED_TYPE, AUTH_ALT_TYPES, AUTH_INFO = "auth/slurm", "cred/slurm", "auth/jwt", "use_client_ids"
JWT_PARAM, JWKS_PARAM = "jwt_key=/etc/slurm/jwt.key", "jwks=/etc/slurm/jwks.json"

SLURM_CONF, CGROUP_CONF, GRES_CONF, SLURMDBD_CONF = "slurm.conf", "cgroup.conf", "gres.conf", "slurmdbd.conf"


class Unresolved(Exception):
    """The operator could not build the file in this state (a referenced object is missing)."""


@dataclass(frozen=True)
class Setting:
    """One `Key=Value` property the operator writes itself (config.NewProperty)."""

    key: str
    value: str


@dataclass(frozen=True)
class SlurmConf:
    """slurm.conf as the operator assembles it, with the parts the checks need kept apart."""

    operator: tuple[Setting, ...]      # written by buildSlurmConf itself, before EXTRA CONFIG
    merge_keys: tuple[str, ...]        # keys the operator merges with ours (BuildMergedConfig)
    nodeset_lines: tuple[str, ...]     # buildNodeSetConf: NodeSet= and per-NodeSet PartitionName= lines
    extra_conf: str                    # Controller spec.extraConf, appended verbatim
    text: str


@dataclass(frozen=True)
class Effective:
    """Every file of one Controller, and how each NodeSet's slurmd registers (not part of slurm.conf)."""

    controller: str                    # relative path of the Controller file
    files: Mapping[str, str]
    slurm: SlurmConf
    nodes: Mapping[str, str] = field(default_factory=dict)  # Slurm NodeSet name -> `--conf` string


def _build(props: Iterable[tuple[str | None, Any]], *, final_newline: bool = True) -> str:
    """internal/utils/config/config.go:configBuilder.Build@v1.2.1 (key None = raw line)."""
    lines = [str(v) if k is None else f"{k}={v}" for k, v in props]
    if final_newline:
        lines.append("")
    return "\n".join(lines)


def _of_kind(tree: Tree, kind: str, namespace: str | None = None) -> dict[str, tuple[str, Obj]]:
    """name -> (relative path, object) of the Slinky CRs of one kind (ConfigMaps when kind == ConfigMap)."""
    out: dict[str, tuple[str, Obj]] = {}
    for rel, obj in sorted(tree.items()):
        api = str(obj.get("apiVersion", ""))
        if obj.get("kind") != kind or (kind != "ConfigMap" and not api.startswith(API_GROUP + "/")):
            continue
        if namespace is not None and obj["metadata"].get("namespace") != namespace:
            continue
        out[obj["metadata"]["name"]] = (rel, obj)
    return out


def cluster_name(controller: Obj) -> str:
    """api/v1beta1/controller_keys.go:Controller.ClusterName@v1.2.1."""
    meta = controller["metadata"]
    return controller.get("spec", {}).get("clusterName") or f"{meta.get('namespace')}_{meta['name']}"


def slurm_nodeset_name(nodeset: Obj) -> str:
    """internal/builder/common/common.go:GetSlurmNodeSetName@v1.2.1: hostname prefix, else the CR name."""
    hostname = nodeset.get("spec", {}).get("template", {}).get("spec", {}).get("hostname") or ""
    if hostname:
        return hostname.split()[0].strip("-")
    return str(nodeset["metadata"]["name"])


def nodesets_for(tree: Tree, controller: Obj) -> list[Obj]:
    """internal/utils/refresolver/refresolver.go:GetNodeSetsForController@v1.2.1, sorted by CR name
    as buildNodeSetConf sorts them."""
    ns, name = controller["metadata"].get("namespace"), controller["metadata"]["name"]
    found = [o for _, o in _of_kind(tree, "NodeSet", ns).values()
             if o.get("spec", {}).get("controllerRef", {}).get("name") == name]
    return sorted(found, key=lambda o: o["metadata"]["name"])


def parse_conf_kv(raw: str) -> dict[str, str]:
    """internal/builder/common/common.go:parseSlurmConfKV@v1.2.1: lower-cased key -> value of
    single-valued lines (continuations joined, comments cut, last one wins)."""
    out: dict[str, str] = {}
    pending = ""

    def put(logical: str) -> None:
        key, sep, val = logical.strip().partition("=")
        key, val = key.strip(), val.strip()
        if sep and key and val and not any(c in val for c in " \n"):
            out[key.lower()] = val

    for line in raw.split("\n"):
        line = line.removesuffix("\r").split("#", 1)[0].rstrip(" \t")
        if not line:
            continue
        if line.endswith("\\"):
            pending += line[:-1]
            continue
        put(pending + line)
        pending = ""
    if pending:
        put(pending)
    return out


def merged_config(extra_conf: str, merge: Mapping[str, list[str]]) -> str:
    """internal/builder/common/common.go:BuildMergedConfig@v1.2.1: for each mergeable key that
    extraConf also sets, one line with the union (options keyed by their `name=`, sorted)."""
    values = parse_conf_kv(extra_conf)
    props: list[tuple[str | None, Any]] = []
    for key in sorted(merge):
        val = values.get(key.lower())
        if val is None:
            continue
        merged = set(merge[key])
        seen = {m.split("=", 1)[0].lower() for m in merged}
        for v in val.split(","):
            if not v:
                continue
            opt = v.split("=", 1)[0].lower()
            if opt in seen:
                continue
            merged.add(v.lower())
            seen.add(opt)
        props.append((key, ",".join(sorted(merged))))
    return _build(props, final_newline=False)


def _nodeset_conf(nodesets: list[Obj]) -> list[str]:
    """controller_config.go:buildNodeSetConf@v1.2.1."""
    lines: list[str] = []
    for nodeset in nodesets:
        name = slurm_nodeset_name(nodeset)
        lines.append(f"NodeSet={name} Feature={name}")
        partition = nodeset.get("spec", {}).get("partition") or {}
        if partition.get("enabled"):
            lines.append(" ".join([f"PartitionName={name}", f"Nodes={name}", str(partition.get("config", ""))]))
    return lines


def build_slurm_conf(controller: Obj, accounting: Obj | None, nodesets: list[Obj]) -> SlurmConf:
    """controller_config.go:buildSlurmConf@v1.2.1 (no prolog/epilog script refs: we render none)."""
    spec = controller.get("spec", {})
    meta = controller["metadata"]
    merge: dict[str, list[str]] = {
        "SlurmctldParameters": ["enable_configless", "reconfig_on_restart"],
        "AuthInfo": [AUTH_INFO],
        "AuthAltParameters": [JWT_PARAM] + ([JWKS_PARAM] if spec.get("jwksKeyRef") else []),
    }
    service = f"{meta['name']}-controller"
    name = cluster_name(controller)
    general = [
        ("ClusterName", name), ("SlurmUser", SLURM_USER),
        ("SlurmctldHost", f"{service}-0({service}.{meta.get('namespace')})"),
        ("SlurmctldPort", SLURMCTLD_PORT), ("StateSaveLocation", f"{SLURMCTLD_SPOOL_DIR}/{name}"),
        ("SlurmdUser", SLURMD_USER), ("SlurmdPort", SLURMD_PORT), ("SlurmdSpoolDir", SLURMD_SPOOL_DIR),
        ("MaxNodeCount", 1024),
    ]
    logging = [("SlurmctldLogFile", SLURMCTLD_LOG), ("SlurmSchedLogFile", SLURMCTLD_LOG), ("SlurmdLogFile", SLURMD_LOG)]
    plugins = [
        ("AuthType", AUTH_TYPE), ("CredType", CRED_TYPE), ("AuthAltTypes", AUTH_ALT_TYPES),
        ("AuthAltParameters", ",".join(merge["AuthAltParameters"])), ("AuthInfo", ",".join(merge["AuthInfo"])),
        ("SlurmctldParameters", ",".join(merge["SlurmctldParameters"])),
    ]
    if (spec.get("metrics") or {}).get("enabled"):
        plugins.append(("MetricsType", "metrics/openmetrics"))
    if accounting is not None:
        acct: list[tuple[str, Any]] = [
            ("AccountingStorageType", "accounting_storage/slurmdbd"),
            ("AccountingStorageHost", f"{accounting['metadata']['name']}-accounting"),
            ("AccountingStoragePort", SLURMDBD_PORT)]
    else:
        acct = [("AccountingStorageType", "accounting_storage/none")]

    props: list[tuple[str | None, Any]] = [(None, "#"), (None, "### GENERAL ###"), *general,
                                           (None, "#"), (None, "### LOGGING ###"), *logging,
                                           (None, "#"), (None, "### PLUGINS & PARAMETERS ###"), *plugins,
                                           (None, "#"), (None, "### ACCOUNTING ###"), *acct]
    nodeset_lines = _nodeset_conf(nodesets)
    if nodeset_lines:
        props += [(None, "#"), (None, "### NODESET & PARTITION ###"), (None, "\n".join(nodeset_lines))]
    extra = str(spec.get("extraConf") or "")
    props += _extra_sections(extra, merge)
    settings = tuple(Setting(k, str(v)) for k, v in (*general, *logging, *plugins, *acct))
    return SlurmConf(operator=settings, merge_keys=tuple(sorted(merge)), nodeset_lines=tuple(nodeset_lines),
                     extra_conf=extra, text=_build(props))


def _extra_sections(extra: str, merge: Mapping[str, list[str]]) -> list[tuple[str | None, Any]]:
    """The tail both builders write: the CR's extraConf verbatim, then the keys the operator merges
    with its own values (slurm.conf and slurmdbd.conf alike, @v1.2.1)."""
    props: list[tuple[str | None, Any]] = []
    if extra:
        props += [(None, "#"), (None, "### EXTRA CONFIG ###"), (None, extra)]
    snippet = merged_config(extra, merge)
    if snippet:
        props += [(None, "#"), (None, "### MERGED CONFIG ###"), (None, snippet)]
    return props


def build_cgroup_conf() -> str:
    """controller_config.go:buildCgroupConf@v1.2.1: written only when no configFileRefs carries cgroup.conf."""
    return _build([("CgroupPlugin", "cgroup/v2"), ("IgnoreSystemd", "yes")])


def build_slurmdbd_conf(accounting: Obj) -> str:
    """accounting_config.go:buildSlurmdbdConf@v1.2.1; the database password is shown as a placeholder
    naming its Secret (the operator reads the value; it never appears here)."""
    spec = accounting.get("spec", {})
    storage = spec.get("storageConfig", {})
    ref = storage.get("passwordKeyRef", {})
    merge = {"AuthInfo": [AUTH_INFO],
             "AuthAltParameters": [JWT_PARAM] + ([JWKS_PARAM] if spec.get("jwksKeyRef") else [])}
    props: list[tuple[str | None, Any]] = [
        (None, "#"), (None, "### GENERAL ###"),
        ("DbdHost", f"{accounting['metadata']['name']}-accounting-0"), ("DbdPort", SLURMDBD_PORT),
        ("SlurmUser", SLURM_USER),
        (None, "#"), (None, "### PLUGINS & PARAMETERS ###"),
        ("AuthType", AUTH_TYPE), ("AuthAltTypes", AUTH_ALT_TYPES),
        ("AuthAltParameters", ",".join(merge["AuthAltParameters"])), ("AuthInfo", ",".join(merge["AuthInfo"])),
        (None, "#"), (None, "### STORAGE ###"),
        ("StorageType", "accounting_storage/mysql"), ("StorageHost", storage.get("host", "")),
        ("StoragePort", storage.get("port", 3306)),  # CRD default (api/v1beta1/accounting_types.go)
        ("StorageUser", storage.get("username", "")), ("StorageLoc", storage.get("database", "")),
        ("StoragePass", f"<secret {ref.get('name', '?')}/{ref.get('key', '?')}>"),
        (None, "#"), (None, "### LOGGING ###"), ("LogFile", "/dev/null"),
    ]
    extra = str(spec.get("extraConf") or "")
    props += _extra_sections(extra, merge)
    return _build(props)


def slurmd_conf(nodeset: Obj) -> str:
    """worker_app.go:slurmdConfArgs@v1.2.1: the `--conf` a NodeSet's slurmd registers its node with
    (`slurmd -Z`). Keys are title-cased as Go's cases.Title does (RealMemory -> Realmemory; Slurm
    keys are case-insensitive); Feature(s) are merged behind the NodeSet name."""
    name = slurm_nodeset_name(nodeset)
    conf: dict[str, str] = {"Features": name}
    extra = str(nodeset.get("spec", {}).get("extraConf") or "")
    for item in extra.split(" ") if extra else []:
        key, sep, val = item.partition("=")
        if not sep:
            raise Unresolved(f"malformed --conf item: {item}")  # the operator panics here
        key = key[:1].upper() + key[1:].lower()
        if key in ("Features", "Feature"):
            key = "Features"
        conf[key] = f"{conf[key]},{val}" if key in conf else val
    return " ".join(sorted(f"{k}={v}" for k, v in conf.items()))


def controllers(tree: Tree) -> dict[str, tuple[str, Obj]]:
    """Controller name -> (relative path, object)."""
    return _of_kind(tree, "Controller")


def effective(tree: Tree, controller_name: str | None = None) -> Effective | None:
    """Every file the operator writes for one Controller of the tree (the only one by default);
    None when the tree has no Controller. Raises Unresolved when a configFileRefs ConfigMap is
    missing (BuildControllerConfig fails on it)."""
    found = controllers(tree)
    if not found:
        return None
    rel, controller = found[controller_name] if controller_name else found[sorted(found)[0]]
    ns = controller["metadata"].get("namespace")
    spec = controller.get("spec", {})
    accounting = None
    if spec.get("accountingRef"):
        # GetAccounting: a missing Accounting is tolerated (IsNotFound) and gives accounting_storage/none
        accounting = _of_kind(tree, "Accounting", ns).get(spec["accountingRef"]["name"], (None, None))[1]
    configmaps = _of_kind(tree, "ConfigMap", ns)
    extra_files: dict[str, str] = {}
    for ref in spec.get("configFileRefs") or []:
        if ref["name"] not in configmaps:
            raise Unresolved(f"ConfigMap {ref['name']} (configFileRefs) does not exist")
        for fname, text in sorted((configmaps[ref["name"]][1].get("data") or {}).items()):
            extra_files[fname] = str(text)
    nodesets = nodesets_for(tree, controller)
    slurm = build_slurm_conf(controller, accounting, nodesets)
    files: dict[str, str] = {SLURM_CONF: slurm.text}
    if CGROUP_CONF not in extra_files:
        files[CGROUP_CONF] = build_cgroup_conf()
    files.update(extra_files)
    if accounting is not None:
        files[SLURMDBD_CONF] = build_slurmdbd_conf(accounting)
    nodes = {slurm_nodeset_name(n): slurmd_conf(n) for n in nodesets}
    return Effective(controller=rel, files=dict(sorted(files.items())), slurm=slurm, nodes=nodes)
