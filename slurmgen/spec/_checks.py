"""Cross-field rules the JSON Schema cannot express (references between sections, uniqueness).

Each rule returns (field path, message) pairs on the *defaulted* spec dict, so every problem in a
file is reported at once. Paths use list indexes (`nodesets[0].zones`); the loader shows them with
item names (errors.name_keyed). A rule runs only when the sections it declares (`@rule(...)`, slurmgen/rule.py)
passed the schema.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections import Counter
from typing import Any, Iterable, Iterator, NamedTuple

from ..kube import naming
from ..kube.quantity import memory_mib
from ..rule import Finding, Rule, rule
from ._images import pinned_images
from ._paths import form_problem, item_name_problem, mount_problem, within
from ._slurm import slurm_key, slurm_keys
from . import secrets_scan
from .grammar import Unreadable, sacctmgr_file, slurm_conf, sshd, sssd
from ._topology import topology_rules
from .arn import AMP_HOST, AMP_URL, role_problems
from .model import BRIDGE_USER

SpecRule = Rule[dict[str, Any]]


def _duplicates(items: list[dict[str, Any]], section: str) -> Iterator[Finding]:
    counts = Counter(item["name"] for item in items)
    for index, item in enumerate(items):
        if counts[item["name"]] > 1 and [i["name"] for i in items].index(item["name"]) != index:
            yield f"{section}[{index}].name", f"duplicate {section[:-1]} name {item['name']!r}; names must be unique"


@rule("nodesets", "partitions")
def unique_names(spec: dict[str, Any]) -> Iterator[Finding]:
    yield from _duplicates(spec["nodesets"], "nodesets")
    yield from _duplicates(spec["partitions"], "partitions")


def include_in_all(ns: dict[str, Any]) -> bool:
    """A nodeset's membership of [ALL] partitions: its own includeInAll, else not for spot or autoscaled ones.

    A job in a shared default partition that lands on a spot node keeps it alive and is lost when it is
    reclaimed; and KEDA scales an autoscaled nodeset on its own partitions' queue, not on `all`.
    """
    if "includeInAll" in ns:
        return bool(ns["includeInAll"])
    return ns.get("capacityType", "on-demand") != "spot" and ns.get("autoscale") is None


def _unknown_references(spec: dict[str, Any]) -> Iterator[tuple[int, int, str]]:
    """(partition index, reference index, name) of every partition reference to no nodeset."""
    known = {ns["name"] for ns in spec["nodesets"]}
    for p_index, part in enumerate(spec["partitions"]):
        names = part["nodesets"]
        if "ALL" in names and len(names) > 1:
            continue  # reported as ALL-with-others, not as unknown
        for n_index, name in enumerate(names):
            if name != "ALL" and name not in known:
                yield p_index, n_index, name


@rule("nodesets", "partitions")
def partition_references(spec: dict[str, Any]) -> Iterator[Finding]:
    known = ", ".join(dict.fromkeys(ns["name"] for ns in spec["nodesets"]))  # a duplicate is listed once
    for p_index, part in enumerate(spec["partitions"]):
        if "ALL" in part["nodesets"] and len(part["nodesets"]) > 1:
            yield f"partitions[{p_index}].nodesets", "ALL already means every nodeset; list ALL alone"
        elif part["nodesets"] == ["ALL"] and not any(include_in_all(ns) for ns in spec["nodesets"]):
            yield (f"partitions[{p_index}].nodesets",
                   "ALL matches no nodeset: spot and autoscaled nodesets join ALL only with includeInAll: true; "
                   "set it on one or list the nodesets")
    for p_index, n_index, name in _unknown_references(spec):
        yield f"partitions[{p_index}].nodesets[{n_index}]", f"no nodeset named {name!r}; defined nodesets: {known}"


@rule("nodesets")
def features_are_not_nodeset_names(spec: dict[str, Any]) -> Iterator[Finding]:
    """A feature named like another nodeset would pull these nodes into that nodeset: Slurm NodeSets
    are defined by feature (`NodeSet=<n> Feature=<n>`), and every node carries its nodeset's name."""
    names = {ns["name"].casefold() for ns in spec["nodesets"]}
    for index, ns in enumerate(spec["nodesets"]):
        for f_index, feature in enumerate(ns["features"]):
            if feature.casefold() in names and feature.casefold() != ns["name"].casefold():
                yield (f"nodesets[{index}].features[{f_index}]",
                       f"{feature!r} is another nodeset's name; its partitions would take these nodes too")


@rule("partitions")
def one_default_partition(spec: dict[str, Any]) -> Iterator[Finding]:
    defaults = [i for i, p in enumerate(spec["partitions"]) if p["default"]]
    for index in defaults[1:]:
        first = spec["partitions"][defaults[0]]["name"]
        yield f"partitions[{index}].default", f"only one partition can be the default; {first!r} already is"


@rule("nodesets", "partitions")
def every_nodeset_in_a_partition(spec: dict[str, Any]) -> Iterator[Finding]:
    used = {n for p in spec["partitions"] for n in p["nodesets"]}
    if any(_unknown_references(spec)):
        return  # with a misspelt reference, "in no partition" would only echo it
    if "ALL" in used:
        in_all = {ns["name"] for ns in spec["nodesets"] if include_in_all(ns)}
        if not in_all:
            return  # partition_references already says that ALL matches nothing
        used |= in_all
    seen: set[str] = set()
    for index, ns in enumerate(spec["nodesets"]):
        if ns["name"] not in used and ns["name"] not in seen:  # a duplicated name is reported once
            yield f"nodesets[{index}].name", f"nodeset {ns['name']!r} is in no partition, so no job can use it; add it to one"
        seen.add(ns["name"])


@rule("nodesets", "partitions")
def no_reserved_slurm_names(spec: dict[str, Any]) -> Iterator[Finding]:
    for index, ns in enumerate(spec["nodesets"]):
        if ns["name"].upper() in {"ALL", "DEFAULT"}:
            yield f"nodesets[{index}].name", f"{ns['name']!r} is reserved by Slurm; pick another name"
    for index, part in enumerate(spec["partitions"]):
        if part["name"].upper() == "DEFAULT":
            yield f"partitions[{index}].name", "'default' is reserved by Slurm; set default: true on a partition instead"


# Names that belong to Kubernetes or Argo CD, the one list the spec is checked against.
# Kubernetes creates these namespaces itself (kube-apiserver's system namespaces controller:
# default, kube-system, kube-public, kube-node-lease); Argo CD installs into `argocd` and creates
# the AppProject `default` every Application without a project uses (argo-cd v3
# server/project, pkg/apis/application/v1alpha1 DefaultAppProjectName). A Slurm or monitoring
# namespace among them opens that namespace to the children (the AppProject lists them as
# destinations); a cluster named like Argo CD's project replaces it (each cluster's AppProject is
# named after the cluster, naming.project).
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease", "argocd")
ARGOCD_PROJECTS = ("default",)
_NAMESPACE_FIELDS = (("slurm", "namespace"), ("slurm", "operatorNamespace"),
                     ("monitoring", "kubePrometheusStack", "namespace"))


@rule("name", "gitops", "slurm", "monitoring")
def no_names_of_others(spec: dict[str, Any]) -> Iterator[Finding]:
    """Refuse a cluster name that is Argo CD's own project and namespaces of Kubernetes or Argo CD."""
    if spec["name"] in ARGOCD_PROJECTS:
        yield "name", (f"{spec['name']!r} is Argo CD's own AppProject (every team's Applications use it); "
                       "name the cluster something else")
    argocd = spec["gitops"]["argocdNamespace"]
    taken = {*SYSTEM_NAMESPACES, argocd}
    for path in _NAMESPACE_FIELDS:
        value: Any = spec
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, str) and value in taken:
            owner = "Argo CD's namespace" if value in (argocd, "argocd") else "a Kubernetes system namespace"
            yield ".".join(path), f"{value!r} is {owner}; pick a namespace of the cluster's own"
        elif isinstance(value, str) and value.startswith(KUBE_PREFIX):
            yield ".".join(path), (f"{value!r} starts with {KUBE_PREFIX!r}, which Kubernetes reserves for its own "
                                   "namespaces; pick a namespace of the cluster's own")


# Label keys on objects that others read (the ServiceMonitor the operator makes from
# metrics.serviceMonitor.labels): a key one of them owns would make that object theirs.
# - Argo CD (v3.5.1): `app.kubernetes.io/instance` is its tracking label (`application.instanceLabelKey`'s
#   default) under `application.resourceTrackingMethod: label` or `annotation+label`; the default is
#   `annotation` (util/settings/settings.go GetTrackingMethod), but a site may choose label tracking, and
#   then an object the operator made carrying the label of an Application is that Application's to prune.
#   Every `argocd.argoproj.io/` key is Argo CD's (secret-type, instance, sync options).
# - slurmgen: `app.kubernetes.io/managed-by` (MANAGED_BY, kube/vocabulary.py) and every `slurmgen.dev/` key.
# - Kubernetes: the `kubernetes.io/` and `k8s.io/` prefixes, subdomains included, are reserved for its core
#   components (Kubernetes docs, "Labels and Selectors": syntax and character set); `app.kubernetes.io/`
#   is the recommended labels', which users set, except the two above.
OWNED_LABELS = {"app.kubernetes.io/instance": "Argo CD's tracking label (application.instanceLabelKey)",
                "app.kubernetes.io/managed-by": "slurmgen's own (managed-by: slurmgen marks what it renders)"}
