"""Read `clusters/*.yaml` into ClusterSpec models: parse, check the schema, default, cross-check, build."""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Iterable, Iterator

from ..catalog.catalog import InstanceType, load_catalog
from ..catalog.mixed import type_names
from ..catalog.registries import region_has_registry
from ..catalog.rules import catalog_rule
from . import secrets_scan
from . import _checks, _model_rules, _schema, _text
from . import _topology as _topology_rules
from ._checks.names import include_in_all
from .errors import dotted
from ._yaml import UnreadableFile, YamlSyntaxError, field_lines, load_yaml, read_text
from .errors import Problem, SpecError, name_keyed
from .model import (
    BRIDGE_USER, Accounting, AwsIdentity, AwsSettings, Bridge, CapacityReservation, ClusterSpec, Compute, Database, Directory, FairShare, Fsx, GitOpsSettings, Images,
    Autoscale, BlockTopology, KubePrometheusStack, Login, Policy, PolicyAccount, PolicyUser, Qos, LoginService, MariaDbSettings, Metrics, NodeSetSpec, Partition, Persistence, Placement,
    Scheduling, SecretKeyRef, Secrets, ServiceMonitor, Storage, Toleration, TopologySpec, Versions, pairs,
)

MARIADB_NAME = "mariadb"  # the in-cluster MariaDB CR and its Service

Catalog = Mapping[str, InstanceType]


def rules_for(catalog: Catalog | None = None) -> tuple[_checks.SpecRule, ...]:
    """Every cross-field rule a spec must pass: the spec's own, the Region's add-on registry, then
    instance fit against `catalog`.

    Passed explicitly rather than registered at import time, so `parse_text` gives the same answer
    whichever modules were imported before. None means the packaged catalog (no site additions).
    """
    return (*_checks.RULES, region_has_registry, catalog_rule(catalog if catalog is not None else load_catalog()))


def load_spec(path: Path, *, catalog: Catalog | None = None) -> ClusterSpec:
    """Load one spec file, its instance types checked against `catalog`; raise SpecError listing every problem."""
    try:
        text = read_text(path)
    except UnreadableFile as err:
        raise SpecError([Problem(str(path), "", str(err))]) from None
    return _load(path, text, rules_for(catalog))


def load_specs(paths: Iterable[Path], *, catalog: Catalog | None = None,
               validated: Mapping[str, Mapping[str, Any]] | None = None,
               data_out: dict[str, dict[str, Any]] | None = None) -> list[ClusterSpec]:
    """Load several spec files, collecting the problems of all of them before raising.

    `validated` maps a spec's path to the merged, defaulted data an earlier run validated from
    exactly the same inputs (the render cache: its key covers the spec, what it extends, the
    catalog and the generator itself); such a spec is only built, not checked again. `data_out`
    receives that data for every spec checked here, for the cache to keep.
    """
    specs: list[ClusterSpec] = []
    problems: list[Problem] = []
    rules = rules_for(catalog)
    known = {} if validated is None else validated
    for path in sorted(paths):
        try:
            if str(path) in known:
                specs.append(_build(str(path), dict(known[str(path)])))  # fresh from JSON: not shared
                continue
            full, spec = _validate(path, read_text(path), rules)
            if data_out is not None:
                data_out[str(path)] = copy.deepcopy(full)
            specs.append(spec)
        except UnreadableFile as err:
            problems.append(Problem(str(path), "", str(err)))
        except SpecError as err:
            problems.extend(err.problems)
        except OSError as err:
            problems.append(Problem(str(path), "", f"cannot read file: {err.strerror or err}"))
    seen: dict[str, str] = {}
    for spec in specs:
        if spec.name in seen:
            problems.append(Problem(spec.source, "name", f"cluster name {spec.name!r} is already used by {seen[spec.name]}"))
        seen.setdefault(spec.name, spec.source)
    if problems:
        raise SpecError(problems)
    return sorted(specs, key=lambda s: s.name)


def field_line(source: str, field: str) -> int | None:
    """The line where the spec file `source` writes `field` (`slurm.clusterName`), for an error line
    found after loading (collisions.spec_problems); None when it does not write it (an `extends`
    file does) or cannot be read again."""
    try:
        return field_lines(read_text(Path(source))).line(field, nearest=False)
    except (UnreadableFile, OSError):
        return None


