"""The typed, immutable cluster model the charts read.

Everything here is already validated and defaulted; charts never see raw YAML. Mappings are kept
as tuples of pairs so the model is hashable and cannot be mutated by a chart by accident.

No field of the spec's model has a default: a value the spec leaves out is the schema's `default`
(cluster.schema.json, applied by the loader) or, where it depends on other fields, computed by the
loader, so each default is written in one place (tests/spec/test_spec_defaults.py holds to that). Only
Toleration keeps defaults: the plan builds tolerations of its own, and its fields are Kubernetes'
optional ones, not spec defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ._slurm import slurm_key, slurm_keys

Pairs = tuple[tuple[str, str], ...]

SLURM_COMPONENTS = ("slurmctld", "slurmd", "slurmrestd", "slurmdbd", "login")


def pairs(mapping: Mapping[str, object]) -> Pairs:
    """Freeze a mapping into sorted (key, str(value)) pairs."""
    return tuple(sorted((str(k), str(v)) for k, v in mapping.items()))


@dataclass(frozen=True)
class SecretKeyRef:
    name: str
    key: str

    def as_ref(self) -> dict[str, str]:
        return {"name": self.name, "key": self.key}


@dataclass(frozen=True)
class Toleration:
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: int | None = None

    def as_dict(self) -> dict[str, object]:
        raw = {"key": self.key, "operator": self.operator, "value": self.value,
               "effect": self.effect, "tolerationSeconds": self.toleration_seconds}
        return {k: v for k, v in raw.items() if v is not None}


@dataclass(frozen=True)
class Placement:
    """Where a group of pods may run: the nodeSelector labels and the taints they tolerate."""

    node_selector: Pairs
    tolerations: tuple[Toleration, ...]

    def pod_spec(self) -> dict[str, object]:
        """The fragment of a PodSpec that pins pods to this placement (empty keys left out)."""
        out: dict[str, object] = {}
        if self.node_selector:
            out["nodeSelector"] = dict(self.node_selector)
        if self.tolerations:
            out["tolerations"] = [t.as_dict() for t in self.tolerations]
        return out


@dataclass(frozen=True, kw_only=True)
class AwsIdentity:
    """How the controllers that call AWS get their IAM role (aws.identity); see slurmgen/plan/identity.py."""

    mode: str  # podIdentity | irsa
    fsx_csi_controller: str | None  # role ARNs
    external_secrets: str | None
    keda: str | None


@dataclass(frozen=True, kw_only=True)
class AwsSettings:
    region: str
    eks_cluster_name: str
    kubernetes_version: str
    account_id: str | None
    identity: AwsIdentity


@dataclass(frozen=True, kw_only=True)
class GitOpsSettings:
    repo_url: str
    target_revision: str
    path: str
    argocd_namespace: str
    destination_server: str
    root_project: str
    root_destination_server: str
    argocd_install: str  # plain | helm | operator: who owns argocd-cm (argocd_settings.py)


@dataclass(frozen=True)
class Versions:
    slinky: str
    cert_manager: str
    slurm_image_tag: str


@dataclass(frozen=True)
class Images:
    registry: str
    tag: str
    sidecar: str
    overrides: Pairs

    def for_component(self, component: str, override: str | None = None) -> str:
        """Image of one Slurm component: a per-use override, a per-component override, or registry/component:tag."""
        if component not in SLURM_COMPONENTS:
            raise KeyError(component)
        return override or dict(self.overrides).get(component) or f"{self.registry}/{component}:{self.tag}"


@dataclass(frozen=True)
class Persistence:
    storage_class_name: str
    size: str


@dataclass(frozen=True)
class FairShare:
    enabled: bool
    decay_half_life: str
    weight_fairshare: int
    weight_age: int
    weight_job_size: int
    weight_partition: int
    weight_qos: int


@dataclass(frozen=True)
class Scheduling:
    fair_share: FairShare
    preempt_lower_tiers: bool


@dataclass(frozen=True)
class Partition:
    name: str
    nodesets: tuple[str, ...]  # resolved names; ALL is expanded to the nodesets with include_in_all
    default: bool
    max_time: str
    priority_tier: int
    extra_config: Pairs
    all_nodesets: bool  # the spec said [ALL]; written as the resolved list, never Nodes=ALL
    allow_qos: tuple[str, ...]
    topology: str | None  # topology.yaml name (Topology=); None when topology is off

    def config_tokens(self, derived: tuple[str, ...] = ()) -> list[str]:
        """Partition parameters after Nodes=, in a fixed order; `derived` come from the generator."""
        own = slurm_keys(k for k, _ in self.extra_config)  # Slurm keys ignore case
        tokens = ["State=UP"] if slurm_key("State") not in own else []
        if self.default:
            tokens.append("Default=YES")
        tokens += [f"MaxTime={self.max_time}", f"PriorityTier={self.priority_tier}"]
        if self.allow_qos:
            tokens.append(f"AllowQos={','.join(self.allow_qos)}")
        if self.topology and self.topology != "flat":
            # flat is topology.yaml's only cluster default, which a partition without Topology= uses
            # (set_part_topology_idx: index 0, topology_g_init sorts the default first; slurm-26-05-1-1):
            # a line without the token stays valid when topology is turned off (no topology.yaml).
            tokens.append(f"Topology={self.topology}")
        tokens += [t for t in derived if slurm_key(t.split("=", 1)[0]) not in own]
        tokens += [f"{k}={v}" for k, v in self.extra_config]
        return tokens


@dataclass(frozen=True)
class BlockTopology:
    """One block topology of topology.yaml: a partition's fixed-size blocks, pre-declared as slots."""

    name: str  # topology name, block-<partition>
    partition: str
    sizes: tuple[int, ...]  # block_sizes; sizes[0] nodes per block
    nodesets: tuple[str, ...]