OWNED_PREFIXES = {"argocd.argoproj.io": "Argo CD's", "slurmgen.dev": "slurmgen's own"}
RESERVED_DOMAINS = ("kubernetes.io", "k8s.io")
KUBE_PREFIX = "kube-"  # reserved for Kubernetes system namespaces (Kubernetes docs, "Namespaces")


def label_owner(key: str) -> str | None:
    """Who owns a label key a spec may not set, or None when it is the user's."""
    if key in OWNED_LABELS:
        return OWNED_LABELS[key]
    prefix = key.split("/", 1)[0] if "/" in key else ""
    if prefix in OWNED_PREFIXES:
        return f"{OWNED_PREFIXES[prefix]} prefix {prefix}/"
    if prefix != "app.kubernetes.io" and any(prefix == d or prefix.endswith("." + d) for d in RESERVED_DOMAINS):
        return f"reserved for Kubernetes' core components ({prefix}/)"
    return None


@rule("metrics")
def no_labels_of_others(spec: dict[str, Any]) -> Iterator[Finding]:
    """Refuse label keys that belong to Argo CD, Kubernetes or slurmgen (OWNED_LABELS)."""
    for key in sorted(spec["metrics"]["serviceMonitor"]["labels"]):
        owner = label_owner(key)
        if owner is not None:
            yield f"metrics.serviceMonitor.labels.{key}", (f"{key} is {owner}; Prometheus selects the ServiceMonitor "
                                                          "by a label of your own (release: kube-prometheus-stack)")


LABEL_MAX = 63  # a label value (and a DNS label): Kubernetes' apimachinery validation IsValidLabelValue


@rule("name", "nodesets")
def derived_names_fit(spec: dict[str, Any]) -> Iterator[Finding]:
    """Names derived from the cluster's that become label values must fit in 63 characters: the
    root Application's name (app.kubernetes.io/part-of on every Application) and each NodePool's
    (Karpenter labels its nodes karpenter.sh/nodepool=<name>; the NodeSet selects on it)."""
    name = spec["name"]
    root = naming.root_application(name)
    if len(root) > LABEL_MAX:
        yield "name", (f"{name!r} makes the label value {root!r} ({len(root)} characters, at most {LABEL_MAX}); "
                       f"use at most {LABEL_MAX - len(root) + len(name)} characters")
    for index, ns in enumerate(spec["nodesets"]):
        pool = naming.nodepool(name, ns["name"])
        if len(pool) > LABEL_MAX:
            yield f"nodesets[{index}].name", (f"NodePool {pool!r} is {len(pool)} characters, and Karpenter puts it in "
                                              f"a node label (at most {LABEL_MAX}); shorten the cluster or nodeset name")


# An image reference as the kubelet parses it (github.com/distribution/reference v0.6.0 regexp.go:
# domain components, path components separated by one `.`, `_`, `__` or dashes, tag, digest); the
# schema's pattern is wider (it takes `a..b/x` and `./x`), which the kubelet refuses (InvalidImageName).
_DOMAIN_PART = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_PATH_PART = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*"
_NAME = rf"(?:{_DOMAIN_PART}(?:\.{_DOMAIN_PART})*(?::[0-9]+)?/)?{_PATH_PART}(?:/{_PATH_PART})*"
_IMAGE_REF = re.compile(rf"{_NAME}(?::[\w][\w.-]{{0,127}})?(?:@sha256:[0-9a-f]{{64}})?")
_REGISTRY = re.compile(rf"{_DOMAIN_PART}(?:\.{_DOMAIN_PART})*(?::[0-9]+)?(?:/{_PATH_PART})*")


@rule("images", "nodesets", "topology", "bridge")
def image_references(spec: dict[str, Any]) -> Iterator[Finding]:
    """Every image reference (and the Slurm registry prefix) in the grammar the kubelet reads."""
    images = spec["images"]
    refs = [("images.sidecar", images.get("sidecar"))]
    refs += [(f"images.overrides.{k}", v) for k, v in sorted(images.get("overrides", {}).items())]
    refs += [(f"nodesets[{i}].image", ns.get("image")) for i, ns in enumerate(spec["nodesets"])]
    refs += [("topology.labelerImage", (spec.get("topology") or {}).get("labelerImage"))]
    refs += [("bridge.labelerImage", (spec.get("bridge") or {}).get("labelerImage"))]
    for where, ref in refs:
        if isinstance(ref, str) and (not _IMAGE_REF.fullmatch(ref) or len(ref.split("@")[0].rsplit(":", 1)[0]) > 255):
            yield where, f"{ref!r} is not an image reference the kubelet can pull (empty, '..' or doubled separators)"
    registry = images.get("registry")
    if isinstance(registry, str) and not _REGISTRY.fullmatch(registry):
        yield "images.registry", f"{registry!r} is not a registry and path an image can start with ('..' or doubled separators)"


@rule("gitops")
def gitops_path(spec: dict[str, Any]) -> Iterator[Finding]:
    """gitops.path names a folder inside the repository: no `.` or `..` part (Argo CD resolves the
    Application's path inside the checkout and refuses one that leaves it)."""
    path = spec["gitops"]["path"]
    if any(part in (".", "..") for part in path.split("/")):
        yield "gitops.path", f"{path!r} holds '.' or '..'; name the folder from the repository's root (e.g. dist)"


@rule("nodesets", "partitions")
def extra_conf_overrides(spec: dict[str, Any]) -> Iterator[Finding]:
    """Keys the generator owns must not be smuggled in through the free-form maps."""
    owned_partition = slurm_keys({"Nodes", "Default", "MaxTime", "PriorityTier", "PartitionName"})
    for index, part in enumerate(spec["partitions"]):
        for key in sorted(k for k in part["extraConfig"] if slurm_key(k) in owned_partition):
            yield f"partitions[{index}].extraConfig.{key}", f"{key} is set by the generator; use the partition's own field"
    owned_node = slurm_keys({"Gres", "NodeName", "Features", "Feature"})
    for index, ns in enumerate(spec["nodesets"]):
        for key in sorted(k for k in ns["extraSlurmdConf"] if slurm_key(k) in owned_node):
            yield f"nodesets[{index}].extraSlurmdConf.{key}", f"{key} is set by the generator; use features / gpusPerPod"


def holds_secret(text: str) -> bool:
    """Whether the secret scan refuses this text: its line (which never shows the text) is the one to
    give, not a grammar refusal of the same text."""
    return any(secrets_scan.scan_text(text))


@rule("nodesets", "partitions", "controller")
def slurm_values(spec: dict[str, Any]) -> Iterator[Finding]:
    """The one check of what reaches Slurm's parser as free text (extra node and partition
    parameters, extra slurm.conf lines), read with Slurm's own grammar (grammar/slurm_conf.py): no
    `#`, no backslash, no quote that does not wrap a value, one key per global line, and no key given
    twice in two spellings (Slurm keys ignore case; _slurm.py)."""
    maps = [(f"nodesets[{i}].extraSlurmdConf", ns["extraSlurmdConf"]) for i, ns in enumerate(spec["nodesets"])]
    maps += [(f"partitions[{i}].extraConfig", p["extraConfig"]) for i, p in enumerate(spec["partitions"])]
    for where, params in maps:
        seen: dict[str, str] = {}
        for key, value in params.items():
            if slurm_key(key) in seen:
                yield f"{where}.{key}", f"the same Slurm key as {seen[slurm_key(key)]} (Slurm keys ignore case); keep one"
            seen.setdefault(slurm_key(key), key)
            try:
                if not holds_secret(str(value)):
                    slurm_conf.read_value(str(value))
            except Unreadable as err:
                yield f"{where}.{key}", str(err)
    for index, line in enumerate(spec["controller"]["extraConf"]):
        try:
            if not holds_secret(line):
                slurm_conf.read_line(line)
        except Unreadable as err:
            yield f"controller.extraConf[{index}]", str(err)


# sacctmgr flat files (charts/policy.py): `#` starts a comment there too (a cut line makes `sacctmgr
# load` fatal), and the Job reads `sacctmgr -nP` output split on `|`; `'`, `:`, `"` and line breaks
# are refused by the schema's pattern. `[slurmgen ` is the ownership mark (policy.mark) the Job
# deletes entities by: a description must not claim another cluster's.
_FLAT_FILE_SPECIAL = ("#", "|")
# slurmdbd stores descriptions and organizations in MySQL `tinytext` columns (255 bytes; acct_table
# and qos_table in src/plugins/accounting_storage/mysql/accounting_storage_mysql.c): a longer one is
# refused or cut, cutting the ownership mark appended to it; and a long text would grow the
# accounts ConfigMap toward the API server's 1 MiB limit.
TEXT_COLUMN_BYTES = 255
OWNER_MARK = "[slurmgen"


