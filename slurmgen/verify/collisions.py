"""Names that must be unique across clusters: cluster-scoped objects, and the Argo CD Applications.

Each cluster prefixes its cluster-scoped names (`naming.nodepool`: `<cluster>-<nodeset>`), but a
prefix is not a namespace: cluster `foo` with nodeset `slurm-spot` and cluster `foo-slurm` with
nodeset `spot` both render NodePool `foo-slurm-spot`. When both land on one Kubernetes API server,
two Argo CD Applications would fight over one object (and a prune of one would delete the other's
nodes). The same holds for Applications and AppProjects on a shared Argo CD.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping

from ..spec import ClusterSpec, Problem
from ..spec.arn import role_account
from ..spec.loader import field_line

Obj = dict[str, Any]
_ARGO_SIDE = ("apps", "bootstrap")  # folders whose objects live on the Argo CD instance
_NOT_APPLIED = ("argocd",)  # the argocd-cm merge patch, the same for every cluster, applied by hand


@dataclass(frozen=True)
class Tree:
    """One cluster's rendered objects, with where they came from (a spec file, or a folder of dist/);
    `names` is keys(files) when it is known already (a render cache hit: its objects stay undecoded)."""

    source: str
    files: Mapping[str, Obj]
    names: Mapping[tuple[str, ...], str] | None = None


def _unit_destinations(files: Mapping[str, Obj]) -> dict[str, str]:
    """unit folder -> API server its child Application syncs to; `__argo__` -> the root's destination."""
    out: dict[str, str] = {}
    for rel, obj in files.items():
        if obj.get("kind") != "Application" or not isinstance(obj.get("spec"), dict):
            continue
        spec = obj["spec"]
        server = str((spec.get("destination") or {}).get("server", ""))
        path = str((spec.get("source") or {}).get("path", ""))
        if rel.startswith("bootstrap/"):
            out["__argo__"] = server
        elif path:
            out[path.rstrip("/").rsplit("/", 1)[-1]] = server
    return out


def keys(files: Mapping[str, Obj]) -> dict[tuple[str, ...], str]:
    """(where, group, kind, namespace, name) -> label, for every object whose name is shared per destination."""
    servers = _unit_destinations(files)
    argo = servers.get("__argo__", "the Argo CD cluster")
    found: dict[tuple[str, ...], str] = {}
    for rel, obj in sorted(files.items()):
        unit = rel.split("/", 1)[0]
        meta = obj.get("metadata") or {}
        api, kind, name, namespace = str(obj.get("apiVersion", "")), str(obj.get("kind", "")), meta.get("name"), meta.get("namespace")
        if unit in _NOT_APPLIED or not isinstance(name, str):
            continue
        group = api.split("/")[0] if "/" in api else ""
        if unit in _ARGO_SIDE:
            where = f"Argo CD at {argo}"
            found[(where, group, kind, str(namespace or ""), name)] = f"{kind} {namespace}/{name} on {where}"
        elif namespace is None:
            where = servers.get(unit, "an unknown destination")
            found[(where, group, kind, "", name)] = f"cluster-scoped {kind} {name} on {where}"
    return found


def problems(trees: Iterable[Tree]) -> list[str]:
    """One line per name two trees share, naming both: `A: ... also rendered by B; ...`."""
    owner: dict[tuple[str, ...], str] = {}
    lines: list[str] = []
    for tree in sorted(trees, key=lambda t: t.source):
        for key, label in (tree.names if tree.names is not None else keys(tree.files)).items():
            first = owner.setdefault(key, tree.source)
            if first != tree.source:
                lines.append(f"{tree.source}: name: {label} is also rendered by {first}; names must be unique "
                             "per destination: rename this cluster or the nodeset")
    return lines


# --- What must be unique across the fleet, read from the specs -------------------------------------
#
# The names above are compared once rendered. What follows is compared on the specs themselves (the
# run's, and, for a render of some of clusters/, every other spec there: cli.fleet_files), before
# anything renders: a clash of these is never in one object both clusters render.

IN_CLUSTER = "https://kubernetes.default.svc"  # Argo CD's name for the cluster it runs in


