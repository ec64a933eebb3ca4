"""Cross-field rules the JSON Schema cannot express (references between sections, uniqueness).

Each rule returns (field path, message) pairs on the *defaulted* spec dict, so every problem in a
file is reported at once.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Iterator

from ..quantity import memory_mib

Finding = tuple[str, str]
Rule = Callable[[dict[str, Any]], Iterator[Finding]]


def _duplicates(items: list[dict[str, Any]], section: str) -> Iterator[Finding]:
    counts = Counter(item["name"] for item in items)
    for index, item in enumerate(items):
        if counts[item["name"]] > 1 and [i["name"] for i in items].index(item["name"]) != index:
            yield f"{section}[{index}].name", f"duplicate {section[:-1]} name {item['name']!r}; names must be unique"


def unique_names(spec: dict[str, Any]) -> Iterator[Finding]:
    yield from _duplicates(spec["nodesets"], "nodesets")
    yield from _duplicates(spec["partitions"], "partitions")


def partition_references(spec: dict[str, Any]) -> Iterator[Finding]:
    known = [ns["name"] for ns in spec["nodesets"]]
    for p_index, part in enumerate(spec["partitions"]):
        names = part["nodesets"]
        if "ALL" in names and len(names) > 1:
            yield f"partitions[{p_index}].nodesets", "ALL already means every nodeset; list ALL alone"
            continue
        for n_index, name in enumerate(names):
            if name != "ALL" and name not in known:
                yield (f"partitions[{p_index}].nodesets[{n_index}]",
                       f"no nodeset named {name!r}; defined nodesets: {', '.join(known)}")


def one_default_partition(spec: dict[str, Any]) -> Iterator[Finding]:
    defaults = [i for i, p in enumerate(spec["partitions"]) if p["default"]]
    for index in defaults[1:]:
        first = spec["partitions"][defaults[0]]["name"]
        yield f"partitions[{index}].default", f"only one partition can be the default; {first!r} already is"


def every_nodeset_in_a_partition(spec: dict[str, Any]) -> Iterator[Finding]:
    used = {n for p in spec["partitions"] for n in p["nodesets"]}
    if "ALL" in used:
        return
    for index, ns in enumerate(spec["nodesets"]):
        if ns["name"] not in used:
            yield f"nodesets[{index}].name", f"nodeset {ns['name']!r} is in no partition, so no job can use it; add it to one"


def no_reserved_slurm_names(spec: dict[str, Any]) -> Iterator[Finding]:
    for index, ns in enumerate(spec["nodesets"]):
        if ns["name"].upper() in {"ALL", "DEFAULT"}:
            yield f"nodesets[{index}].name", f"{ns['name']!r} is reserved by Slurm; pick another name"
    for index, part in enumerate(spec["partitions"]):
        if part["name"].upper() == "DEFAULT":
            yield f"partitions[{index}].name", "'default' is reserved by Slurm; set default: true on a partition instead"


def extra_conf_overrides(spec: dict[str, Any]) -> Iterator[Finding]:
    """Keys the generator owns must not be smuggled in through the free-form maps."""
    owned_partition = {"Nodes", "Default", "MaxTime", "PriorityTier", "PartitionName"}
    for index, part in enumerate(spec["partitions"]):
        for key in sorted(set(part["extraConfig"]) & owned_partition):
            yield f"partitions[{index}].extraConfig.{key}", f"{key} is set by the generator; use the partition's own field"
    owned_node = {"Gres", "NodeName", "Features", "Feature"}
    for index, ns in enumerate(spec["nodesets"]):
        for key in sorted(set(ns["extraSlurmdConf"]) & owned_node):
            yield f"nodesets[{index}].extraSlurmdConf.{key}", f"{key} is set by the generator; use features / gpusPerPod"


def fair_share_needs_accounting(spec: dict[str, Any]) -> Iterator[Finding]:
    if spec["scheduling"]["fairShare"]["enabled"] and not spec["accounting"]["enabled"]:
        yield ("scheduling.fairShare.enabled",
               "fair share needs the accounting database (usage is stored by slurmdbd); enable accounting or set this to false")


def reservations_match_capacity_type(spec: dict[str, Any]) -> Iterator[Finding]:
    for index, ns in enumerate(spec["nodesets"]):
        reserved = ns["capacityType"] == "reserved"
        if reserved and "capacityReservation" not in ns:
            yield (f"nodesets[{index}].capacityReservation",
                   "capacityType reserved needs the ODCR or Capacity Block to use (ids or tags)")
        if not reserved and "capacityReservation" in ns:
            yield f"nodesets[{index}].capacityReservation", "only used with capacityType: reserved"


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


def fsx_settings(spec: dict[str, Any]) -> Iterator[Finding]:
    fsx = spec["storage"]["fsx"]
    if not fsx["enabled"]:
        return
    mode, other = fsx["mode"], "static" if fsx["mode"] == "dynamic" else "dynamic"
    if mode not in fsx:
        yield f"storage.fsx.{mode}", f"mode {mode} needs a storage.fsx.{mode} section"
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
    if throughput is not None and allowed is None:
        yield "storage.fsx.dynamic.perUnitStorageThroughput", f"{deployment} has no per-unit throughput setting; remove it"
    elif throughput is not None and throughput not in allowed:
        yield ("storage.fsx.dynamic.perUnitStorageThroughput",
               f"{throughput} MB/s/TiB is not offered for {deployment}; use one of {', '.join(map(str, allowed))}")
    elif throughput is None and allowed is not None and "dynamic" in fsx and mode == "dynamic":
        yield "storage.fsx.dynamic.perUnitStorageThroughput", f"required for {deployment}: one of {', '.join(map(str, allowed))}"
    zone = fsx.get("zone")
    for index, ns in enumerate(spec["nodesets"]):
        zones = ns.get("zones", spec["compute"]["zones"])
        if zone and zones and zone not in zones:
            yield (f"nodesets[{index}].zones", f"FSx is in {zone}, which this nodeset's zones ({', '.join(zones)}) exclude; "
                   "its pods could not mount it without cross-zone traffic")


def login_exposure(spec: dict[str, Any]) -> Iterator[Finding]:
    svc = spec["login"]["service"]
    if not (spec["login"]["enabled"] and svc["enabled"]) or svc["allowPublicSsh"]:
        return
    for index, cidr in enumerate(svc["sourceRanges"]):
        if cidr.endswith("/0"):
            yield (f"login.service.sourceRanges[{index}]",
                   f"{cidr} opens SSH to the whole internet; list your networks, or set login.service.allowPublicSsh: true")
    if svc["scheme"] == "internet-facing" and not svc["sourceRanges"]:
        yield ("login.service.sourceRanges",
               "an internet-facing NLB without sourceRanges accepts SSH from anywhere; list your networks, "
               "or set login.service.allowPublicSsh: true")


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


def policy_references(spec: dict[str, Any]) -> Iterator[Finding]:
    """Every name the policy uses exists, the account tree has one root and no cycle."""
    policy = spec.get("policy")
    qos_names = {q["name"] for q in (policy or {}).get("qos", [])}
    for index, part in enumerate(spec["partitions"]):
        if "qos" in part:
            yield (f"partitions[{index}].qos",
                   "slurmctld refuses to start with a partition QOS= that slurmdbd does not know yet, and the "
                   "policy Job creates QoS only after slurmctld runs; use allowQos, or add QOS via extraConfig "
                   "once the QoS exists")
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
    for section in ("qos", "accounts", "users"):
        seen: set[str] = set()
        for index, item in enumerate(policy.get(section, [])):
            if item["name"] in seen:
                yield f"policy.{section}[{index}].name", f"duplicate name {item['name']!r}"
            seen.add(item["name"])
    for index, qos in enumerate(policy.get("qos", [])):
        for name in qos.get("preempt", []):
            if name == qos["name"]:
                yield f"policy.qos[{index}].preempt", "a QoS cannot preempt itself"
            elif name not in qos_names:
                yield f"policy.qos[{index}].preempt", f"no QoS named {name!r} in policy.qos"
    if "defaultQos" in policy and policy["defaultQos"] not in qos_names:
        yield "policy.defaultQos", f"no QoS named {policy['defaultQos']!r} in policy.qos"
    accounts = {a["name"]: a for a in policy.get("accounts", [])}
    for index, acct in enumerate(policy.get("accounts", [])):
        where = f"policy.accounts[{index}]"
        if acct["name"] == "root":
            yield f"{where}.name", "root is the implicit top of the tree; use it as a parent"
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


RULES: tuple[Rule, ...] = (
    unique_names,
    partition_references,
    one_default_partition,
    every_nodeset_in_a_partition,
    no_reserved_slurm_names,
    extra_conf_overrides,
    fair_share_needs_accounting,
    reservations_match_capacity_type,
    ami_version_matches_family,
    fsx_settings,
    login_exposure,
    database_mode,
    secrets_mode,
    autoscaling,
    policy_references,
)


def run(spec: dict[str, Any], extra_rules: tuple[Rule, ...] = ()) -> list[Finding]:
    """All findings of every rule, in rule order."""
    return [finding for rule in (*RULES, *extra_rules) for finding in rule(spec)]
