"""Each default of the spec has one home: the schema's `default` (cluster.schema.json).

The loader applies the schema's defaults, then reads every field directly; the model's dataclasses
have no defaults of their own. A default written a second time (a literal in the loader, a dataclass
default) can drift from the schema's unseen; these tests hold the line.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import Any, Callable, Iterator

from slurmgen.spec import _schema, model, parse_text
from slurmgen.spec.model import ClusterSpec, pairs
from tests.spec_builder import spec_text

LOADER = Path(_schema.__file__).with_name("loader.py")
ROLE = "arn:aws:iam::111122223333:role/secrets"
DIRECTORY = {"kind": "ldap", "uris": ["ldaps://ldap.corp.example.com"], "searchBase": "dc=corp,dc=example,dc=com",
             "bindDn": "cn=reader,dc=corp,dc=example,dc=com", "access": {"filter": "(memberOf=cn=hpc,dc=corp)"},
             "tls": {"ca": {"configMap": {"name": "corp-ca", "key": "ca.crt"}}},
             "bindPassword": {"secretsManager": {"name": "corp/ldap/reader", "property": "password"}}}
POLICY = {"qos": [{"name": "normal"}], "accounts": [{"name": "research"}],
          "users": [{"name": "alice", "defaultAccount": "research"}]}
FSX = {"enabled": True, "mode": "dynamic", "sizeGiB": 1200, "zone": "us-west-2a",
       "dynamic": {"subnetId": "subnet-0123456789abcdef0", "securityGroupIds": ["sg-0123456789abcdef0"],
                   "perUnitStorageThroughput": 250}}

Get = Callable[[ClusterSpec], Any]


def _minimal() -> ClusterSpec:
    return parse_text("minimal.yaml", spec_text())


def _optional_sections() -> ClusterSpec:
    """The minimal spec with every optional section written with only its required keys."""
    return parse_text("optional.yaml", spec_text(
        aws={"accountId": "111122223333", "identity": {"roles": {
            "externalSecrets": ROLE, "fsxCsiController": "arn:aws:iam::111122223333:role/fsx"}}},
        directory=DIRECTORY, policy=POLICY, storage={"fsx": FSX},
        bridge={"namespaces": ["inference"], "partition": "gpu", "account": "research"},
        autoscaling={"prometheusAddress": "http://prometheus.monitoring.svc:9090"},
        nodesets=[{"name": "gpu", "instanceType": "g5.xlarge"},
                  {"name": "burst", "instanceType": "g5.xlarge", "autoscale": {"max": 2}}],
        partitions=[{"name": "gpu", "nodesets": ["gpu"]}, {"name": "burst", "nodesets": ["burst"]}]))


def _topology() -> ClusterSpec:
    """The minimal spec with topology on, over a nodeset of an EFA GPU type with EC2 topology labels."""
    return parse_text("topology.yaml", spec_text(
        topology={"enabled": True},
        nodesets=[{"name": "gpu", "instanceType": "p5.48xlarge", "efa": True}]))


def _fsx(spec: ClusterSpec, key: str) -> str:
    return dict(spec.storage.fsx.dynamic)[key]


# Where the model carries each schema default: (spec to load, how to read it, the value as the model
# holds it when it differs from the default's plain conversion, _as_model).
MINIMAL, OPTIONAL, TOPOLOGY = _minimal, _optional_sections, _topology
CARRIERS: dict[tuple[str | int, ...], tuple[Callable[[], ClusterSpec], Get]] = {
    ("aws", "kubernetesVersion"): (MINIMAL, lambda s: s.aws.kubernetes_version),
    ("aws", "identity", "mode"): (MINIMAL, lambda s: s.aws.identity.mode),
    ("gitops", "targetRevision"): (MINIMAL, lambda s: s.gitops.target_revision),
    ("gitops", "path"): (MINIMAL, lambda s: s.gitops.path),
    ("gitops", "argocdInstall"): (MINIMAL, lambda s: s.gitops.argocd_install),
    ("gitops", "argocdNamespace"): (MINIMAL, lambda s: s.gitops.argocd_namespace),
    ("gitops", "destinationServer"): (MINIMAL, lambda s: s.gitops.destination_server),
    ("gitops", "rootProject"): (MINIMAL, lambda s: s.gitops.root_project),
    ("gitops", "rootDestinationServer"): (MINIMAL, lambda s: s.gitops.root_destination_server),
    ("versions", "slinky"): (MINIMAL, lambda s: s.versions.slinky),
    ("versions", "certManager"): (MINIMAL, lambda s: s.versions.cert_manager),
    ("versions", "slurmImageTag"): (MINIMAL, lambda s: s.versions.slurm_image_tag),
    ("images", "registry"): (MINIMAL, lambda s: s.images.registry),
    ("images", "sidecar"): (MINIMAL, lambda s: s.images.sidecar),
    ("slurm", "namespace"): (MINIMAL, lambda s: s.namespace),
    ("slurm", "clusterName"): (MINIMAL, lambda s: s.slurm_cluster_name),
    ("slurm", "operatorNamespace"): (MINIMAL, lambda s: s.operator_namespace),
    ("placement", "nodeSelector"): (MINIMAL, lambda s: s.placement.node_selector),
    ("placement", "tolerations"): (MINIMAL, lambda s: s.placement.tolerations),
    ("compute", "amiFamily"): (MINIMAL, lambda s: s.compute.ami_family),
    ("compute", "amiVersion"): (MINIMAL, lambda s: s.compute.ami_version),
    ("compute", "zones"): (MINIMAL, lambda s: s.nodesets[0].zones),  # a nodeset without zones of its own
    ("compute", "rootVolumeSize"): (MINIMAL, lambda s: s.compute.root_volume_size),
    ("compute", "consolidateAfter"): (MINIMAL, lambda s: s.compute.consolidate_after),
    ("compute", "expireAfter"): (MINIMAL, lambda s: s.compute.expire_after),
    ("compute", "disruptionBudget"): (MINIMAL, lambda s: s.compute.disruption_budget),
    ("compute", "daemonSetReserve", "cpuMillicores"): (MINIMAL, lambda s: s.compute.reserve_cpu_m),
    ("compute", "daemonSetReserve", "memoryMiB"): (MINIMAL, lambda s: s.compute.reserve_memory_mi),
    ("compute", "daemonSetReserve", "percent"): (MINIMAL, lambda s: s.compute.reserve_percent),
    ("compute", "devicePlugins", "nvidia"): (MINIMAL, lambda s: s.compute.nvidia_device_plugin),
    ("compute", "devicePlugins", "efa"): (MINIMAL, lambda s: s.compute.efa_device_plugin),
    ("compute", "devicePlugins", "neuronInstalledSeparately"):
        (MINIMAL, lambda s: s.compute.neuron_installed_separately),
    ("storage", "fsx", "enabled"): (MINIMAL, lambda s: s.storage.fsx.enabled),
    ("storage", "fsx", "mode"): (MINIMAL, lambda s: s.storage.fsx.mode),
    ("storage", "fsx", "claimName"): (MINIMAL, lambda s: s.storage.fsx.claim_name),
    ("storage", "fsx", "mountPath"): (MINIMAL, lambda s: s.storage.fsx.mount_path),
    ("storage", "fsx", "deploymentType"): (MINIMAL, lambda s: s.storage.fsx.deployment_type),
    ("storage", "fsx", "csiDriver"): (MINIMAL, lambda s: s.storage.fsx.csi_driver),
    # StorageClass parameters are strings (copyTagsToBackups: "true")
    ("storage", "fsx", "dynamic", "fileSystemTypeVersion"): (OPTIONAL, lambda s: _fsx(s, "fileSystemTypeVersion")),
    ("storage", "fsx", "dynamic", "dataCompressionType"): (OPTIONAL, lambda s: _fsx(s, "dataCompressionType")),
    ("storage", "fsx", "dynamic", "dailyAutomaticBackupStartTime"):
        (OPTIONAL, lambda s: _fsx(s, "dailyAutomaticBackupStartTime")),
    ("storage", "fsx", "dynamic", "copyTagsToBackups"): (OPTIONAL, lambda s: _fsx(s, "copyTagsToBackups") == "true"),
    ("storage", "shm", "enabled"): (MINIMAL, lambda s: s.storage.shm_enabled),
    ("storage", "shm", "sizeLimit"): (MINIMAL, lambda s: s.storage.shm_size_limit),
    ("controller", "persistence", "storageClassName"): (MINIMAL, lambda s: s.persistence.storage_class_name),
    ("controller", "persistence", "size"): (MINIMAL, lambda s: s.persistence.size),
    ("controller", "extraConf"): (MINIMAL, lambda s: s.controller_extra_conf),
    ("scheduling", "fairShare", "enabled"): (MINIMAL, lambda s: s.scheduling.fair_share.enabled),
    ("scheduling", "fairShare", "decayHalfLife"): (MINIMAL, lambda s: s.scheduling.fair_share.decay_half_life),
    ("scheduling", "fairShare", "weights", "fairshare"): (MINIMAL, lambda s: s.scheduling.fair_share.weight_fairshare),
    ("scheduling", "fairShare", "weights", "age"): (MINIMAL, lambda s: s.scheduling.fair_share.weight_age),
    ("scheduling", "fairShare", "weights", "jobSize"): (MINIMAL, lambda s: s.scheduling.fair_share.weight_job_size),
    ("scheduling", "fairShare", "weights", "partition"): (MINIMAL, lambda s: s.scheduling.fair_share.weight_partition),
    ("scheduling", "fairShare", "weights", "qos"): (MINIMAL, lambda s: s.scheduling.fair_share.weight_qos),
    ("scheduling", "preemptLowerTiers"): (MINIMAL, lambda s: s.scheduling.preempt_lower_tiers),
    ("partitions", 0, "default"): (MINIMAL, lambda s: s.partitions[0].default),
    ("partitions", 0, "maxTime"): (MINIMAL, lambda s: s.partitions[0].max_time),
    ("partitions", 0, "priorityTier"): (MINIMAL, lambda s: s.partitions[0].priority_tier),
    ("partitions", 0, "extraConfig"): (MINIMAL, lambda s: s.partitions[0].extra_config),
    ("partitions", 0, "allowQos"): (MINIMAL, lambda s: s.partitions[0].allow_qos),
    ("nodesets", 0, "allowMixedTypes"): (MINIMAL, lambda s: s.nodesets[0].allow_mixed_types),
    ("nodesets", 0, "efa"): (MINIMAL, lambda s: s.nodesets[0].efa),
    ("nodesets", 0, "replicas"): (MINIMAL, lambda s: s.nodesets[0].replicas),
    ("nodesets", 0, "capacityType"): (MINIMAL, lambda s: s.nodesets[0].capacity_type),
    ("nodesets", 0, "features"): (MINIMAL, lambda s: s.nodesets[0].features),
    ("nodesets", 0, "extraSlurmdConf"): (MINIMAL, lambda s: s.nodesets[0].extra_slurmd_conf),
    ("nodesets", 0, "scalingMode"): (MINIMAL, lambda s: s.nodesets[0].scaling_mode),
    ("nodesets", 0, "autoscale", "min"): (OPTIONAL, lambda s: s.nodeset("burst").autoscale.min),
    ("nodesets", 0, "autoscale", "idleToZero"): (OPTIONAL, lambda s: s.nodeset("burst").autoscale.idle_to_zero),
    ("nodesets", 0, "autoscale", "cooldownSeconds"):
        (OPTIONAL, lambda s: s.nodeset("burst").autoscale.cooldown_seconds),
    ("nodesets", 0, "autoscale", "pollingSeconds"): (OPTIONAL, lambda s: s.nodeset("burst").autoscale.polling_seconds),
    ("login", "enabled"): (MINIMAL, lambda s: s.login.enabled),
    ("login", "replicas"): (MINIMAL, lambda s: s.login.replicas),
    ("login", "sshAuthorizedKeys"): (MINIMAL, lambda s: s.login.ssh_authorized_keys),
    ("login", "sssdConfSecret"): (MINIMAL, lambda s: s.login.sssd_conf_secret.as_ref()),
    ("login", "extraSshdConfig"): (MINIMAL, lambda s: s.login.extra_sshd_config),
    ("login", "service", "enabled"): (MINIMAL, lambda s: s.login.service.enabled),
    ("login", "service", "scheme"): (MINIMAL, lambda s: s.login.service.scheme),
    ("login", "service", "sourceRanges"): (MINIMAL, lambda s: s.login.service.source_ranges),
    ("login", "service", "allowPublicSsh"): (MINIMAL, lambda s: s.login.service.allow_public_ssh),
    ("login", "service", "subnets"): (MINIMAL, lambda s: s.login.service.subnets),
    ("directory", "tls", "mode"): (OPTIONAL, lambda s: s.directory.tls_mode),
    ("directory", "tls", "verify"): (OPTIONAL, lambda s: s.directory.tls_verify),
    ("directory", "access", "allowedGroups"): (OPTIONAL, lambda s: s.directory.allowed_groups),
    ("directory", "homes", "createOnLogin"): (OPTIONAL, lambda s: s.directory.create_homes),
    ("directory", "ssh", "publicKeyAttribute"): (OPTIONAL, lambda s: s.directory.public_key_attribute),
    ("directory", "ssh", "rootLogin"): (OPTIONAL, lambda s: s.directory.root_login),
    ("directory", "shell", "fallback"): (OPTIONAL, lambda s: s.directory.shell_fallback),
    ("directory", "extraSssdConf"): (OPTIONAL, lambda s: s.directory.extra_sssd_conf),
    ("directory", "adminGroups", "administrators"): (OPTIONAL, lambda s: s.directory.admin_groups),
    ("directory", "adminGroups", "operators"): (OPTIONAL, lambda s: s.directory.operator_groups),
    ("accounting", "enabled"): (MINIMAL, lambda s: s.accounting.enabled),
    ("accounting", "database", "mode"): (MINIMAL, lambda s: s.accounting.database.mode),
    ("accounting", "database", "port"): (MINIMAL, lambda s: s.accounting.database.port),
    ("accounting", "database", "name"): (MINIMAL, lambda s: s.accounting.database.name),
    ("accounting", "database", "user"): (MINIMAL, lambda s: s.accounting.database.user),
    ("accounting", "database", "passwordSecret"): (MINIMAL, lambda s: s.accounting.database.password_secret.as_ref()),
    ("accounting", "database", "inCluster", "storageClassName"):
        (MINIMAL, lambda s: s.accounting.database.in_cluster.storage_class_name),
    ("accounting", "database", "inCluster", "size"): (MINIMAL, lambda s: s.accounting.database.in_cluster.size),
    ("accounting", "database", "inCluster", "memory"): (MINIMAL, lambda s: s.accounting.database.in_cluster.memory),
    ("accounting", "database", "inCluster", "cpu"): (MINIMAL, lambda s: s.accounting.database.in_cluster.cpu),
    ("accounting", "database", "inCluster", "bufferPoolSizeMiB"):
        (MINIMAL, lambda s: s.accounting.database.in_cluster.buffer_pool_size_mib),
    ("accounting", "database", "inCluster", "maxAllowedPacketMiB"):
        (MINIMAL, lambda s: s.accounting.database.in_cluster.max_allowed_packet_mib),
    ("accounting", "database", "inCluster", "maxUserConnections"):
        (MINIMAL, lambda s: s.accounting.database.in_cluster.max_user_connections),
    ("accounting", "database", "passwordRevision"): (MINIMAL, lambda s: s.accounting.database.password_revision),
    ("secrets", "mode"): (MINIMAL, lambda s: s.secrets.mode),
    ("secrets", "slurmKey"): (MINIMAL, lambda s: s.secrets.slurm_key.as_ref()),
    ("secrets", "jwtKey"): (MINIMAL, lambda s: s.secrets.jwt_key.as_ref()),
    ("metrics", "enabled"): (MINIMAL, lambda s: s.metrics.enabled),
    ("metrics", "serviceMonitor", "labels"): (MINIMAL, lambda s: s.metrics.service_monitor.labels),
    ("metrics", "serviceMonitor", "interval"): (MINIMAL, lambda s: s.metrics.service_monitor.interval),
    ("metrics", "serviceMonitor", "scrapeTimeout"): (MINIMAL, lambda s: s.metrics.service_monitor.scrape_timeout),
    ("monitoring", "kubePrometheusStack", "enabled"): (MINIMAL, lambda s: s.kube_prometheus_stack.enabled),
    ("monitoring", "kubePrometheusStack", "namespace"): (MINIMAL, lambda s: s.kube_prometheus_stack.namespace),
    ("monitoring", "kubePrometheusStack", "retention"): (MINIMAL, lambda s: s.kube_prometheus_stack.retention),
    ("monitoring", "kubePrometheusStack", "storageClassName"):
        (MINIMAL, lambda s: s.kube_prometheus_stack.storage_class_name),
    ("monitoring", "kubePrometheusStack", "storageSize"): (MINIMAL, lambda s: s.kube_prometheus_stack.storage_size),
    # a policy without the list: `policy: {}` (the written lists are OPTIONAL's)
    ("policy", "qos"): (lambda: parse_text("p.yaml", spec_text(policy={})), lambda s: s.policy.qos),
    ("policy", "accounts"): (lambda: parse_text("p.yaml", spec_text(policy={})), lambda s: s.policy.accounts),
    ("policy", "users"): (lambda: parse_text("p.yaml", spec_text(policy={})), lambda s: s.policy.users),
    ("policy", "qos", 0, "priority"): (OPTIONAL, lambda s: s.policy.qos[0].priority),
    ("policy", "qos", 0, "preempt"): (OPTIONAL, lambda s: s.policy.qos[0].preempt),
    ("policy", "qos", 0, "flags"): (OPTIONAL, lambda s: s.policy.qos[0].flags),
    ("policy", "accounts", 0, "parent"): (OPTIONAL, lambda s: s.policy.accounts[0].parent),
    ("policy", "accounts", 0, "fairshare"): (OPTIONAL, lambda s: s.policy.accounts[0].fairshare),
    ("policy", "accounts", 0, "qos"): (OPTIONAL, lambda s: s.policy.accounts[0].qos),
    ("policy", "users", 0, "accounts"): (OPTIONAL, lambda s: s.policy.users[0].accounts),
    ("policy", "users", 0, "fairshare"): (OPTIONAL, lambda s: s.policy.users[0].fairshare),
    ("topology", "enabled"): (MINIMAL, lambda s: s.topology is not None),
    ("topology", "default"): (TOPOLOGY, lambda s: s.partitions[0].topology),  # a partition naming none
    ("topology", "blockDomainLabel"): (TOPOLOGY, lambda s: s.topology.domain_label),
    ("topology", "labelerImage"): (TOPOLOGY, lambda s: s.topology.labeler_image),
    ("bridge", "labelerImage"): (OPTIONAL, lambda s: s.bridge.labeler_image),
}

# Schema defaults the model does not carry, and who reads them instead.
NOT_IN_MODEL = {
    ("compute", "devicePlugins", "installedSeparately"): "catalog/rules.py reads it from the defaulted spec data",
}


def _defaults(node: dict[str, Any], path: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """Every (field path, default) of the schema; a list item's fields at index 0. A section whose
    default is only the empty mapping its own fields' defaults fill is a container, not a value."""
    node = _schema._resolve(node)
    if path and "default" in node and not (node["default"] == {} and "properties" in node):
        yield path, node["default"]
    for key, sub in node.get("properties", {}).items():
        yield from _defaults(sub, (*path, key))
    if isinstance(node.get("items"), dict):
        yield from _defaults(node["items"], (*path, 0))