@dataclass(frozen=True)
class Key:
    """One value a spec holds that no other spec may hold: `value` is what is compared, `shown` how a
    line names it, `field` the spec field that sets it. `account` is the AWS account the value lives
    in, when it lives in one: two equal values collide unless both accounts are known and differ."""

    value: tuple[object, ...]
    shown: str
    field: str
    account: str | None = None
    in_account: bool = False  # the value lives in an AWS account (known or not)


@dataclass(frozen=True)
class Unique:
    """One row of the table: what must be unique, in which scope, why, and the fix."""

    what: str
    scope: str
    shared: str  # how a line says the other spec holds it too: "is also the destination of"
    why: str
    fix: str
    keys: Callable[[ClusterSpec], Iterable[Key]]


def _name_keys(spec: ClusterSpec) -> Iterator[Key]:
    yield Key(("name", spec.name), f"cluster name {spec.name!r}", "name")


def destination_keys(spec: ClusterSpec) -> Iterator[Key]:
    """The Kubernetes cluster the spec deploys to. `aws.eksClusterName` names it whatever Argo CD calls
    it (its Karpenter discovery tag, subnets and node role are that cluster's), so `kubernetes.default.svc`
    of two Argo CD instances on two EKS clusters are two destinations; a remote `destinationServer` names
    it too, so two specs giving one URL share it whatever they call it."""
    aws = spec.aws
    yield Key(("eks", aws.region, aws.eks_cluster_name), f"EKS cluster {aws.eks_cluster_name} in {aws.region}",
              "aws.eksClusterName", aws.account_id, True)
    server = _server(spec.gitops.destination_server)
    if server != IN_CLUSTER:
        yield Key(("server", server), f"destination server {spec.gitops.destination_server}",
                  "gitops.destinationServer")


def _server(url: str) -> str:
    """A destination URL as one API server: scheme and host case and a trailing `/` do not matter."""
    scheme, _, rest = url.partition("://")
    host, slash, path = rest.partition("/")
    return f"{scheme.lower()}://{host.lower()}{slash}{path}".rstrip("/")


# A name resolved by each cluster's own DNS (a Service): the same name is a different database per cluster.
_CLUSTER_LOCAL = re.compile(r"(^[^.]+$)|(\.svc(\.cluster\.local)?\.?$)|(\.cluster\.local\.?$)", re.IGNORECASE)


def _slurmdbd_keys(spec: ClusterSpec) -> Iterator[Key]:
    """The Slurm cluster name within the accounting database. Only an external database can be
    shared: the in-cluster MariaDB is one per cluster (and two clusters on one destination are refused
    above). A host only the cluster's DNS resolves (`mariadb.shared-db.svc.cluster.local`) is a
    database of that cluster's own."""
    db = spec.accounting.database
    if not spec.accounting.enabled or db.managed:
        return
    host = db.host.lower().rstrip(".")
    where: tuple[object, ...] = ("slurmdbd", host, db.port, db.name, spec.slurm_cluster_name)
    local = bool(_CLUSTER_LOCAL.search(host))
    if local:
        where += (spec.aws.region, spec.aws.eks_cluster_name)
    yield Key(where, f"Slurm cluster {spec.slurm_cluster_name!r} in accounting database {db.name} at {host}:{db.port}",
              "slurm.clusterName", spec.aws.account_id if local else None, local)


def _secrets_manager_keys(spec: ClusterSpec) -> Iterator[Key]:
    """The Secrets Manager values of slurm.key and jwt.key (`<prefix>/<name>`, property `<key>`,
    charts/secrets.py SecretsChart._external), in the account External Secrets reads them from."""
    secrets = spec.secrets
    if not secrets.generated or secrets.aws_prefix is None:
        return
    region = secrets.aws_region or spec.aws.region
    role = spec.aws.identity.external_secrets
    account = spec.aws.account_id or (role_account(role) if role else None)
    for label, ref in (("slurm.key", secrets.slurm_key), ("jwt.key", secrets.jwt_key)):
        name = f"{secrets.aws_prefix}/{ref.name}"
        yield Key(("secretsmanager", region, name, ref.key),
                  f"{label} from Secrets Manager secret {name} (property {ref.key}) in {region}",
                  "secrets.awsSecretsManager.prefix", account, True)