@rule("policy", "slurm")
def flat_file_values(spec: dict[str, Any]) -> Iterator[Finding]:
    """The one check of the free text that reaches the accounts flat file: QoS and account descriptions, organizations."""
    policy = spec.get("policy") or {}
    fields = [(f"policy.qos[{i}].description", q.get("description")) for i, q in enumerate(policy.get("qos", []))]
    for i, acct in enumerate(policy.get("accounts", [])):
        fields += [(f"policy.accounts[{i}].description", acct.get("description")),
                   (f"policy.accounts[{i}].organization", acct.get("organization"))]
    for where, text in fields:
        if not isinstance(text, str):
            continue
        special = [c for c in _FLAT_FILE_SPECIAL if c in text]
        if special:
            yield where, (f"holds {' and '.join(repr(c) for c in special)}, which the sacctmgr flat file and the "
                          "accounts Job read as a comment or separator; remove it")
        else:
            try:
                sacctmgr_file.read_back(where.rsplit(".", 1)[-1].capitalize(), text)
            except Unreadable as err:
                yield where, str(err)
        if OWNER_MARK in text.casefold():
            yield where, f"holds {OWNER_MARK!r}, slurmgen's mark of the entities a cluster owns; remove it"
        room = TEXT_COLUMN_BYTES - len(f" {OWNER_MARK} {spec['slurm']['clusterName']}]".encode())
        if len(text.encode()) > room:
            yield where, (f"{len(text.encode())} bytes; slurmdbd keeps {TEXT_COLUMN_BYTES} with slurmgen's mark, "
                          f"so at most {room}")


# sshd reads `Match` blocks to the end of the file, and `Include` pulls in other files: after our
# key-only lines either could switch passwords or root login back on for some connections
# (sshd_config(5): "If a keyword appears in multiple Match blocks ... the first"; a Match line
# applies until the next Match or the end). Keywords are read as sshd reads them (grammar/sshd.py):
# `"Match" all` is a Match line.
_SSHD_REFUSED = ("match", "include")
# What slurmgen's own lines set (charts/login.py, charts/directory.py), with the aliases sshd maps to
# the same option (servconf.c keywords[]): sshd keeps a keyword's first value, so a later line never
# applies; it is refused rather than silently ignored.
_SSHD_OURS = {
    "passwordauthentication": "PasswordAuthentication", "kbdinteractiveauthentication": "KbdInteractiveAuthentication",
    "challengeresponseauthentication": "KbdInteractiveAuthentication", "pubkeyauthentication": "PubkeyAuthentication",
    "permitrootlogin": "PermitRootLogin", "authorizedkeyscommand": "AuthorizedKeysCommand",
    "authorizedkeyscommanduser": "AuthorizedKeysCommandUser",
}


@rule("login")
def sshd_extra_config(spec: dict[str, Any]) -> Iterator[Finding]:
    """Refuse `Match` and `Include` in login.extraSshdConfig, the keywords slurmgen sets, and any line
    sshd would read differently from how it looks: only global keywords, which sshd keeps first-come,
    so ours (before it) hold."""
    text = spec["login"].get("extraSshdConfig") or ""
    if holds_secret(text):
        return  # the secret scan's line says it, without the text
    in_match = False  # the lines of a (refused) Match block are said with it
    for number, raw in enumerate(text.split("\n"), start=1):
        try:
            line = sshd.read_line(raw, number)
        except Unreadable as err:
            yield "login.extraSshdConfig", f"line {number}: {err}"
            continue
        if line is None:
            continue
        if line.key in _SSHD_REFUSED:
            in_match = in_match or line.key == "match"
            yield ("login.extraSshdConfig", f"line {number}: {line.keyword} is refused: it would apply after slurmgen's "
                   "lines and could re-enable passwords or root login; use global keywords only")
        elif line.key in _SSHD_OURS and not in_match:
            yield ("login.extraSshdConfig", f"line {number}: {line.keyword} is set by slurmgen, and sshd keeps the first "
                   "value, so this line would never apply; remove it (root login: directory.ssh.rootLogin)")


@rule("login")
def sssd_conf_file(spec: dict[str, Any]) -> Iterator[Finding]:
    """login.sssdConf is read by sssd's own parser (grammar/sssd.py): a line it refuses stops sssd."""
    text = spec["login"].get("sssdConf") or ""
    if holds_secret(text):
        return  # the secret scan's line says it, without the text
    try:
        sssd.read(text)
    except Unreadable as err:
        yield "login.sssdConf", str(err)


@rule("scheduling", "accounting")
def fair_share_needs_accounting(spec: dict[str, Any]) -> Iterator[Finding]:
    if spec["scheduling"]["fairShare"]["enabled"] and not spec["accounting"]["enabled"]:
        yield ("scheduling.fairShare.enabled",
               "fair share needs the accounting database (usage is stored by slurmdbd); enable accounting or set this to false")


@rule("nodesets")
def reservations_match_capacity_type(spec: dict[str, Any]) -> Iterator[Finding]:
    for index, ns in enumerate(spec["nodesets"]):
        reserved = ns["capacityType"] == "reserved"
        if reserved and "capacityReservation" not in ns:
            yield (f"nodesets[{index}].capacityReservation",
                   "capacityType reserved needs the ODCR or Capacity Block to use (ids or tags)")
        if not reserved and "capacityReservation" in ns:
            yield f"nodesets[{index}].capacityReservation", "only used with capacityType: reserved"


@rule("compute")
def ami_version_matches_family(spec: dict[str, Any]) -> Iterator[Finding]:
    compute = spec["compute"]
    dated = compute["amiVersion"][1:].isdigit()
    if compute["amiFamily"] == "al2023" and not dated:
        yield "compute.amiVersion", f"{compute['amiVersion']!r} is not an AL2023 release; use vYYYYMMDD, e.g. v20260724"
    if compute["amiFamily"] == "bottlerocket" and dated:
        yield "compute.amiVersion", f"{compute['amiVersion']!r} is not a Bottlerocket release; use vX.Y.Z, e.g. v1.50.0"


FSX_THROUGHPUT = {"PERSISTENT_1": (50, 100, 200), "PERSISTENT_2": (125, 250, 500, 1000)}


def fsx_valid_size(deployment_type: str, size: int) -> bool:
    """FSx for Lustre capacities: 1200, 2400, then steps of 2400 (SCRATCH_1: of 3600)."""
    step = 3600 if deployment_type == "SCRATCH_1" else 2400
    return size in (1200, 2400) or (size > 0 and size % step == 0)


def _fsx_section_missing(mode: str, deployment: str) -> str:
    """The missing mode section, with every key it needs: one run says all of it, and that static is the default."""
    if mode == "static":
        return ("mode static (the default: mount an existing file system) needs storage.fsx.static with fileSystemId, "
                "dnsName and mountName; or set mode: dynamic to have the CSI driver create one")
    needs = "subnetId and securityGroupIds"
    if deployment in FSX_THROUGHPUT:
        needs = (f"subnetId, securityGroupIds and perUnitStorageThroughput (one of "
                 f"{', '.join(map(str, FSX_THROUGHPUT[deployment]))} for {deployment})")
    return f"mode dynamic needs storage.fsx.dynamic with {needs}"


@rule("storage")
def fsx_settings(spec: dict[str, Any]) -> Iterator[Finding]:
    """The file system's own settings (mode section, size, zone, throughput, backups): storage only."""
    fsx = spec["storage"]["fsx"]
    if not fsx["enabled"]:
        return
    mode, other = fsx["mode"], "static" if fsx["mode"] == "dynamic" else "dynamic"
    if mode not in fsx:
        yield f"storage.fsx.{mode}", _fsx_section_missing(mode, fsx["deploymentType"])
    if other in fsx:
        yield f"storage.fsx.{other}", f"only used with mode: {other}; remove it or change mode"
    for key in ("sizeGiB", "zone"):
        if key not in fsx:
            yield f"storage.fsx.{key}", {"sizeGiB": "the file system size is required (1200, 2400, then steps of 2400 GiB)",
                                         "zone": "the file system's availability zone is required: compute is pinned to it"}[key]
    deployment = fsx["deploymentType"]
    if "sizeGiB" in fsx and not fsx_valid_size(deployment, fsx["sizeGiB"]):
        step = 3600 if deployment == "SCRATCH_1" else 2400
        yield "storage.fsx.sizeGiB", f"{fsx['sizeGiB']} GiB is not a valid {deployment} size; use 1200, 2400 or a multiple of {step}"
    throughput = fsx.get("dynamic", {}).get("perUnitStorageThroughput")
    allowed = FSX_THROUGHPUT.get(deployment)
    if throughput is not None:
        if allowed is None:
            yield "storage.fsx.dynamic.perUnitStorageThroughput", f"{deployment} has no per-unit throughput setting; remove it"
        elif throughput not in allowed:
            yield ("storage.fsx.dynamic.perUnitStorageThroughput",
                   f"{throughput} MB/s/TiB is not offered for {deployment}; use one of {', '.join(map(str, allowed))}")
    elif allowed is not None and "dynamic" in fsx and mode == "dynamic":
        yield "storage.fsx.dynamic.perUnitStorageThroughput", f"required for {deployment}: one of {', '.join(map(str, allowed))}"
    backups = fsx.get("dynamic", {}).get("automaticBackupRetentionDays", 0)
    if backups and deployment.startswith("SCRATCH") and mode == "dynamic":
        yield ("storage.fsx.dynamic.automaticBackupRetentionDays",
               f"{deployment} file systems have no automatic backups; use a PERSISTENT type or remove it")


