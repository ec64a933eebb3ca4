"""Who may reach what: the login Service's source ranges, the database and secrets modes, autoscaling's metrics, IAM roles."""

from __future__ import annotations

import functools
import ipaddress
from typing import Any, Iterable, Iterator

from ...kube.quantity import memory_mib
from ...rule import Finding, rule
from ..arn import AMP_HOST, AMP_URL, role_problems

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