def _as_model(value: Any) -> Any:
    """A schema default as the model holds it: lists as tuples, mappings as sorted pairs."""
    if isinstance(value, list):
        return tuple(value)
    if isinstance(value, dict) and not {"name", "key"} == set(value):
        return pairs(value)
    return value


def test_every_schema_default_has_a_place_in_the_model():
    # GIVEN every default the schema declares
    declared = {path for path, _ in _defaults(_schema.schema())}
    # THEN each is read into the model (CARRIERS) or listed with who reads it instead, and no entry is stale
    assert declared - set(CARRIERS) - set(NOT_IN_MODEL) == set(), "a schema default no test checks"
    assert set(CARRIERS) - declared == set(), "listed as a schema default, but the schema declares none"


def test_a_spec_that_leaves_a_field_out_gets_the_schema_default_in_the_model():
    # GIVEN specs that leave every defaulted field out (their sections written with only required keys)
    loaded: dict[Any, ClusterSpec] = {}
    wrong = []
    for path, default in _defaults(_schema.schema()):
        if path not in CARRIERS:
            continue
        load, get = CARRIERS[path]
        spec = loaded.setdefault(load, load())
        # WHEN the model is read at the field's place
        # THEN it holds the schema's default (topology.default: the partition's topology name)
        if get(spec) != _as_model(default):
            wrong.append(f"{path}: model {get(spec)!r}, schema default {default!r}")
    assert wrong == []