@rule("storage", "nodesets", "compute", "aws")
def fsx_zones(spec: dict[str, Any]) -> Iterator[Finding]:
    """The compute zones must include the FSx zone. Apart from fsx_settings, which reads only storage, so
    a schema error in aws, compute or nodesets does not hide the file system's own problems."""
    fsx = spec["storage"]["fsx"]
    if not fsx["enabled"]:
        return
    zone = fsx.get("zone")
    region = spec["aws"]["region"]

    def excluded(zones: list[str]) -> bool:
        # a zone outside aws.region is region_coherence's finding; this one would only echo it
        return bool(zone and zones and zone not in zones and _in_region(zone, region)
                    and all(_in_region(z, region) for z in zones))

    # compute.zones once, at that field: a nodeset without zones of its own is pinned to the FSx zone
    # (model.py ClusterSpec.pool_zones), so a per-nodeset line would name a nodesets[].zones never written.
    shared = list(spec["compute"]["zones"])
    if excluded(shared) and any("zones" not in ns for ns in spec["nodesets"]):
        yield ("compute.zones", f"FSx is in {zone}, which these zones ({', '.join(shared)}) exclude; nodesets without "
                                "zones of their own run in the file system's zone anyway: add it, or leave compute.zones empty")
    for index, ns in enumerate(spec["nodesets"]):
        zones = ns.get("zones")
        if zones is not None and excluded(zones):
            yield (f"nodesets[{index}].zones", f"FSx is in {zone}, which this nodeset's zones ({', '.join(zones)}) exclude; "
                   "its pods could not mount it without cross-zone traffic")


# Region-bearing values. Zones are names (us-east-1a): the schema refuses zone IDs (use1-az1), since
# NodePools select on topology.kubernetes.io/zone, which holds the name.
_ZONE_REGION = re.compile(r"^([a-z]{2}(?:-gov)?-[a-z]+-[0-9])[a-z]$")
_FSX_DNS_REGION = re.compile(r"^fs-[0-9a-f]+\.fsx\.([a-z0-9-]+)\.amazonaws\.com$")
_ECR_REGION = re.compile(r"^[0-9]{12}\.dkr\.ecr(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?(?:[:/]|$)")
_RDS_REGION = re.compile(r"^[a-z0-9-]+\.[a-z0-9-]+\.([a-z]{2}(?:-gov)?-[a-z]+-[0-9])\.rds\.amazonaws\.com(?:\.cn)?$")
_EKS_REGION = re.compile(r"^https://[^/]+\.([a-z]{2}(?:-gov)?-[a-z]+-[0-9])\.eks\.amazonaws\.com(?:\.cn)?(?:[:/]|$)")


def zone_region(zone: str) -> str | None:
    """The region of an availability zone name: us-east-1a -> us-east-1."""
    match = _ZONE_REGION.match(zone)
    return match.group(1) if match else None


def _in_region(zone: str, region: str) -> bool:
    return zone_region(zone) in (None, region)


class _Regional(NamedTuple):
    """One region-bearing value in use: where it is, the region it names, what it is, how to fix it."""

    path: str
    region: str
    what: str
    kind: str
    fix: str


def _regional_values(spec: dict[str, Any]) -> Iterator[_Regional]:
    """Every region-bearing value the render uses (a section that is off or unused is not counted)."""
    zones = "list zones of {region}"
    for index, zone in enumerate(spec["compute"]["zones"]):
        yield _Regional(f"compute.zones[{index}]", zone_region(zone) or "", f"zone {zone}", "the zones", zones)
    for n_index, ns in enumerate(spec["nodesets"]):
        for index, zone in enumerate(ns.get("zones", [])):
            yield _Regional(f"nodesets[{n_index}].zones[{index}]", zone_region(zone) or "", f"zone {zone}",
                            "the zones", zones)
    fsx = spec["storage"]["fsx"]
    if fsx["enabled"] and "zone" in fsx:
        yield _Regional("storage.fsx.zone", zone_region(fsx["zone"]) or "", f"zone {fsx['zone']}", "the zones",
                        "use the file system's own zone, a zone of {region}")
    dns = fsx.get("static", {}).get("dnsName", "")
    if fsx["enabled"] and fsx["mode"] == "static" and (match := _FSX_DNS_REGION.match(dns)):
        yield _Regional("storage.fsx.static.dnsName", match.group(1), "the file system", "the FSx file system",
                        "mount a file system in {region} (Lustre is not mounted across regions)")
    secrets = spec["secrets"]
    region = secrets.get("awsSecretsManager", {}).get("region")
    if secrets["mode"] == "external-secrets" and region:
        yield _Regional("secrets.awsSecretsManager.region", region, "Secrets Manager", "Secrets Manager",
                        "replicate the secrets to {region} and remove this key (it defaults to aws.region)")
    images = spec["images"]
    refs = [("images.registry", images["registry"]), ("images.sidecar", images["sidecar"]),
            *((f"images.overrides.{c}", ref) for c, ref in sorted(images["overrides"].items())),
            *((f"nodesets[{i}].image", ns["image"]) for i, ns in enumerate(spec["nodesets"]) if "image" in ns)]
    for path, ref in refs:
        if match := _ECR_REGION.match(ref):
            yield _Regional(path, match.group(1), "the ECR registry", "the ECR images",
                            "pull from a replica in {region} (ECR replication)")
    accounting = spec["accounting"]
    host = accounting["database"].get("host", "")
    if accounting["enabled"] and accounting["database"]["mode"] == "external" and (match := _RDS_REGION.match(host)):
        yield _Regional("accounting.database.host", match.group(1), "the RDS database", "the accounting database",
                        "use a database in {region} (slurmdbd would cross regions for every write)")
    if match := _EKS_REGION.match(spec["gitops"]["destinationServer"]):
        yield _Regional("gitops.destinationServer", match.group(1), "the EKS API endpoint", "the EKS API endpoint",
                        "point at the EKS cluster in {region}")


@rule("aws", "compute", "nodesets", "storage", "secrets", "images", "gitops", "accounting")
def region_coherence(spec: dict[str, Any]) -> Iterator[Finding]:
    """Every zone, the FSx file system, Secrets Manager, ECR, an RDS database and the EKS endpoint are in aws.region.

    A zone outside the region pins NodePools where Karpenter can never launch. When two or more values
    agree on one other region and none is in aws.region, aws.region itself is the likely typo: one
    line on aws.region says so instead of one line per value."""
    region = spec["aws"]["region"]
    values = [v for v in _regional_values(spec) if v.region]
    wrong = [v for v in values if v.region != region]
    others = {v.region for v in values}
    if len(wrong) > 1 and len(others) == 1:
        kinds = list(dict.fromkeys(v.kind for v in wrong))
        listed = ", ".join(kinds[:-1]) + " and " + kinds[-1] if len(kinds) > 1 else kinds[0]
        other = wrong[0].region
        yield "aws.region", f"{region}, but {listed} are all in {other}; set aws.region: {other}, or move them to {region}"
        return
    for v in wrong:
        yield v.path, f"{v.what} is in {v.region}, but aws.region is {region}; {v.fix.format(region=region)}"


# "Small public block": what a site's own egress or a bastion needs. A range reaching more public
# addresses than a /24 (IPv4) or a /48 (IPv6), or ranges together reaching more than four of those,
# open SSH to a large part of the internet and need login.service.allowPublicSsh. Counted on the
# addresses themselves (ipaddress), so 0.0.0.0/1 + 128.0.0.0/1 is the whole internet, and private
# or reserved space (10/8, 100.64/10, 192.168/16, fc00::/7, ...) is not public.
PUBLIC_RANGE_MAX = {4: 2 ** 8, 6: 2 ** 80}
PUBLIC_TOTAL_MAX = {4: 4 * 2 ** 8, 6: 4 * 2 ** 80}
_SMALL_BLOCK = {4: "/24", 6: "/48"}


# Not globally reachable: the IANA IPv4/IPv6 special-purpose address registries ("Globally
# Reachable: False"), as Python's ipaddress lists them, plus shared (100.64/10) and multicast space.
_NON_PUBLIC = (
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24",
    "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4",
    "240.0.0.0/4",
    "::/127", "::ffff:0:0/96", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32", "2002::/16",
    "fc00::/7", "fe80::/10", "ff00::/8",
)


@functools.lru_cache(maxsize=2)
def _non_public(version: int) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """Disjoint blocks of `version` that are not public."""
    return tuple(_collapse(n for n in map(ipaddress.ip_network, _NON_PUBLIC) if n.version == version))