#: What must be unique across the specs of a repository, one row each; `rendered names` (above,
#: `problems`) is the last row, compared on the rendered objects. AWS names need no row: the charts
#: name no AWS resource. IAM roles are given as ARNs (one role may serve many clusters), the NLB is
#: named by the AWS Load Balancer Controller (no `aws-load-balancer-name` annotation), FSx file systems
#: by their CSI volume, and EC2NodeClass/NodePool names are rendered names.
TABLE: tuple[Unique, ...] = (
    Unique("cluster name", "repository", "is also the name of",
           "each cluster renders into dist/<name>/ and names its Applications and AppProject after it",
           "rename one of them", _name_keys),
    Unique("destination", "Kubernetes cluster", "is also the destination of",
           "both would install cert-manager and the slurm-operator there (fixed Helm releases, cluster-wide CRDs), "
           "so two Applications would fight over them and a prune by one would delete the other's",
           "deploy one spec per Kubernetes cluster", destination_keys),
    Unique("Slurm cluster name", "accounting database", "is also used by",
           "both accounts Jobs own what carries [slurmgen <clusterName>], so each would delete what only the other "
           "declares, and both slurmctld would write one cluster's records",
           "give each cluster its own slurm.clusterName", _slurmdbd_keys),
    Unique("Slurm keys", "Secrets Manager secret", "is also read by",
           "the clusters would share slurm.key and jwt.key, so a node of either could sign as the other's controller",
           "give each cluster its own secrets.awsSecretsManager.prefix", _secrets_manager_keys),
)


@dataclass(frozen=True)
class _Held:
    spec: ClusterSpec
    key: Key
    ours: bool  # in this run (reported on); else another spec of the fleet (only named)


def _same_account(a: Key, b: Key) -> bool:
    return a.account is None or b.account is None or a.account == b.account


def spec_problems(specs: Iterable[ClusterSpec], others: Iterable[ClusterSpec] = ()) -> list[Problem]:
    """One problem per spec of this run and row of TABLE it shares a value with another spec (of this
    run, or of `others`: the fleet's other specs, compared but never reported on), naming both files."""
    lines: list[Problem] = []
    for row in TABLE:
        holders: dict[tuple[object, ...], list[_Held]] = {}
        for spec, ours in [*((s, True) for s in specs), *((s, False) for s in others)]:
            for key in row.keys(spec):
                holders.setdefault(key.value, []).append(_Held(spec, key, ours))
        told: set[frozenset[str]] = set()
        for group in holders.values():
            group.sort(key=lambda h: h.spec.source)
            for held in group:
                partner = _partner(held, group)
                pair = frozenset((held.spec.source, partner.spec.source)) if partner else frozenset()
                if partner is None or pair in told:
                    continue
                told.add(pair)
                lines.append(_problem(row, held, partner))
    return sorted(lines, key=lambda p: (p.where, p.path, p.what))


def _partner(held: _Held, group: list[_Held]) -> _Held | None:
    """The spec `held` is reported against: the first earlier one it collides with, else the first
    spec outside the run; None when it collides with nothing, or only with later specs of the run
    (those report it)."""
    if not held.ours:
        return None
    others = [h for h in group if h.spec.source != held.spec.source and _same_account(h.key, held.key)]
    earlier = [h for h in others if h.spec.source < held.spec.source]
    outside = [h for h in others if not h.ours]
    return earlier[0] if earlier else outside[0] if outside else None


def _problem(row: Unique, held: _Held, partner: _Held) -> Problem:
    hint = ""
    if held.key.in_account and None in (held.key.account, partner.key.account):
        hint = " (or, when they are different AWS accounts, set aws.accountId in both)"
    message = f"{held.key.shown} {row.shared} {partner.spec.source}: {row.why}; {row.fix}{hint}"
    return Problem(held.spec.source, held.key.field, message, field_line(held.spec.source, held.key.field))