def parse_text(source: str, text: str, *, catalog: Catalog | None = None) -> ClusterSpec:
    """Load a spec from text (tests and tools); `source` names it in messages."""
    return _load(Path(source), text, rules_for(catalog))


def _load(path: Path, text: str, rules: tuple[_checks.SpecRule, ...]) -> ClusterSpec:
    return _validate(path, text, rules)[1]


def _validate(path: Path, text: str, rules: tuple[_checks.SpecRule, ...]) -> tuple[dict[str, Any], ClusterSpec]:
    """The spec's merged, defaulted data and its model once every check passed; SpecError with every
    problem otherwise. The rules on derived facts (_model_rules) judge the model, once the others passed."""
    source = str(path)
    extends = False

    def fail(findings: Iterable[tuple[str, str]], data: Any = None) -> SpecError:
        # Every finding leaves here: index paths become the item names the user wrote, with the line
        # that writes the field. A field this file does not write gets its parent's line, unless the
        # spec extends another file (the field may come from there).
        # No line shows a value or key it has not proven harmless (secrets_scan.shown_value): a schema
        # error on `password=…`, an unknown key shaped like a token, say how long it is instead.
        lines = field_lines(text) if data is not None else None
        unshown = secrets_scan.unshown(data) if data is not None else set()
        return SpecError(Problem(source, secrets_scan.redact(name_keyed(p, data), unshown), secrets_scan.redact(m, unshown),
                                 lines.line(p, nearest=not extends) if lines else None)
                         for p, m in findings)

    try:
        data = load_yaml(text, field_types=_schema.field_types)
    except YamlSyntaxError as err:
        raise fail([("", str(err))]) from None
    if data is None:
        raise fail([("", "the file is empty; start from clusters/example.yaml")])
    if not isinstance(data, dict):
        # Not the value itself: a file that is no spec at all (a credentials file) is not quoted into CI logs.
        got = f"text ({len(data)} characters, not shown)" if isinstance(data, str) else _schema._describe(data)
        raise fail([("", f"expected a mapping of spec keys at the top level, got {got}")])
    if "extends" in data:
        extends = True
        data = _extend(path, data, (path.resolve(),))
    version = data.get("schemaVersion")
    if isinstance(version, int) and not isinstance(version, bool) and version > _schema.schema_version():
        raise fail([("schemaVersion", f"{version} is newer than this generator reads "
                                      f"({_schema.schema_version()}); upgrade slurmgen")], data)
    unsafe = list(_text.unsafe_values(data, text_only=_schema.text_only, string_range=_schema.string_range))
    if unsafe:
        # Before the schema: a pattern would also fail on these, for the same reason, twice.
        raise fail(unsafe, data)
    secret = list(_secret_findings(data))
    # A number where text is wanted is quoted as the file spells it (1.30, not 1.3): read only then.
    written = functools.cache(lambda: field_lines(text))
    findings = list(_schema.check(data, spelling=lambda path: written().spelling(path)))
    failed = _schema.failed_sections(data) if findings or secret else frozenset()
    full = _schema.with_defaults(data)
    # Cross-field rules still run on the sections that passed the schema, so one run reports every
    # independent problem; a rule reading a section with a schema error is skipped (its `@rule` sections).
    findings += _checks.run(full, rules, failed)
    # A field the schema or a rule already refuses (a bind password given as a value, a password in the
    # directory's sssd settings) gets that more specific line only, not the scanner's echo of it.
    refused = {p for p, _ in findings}
    findings = [f for f in secret if f[0] not in refused] + findings
    if findings:
        raise fail(findings, full)
    spec = _build(source, full)
    derived = _model_rules.run(spec)
    if derived:
        raise fail(derived, full)
    return full, spec