def _collapse(networks: Iterable[ipaddress.IPv4Network | ipaddress.IPv6Network],
              ) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """ipaddress.collapse_addresses, which takes one IP version at a time: IPv4 blocks, then IPv6."""
    nets = list(networks)
    return [*ipaddress.collapse_addresses(n for n in nets if isinstance(n, ipaddress.IPv4Network)),
            *ipaddress.collapse_addresses(n for n in nets if isinstance(n, ipaddress.IPv6Network))]


def public_addresses(networks: Iterable[ipaddress.IPv4Network | ipaddress.IPv6Network]) -> int:
    """How many globally reachable addresses the union of `networks` (one IP version) holds."""
    count = 0
    for net in _collapse(networks):
        hidden = sum(min(b.num_addresses, net.num_addresses) for b in _non_public(net.version)
                     if b.overlaps(net))
        count += net.num_addresses - hidden
    return count


@rule("login")
def login_exposure(spec: dict[str, Any]) -> Iterator[Finding]:
    svc = spec["login"]["service"]
    if not (spec["login"]["enabled"] and svc["enabled"]):
        return
    networks: dict[int, list[Any]] = {4: [], 6: []}
    wide = False
    for index, cidr in enumerate(svc["sourceRanges"]):
        where = f"login.service.sourceRanges[{index}]"
        try:
            net = ipaddress.ip_network(cidr, strict=True)
        except ValueError:
            try:
                fixed = f"write its network address, {ipaddress.ip_network(cidr, strict=False)}"
            except ValueError:
                fixed = "each part of an IPv4 address is 0-255, e.g. 10.0.0.0/16"
            yield where, f"{cidr!r} is not a network address block; {fixed}"
            continue
        networks[net.version].append(net)
        if svc["allowPublicSsh"]:
            continue
        if net.prefixlen == 0:
            wide = True
            yield where, f"{cidr} opens SSH to the whole internet; list your networks, or set login.service.allowPublicSsh: true"
        elif public_addresses([net]) > PUBLIC_RANGE_MAX[net.version]:
            wide = True
            yield where, (f"{cidr} opens SSH to {public_addresses([net]):,} public addresses (more than a "
                          f"{_SMALL_BLOCK[net.version]}); list your networks, or set login.service.allowPublicSsh: true")
    if svc["allowPublicSsh"]:
        return
    for version, nets in networks.items():
        total = public_addresses(nets)
        if not wide and total > PUBLIC_TOTAL_MAX[version]:
            yield ("login.service.sourceRanges",
                   f"together these IPv{version} ranges open SSH to {total:,} public addresses (more than four "
                   f"{_SMALL_BLOCK[version]}s); list fewer networks, or set login.service.allowPublicSsh: true")
    if svc["scheme"] == "internet-facing" and not svc["sourceRanges"]:
        yield ("login.service.sourceRanges",
               "an internet-facing NLB without sourceRanges accepts SSH from anywhere; list your networks, "
               "or set login.service.allowPublicSsh: true")


@rule("accounting")
def database_mode(spec: dict[str, Any]) -> Iterator[Finding]:
    db = spec["accounting"]["database"]
    if not spec["accounting"]["enabled"]:
        return
    if db["mode"] == "external" and "host" not in db:
        yield "accounting.database.host", "mode external needs the database host (e.g. the RDS endpoint)"
    if db["mode"] == "in-cluster" and "host" in db:
        yield "accounting.database.host", "the in-cluster database is always 'mariadb'; remove host or set mode: external"
    if db["mode"] == "in-cluster" and "tls" in db:
        yield "accounting.database.tls", "only used with mode: external (the in-cluster MariaDB is reached inside the namespace)"
    ic = db["inCluster"]
    if db["mode"] == "in-cluster" and memory_mib(ic["memory"]) <= ic["bufferPoolSizeMiB"]:
        yield ("accounting.database.inCluster.memory",
               f"{ic['memory']} does not exceed the {ic['bufferPoolSizeMiB']} MiB InnoDB buffer pool; MariaDB would be OOM-killed")


@rule("secrets", "accounting", "login")
def secrets_mode(spec: dict[str, Any]) -> Iterator[Finding]:
    secrets = spec["secrets"]
    if secrets["mode"] == "precreated" and "awsSecretsManager" in secrets:
        yield "secrets.awsSecretsManager", "only used with mode: external-secrets"
    external_db = spec["accounting"]["enabled"] and spec["accounting"]["database"]["mode"] == "external"
    if secrets["mode"] == "external-secrets" and "awsSecretsManager" not in secrets and external_db:
        yield ("accounting.database.passwordSecret",
               "an external database's password cannot be generated in the cluster; read it from AWS Secrets Manager "
               "(secrets.awsSecretsManager) or use secrets.mode: precreated")
    if secrets["mode"] == "precreated" and "sssdConf" in spec["login"]:
        yield "login.sssdConf", "rendered into a Secret only in secrets mode external-secrets; with precreated, create the Secret yourself"


@rule("autoscaling", "monitoring", "nodesets", "metrics")
def autoscaling(spec: dict[str, Any]) -> Iterator[Finding]:
    address = spec["autoscaling"].get("prometheusAddress") or spec["monitoring"]["kubePrometheusStack"]["enabled"]
    for index, ns in enumerate(spec["nodesets"]):
        if ns["scalingMode"] == "DaemonSet" and "maxNodes" not in ns:
            yield f"nodesets[{index}].maxNodes", "a DaemonSet nodeset has no replicas; set maxNodes to bound its NodePool"
        auto = ns.get("autoscale")
        if auto is None:
            continue
        where = f"nodesets[{index}].autoscale"
        if ns["scalingMode"] != "StatefulSet":
            yield where, "only scalingMode: StatefulSet nodesets can autoscale (a DaemonSet has no replicas to scale)"
        if auto["min"] > auto["max"]:
            yield f"{where}.min", f"min {auto['min']} is above max {auto['max']}"
        if not address:
            yield (where, "KEDA needs the Slurm metrics: set autoscaling.prometheusAddress "
                          "or enable monitoring.kubePrometheusStack")
        if not spec["metrics"]["enabled"]:
            yield where, "autoscaling reads slurmctld's metrics; set metrics.enabled: true"
    explicit = spec["autoscaling"].get("prometheusAddress", "")
    if AMP_HOST.match(explicit) and not AMP_URL.match(explicit):
        yield ("autoscaling.prometheusAddress",
               "an Amazon Managed Prometheus address is https://aps-workspaces.<region>.amazonaws.com/workspaces/<ws-id> "
               "(KEDA appends /api/v1/query)")


def _role_use(spec: dict[str, Any]) -> dict[str, tuple[bool, str | None]]:
    """Per aws.identity.roles key: (required, why it is unused or None when it is used)."""
    fsx = spec["storage"]["fsx"]
    secrets = spec["secrets"]
    fsx_dynamic_helm = fsx["enabled"] and fsx["mode"] == "dynamic" and fsx["csiDriver"] == "helm"
    # External Secrets reads Secrets Manager for the generated secrets' values and for a directory bind password
    # kept there (a pre-created Secret is read in the cluster: slurmgen/plan/identity.py reads_secrets_manager)
    bind_in_aws = "secretsManager" in (spec.get("directory") or {}).get("bindPassword", {})
    from_aws = secrets["mode"] == "external-secrets" and ("awsSecretsManager" in secrets or bind_in_aws)
    amp = bool(AMP_HOST.match(spec["autoscaling"].get("prometheusAddress", "")))
    autoscaled = any("autoscale" in ns for ns in spec["nodesets"])
    return {
        "fsxCsiController": (fsx_dynamic_helm, None if fsx["enabled"] else "no FSx CSI driver without storage.fsx.enabled"),
        "externalSecrets": (from_aws, None if from_aws else
                            "External Secrets calls AWS only with secrets.awsSecretsManager or directory.bindPassword.secretsManager"),
        "keda": (amp and autoscaled, None if amp and autoscaled else
                 "KEDA calls AWS only to query Amazon Managed Prometheus (autoscaling.prometheusAddress) for autoscaled nodesets"),
    }


_WHY_REQUIRED = {
    "fsxCsiController": "with dynamic FSx, the CSI controller creates the file system "
                        "(fsx:CreateFileSystem, fsx:DescribeFileSystems, fsx:TagResource) and grows it (fsx:UpdateFileSystem)",
    "externalSecrets": "External Secrets reads Secrets Manager (secrets.awsSecretsManager, directory.bindPassword.secretsManager: "
                       "secretsmanager:GetSecretValue)",
    "keda": "KEDA queries Amazon Managed Prometheus with SigV4 (aps:QueryMetrics)",
}


@rule("aws", "storage", "secrets", "autoscaling", "nodesets", "directory")
def identity_roles(spec: dict[str, Any]) -> Iterator[Finding]:
    """Every controller that calls AWS has a valid role of the cluster's partition (and account); no role is unused."""
    aws = spec["aws"]
    roles = aws["identity"]["roles"]
    for key, (required, unused) in _role_use(spec).items():
        where = f"aws.identity.roles.{key}"
        arn = roles.get(key)
        if arn is None:
            if required:
                yield where, f"required: {_WHY_REQUIRED[key]}; give its IAM role ARN (docs/iam.md)"
            continue
        if unused:
            yield where, f"not used: {unused}; remove it"
            continue
        for problem in role_problems(arn, aws["region"], aws.get("accountId")):
            yield where, problem


