"""Read `clusters/*.yaml` into ClusterSpec models: parse, check the schema, default, cross-check, build."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Iterator

from . import _checks, _schema
from ._yaml import YamlSyntaxError, load_yaml
from .errors import Problem, SpecError
from .model import (
    Accounting, AwsSettings, CapacityReservation, ClusterSpec, Compute, Database, FairShare, GitOpsSettings, Images, Login, Metrics,
    NodeSetSpec, Partition, Persistence, Placement, Scheduling, SecretKeyRef, Secrets, ServiceMonitor,
    Toleration, Versions, pairs,
)

# Extra cross-field rules registered by other layers (the compute catalog checks instance types),
# so the spec layer does not import them.
_EXTRA_RULES: list[_checks.Rule] = []


def register_rule(rule: _checks.Rule) -> _checks.Rule:
    """Add a cross-field rule run on every spec after its schema check passes."""
    if rule not in _EXTRA_RULES:
        _EXTRA_RULES.append(rule)
    return rule


def load_spec(path: Path) -> ClusterSpec:
    """Load one spec file; raise SpecError listing every problem in it."""
    return _load(path, path.read_text(encoding="utf-8"))


def load_specs(paths: Iterable[Path]) -> list[ClusterSpec]:
    """Load several spec files, collecting the problems of all of them before raising."""
    specs: list[ClusterSpec] = []
    problems: list[Problem] = []
    for path in sorted(paths):
        try:
            specs.append(load_spec(path))
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


def parse_text(source: str, text: str) -> ClusterSpec:
    """Load a spec from text (tests and tools); `source` names it in messages."""
    return _load(Path(source), text)


def _load(path: Path, text: str) -> ClusterSpec:
    source = str(path)

    def fail(findings: Iterable[tuple[str, str]]) -> SpecError:
        return SpecError(Problem(source, p, m) for p, m in findings)

    try:
        data = load_yaml(text)
    except YamlSyntaxError as err:
        raise fail([("", str(err))]) from None
    if data is None:
        raise fail([("", "the file is empty; start from clusters/example.yaml")])
    if not isinstance(data, dict):
        raise fail([("", f"expected a mapping of spec keys at the top level, got {_schema._describe(data)}")])
    version = data.get("schemaVersion")
    if isinstance(version, int) and not isinstance(version, bool) and version > _schema.schema_version():
        raise fail([("schemaVersion", f"{version} is newer than this generator reads "
                                      f"({_schema.schema_version()}); upgrade slurmgen")])
    findings = list(_schema.check(data))
    if findings:
        raise fail(findings)
    full = _schema.with_defaults(data)
    findings = _checks.run(full, tuple(_EXTRA_RULES))
    if findings:
        raise fail(findings)
    return _build(source, full)


def _ref(raw: dict[str, str]) -> SecretKeyRef:
    return SecretKeyRef(name=raw["name"], key=raw["key"])


def _tolerations(raw: list[dict[str, Any]]) -> tuple[Toleration, ...]:
    return tuple(Toleration(key=t.get("key"), operator=t.get("operator"), value=t.get("value"),
                            effect=t.get("effect"), toleration_seconds=t.get("tolerationSeconds")) for t in raw)


def _partitions(raw: list[dict[str, Any]], nodesets: list[str]) -> Iterator[Partition]:
    for part in raw:
        every = part["nodesets"] == ["ALL"]
        yield Partition(
            name=part["name"],
            nodesets=tuple(nodesets) if every else tuple(part["nodesets"]),
            default=part["default"],
            max_time=part["maxTime"],
            priority_tier=part["priorityTier"],
            extra_config=tuple((k, str(v)) for k, v in part["extraConfig"].items()),
            all_nodesets=every,
        )


def _compute(d: dict[str, Any]) -> Compute:
    c = d["compute"]
    eks = d["aws"]["eksClusterName"]
    return Compute(
        node_role=c.get("nodeRole", f"KarpenterNodeRole-{eks}"), discovery_tag=c.get("discoveryTag", eks),
        ami_family=c["amiFamily"], ami_version=c["amiVersion"], root_volume_size=c["rootVolumeSize"],
        consolidate_after=c["consolidateAfter"], expire_after=c["expireAfter"],
        termination_grace_period=c.get("terminationGracePeriod"), disruption_budget=c["disruptionBudget"],
        reserve_cpu_m=c["daemonSetReserve"]["cpuMillicores"], reserve_memory_mi=c["daemonSetReserve"]["memoryMiB"],
        nvidia_device_plugin=c["devicePlugins"]["nvidia"], efa_device_plugin=c["devicePlugins"]["efa"],
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

    def build_nodeset(ns: dict[str, Any]) -> NodeSetSpec:
        reservation = ns.get("capacityReservation")
        return NodeSetSpec(
            name=ns["name"], instance_type=ns["instanceType"], gpus_per_pod=ns.get("gpusPerPod"), efa=ns["efa"],
            replicas=ns["replicas"], capacity_type=ns["capacityType"], features=tuple(ns["features"]),
            image=images.for_component("slurmd", ns.get("image")),
            extra_slurmd_conf=tuple((k, str(v)) for k, v in ns["extraSlurmdConf"].items()),
            max_nodes=ns.get("maxNodes"),
            zones=tuple(ns.get("zones", d["compute"]["zones"])),
            capacity_reservation=None if reservation is None else CapacityReservation(
                ids=tuple(reservation.get("ids", ())), tags=pairs(reservation.get("tags", {}))),
        )
    return ClusterSpec(
        source=source,
        name=d["name"],
        aws=AwsSettings(region=d["aws"]["region"], eks_cluster_name=d["aws"]["eksClusterName"],
                        kubernetes_version=d["aws"]["kubernetesVersion"], account_id=d["aws"].get("accountId")),
        gitops=GitOpsSettings(repo_url=d["gitops"]["repoURL"], target_revision=d["gitops"]["targetRevision"],
                              path=d["gitops"]["path"], argocd_namespace=d["gitops"]["argocdNamespace"],
                              destination_server=d["gitops"]["destinationServer"],
                              root_project=d["gitops"]["rootProject"]),
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
        partitions=tuple(_partitions(d["partitions"], [ns["name"] for ns in d["nodesets"]])),
        nodesets=tuple(build_nodeset(ns) for ns in d["nodesets"]),
        login=Login(enabled=d["login"]["enabled"], replicas=d["login"]["replicas"],
                    ssh_authorized_keys=tuple(d["login"]["sshAuthorizedKeys"]),
                    sssd_conf_secret=_ref(d["login"]["sssdConfSecret"])),
        accounting=Accounting(enabled=d["accounting"]["enabled"],
                              database=Database(host=db["host"], port=db["port"], name=db["name"], user=db["user"],
                                                password_secret=_ref(db["passwordSecret"]))),
        secrets=Secrets(slurm_key=_ref(d["secrets"]["slurmKey"]), jwt_key=_ref(d["secrets"]["jwtKey"])),
        metrics=Metrics(enabled=d["metrics"]["enabled"],
                        service_monitor=ServiceMonitor(enabled=sm["enabled"], labels=pairs(sm["labels"]),
                                                       interval=sm["interval"], scrape_timeout=sm["scrapeTimeout"])),
    )
