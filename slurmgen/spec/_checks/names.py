"""Names: unique, referenced, not reserved by Slurm, Kubernetes or Argo CD, short enough for what is derived from them; label keys others own."""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterator

from ...kube import naming
from ...rule import Finding, rule


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
    return ns["capacityType"] != "spot" and ns.get("autoscale") is None


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