@rule("policy", "partitions", "accounting", "scheduling")
def policy_references(spec: dict[str, Any]) -> Iterator[Finding]:
    """Every name the policy uses exists, the account tree has one root and no cycle."""
    policy = spec.get("policy")
    qos_names = {q["name"] for q in (policy or {}).get("qos", [])}
    for index, part in enumerate(spec["partitions"]):
        if "qos" in part:
            yield (f"partitions[{index}].qos",
                   "a partition QOS= is not supported yet; use allowQos to admit only the QoS you name")
        for name in part.get("allowQos", []):
            if name not in qos_names:
                yield f"partitions[{index}].allowQos", f"no QoS named {name!r} in policy.qos"
    if policy is None:
        return
    if not spec["accounting"]["enabled"]:
        yield "policy", "accounts and QoS live in the accounting database; enable accounting"
    if spec["scheduling"]["preemptLowerTiers"] and any(q.get("preempt") for q in policy.get("qos", [])):
        yield ("scheduling.preemptLowerTiers",
               "QoS preemption (policy.qos[].preempt) and partition-tier preemption exclude each other; pick one")
    repeated: set[tuple[str, int]] = set()  # (section, index) of every second and later use of a name
    for section in ("qos", "accounts", "users"):
        seen: set[str] = set()
        for index, item in enumerate(policy.get(section, [])):
            if item["name"] in seen:
                yield f"policy.{section}[{index}].name", f"duplicate name {item['name']!r}"
                repeated.add((section, index))
            seen.add(item["name"])
    # A repeated item's checks that hang on its own name (preempting itself, its place in the tree)
    # would only echo the duplicate; they run once it is renamed.
    for index, qos in enumerate(policy.get("qos", [])):
        for name in qos.get("preempt", []):
            if name == qos["name"] and ("qos", index) in repeated:
                continue
            if name == qos["name"]:
                yield f"policy.qos[{index}].preempt", "a QoS cannot preempt itself"
            elif name not in qos_names:
                yield f"policy.qos[{index}].preempt", f"no QoS named {name!r} in policy.qos"
    if "defaultQos" in policy and policy["defaultQos"] not in qos_names:
        yield "policy.defaultQos", f"no QoS named {policy['defaultQos']!r} in policy.qos"
    accounts: dict[str, dict[str, Any]] = {}
    for acct in policy.get("accounts", []):
        accounts.setdefault(acct["name"], acct)  # the first definition of a repeated name
    for index, acct in enumerate(policy.get("accounts", [])):
        where = f"policy.accounts[{index}]"
        if acct["name"] == "root":
            yield f"{where}.name", "root is the implicit top of the tree; use it as a parent"
            continue  # its parent and cycle would only echo this
        if acct["parent"] != "root" and acct["parent"] not in accounts:
            yield f"{where}.parent", f"no account named {acct['parent']!r}; the tree's single root is 'root'"
        for name in acct.get("qos", []):
            if name not in qos_names:
                yield f"{where}.qos", f"no QoS named {name!r} in policy.qos"
        if "defaultQos" in acct:
            if acct["defaultQos"] not in qos_names:
                yield f"{where}.defaultQos", f"no QoS named {acct['defaultQos']!r} in policy.qos"
            elif acct.get("qos") and acct["defaultQos"] not in acct["qos"]:
                yield f"{where}.defaultQos", f"{acct['defaultQos']!r} must also be in this account's qos list"
        if ("accounts", index) in repeated:
            continue
        chain, node = [acct["name"]], acct["parent"]
        while node != "root" and node in accounts and node not in chain:
            chain.append(node)
            node = accounts[node]["parent"]
        if node in chain:
            yield f"{where}.parent", f"account parents form a cycle: {' -> '.join([*chain, node])}"
    for index, user in enumerate(policy.get("users", [])):
        for key, names in (("defaultAccount", [user["defaultAccount"]]), ("accounts", user.get("accounts", []))):
            for name in names:
                if name not in accounts:
                    yield f"policy.users[{index}].{key}", f"no account named {name!r} in policy.accounts"


# sssd.conf keys the generator writes itself (charts/directory.py); extraSssdConf must not
# set them, and never a password (the bind password is only a Secrets Manager reference). Each names
# the directory field it comes from, or why it is fixed.
_FIXED = "fixed by slurmgen (sssd reads the directory through LDAP); remove it"
DIRECTORY_OWNED_KEYS: dict[str, str] = {
    **dict.fromkeys(("id_provider", "chpass_provider", "ldap_default_authtok_type", "use_fully_qualified_names"), _FIXED),
    "auth_provider": "set by slurmgen from directory.tls.mode (none: no password logins); set that instead",
    "access_provider": "set by slurmgen from directory.access; set that instead",
    "ldap_schema": "set by slurmgen from directory.kind and directory.ldapSchema; set those instead",
    "ldap_uri": "set by slurmgen from directory.uris; set that instead",
    "ldap_search_base": "set by slurmgen from directory.searchBase; set that instead",
    "ldap_user_search_base": "set by slurmgen from directory.userSearchBase; set that instead",
    "ldap_group_search_base": "set by slurmgen from directory.groupSearchBase; set that instead",
    "ldap_default_bind_dn": "set by slurmgen from directory.bindDn; set that instead",
    "ldap_id_use_start_tls": "set by slurmgen from directory.tls.mode; set that instead",
    "ldap_tls_reqcert": "set by slurmgen from directory.tls.verify; set that instead",
    "ldap_tls_cacert": "set by slurmgen from directory.tls.ca; set that instead",
    "ldap_id_mapping": "set by slurmgen from directory.kind (ad maps IDs from SIDs); set that instead",
    "ldap_user_ssh_public_key": "set by slurmgen from directory.ssh.publicKeyAttribute; set that instead",
    "ldap_access_filter": "set by slurmgen from directory.access.filter; set that instead",
    "simple_allow_groups": "set by slurmgen from directory.access.allowedGroups; set that instead",
    "override_homedir": "set by slurmgen from directory.homes.path; set that instead",
    "override_shell": "set by slurmgen from directory.shell.override; set that instead",
    # What the directory section promises, which sssd would otherwise let a later key undo
    # (sssd-ldap(5), sssd-simple(5)): the access filter is checked only while ldap_access_order
    # holds `filter`; simple_allow_users admits users beside the allowed groups; the TLS opt-out
    # sends the bind password in clear.
    "ldap_access_order": "slurmgen relies on sssd's default (filter) so directory.access.filter holds; remove it",
    "simple_allow_users": "who may log in is directory.access (allowedGroups or filter); set that instead",
    "ldap_auth_disable_tls_never_use_in_production": "TLS is directory.tls.mode; remove it",
    "case_sensitive": ("names are always case-insensitive and lowercased (Slurm's accounting lowercases user names); "
                       "remove it"),
}

SSSD_SECRET_NAME = "slurm-sssd-conf"  # charts/secrets.py SSSD_SECRET (the spec layer imports no chart)

# Names sssd.conf filters out of the directory (charts/directory.py, [nss] filter_users): a policy user
# of that name would be the local account, never the directory's.
FILTERED_USERS = ("root", "slurm", "nobody")


@rule("directory")
def directory_settings(spec: dict[str, Any]) -> Iterator[Finding]:
    """Encrypted transport unless explicitly opted out, a CA whenever the certificate is verified,
    who may log in, and no extra sssd setting that overrides ours or carries a password."""
    directory = spec.get("directory")
    if directory is None:
        return
    if directory["kind"] == "ad" and "ldapSchema" in directory:
        yield ("directory.ldapSchema", "only for kind ldap: Active Directory is read with sssd's ad schema; "
               "remove ldapSchema")
    tls = directory["tls"]
    scheme = {"ldaps": "ldaps://", "starttls": "ldap://", "none": "ldap://"}[tls["mode"]]
    for index, uri in enumerate(directory["uris"]):
        if not uri.startswith(scheme):
            fix = ("use ldaps://, or ldap:// with tls.mode: starttls" if tls["mode"] == "ldaps"
                   else f"tls.mode {tls['mode']} speaks {scheme}; use that scheme or change tls.mode")
            yield f"directory.uris[{index}]", f"{uri} does not match tls.mode {tls['mode']}; {fix}"
    if tls["mode"] != "none" and tls["verify"] and "ca" not in tls:
        yield ("directory.tls.ca", "verifying the directory's certificate needs its CA: name a ConfigMap or Secret "
               "holding the PEM bundle (tls.ca.configMap or tls.ca.secret), or set tls.verify: false")
    if tls["mode"] == "none" and ("ca" in tls or not tls["verify"]):
        yield "directory.tls", "tls.mode none uses no TLS: remove tls.ca and tls.verify"
    access = directory["access"]
    if "filter" in access and access["allowedGroups"]:
        yield "directory.access", "set either filter or allowedGroups, not both (sssd uses one access provider)"
    if "filter" not in access and not access["allowedGroups"]:
        yield ("directory.access", "say who may log in: an LDAP filter (access.filter) or directory groups "
               "(access.allowedGroups); otherwise every account of the directory could")
    # Every other value we write into sssd.conf must read back as itself (grammar/sssd.py).
    values = [(f"directory.{k}", directory.get(k)) for k in ("searchBase", "userSearchBase", "groupSearchBase", "bindDn")]
    values += [("directory.access.filter", access.get("filter"))]
    values += [(f"directory.access.allowedGroups[{i}]", g) for i, g in enumerate(access["allowedGroups"])]
    for where, value in values:
        if isinstance(value, str):
            try:
                sssd.read_value(value)
            except Unreadable as err:
                yield where, str(err)
    for key in sorted(directory["extraSssdConf"]):
        if "authtok" in key or "password" in key:
            yield f"directory.extraSssdConf.{key}", "no passwords here: the bind password is only a reference (directory.bindPassword)"
        elif key in DIRECTORY_OWNED_KEYS:
            yield f"directory.extraSssdConf.{key}", DIRECTORY_OWNED_KEYS[key]
        else:
            try:
                if not holds_secret(directory["extraSssdConf"][key]):
                    sssd.read_value(directory["extraSssdConf"][key])
            except Unreadable as err:
                yield f"directory.extraSssdConf.{key}", str(err)