def test_the_bridge_user_gets_a_policy_users_default_fairshare():
    # GIVEN a policy and a bridge that charges an account
    spec = parse_text("b.yaml", spec_text(policy=POLICY, bridge={"namespaces": ["inference"], "partition": "gpu",
                                                                  "account": "research"}))
    # THEN slurm-bridge's user has the fairshare a listed user without one gets
    bridge_user = next(u for u in spec.policy.users if u.name == model.BRIDGE_USER)
    assert bridge_user.fairshare == _schema.default(("policy", "users", 0, "fairshare")) == 1
    assert bridge_user.default_account == "research"


def test_no_model_field_of_the_spec_has_a_default_of_its_own():
    # GIVEN the model's dataclasses (Toleration aside: the plan builds tolerations of its own, and its
    # fields are Kubernetes' optional ones)
    classes = [c for c in vars(model).values() if dataclasses.is_dataclass(c) and isinstance(c, type)]
    # THEN none declares a default: a value left out comes from the schema, through the loader
    with_default = [f"{c.__name__}.{f.name}" for c in classes if c is not model.Toleration
                    for f in dataclasses.fields(c)
                    if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING]
    assert with_default == []


# Defaults the loader writes on purpose, each depending on another field (said at the place; the schema
# declares none for them, as test_every_schema_default_has_a_place_in_the_model shows).
CONDITIONAL = {"ldapSchema"}