@dataclass(frozen=True)
class TopologySpec:
    """Topology-aware placement: which nodesets are labelled, and which topologies topology.yaml holds."""

    nodesets: tuple[str, ...]
    tree: bool  # some partition uses the tree of the EC2 network layers
    blocks: tuple[BlockTopology, ...]
    domain_label: str
    labeler_image: str


@dataclass(frozen=True)
class CapacityReservation:
    """ODCR / Capacity Block selection: by ids, or by tags."""

    ids: tuple[str, ...]
    tags: Pairs


@dataclass(frozen=True)
class Autoscale:
    """KEDA scaling of one NodeSet with the Slurm queue."""

    min: int
    max: int
    idle_to_zero: bool
    cooldown_seconds: int
    polling_seconds: int


@dataclass(frozen=True, kw_only=True)
class NodeSetSpec:
    name: str
    instance_types: tuple[str, ...]  # one, or interchangeable types Karpenter picks from (catalog/mixed.py)
    gpus_per_pod: int | None
    efa: bool
    replicas: int
    capacity_type: str
    features: tuple[str, ...]
    image: str
    extra_slurmd_conf: Pairs
    max_nodes: int | None
    zones: tuple[str, ...]  # resolved: the nodeset's own, else compute.zones
    own_zones: bool  # zones written on the nodeset itself: kept even when FSx pins compute.zones
    capacity_reservation: CapacityReservation | None
    scaling_mode: str
    autoscale: Autoscale | None
    include_in_all: bool  # resolved: spot and autoscaled nodesets default to False
    allow_mixed_types: bool
    placement_group: str | None  # name or pg-id of an existing cluster placement group

    @property
    def instance_type(self) -> str:
        """The first type of the list: the one a single-type nodeset names."""
        return self.instance_types[0]

    @property
    def ceiling(self) -> int:
        """Most slurmd pods this nodeset can ever run: the autoscale max, else its replicas."""
        return self.autoscale.max if self.autoscale else self.replicas


@dataclass(frozen=True)
class Compute:
    """Karpenter settings shared by the cluster's NodePools and EC2NodeClasses."""

    node_role: str
    discovery_tag: str
    ami_family: str
    ami_version: str
    root_volume_size: str
    consolidate_after: str
    expire_after: str
    termination_grace_period: str | None
    disruption_budget: str
    reserve_cpu_m: int
    reserve_memory_mi: int
    reserve_percent: int
    nvidia_device_plugin: bool
    efa_device_plugin: bool
    neuron_installed_separately: bool  # opt-out: the Neuron device plugin is not ours to deploy

    @property
    def ami_alias(self) -> str:
        return f"{self.ami_family}@{self.ami_version}"


@dataclass(frozen=True)
class LoginService:
    """The SSH NLB in front of the login pods."""

    enabled: bool
    scheme: str
    source_ranges: tuple[str, ...]
    allow_public_ssh: bool
    subnets: tuple[str, ...]