@rule("directory", "storage", "secrets", "login", "aws")
def directory_placement(spec: dict[str, Any]) -> Iterator[Finding]:
    """Homes on the shared file system, a bind password reference exactly when External Secrets renders
    sssd.conf (precreated: the site's sssd.conf Secret holds it), root login off unless kept."""
    directory = spec.get("directory")
    if directory is None:
        return
    fsx = spec["storage"]["fsx"]
    homes = directory["homes"].get("path")
    if not fsx["enabled"]:
        yield ("directory.homes", "homes must be on the shared file system so slurmd pods see them; "
               "enable storage.fsx")
    elif (homes is not None and form_problem(homes) is None and form_problem(fsx["mountPath"]) is None
          and (homes == fsx["mountPath"] or not within(homes, fsx["mountPath"]))):
        yield ("directory.homes.path", f"{homes} is not under the FSx mount {fsx['mountPath']}; "
               "slurmd pods would not see the homes")
    bind = directory.get("bindPassword")
    if spec["secrets"]["mode"] == "external-secrets" and bind is None:
        yield ("directory.bindPassword", "External Secrets renders sssd.conf with the bind password: name where it lives, "
               "secretsManager: {name, property} or a pre-created Secret of the Slurm namespace, secret: {name, key}")
    if spec["secrets"]["mode"] == "precreated" and bind is not None:
        yield ("directory.bindPassword", "unused with secrets.mode: precreated: sssd.conf, bind password included, is the "
               "Secret login.sssdConfSecret you create (main.py --explain sssd.conf prints it); remove bindPassword")
    if bind is not None and bind.get("secret", {}).get("name") == SSSD_SECRET_NAME:
        yield ("directory.bindPassword.secret.name", f"{SSSD_SECRET_NAME} is the Secret External Secrets writes sssd.conf "
               "into; keep the bind password in a Secret of another name")
    if "sssdConf" in spec["login"]:
        yield "login.sssdConf", "the directory section writes sssd.conf; remove login.sssdConf"
    store_region = spec["secrets"].get("awsSecretsManager", {}).get("region") or spec["aws"]["region"]
    in_aws = (bind or {}).get("secretsManager", {}).get("name", "")
    arn = re.match(r"arn:aws[a-z-]*:secretsmanager:([a-z0-9-]+):", in_aws)
    if arn and arn.group(1) != store_region and spec["secrets"]["mode"] == "external-secrets":
        yield ("directory.bindPassword.secretsManager.name",
               f"the secret is in {arn.group(1)}, but the SecretStore reads {store_region} "
               "(secrets.awsSecretsManager.region, else aws.region); copy the secret there or set that region")
    if not directory["ssh"]["rootLogin"] and spec["login"]["sshAuthorizedKeys"]:
        yield ("login.sshAuthorizedKeys", "root login is off with a directory; remove the keys, "
               "or keep root for break-glass with directory.ssh.rootLogin: true")


#: Every field naming a ConfigMap/Secret key: kubelet mounts some of them as item paths.
KEY_FIELDS: tuple[tuple[str, ...], ...] = (("login", "sssdConfSecret"), ("directory", "bindPassword", "secret"), ("directory", "tls", "ca", "configMap"),
              ("directory", "tls", "ca", "secret"), ("accounting", "database", "passwordSecret"),
              ("accounting", "database", "tls", "caConfigMap"), ("secrets", "slurmKey"), ("secrets", "jwtKey"))