def _constants(tree: ast.Module) -> set[str]:
    """Module-level names bound to a literal (`DEFAULT_X = 7`): a default by another name."""
    return {target.id for node in tree.body if isinstance(node, ast.Assign) and _literal(node.value, set())
            for target in node.targets if isinstance(target, ast.Name)}


def _literal(node: ast.expr, constants: set[str]) -> bool:
    """A value written in the code: a constant other than None, a module constant, or a container of such."""
    if isinstance(node, ast.Name):
        return node.id in constants
    if isinstance(node, ast.Constant):
        return node.value is not None
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return all(_literal(e, constants) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(v is not None and _literal(v, constants) for v in node.values)
    return False


def _literal_defaults(tree: ast.Module) -> Iterator[str]:
    """`x.get("key", <literal>)` and `x or <literal>` in the loader, as `line: code`."""
    constants = _constants(tree)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                and len(node.args) == 2 and _literal(node.args[1], constants)
                and not (isinstance(node.args[0], ast.Constant) and node.args[0].value in CONDITIONAL)):
            yield f"{node.lineno}: {ast.unparse(node)}"
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and _literal(node.values[-1], constants):
            yield f"{node.lineno}: {ast.unparse(node)}"


def test_the_loader_writes_no_default_of_a_spec_field():
    # GIVEN the loader's source
    tree = ast.parse(LOADER.read_text())
    # THEN it reads defaulted fields directly: no literal fallback that could differ from the schema's
    assert list(_literal_defaults(tree)) == []


def test_the_literal_finder_finds_what_it_looks_for():
    # GIVEN the two shapes a second default takes, and the shapes that are no default
    found = list(_literal_defaults(ast.parse('SIZE = 1200\na.get("sizeGiB", 1200)\nb.get("x", ())\nc or {}\n'
                                             'k.get("sizeGiB", SIZE)\nd.get("zone")\ne.get("zones", f["z"])\n'
                                             'g or h\nm.get("ldapSchema", "rfc2307bis")')))
    # THEN only the literal fallbacks are reported (a module constant is one; ldapSchema's is on purpose)
    assert [line.split(":")[0] for line in found] == ["2", "3", "4", "5"]


def test_a_spec_without_fsx_has_no_file_system_size():
    # GIVEN the minimal spec (FSx off)
    spec = _minimal()
    # THEN the size is unset rather than a made-up one (sizeGiB is required when FSx is on)
    assert spec.storage.fsx.enabled is False
    assert spec.storage.fsx.size_gib is None