@dataclass(frozen=True)
class Login:
    enabled: bool
    replicas: int
    ssh_authorized_keys: tuple[str, ...]
    sssd_conf_secret: SecretKeyRef
    extra_sshd_config: str
    sssd_conf: str | None
    service: LoginService


@dataclass(frozen=True, kw_only=True)
class Directory:
    """The site's LDAP or Active Directory (through LDAP) that sssd reads on login and slurmd pods.

    Only a reference to the bind password is kept (Secrets Manager, or a pre-created Secret; neither
    with secrets mode precreated, where the whole sssd.conf is pre-created): the value reaches
    sssd.conf in the cluster.
    """

    kind: str  # ldap | ad
    uris: tuple[str, ...]
    search_base: str
    user_search_base: str | None
    group_search_base: str | None
    bind_dn: str
    bind_password_name: str | None  # Secrets Manager secret name or ARN
    bind_password_property: str | None
    bind_password_secret: SecretKeyRef | None  # a Secret the site created in the Slurm namespace
    tls_mode: str  # ldaps | starttls | none
    tls_verify: bool
    ca_kind: str | None  # configMap | secret
    ca_ref: SecretKeyRef | None
    access_filter: str | None
    allowed_groups: tuple[str, ...]
    homes_path: str
    create_homes: bool
    public_key_attribute: str
    root_login: bool
    extra_sssd_conf: Pairs
    admin_groups: tuple[str, ...]  # members: AdminLevel=Administrator (resolved by the accounts Job)
    operator_groups: tuple[str, ...]  # members: AdminLevel=Operator
    ldap_schema: str  # sssd ldap_schema: rfc2307bis | rfc2307 (kind ldap) | ad
    override_shell: str | None  # every directory user's shell
    shell_fallback: str  # for a loginShell the image lacks


@dataclass(frozen=True)
class Fsx:
    """FSx for Lustre: a dynamic StorageClass or a static PV, and an RWX claim either way."""

    enabled: bool
    mode: str
    claim_name: str
    mount_path: str
    size_gib: int | None  # required when enabled (spec/_checks/aws.py fsx_settings); None when FSx is off
    zone: str | None
    deployment_type: str
    csi_driver: str
    dynamic: Pairs  # StorageClass parameters, as strings
    static: Pairs  # fileSystemId, dnsName, mountName

    @property
    def can_grow(self) -> bool:
        """FSx UpdateFileSystem raises the capacity of SCRATCH_2, PERSISTENT_1 and PERSISTENT_2 file
        systems (in multiples of 2400 GiB); a SCRATCH_1 file system keeps the size it was created with."""
        return self.deployment_type != "SCRATCH_1"


@dataclass(frozen=True)
class Storage:
    fsx: Fsx
    shm_enabled: bool
    shm_size_limit: str


@dataclass(frozen=True, kw_only=True)
class MariaDbSettings:
    storage_class_name: str
    size: str
    memory: str
    cpu: str
    buffer_pool_size_mib: int
    max_allowed_packet_mib: int
    max_user_connections: int


@dataclass(frozen=True)
class KubePrometheusStack:
    enabled: bool
    namespace: str
    retention: str
    storage_class_name: str
    storage_size: str


@dataclass(frozen=True, kw_only=True)
class Database:
    mode: str  # in-cluster | external
    host: str
    port: int
    name: str
    user: str
    password_secret: SecretKeyRef
    in_cluster: MariaDbSettings
    tls_ca: SecretKeyRef | None  # external only: ConfigMap name/key of the CA bundle
    password_revision: int  # bumped by hand after a rotation; rolls slurmdbd

    @property
    def managed(self) -> bool:
        """True when the generator runs the database (mariadb-operator)."""
        return self.mode == "in-cluster"


@dataclass(frozen=True)
class Accounting:
    enabled: bool
    database: Database


@dataclass(frozen=True)
class Secrets:
    mode: str  # external-secrets | precreated
    slurm_key: SecretKeyRef
    jwt_key: SecretKeyRef
    aws_region: str | None  # set when values come from AWS Secrets Manager
    aws_prefix: str | None

    @property
    def generated(self) -> bool:
        return self.mode == "external-secrets"


@dataclass(frozen=True)
class ServiceMonitor:
    enabled: bool
    labels: Pairs
    interval: str
    scrape_timeout: str


@dataclass(frozen=True)
class Metrics:
    enabled: bool
    service_monitor: ServiceMonitor