def _at(spec: dict[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = spec
    for step in path:
        node = node.get(step) if isinstance(node, dict) else None
    return node


@rule("storage", "directory", "login", "accounting", "secrets")
def paths(spec: dict[str, Any]) -> Iterator[Finding]:
    """The one path rule (_paths): every path in normal form before any other check reads it; no
    mount over what the image or the operator provides; no key kubelet reserves or refuses."""
    fields = [(("storage", "fsx", "mountPath"), True), (("directory", "homes", "path"), False),
              (("directory", "shell", "override"), False), (("directory", "shell", "fallback"), False)]
    for field, mounted in fields:
        value = _at(spec, field)
        if not isinstance(value, str):
            continue
        problem = form_problem(value) or (mount_problem(value) if mounted else None)
        if problem:
            yield ".".join(field), f"{value} {problem}"
    for key_field in KEY_FIELDS:
        key = _at(spec, (*key_field, "key"))
        if isinstance(key, str) and (problem := item_name_problem(key)):
            yield ".".join((*key_field, "key")), problem


@rule("directory", "policy")
def directory_user_names(spec: dict[str, Any]) -> Iterator[Finding]:
    """policy.users must be names the directory hands out (the schema already requires POSIX login
    names, lowercase as sssd reports directory names with case_sensitive = false)."""
    if spec.get("directory") is None or spec.get("policy") is None:
        return
    for index, user in enumerate(spec["policy"]["users"]):
        if user["name"] in FILTERED_USERS:
            yield (f"policy.users[{index}].name",
                   f"{user['name']!r} is a local account sssd never looks up in the directory; use the researcher's directory name")


# Accounts of the Slurm images (SlinkyProject/containers schedmd/slurm/26.05/ubuntu26.04/Dockerfile: FROM
# ubuntu:26.04, which removes the image's `ubuntu` user, adds SlurmUser `slurm` (uid 401), and installs
# openssh-server and sssd on the login and slurmd images): Debian's base-passwd `passwd.master` (every
# Debian and Ubuntu image's /etc/passwd; `_apt` since 3.6.1, `gnats` until 3.6.0), `ubuntu` (uid 1000 of
# ubuntu >= 23.04 images), and the packages' own (`sshd`, `sssd`, `messagebus`, `systemd-*`, and Debian's
# `_name` convention for new system users). A policy user of that name is whatever runs as that uid in a
# pod: a service account would hold a Slurm account, fair share and, with adminLevel or an admin group,
# Slurm's admin rights. `root` is allowed: without a directory it is the one login (sshAuthorizedKeys),
# Slurm already treats uid 0 as its super user, and the accounts Job never touches root's own association
# (with a directory, sssd filters root and directory_user_names refuses it).
SYSTEM_ACCOUNTS = frozenset({
    "daemon", "bin", "sys", "sync", "games", "man", "lp", "mail", "news", "uucp", "proxy", "www-data", "backup",
    "list", "irc", "gnats", "nobody", "ubuntu", "slurm", "sshd", "sssd", "messagebus", "polkitd", "syslog",
    "uuidd", "tss", "tcpdump", "dnsmasq", "lxd", "pollinate", "landscape", "usbmux", "fwupd-refresh", "dhcpcd",
})
SYSTEM_ACCOUNT_PREFIXES = ("systemd-", "_")


def system_account(name: str) -> bool:
    """True for an account of the images (SYSTEM_ACCOUNTS), which no person logs in as."""
    return name in SYSTEM_ACCOUNTS or name.startswith(SYSTEM_ACCOUNT_PREFIXES)


@rule("policy", "directory", "bridge")
def policy_users_are_people(spec: dict[str, Any]) -> Iterator[Finding]:
    """No policy user named like a system account of the images (SYSTEM_ACCOUNTS)."""
    users = (spec.get("policy") or {}).get("users", [])
    filtered = FILTERED_USERS if spec.get("directory") is not None else ()
    bridged = ("slurm",) if spec.get("bridge") is not None else ()  # bridge_rules says why slurm is not theirs
    for index, user in enumerate(users):
        name = user["name"]
        # those get directory_user_names' line, or bridge_rules'
        if system_account(name) and name not in filtered and name not in bridged:
            yield (f"policy.users[{index}].name", f"{name!r} is a system account of the Slurm images, which whatever "
                   "runs as that user in a pod would act as (a Slurm user, an administrator with adminLevel); "
                   "use the person's own login name")


# sssd settings that let a directory entry be root (uid or gid 0). sssd reads them as integers
# (confdb.c get_entry_as_uint32: leading blanks and zeros accepted). min_id (default 1, SSSD_MIN_ID)
# bounds the ids sssd accepts from the directory (sdap_async_users.c OUT_OF_ID_RANGE), as ldap_min_id
# and ldap_idmap_range_min do for assigned and mapped ids; override_gid = 0 is root's group, which sssd
# reads as "no override" (0 is its unset value), so it never means what it says.
ROOT_ID_KEYS = ("min_id", "ldap_min_id", "ldap_idmap_range_min", "override_gid")
_SSSD_INTEGER = re.compile(r"\s*[+-]?[0-9]+\s*")


@rule("directory")
def directory_ids_not_root(spec: dict[str, Any]) -> Iterator[Finding]:
    """No extra sssd setting that admits or sets id 0 (ROOT_ID_KEYS)."""
    directory = spec.get("directory")
    if directory is None:
        return
    for key in ROOT_ID_KEYS:
        value = directory["extraSssdConf"].get(key)
        if isinstance(value, str) and _SSSD_INTEGER.fullmatch(value) and int(value) <= 0:
            what = ("is root's group (sssd reads 0 as no override)" if key == "override_gid"
                    else "admits root's id 0 from the directory (sssd's default min_id is 1)")
            yield (f"directory.extraSssdConf.{key}", f"{value.strip()} {what}: no directory entry may be root on the "
                   "login and slurmd pods; remove it")


@rule("directory", "policy")
def directory_admin_groups(spec: dict[str, Any]) -> Iterator[Finding]:
    """Admin groups act through the accounts Job on the users of policy.users: without them nothing would."""
    directory = spec.get("directory")
    if directory is None:
        return
    groups = directory["adminGroups"]
    if not (groups["administrators"] or groups["operators"]):
        return
    if not (spec.get("policy") or {}).get("users"):
        yield ("directory.adminGroups", "admin levels are set by the accounts Job for the users of policy.users; "
               "declare policy.users (with accounting), or set AdminLevel by hand (docs/storage-login-accounting.md, Slurm admins)")
    for group in sorted(set(groups["administrators"]) & set(groups["operators"])):
        yield "directory.adminGroups.operators", f"{group!r} is also an administrators group; name it once"


# Namespaces of the charts this tree installs whatever the spec says (apps/helm.py: cert-manager,
# External Secrets, KEDA, mariadb-operator); tests/test_bridge.py proves the list covers every
# namespace an example renders into.
ADDON_NAMESPACES = ("cert-manager", "external-secrets", "keda", "mariadb-operator")


def _namespace_owner(spec: dict[str, Any], name: str) -> str | None:
    """Who already owns namespace `name` (Kubernetes, Argo CD, Slurm, an add-on), or None."""
    if name in SYSTEM_NAMESPACES or name.startswith("kube-"):
        return "a Kubernetes system namespace" if name != "argocd" else "Argo CD's namespace"
    if name == spec["gitops"]["argocdNamespace"]:
        return "Argo CD's namespace"
    if name == spec["slurm"]["namespace"]:
        return "the Slurm namespace (slurm-bridge itself runs there)"
    if name == spec["slurm"]["operatorNamespace"]:
        return "slurm-operator's namespace"
    if name == spec["monitoring"]["kubePrometheusStack"]["namespace"]:
        return "the monitoring namespace"
    if name in ADDON_NAMESPACES:
        return f"the namespace of the {name} chart this tree installs"
    return None


def _bridge_partition(spec: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((p for p in spec["partitions"] if p["name"] == name), None)


def _partition_nodesets(spec: dict[str, Any], part: dict[str, Any]) -> list[str]:
    """A partition's nodesets as Slurm sees them: [ALL] resolved as the loader does (include_in_all)."""
    if part["nodesets"] == ["ALL"]:
        return [ns["name"] for ns in spec["nodesets"] if include_in_all(ns)]
    return list(part["nodesets"])


def _bridge_policy(spec: dict[str, Any], bridge: dict[str, Any]) -> Iterator[Finding]:
    """bridge.account and bridge.qos name what policy declares, and the QoS is the one the jobs get."""
    policy = spec.get("policy")
    if policy is None:
        for key in ("account", "qos"):
            if key in bridge:
                yield f"bridge.{key}", f"names a {'QoS' if key == 'qos' else 'Slurm account'} of policy; declare policy (and accounting) first"
        return
    accounts = {a["name"]: a for a in policy.get("accounts", [])}
    qos_names = [q["name"] for q in policy.get("qos", [])]
    account = bridge.get("account")
    if account is None:
        yield "bridge.account", ("required with a policy: AccountingStorageEnforce=associations refuses a job whose user "
                                 "has no association; name the account bridged jobs are charged to")
    elif account not in accounts:
        yield "bridge.account", f"no account named {account!r} in policy.accounts; defined: {', '.join(accounts) or 'none'}"
    for index, user in enumerate(policy.get("users", [])):
        if user["name"] == BRIDGE_USER:
            yield (f"policy.users[{index}].name", f"{BRIDGE_USER!r} is the user slurm-bridge submits as; "
                   "its account comes from bridge.account, drop it here")
    qos = bridge.get("qos")
    if qos is None:
        return
    if qos not in qos_names:
        yield "bridge.qos", f"no QoS named {qos!r} in policy.qos; defined: {', '.join(qos_names) or 'none'}"
    elif account in accounts:
        given = accounts[account].get("defaultQos") or policy.get("defaultQos")
        if given != qos:
            yield "bridge.qos", (f"bridged jobs get account {account!r}'s default QoS ({given or 'none'}), not {qos!r}; "
                                 f"set defaultQos: {qos} on policy.accounts[{account}] (and list it in its qos)")


@rule("bridge", "partitions", "nodesets", "policy", "accounting", "gitops", "slurm", "monitoring")
def bridge_rules(spec: dict[str, Any]) -> Iterator[Finding]:
    """slurm-bridge's namespaces are the user's own, its partition and nodesets exist and agree, and
    Slurm can charge its jobs: accounting on, account and QoS declared (docs/bridge.md)."""
    bridge = spec.get("bridge")
    if bridge is None:
        return
    if not spec["accounting"]["enabled"]:
        yield "bridge", ("bridged jobs are charged to Slurm accounts and fair share in the accounting database; "
                         "enable accounting")
    for index, name in enumerate(bridge["namespaces"]):
        owner = _namespace_owner(spec, name)
        if owner:
            yield f"bridge.namespaces[{index}]", f"{name!r} is {owner}; bridge a namespace of your own workloads (e.g. inference)"
    part = _bridge_partition(spec, bridge["partition"])
    if part is None:
        names = ", ".join(p["name"] for p in spec["partitions"])
        yield "bridge.partition", f"no partition named {bridge['partition']!r}; defined partitions: {names}"
    else:
        held = _partition_nodesets(spec, part)
        if "nodesets" in bridge and sorted(set(bridge["nodesets"])) != sorted(set(held)):
            yield "bridge.nodesets", (f"partition {part['name']!r} holds nodesets {', '.join(held) or 'none'}: bridged jobs go to "
                                      "all of them, so list exactly those (or leave bridge.nodesets out)")
    yield from _bridge_policy(spec, bridge)


RULES: tuple[SpecRule, ...] = (
    unique_names,
    partition_references,
    one_default_partition,
    features_are_not_nodeset_names,
    every_nodeset_in_a_partition,
    no_reserved_slurm_names,
    no_names_of_others,
    derived_names_fit,
    image_references,
    gitops_path,
    slurm_values,
    flat_file_values,
    sshd_extra_config,
    sssd_conf_file,
    extra_conf_overrides,
    fair_share_needs_accounting,
    reservations_match_capacity_type,
    ami_version_matches_family,
    fsx_settings,
    fsx_zones,
    region_coherence,
    login_exposure,
    database_mode,
    secrets_mode,
    autoscaling,
    identity_roles,
    policy_references,
    topology_rules,
    directory_settings,
    directory_placement,
    directory_user_names,
    directory_admin_groups,
    paths,
    pinned_images,
    no_labels_of_others,
    policy_users_are_people,
    directory_ids_not_root,
    bridge_rules,
)


EVERYTHING = "*"  # in `failed`: the schema failed at the top level, so no rule can trust any section


def run(spec: dict[str, Any], rules: tuple[SpecRule, ...] = RULES, failed: frozenset[str] = frozenset()) -> list[Finding]:
    """All findings of the rules whose sections are schema-valid, in rule order.

    `rules` is RULES plus the catalog rules (the loader passes both), each declared with `@rule(sections)`
    (slurmgen/rule.py); one that declares none reads everything, so it runs only on a schema-valid spec.
    `failed` names the top-level sections with schema errors."""
    findings: list[Finding] = []
    for each in rules:
        if failed and (EVERYTHING in failed or not each.reads or failed.intersection(each.reads)):
            continue
        findings.extend(each(spec))
    return findings