# Where the secret belongs instead, by the field it was found in (first matching prefix wins).
_SECRET_FIXES = (
    (("login", "sssdConf"), "ldap_default_authtok (the bind password) must come from a Secret: describe the directory "
                            "in directory: (its bindPassword is a Secrets Manager reference), or use secrets.mode: "
                            "precreated with login.sssdConfSecret naming a Secret you create"),
    (("login", "extraSshdConfig"), "keep keys and passwords in a Secret, never in sshd_config text"),
    (("login", "sshAuthorizedKeys"), "list public keys only (ssh-ed25519 AAAA…); a private key never leaves its "
                                     "owner"),
    (("controller", "extraConf"), "the database password comes from accounting.database.passwordSecret (a Secret reference), never a literal"),
    (("directory",), "the directory's bind password is only a reference (directory.bindPassword)"),
    (("nodesets",), "keep the value in a Secret, never in Slurm parameters"),
    (("partitions",), "keep the value in a Secret, never in Slurm parameters"),
)


def _secret_findings(data: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """Secret material in any spec value, with the field and where the value belongs instead."""
    by_field: dict[tuple[Any, ...], list[str]] = {}
    for path, finding in secrets_scan.scan_spec(data):
        by_field.setdefault(path, []).append(finding)
    for path, findings in by_field.items():  # one line per field, however many kinds were found in it
        fix = next((f for prefix, f in _SECRET_FIXES if tuple(path[:len(prefix)]) == prefix),
                   "put the value in a Kubernetes Secret and reference it (secrets.mode and the *Secret fields)")
        yield dotted(path), f"{' and '.join(findings)}, which would land in git; {fix}"


def merge(base: Any, override: Any) -> Any:
    """Deep merge for `extends`: mappings merge key by key, anything else (lists too) is replaced."""
    if isinstance(base, dict) and isinstance(override, dict):
        out = dict(base)
        for key, value in override.items():
            out[key] = merge(base.get(key), value)
        return out
    return override


MAX_EXTENDS_DEPTH = 4  # a spec, its shared defaults, and a few layers above them
MAX_EXTENDS_FILES = 16  # distinct files one spec pulls in, all levels together


def _extend(path: Path, data: dict[str, Any], chain: tuple[Path, ...],
            memo: dict[Path, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Resolve `extends:` (a file or a list of files beside this one; later ones win, the spec last).

    A name is a plain file name in the spec's own folder (no `/`, no `..`, no link leading out):
    a spec can never pull in a file from elsewhere on the machine that renders it.
    Bounded: a name may appear once per list, each file is read and resolved once per spec
    (`memo`: a file named by several files costs one read), and at most MAX_EXTENDS_FILES
    distinct files are read, so a list repeated at every level is linear, not exponential.
    """
    memo = {} if memo is None else memo
    bases = data["extends"]
    bases = [bases] if isinstance(bases, str) else bases
    child = {k: v for k, v in data.items() if k != "extends"}
    if not isinstance(bases, list) or not all(isinstance(b, str) for b in bases):
        raise SpecError([Problem(str(path), "extends", "expected a file name or a list of file names")])
    if len(chain) > MAX_EXTENDS_DEPTH:
        raise SpecError([Problem(str(path), "extends", f"more than {MAX_EXTENDS_DEPTH} levels of extends; "
                                                       "merge the shared files")])
    twice = next((i for i, name in enumerate(bases) if name in bases[:i]), None)
    if twice is not None:
        raise SpecError([Problem(str(path), f"extends[{twice}]", f"{bases[twice]} is named twice in this list; "
                                                                 "name each file once")])
    folder = chain[0].parent
    merged: dict[str, Any] = {}
    for index, name in enumerate(bases):
        where = "extends" if isinstance(data["extends"], str) else f"extends[{index}]"
        if not _BASE_NAME.fullmatch(name):
            raise SpecError([Problem(str(path), where, f"{name!r} must be a file name in the same folder, "
                                                       "such as _shared.yaml (no '/', no '..')")])
        base_path = (path.parent / name)
        resolved = base_path.resolve()
        if resolved.parent != folder:
            raise SpecError([Problem(str(path), where, f"{name} resolves outside {folder} (a link?); "
                                                       "copy the file into the folder")])
        if resolved in chain:
            cycle = " -> ".join(p.name for p in (*chain, base_path))
            raise SpecError([Problem(str(path), where, f"{name} extends itself through {cycle}")])
        if resolved not in memo:
            if len(memo) >= MAX_EXTENDS_FILES:
                raise SpecError([Problem(str(path), where, f"more than {MAX_EXTENDS_FILES} files pulled in through "
                                                           "extends; merge the shared files")])
            memo[resolved] = _extended_file(path, where, base_path, (*chain, resolved), memo)
        merged = merge(merged, memo[resolved])
    return merge(merged, child)


def _extended_file(path: Path, where: str, base_path: Path, chain: tuple[Path, ...],
                   memo: dict[Path, dict[str, Any]]) -> dict[str, Any]:
    """One file named in extends, read with the spec reader's bounds and its own extends resolved."""
    try:
        base = load_yaml(read_text(base_path), field_types=_schema.field_types)
    except OSError as err:
        raise SpecError([Problem(str(path), where, f"cannot read {base_path}: {err.strerror or err}")]) from None
    except (YamlSyntaxError, UnreadableFile) as err:
        raise SpecError([Problem(str(base_path), "", str(err))]) from None
    if not isinstance(base, dict):
        raise SpecError([Problem(str(base_path), "", "a file named in extends must be a mapping of spec keys")])
    if "extends" in base:
        base = _extend(base_path, base, chain, memo)
    return base


_BASE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\.ya?ml\Z")


def _ref(raw: dict[str, str]) -> SecretKeyRef:
    return SecretKeyRef(name=raw["name"], key=raw["key"])


def _tolerations(raw: list[dict[str, Any]]) -> tuple[Toleration, ...]:
    return tuple(Toleration(key=t.get("key"), operator=t.get("operator"), value=t.get("value"),
                            effect=t.get("effect"), toleration_seconds=t.get("tolerationSeconds")) for t in raw)


def _partitions(raw: list[dict[str, Any]], nodesets: list[str],
                topo: dict[str, Any] | None = None) -> Iterator[Partition]:
    """Partitions with [ALL] expanded to `nodesets`, the names that are in ALL (see include_in_all)."""
    for part in raw:
        every = part["nodesets"] == ["ALL"]
        kind = _topology_rules.kind(part, topo, nodesets)
        yield Partition(
            name=part["name"],
            nodesets=tuple(nodesets) if every else tuple(part["nodesets"]),
            default=part["default"],
            max_time=part["maxTime"],
            priority_tier=part["priorityTier"],
            extra_config=tuple((k, str(v)) for k, v in part["extraConfig"].items()),
            all_nodesets=every,
            allow_qos=tuple(part["allowQos"]),
            topology=None if kind is None else _topology_rules.name(part["name"], kind),
        )


def _topology(d: dict[str, Any], partitions: tuple[Partition, ...]) -> TopologySpec | None:
    topo = _topology_rules.settings(d)
    if topo is None:
        return None
    raw_parts = {p["name"]: p for p in d["partitions"]}
    blocks = tuple(
        BlockTopology(name=p.topology, partition=p.name, nodesets=p.nodesets,
                      sizes=tuple(_topology_rules.block_sizes(raw_parts[p.name], topo)))
        for p in partitions if p.topology is not None and p.topology.startswith("block-"))
    return TopologySpec(nodesets=tuple(topo["nodesets"]), tree=any(p.topology == "tree" for p in partitions),
                        blocks=blocks, domain_label=topo["blockDomainLabel"], labeler_image=topo["labelerImage"])


def _autoscale(raw: dict[str, Any] | None) -> Autoscale | None:
    if raw is None:
        return None
    return Autoscale(min=raw["min"], max=raw["max"], idle_to_zero=raw["idleToZero"],
                     cooldown_seconds=raw["cooldownSeconds"], polling_seconds=raw["pollingSeconds"])


def _tres(raw: dict[str, Any] | None) -> tuple[tuple[str, str], ...]:
    """A TRES limit as pairs; none when the spec sets no limit (absent: no schema default, no limit)."""
    return () if raw is None else tuple((k, str(v)) for k, v in raw.items())


def _bridge(d: dict[str, Any], partitions: tuple[Partition, ...]) -> Bridge | None:
    """The bridge section, its nodesets resolved to the bridged partition's (checked equal when written)."""
    raw = d.get("bridge")
    if raw is None:
        return None
    part = next(p for p in partitions if p.name == raw["partition"])
    return Bridge(namespaces=tuple(raw["namespaces"]), partition=part.name, nodesets=part.nodesets,
                  account=raw.get("account"), qos=raw.get("qos"), labeler_image=raw["labelerImage"])


def _bridge_user(d: dict[str, Any]) -> list[PolicyUser]:
    """The user slurm-bridge submits as, with bridge.account as its default account: with a policy,
    AccountingStorageEnforce=associations refuses a job whose user has no association."""
    account = d["bridge"].get("account") if "bridge" in d else None
    if not account:
        return []
    # A user of the generator's own, not of the spec: its unset fields take the schema's defaults for a
    # policy user, as a user the spec lists with only a name and a default account.
    return [PolicyUser(name=BRIDGE_USER, default_account=account, accounts=(), admin_level=None,
                       fairshare=_schema.default(("policy", "users", 0, "fairshare")))]


def _policy(raw: dict[str, Any] | None, d: dict[str, Any]) -> Policy | None:
    if raw is None:
        return None
    return Policy(
        qos=tuple(Qos(name=q["name"], priority=q["priority"], description=q.get("description"),
                      preempt=tuple(q["preempt"]), preempt_mode=q.get("preemptMode"),
                      grace_time_seconds=q.get("graceTimeSeconds"), usage_factor=q.get("usageFactor"),
                      max_tres_per_user=_tres(q.get("maxTRESPerUser")), max_tres_per_job=_tres(q.get("maxTRESPerJob")),
                      grp_tres=_tres(q.get("grpTRES")), max_wall_duration_per_job=q.get("maxWallDurationPerJob"),
                      flags=tuple(q["flags"])) for q in raw["qos"]),
        default_qos=raw.get("defaultQos"),
        accounts=tuple(PolicyAccount(name=a["name"], parent=a["parent"], fairshare=a["fairshare"],
                                     description=a.get("description"), organization=a.get("organization"),
                                     qos=tuple(a["qos"]), default_qos=a.get("defaultQos"),
                                     grp_tres=_tres(a.get("grpTRES")), max_tres_per_job=_tres(a.get("maxTRESPerJob")))
                       for a in raw["accounts"]),
        users=tuple(PolicyUser(name=u["name"], default_account=u["defaultAccount"], accounts=tuple(u["accounts"]),
                               admin_level=u.get("adminLevel"), fairshare=u["fairshare"]) for u in raw["users"])
        + tuple(_bridge_user(d)),
    )


def _prometheus_address(d: dict[str, Any]) -> str | None:
    explicit = d["autoscaling"].get("prometheusAddress")
    kps = d["monitoring"]["kubePrometheusStack"]
    if explicit or not kps["enabled"]:
        return explicit
    return f"http://kube-prometheus-stack-prometheus.{kps['namespace']}.svc:9090"


def _login(raw: dict[str, Any]) -> Login:
    svc = raw["service"]
    return Login(
        enabled=raw["enabled"], replicas=raw["replicas"], ssh_authorized_keys=tuple(raw["sshAuthorizedKeys"]),
        sssd_conf_secret=_ref(raw["sssdConfSecret"]), extra_sshd_config=raw["extraSshdConfig"],
        sssd_conf=raw.get("sssdConf"),
        service=LoginService(enabled=svc["enabled"], scheme=svc["scheme"], source_ranges=tuple(svc["sourceRanges"]),
                             allow_public_ssh=svc["allowPublicSsh"], subnets=tuple(svc["subnets"])),
    )


def _directory(d: dict[str, Any]) -> Directory | None:
    raw = d.get("directory")
    if raw is None:
        return None
    ca = raw["tls"].get("ca")  # absent: the image's system CAs
    ca_kind = next(iter(ca)) if ca else None
    bind = raw.get("bindPassword")  # absent with secrets mode precreated: the whole sssd.conf is pre-created
    sm = bind.get("secretsManager") if bind else None
    # Derived from another field, so not a schema default (the schema's description names it).
    homes = raw["homes"].get("path") or d["storage"]["fsx"]["mountPath"].rstrip("/") + "/home"
    return Directory(
        kind=raw["kind"], uris=tuple(raw["uris"]), search_base=raw["searchBase"],
        user_search_base=raw.get("userSearchBase"), group_search_base=raw.get("groupSearchBase"),
        bind_dn=raw["bindDn"], bind_password_name=sm["name"] if sm else None, bind_password_property=sm.get("property") if sm else None,
        bind_password_secret=_ref(bind["secret"]) if bind and "secret" in bind else None,
        tls_mode=raw["tls"]["mode"], tls_verify=raw["tls"]["verify"],
        ca_kind=ca_kind, ca_ref=_ref(ca[ca_kind]) if ca_kind else None,
        access_filter=raw["access"].get("filter"), allowed_groups=tuple(raw["access"]["allowedGroups"]),
        homes_path=homes, create_homes=raw["homes"]["createOnLogin"], public_key_attribute=raw["ssh"]["publicKeyAttribute"], root_login=raw["ssh"]["rootLogin"],
        extra_sssd_conf=tuple((k, v) for k, v in raw["extraSssdConf"].items()),
        admin_groups=tuple(raw["adminGroups"]["administrators"]), operator_groups=tuple(raw["adminGroups"]["operators"]),
        ldap_schema=_ldap_schema(raw),
        override_shell=raw["shell"].get("override"), shell_fallback=raw["shell"]["fallback"],
    )


# sssd's ldap_schema for kind ldap when the spec names none. Kept here, not as the schema's `default`:
# the default depends on directory.kind (Active Directory is read with sssd's own `ad` schema), and
# _checks/directory.py refuses ldapSchema with kind ad, which a schema default would always trip.
DEFAULT_LDAP_SCHEMA = "rfc2307bis"


def _ldap_schema(raw: dict[str, Any]) -> str:
    return "ad" if raw["kind"] == "ad" else str(raw.get("ldapSchema", DEFAULT_LDAP_SCHEMA))


def _database(db: dict[str, Any]) -> Database:
    ic = db["inCluster"]
    managed = db["mode"] == "in-cluster"
    return Database(
        mode=db["mode"], host=MARIADB_NAME if managed else db["host"], port=db["port"], name=db["name"],
        user=db["user"], password_secret=_ref(db["passwordSecret"]),
        in_cluster=MariaDbSettings(storage_class_name=ic["storageClassName"], size=ic["size"], memory=ic["memory"],
                                   cpu=ic["cpu"], buffer_pool_size_mib=ic["bufferPoolSizeMiB"],
                                   max_allowed_packet_mib=ic["maxAllowedPacketMiB"],
                                   max_user_connections=ic["maxUserConnections"]),
        tls_ca=_ref(db["tls"]["caConfigMap"]) if "tls" in db else None,
        password_revision=db["passwordRevision"],
    )


def _secrets(d: dict[str, Any]) -> Secrets:
    raw = d["secrets"]
    sm = raw.get("awsSecretsManager")
    return Secrets(mode=raw["mode"], slurm_key=_ref(raw["slurmKey"]), jwt_key=_ref(raw["jwtKey"]),
                   aws_region=(sm.get("region") or d["aws"]["region"]) if sm else None,
                   aws_prefix=sm["prefix"] if sm else None)


# Automatic backups of a PERSISTENT file system unless the spec says otherwise: one `rm -rf` or a
# lost storage server would otherwise take everything. SCRATCH types have none (FSx refuses them).
# Kept here, not as the schema's `default`: it depends on storage.fsx.deploymentType.
DEFAULT_BACKUP_DAYS = 7


def _backup_days(deployment_type: str, dyn: dict[str, Any]) -> int:
    default = DEFAULT_BACKUP_DAYS if deployment_type.startswith("PERSISTENT") else 0
    return int(dyn.get("automaticBackupRetentionDays", default))


def _identity(raw: dict[str, Any]) -> AwsIdentity:
    roles = raw["roles"]
    return AwsIdentity(mode=raw["mode"], fsx_csi_controller=roles.get("fsxCsiController"),
                       external_secrets=roles.get("externalSecrets"), keda=roles.get("keda"))


def _storage(raw: dict[str, Any]) -> Storage:
    fsx = raw["fsx"]
    dynamic: dict[str, str] = {}
    if "dynamic" in fsx:
        dyn = fsx["dynamic"]
        dynamic = {"subnetId": dyn["subnetId"], "securityGroupIds": ",".join(dyn["securityGroupIds"]),
                   "deploymentType": fsx["deploymentType"], "fileSystemTypeVersion": dyn["fileSystemTypeVersion"],
                   "dataCompressionType": dyn["dataCompressionType"],
                   "automaticBackupRetentionDays": str(_backup_days(fsx["deploymentType"], dyn))}
        if _backup_days(fsx["deploymentType"], dyn):
            dynamic["dailyAutomaticBackupStartTime"] = dyn["dailyAutomaticBackupStartTime"]
            dynamic["copyTagsToBackups"] = "true" if dyn["copyTagsToBackups"] else "false"
        if "perUnitStorageThroughput" in dyn:
            dynamic["perUnitStorageThroughput"] = str(dyn["perUnitStorageThroughput"])
    return Storage(
        fsx=Fsx(enabled=fsx["enabled"], mode=fsx["mode"], claim_name=fsx["claimName"], mount_path=fsx["mountPath"],
                size_gib=fsx.get("sizeGiB"), zone=fsx.get("zone"), deployment_type=fsx["deploymentType"],
                csi_driver=fsx["csiDriver"], dynamic=pairs(dynamic), static=pairs(fsx["static"]) if "static" in fsx else ()),
        shm_enabled=raw["shm"]["enabled"], shm_size_limit=raw["shm"]["sizeLimit"],
    )


def _compute(d: dict[str, Any]) -> Compute:
    c = d["compute"]
    eks = d["aws"]["eksClusterName"]
    return Compute(
        # Derived from aws.eksClusterName, so not schema defaults (the schema's descriptions name them).
        node_role=c.get("nodeRole", f"KarpenterNodeRole-{eks}"), discovery_tag=c.get("discoveryTag", eks),
        ami_family=c["amiFamily"], ami_version=c["amiVersion"], root_volume_size=c["rootVolumeSize"],
        consolidate_after=c["consolidateAfter"], expire_after=c["expireAfter"],
        termination_grace_period=c.get("terminationGracePeriod"), disruption_budget=c["disruptionBudget"],
        reserve_cpu_m=c["daemonSetReserve"]["cpuMillicores"], reserve_memory_mi=c["daemonSetReserve"]["memoryMiB"],
        reserve_percent=c["daemonSetReserve"]["percent"],
        nvidia_device_plugin=c["devicePlugins"]["nvidia"], efa_device_plugin=c["devicePlugins"]["efa"],
        neuron_installed_separately=c["devicePlugins"]["neuronInstalledSeparately"],
    )


def _build(source: str, d: dict[str, Any]) -> ClusterSpec:
    images_raw = d["images"]
    images = Images(registry=images_raw["registry"], tag=d["versions"]["slurmImageTag"],
                    sidecar=images_raw["sidecar"], overrides=pairs(images_raw["overrides"]))
    weights = d["scheduling"]["fairShare"]["weights"]
    fair = d["scheduling"]["fairShare"]
    sm = d["metrics"]["serviceMonitor"]
    db = d["accounting"]["database"]
    compute = _compute(d)
    partitions = tuple(_partitions(d["partitions"], [ns["name"] for ns in d["nodesets"] if include_in_all(ns)],
                                   _topology_rules.settings(d)))

    def build_nodeset(ns: dict[str, Any]) -> NodeSetSpec:
        reservation = ns.get("capacityReservation")
        return NodeSetSpec(
            name=ns["name"], instance_types=type_names(ns), gpus_per_pod=ns.get("gpusPerPod"), efa=ns["efa"],
            replicas=ns["replicas"], capacity_type=ns["capacityType"], features=tuple(ns["features"]),
            image=images.for_component("slurmd", ns.get("image")),
            extra_slurmd_conf=tuple((k, str(v)) for k, v in ns["extraSlurmdConf"].items()),
            max_nodes=ns.get("maxNodes"),
            zones=tuple(ns.get("zones", d["compute"]["zones"])), own_zones="zones" in ns,
            capacity_reservation=None if reservation is None else CapacityReservation(
                ids=tuple(reservation["ids"]) if "ids" in reservation else (),
                tags=pairs(reservation["tags"]) if "tags" in reservation else ()),
            scaling_mode=ns["scalingMode"],
            autoscale=_autoscale(ns.get("autoscale")),
            include_in_all=include_in_all(ns),
            allow_mixed_types=ns["allowMixedTypes"],
            placement_group=ns.get("placementGroup"),
        )
    return ClusterSpec(
        source=source,
        name=d["name"],
        aws=AwsSettings(region=d["aws"]["region"], eks_cluster_name=d["aws"]["eksClusterName"],
                        kubernetes_version=d["aws"]["kubernetesVersion"], account_id=d["aws"].get("accountId"),
                        identity=_identity(d["aws"]["identity"])),
        gitops=GitOpsSettings(repo_url=d["gitops"]["repoURL"], target_revision=d["gitops"]["targetRevision"],
                              path=d["gitops"]["path"], argocd_namespace=d["gitops"]["argocdNamespace"],
                              destination_server=d["gitops"]["destinationServer"],
                              root_project=d["gitops"]["rootProject"],
                              root_destination_server=d["gitops"]["rootDestinationServer"],
                              argocd_install=d["gitops"]["argocdInstall"]),
        versions=Versions(slinky=d["versions"]["slinky"], cert_manager=d["versions"]["certManager"],
                          slurm_image_tag=d["versions"]["slurmImageTag"]),
        images=images,
        namespace=d["slurm"]["namespace"],
        operator_namespace=d["slurm"]["operatorNamespace"],
        slurm_cluster_name=d["slurm"]["clusterName"],
        placement=Placement(node_selector=pairs(d["placement"]["nodeSelector"]),
                            tolerations=_tolerations(d["placement"]["tolerations"])),
        compute=compute,
        persistence=Persistence(storage_class_name=d["controller"]["persistence"]["storageClassName"],
                                size=d["controller"]["persistence"]["size"]),
        controller_extra_conf=tuple(d["controller"]["extraConf"]),
        scheduling=Scheduling(
            fair_share=FairShare(enabled=fair["enabled"], decay_half_life=fair["decayHalfLife"],
                                 weight_fairshare=weights["fairshare"], weight_age=weights["age"],
                                 weight_job_size=weights["jobSize"], weight_partition=weights["partition"],
                                 weight_qos=weights["qos"]),
            preempt_lower_tiers=d["scheduling"]["preemptLowerTiers"],
        ),
        partitions=partitions,
        topology=_topology(d, partitions),
        nodesets=tuple(build_nodeset(ns) for ns in d["nodesets"]),
        login=_login(d["login"]),
        accounting=Accounting(enabled=d["accounting"]["enabled"], database=_database(db)),
        secrets=_secrets(d),
        storage=_storage(d["storage"]),
        policy=_policy(d.get("policy"), d),
        bridge=_bridge(d, partitions),
        directory=_directory(d),
        prometheus_address=_prometheus_address(d),
        kube_prometheus_stack=KubePrometheusStack(**{
            "enabled": d["monitoring"]["kubePrometheusStack"]["enabled"],
            "namespace": d["monitoring"]["kubePrometheusStack"]["namespace"],
            "retention": d["monitoring"]["kubePrometheusStack"]["retention"],
            "storage_class_name": d["monitoring"]["kubePrometheusStack"]["storageClassName"],
            "storage_size": d["monitoring"]["kubePrometheusStack"]["storageSize"]}),
        metrics=Metrics(enabled=d["metrics"]["enabled"],
                        # Unset: on when this spec installs kube-prometheus-stack (a derived default, not the schema's).
                        service_monitor=ServiceMonitor(enabled=sm.get("enabled", d["monitoring"]["kubePrometheusStack"]["enabled"]), labels=pairs(sm["labels"]),
                                                       interval=sm["interval"], scrape_timeout=sm["scrapeTimeout"])),
    )