@dataclass(frozen=True)
class Qos:
    name: str
    priority: int
    description: str | None
    preempt: tuple[str, ...]
    preempt_mode: str | None
    grace_time_seconds: int | None
    usage_factor: float | None
    max_tres_per_user: Pairs
    max_tres_per_job: Pairs
    grp_tres: Pairs
    max_wall_duration_per_job: str | None
    flags: tuple[str, ...]


@dataclass(frozen=True)
class PolicyAccount:
    name: str
    parent: str
    fairshare: int
    description: str | None
    organization: str | None
    qos: tuple[str, ...]
    default_qos: str | None
    grp_tres: Pairs
    max_tres_per_job: Pairs


@dataclass(frozen=True)
class PolicyUser:
    name: str
    default_account: str
    accounts: tuple[str, ...]
    admin_level: str | None
    fairshare: int


@dataclass(frozen=True)
class Policy:
    """Accounts, users and QoS held in git and loaded into slurmdbd."""

    qos: tuple[Qos, ...]
    default_qos: str | None
    accounts: tuple[PolicyAccount, ...]
    users: tuple[PolicyUser, ...]

    @property
    def preempts(self) -> bool:
        return any(q.preempt for q in self.qos)


#: The Slurm user slurm-bridge submits its external jobs as: the `username` of the Token whose JWT it
#: holds. `slurm` (uid 401) exists in every Slinky image, so slurmctld resolves it (slurm-bridge
#: docs/quickstart.md and hack/token.yaml @ v1.2.1 issue the token to it).
BRIDGE_USER = "slurm"


@dataclass(frozen=True)
class Bridge:
    """Kubernetes workloads Slurm schedules through slurm-bridge: which namespaces, where, charged to whom."""

    namespaces: tuple[str, ...]
    partition: str
    nodesets: tuple[str, ...]  # resolved: the partition's nodesets
    account: str | None
    qos: str | None
    labeler_image: str


@dataclass(frozen=True)
class ClusterSpec:
    """One cluster, fully resolved: what `clusters/<name>.yaml` means."""

    source: str  # the file it came from, for messages
    name: str
    aws: AwsSettings
    gitops: GitOpsSettings
    versions: Versions
    images: Images
    namespace: str
    operator_namespace: str
    slurm_cluster_name: str
    placement: Placement
    compute: Compute
    persistence: Persistence
    controller_extra_conf: tuple[str, ...]
    scheduling: Scheduling
    partitions: tuple[Partition, ...]
    nodesets: tuple[NodeSetSpec, ...]
    login: Login
    accounting: Accounting
    secrets: Secrets
    metrics: Metrics
    storage: Storage
    kube_prometheus_stack: KubePrometheusStack
    policy: Policy | None
    topology: TopologySpec | None
    directory: Directory | None  # absent: only root logs in
    prometheus_address: str | None  # where KEDA reads Slurm metrics
    bridge: Bridge | None  # absent: no Kubernetes workload is scheduled by Slurm

    def bridged(self, nodeset: str) -> bool:
        """True when slurm-bridge may place Kubernetes pods on this nodeset's nodes."""
        return self.bridge is not None and nodeset in self.bridge.nodesets

    def nodeset(self, name: str) -> NodeSetSpec:
        return next(ns for ns in self.nodesets if ns.name == name)

    def pool_zones(self, ns: NodeSetSpec) -> tuple[str, ...]:
        """Zones a nodeset's nodes may use (its NodePool's zone requirement): with FSx, its zone (no
        cross-zone Lustre traffic), unless the nodeset lists zones of its own (which must include the FSx
        zone, spec/_checks/aws.py fsx_zones): a spot nodeset spread over zones finds capacity more often, and
        pays cross-zone traffic for it. Read by charts/compute.py and the placement group rule."""
        fsx = self.storage.fsx
        if fsx.enabled and fsx.zone and not ns.own_zones:
            return (fsx.zone,)
        return ns.zones

    def sole_partitions(self, nodeset: str) -> tuple[Partition, ...]:
        """The partitions that hold this nodeset and no other."""
        return tuple(p for p in self.partitions if p.nodesets == (nodeset,))

    def own_partition(self, nodeset: str) -> Partition | None:
        """The partition the NodeSet declares itself: one of its sole partitions, named as the nodeset
        and written as that name (not [ALL] resolving to it alone)."""
        return next((p for p in self.sole_partitions(nodeset) if p.name == nodeset and not p.all_nodesets), None)
