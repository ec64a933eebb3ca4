"""The Slurm cluster as Slinky v1beta1 custom resources: Controller, RestApi, Accounting, LoginSet, NodeSets.

Pitfalls avoided (slurm-operator v1.2.1, its CRDs and controllers): every container wrapper sets `image` (the operator has
no defaults); NodeSet `extraConf` is single-space `Key=Value` tokens; `partition.config` is one
line; `ssh` is never emitted half-set; config files are ConfigMaps named in `configFileRefs` and
synced before the Controller, whose webhook reads them at admission; partitions only name nodesets
this extraConf defines itself (nodeset_lines); the Controller's pod rolls when a config file changes
(CONFIG_FILES_HASH).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping

from constructs import Construct

from slurmgen.kube import naming, waves
from slurmgen.catalog.sizing import slurm_cpus, slurm_real_memory_mb
from slurmgen.plan.nodesets import DO_NOT_DISRUPT, NodeSetPlan
from slurmgen.spec import ClusterSpec, Partition
from slurmgen.kube.vocabulary import KEEP, PRUNE_LAST, SKIP_DRY_RUN, SYNC_OPTIONS
from ._objects import emit, wave
from .accounting import accounting_spec
from .autoscaling import API as KEDA_API
from .bridge import emit_bridge
from .autoscaling import AWS_AUTH, ignore_replicas, scaled_object_spec, trigger_authentication_spec
from .policy import bootstrap_pod, emit_accounts_config, emit_policy
from .slurm_waits import emit_waits
from .directory import COMMON_SESSION, COMMON_SESSION_PAM, PAM_CONFIGMAP, ca_volumes, login_volumes
from .directory import worker_sshd_config
from .login import loginset_spec, ssh_service
from .secrets import sssd_secret
from .storage import pod_volumes
from .topology import emit_labeler
from slurmgen.plan.topology import topology_yaml
from .unit import SyncSettings, UnitChart

API = "slinky.slurm.net/v1beta1"

# Sync waves inside the Slurm application: config first, then the CRs in dependency order.
WAVE_CONFIG, WAVE_ACCOUNTING, WAVE_CONTROLLER, WAVE_WORKERS = 0, 1, 2, 3

METRICS_ENDPOINTS = ("/metrics/jobs", "/metrics/nodes", "/metrics/partitions", "/metrics/scheduler")

CGROUP_CONF = """\
CgroupPlugin=autodetect
IgnoreSystemd=yes
ConstrainCores=yes
ConstrainRAMSpace=yes
ConstrainDevices=yes
ConstrainSwapSpace=yes
"""

GRES_CONF = "AutoDetect=nvidia\n"  # NVIDIA GPUs, every node (a node-specific line below wins)

# Every Neuron Slurm node name a nodeset can have (<nodeset>-0 ...): fixed, not the replica count,
# so scaling never rewrites gres.conf (a change restarts slurmctld through the config hash).
NEURON_NODE_RANGE = "[0-9999]"


def gres_conf(plans: Mapping[str, NodeSetPlan]) -> str | None:
    """gres.conf: AutoDetect=nvidia for NVIDIA nodes, AutoDetect=nrt for each Neuron nodeset's nodes.

    A node-specific AutoDetect line wins over the global one (gres.conf.5 and src/interfaces/gres.c
    _handle_local_autodetect @ slurm-26-05-3-1); slurmd matches `NodeName=` as a hostlist against
    its own name, so one shared file serves mixed clusters. None when no nodeset has devices.
    """
    text = GRES_CONF if any(p.instance.is_nvidia for p in plans.values()) else ""
    lines = []
    for plan in sorted(plans.values(), key=lambda p: p.nodeset.name):
        if plan.instance.is_neuron and plan.shape.accelerators:  # Slurm node names: the NodeSet hostname prefix
            lines.append(f"NodeName={plan.nodeset.name}-{NEURON_NODE_RANGE} AutoDetect=nrt")
    return text + "".join(f"{line}\n" for line in lines) or None


def has_gres(plans: Mapping[str, NodeSetPlan]) -> bool:
    """True when a nodeset's slurmd declares a `gpu` GRES (NVIDIA GPUs or Neuron devices)."""
    return gres_conf(plans) is not None


# Pod-template annotation on the Controller that carries a hash of our configFileRefs ConfigMaps.
# slurm-operator v1.2.1 hashes only its own `<name>-config` ConfigMap into the slurmctld pod
# (internal/builder/controllerbuilder/controller_app.go, getHashes) and does not watch the
# ConfigMaps named in configFileRefs (internal/controller/controller/controller_controller.go owns
# its own ConfigMaps and watches only Accounting, NodeSet and Secret); inplaceReconfigure defaults
# to false. A changed hash changes the StatefulSet template, so slurmctld restarts with the new
# files, and its SlurmctldParameters=reconfig_on_restart (always written by the operator,
# controller_config.go) makes every slurmd and sackd reconfigure and fetch them configless
# (Slurm 25.11+, slurm.conf(5)). NodeSet and LoginSet pods mount none of these files (workerbuilder
# nodesetVolumes: slurm.key only; loginbuilder: configless sackd), so their templates need no hash,
# and no slurmd pod (with its jobs) is recreated for a config edit.
CONFIG_FILES_HASH = "slurmgen.dev/config-files-hash"

# Always written: without a task plugin nothing in cgroup.conf is enforced (ConstrainCores/RAMSpace/
# Devices act through task/cgroup), and the operator writes neither (controller_config.go,
# buildSlurmConf). The stack is the one slurm.conf(5) recommends; both plugins are in the image's
# slurm-smd package (Slurm's own debian packaging, built with hwloc and dbus). ProctrackType is
# explicit because its default depends on the build (src/common/read_config.h, WITH_CGROUP).
TASK_CONF = ("ProctrackType=proctrack/cgroup", "TaskPlugin=task/cgroup,task/affinity",
             "JobAcctGatherType=jobacct_gather/cgroup")

# A bridged node runs native Slurm jobs or Kubernetes pods, never both at once: slurm-bridge's external
# jobs carry the MCS label `kubernetes` (values.yaml schedulerConfig.mcsLabel @ v1.2.1) and are
# exclusive unless a workload says otherwise (internal/wellknown/annotations.go AnnotationExclusive);
# with mcs/label and `ondemandselect` a job with a label only gets nodes whose jobs share it. The
# setting slurm-bridge's docs/config.md @ v1.2.1 gives for hybrid nodes ("Hybrid Workload Isolation").
BRIDGE_MCS = ("MCSPlugin=mcs/label", "MCSParameters=ondemand,ondemandselect")


class SlurmClusterChart(UnitChart):
    unit = "slurm"

    def __init__(self, scope: Construct, spec: ClusterSpec, plans: Mapping[str, NodeSetPlan]) -> None:
        super().__init__(scope, spec, SyncSettings(wave=waves.SLURM, namespace=spec.namespace, create_namespace=True,
                                                   ignore_differences=ignore_replicas(spec)))
        self.plans = plans
        self._config_files()
        if spec.accounting.enabled:
            self._accounting()
        self._controller()
        self._restapi()
        if spec.login.enabled:
            self._loginset()
        auth = trigger_authentication_spec(spec)
        if auth is not None:  # read by the ScaledObjects (next) for Amazon Managed Prometheus
            emit(self, api_version=KEDA_API, kind="TriggerAuthentication", name=AWS_AUTH, namespace=spec.namespace,
                 annotations=wave(WAVE_WORKERS + 1, **{SYNC_OPTIONS: SKIP_DRY_RUN}), body={"spec": auth})
        for plan in plans.values():
            self._nodeset(plan)
            if plan.nodeset.autoscale:
                emit(self, api_version=KEDA_API, kind="ScaledObject", name=naming.nodeset_cr(plan.nodeset.name),
                     namespace=spec.namespace, annotations=wave(WAVE_WORKERS + 1, **{SYNC_OPTIONS: SKIP_DRY_RUN}),
                     body={"spec": scaled_object_spec(spec, plan.nodeset)})
        emit_waits(self, spec, WAVE_ACCOUNTING if spec.accounting.enabled else None, WAVE_CONTROLLER,
                   spec.placement.pod_spec())
        if spec.accounting.enabled:
            emit_accounts_config(self, spec)
        if spec.policy is not None:
            emit_policy(self, spec, spec.placement.pod_spec())
        if spec.topology is not None and (spec.topology.tree or spec.topology.blocks):
            emit_labeler(self, spec, WAVE_CONFIG)  # only flat partitions: nothing to label
        emit_bridge(self, spec, plans, WAVE_CONTROLLER + 1, WAVE_CONFIG)  # nothing without spec.bridge

    # -- helpers -------------------------------------------------------------------------------

    def _cr(self, kind: str, name: str, wave_no: int, spec_body: dict[str, Any], *, stateful: bool = False) -> None:
        options = f"{SKIP_DRY_RUN},{KEEP}" if stateful else SKIP_DRY_RUN
        emit(self, api_version=API, kind=kind, name=name, namespace=self.spec.namespace,
             annotations=wave(wave_no, **{SYNC_OPTIONS: options}), body={"spec": spec_body})

    def _core_template(self, component: str, volumes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """Pod template for control-plane pods: the core node group, and a label we can select on."""
        pod: dict[str, Any] = dict(self.spec.placement.pod_spec())
        if volumes:
            pod["volumes"] = volumes
        return {"metadata": {"labels": {naming.COMPONENT_LABEL: component}}, "spec": pod or None}

    def _sidecar(self) -> dict[str, str]:
        return {"image": self.spec.images.sidecar}

    # -- objects -------------------------------------------------------------------------------

    def _config_file_data(self) -> dict[str, dict[str, str]]:
        """The ConfigMaps the Controller mounts through configFileRefs: {name: data}."""
        files = {naming.CGROUP_CONF: {"cgroup.conf": CGROUP_CONF}}
        gres = gres_conf(self.plans)
        if gres is not None:
            files[naming.GRES_CONF] = {"gres.conf": gres}
        if self.spec.topology is not None:
            # A known config file of the operator's webhook (internal/webhook/controller_webhook.go@v1.2.1);
            # its edits reach slurmctld through CONFIG_FILES_HASH like the others.
            files[naming.TOPOLOGY_CONF] = {"topology.yaml": topology_yaml(self.spec)}
        return files

    def _config_files(self) -> None:
        # PruneLast: a file leaving configFileRefs (topology off, the last GPU nodeset gone) is deleted
        # only after the Controller that names it is updated at its later wave; pruned at its own wave
        # (gitops-engine swaps prune waves), the operator could not build slurm.conf in between
        # (BuildControllerConfig fails on a missing ConfigMap). Argo CD reads it from the live object.
        for name, data in self._config_file_data().items():
            emit(self, api_version="v1", kind="ConfigMap", name=name, namespace=self.spec.namespace,
                 annotations=wave(WAVE_CONFIG, **{SYNC_OPTIONS: PRUNE_LAST}), body={"data": data})
        d = self.spec.directory
        if d is not None and d.create_homes and self.spec.login.enabled:
            emit(self, api_version="v1", kind="ConfigMap", name=PAM_CONFIGMAP, namespace=self.spec.namespace,
                 annotations=wave(WAVE_CONFIG), body={"data": {COMMON_SESSION: COMMON_SESSION_PAM}})

    def _controller(self) -> None:
        spec = self.spec
        image = spec.images.for_component("slurmctld")
        body: dict[str, Any] = {
            "clusterName": spec.slurm_cluster_name,
            "slurmKeyRef": spec.secrets.slurm_key.as_ref(),
            "jwtKeyRef": spec.secrets.jwt_key.as_ref(),
            "slurmctld": {"image": image},
            "reconfigure": {"image": image},
            "logfile": self._sidecar(),
            "template": self._controller_template(),
            "persistence": {
                "enabled": True,
                "storageClassName": spec.persistence.storage_class_name,
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": spec.persistence.size}},
            },
            "configFileRefs": [{"name": n} for n in sorted(self._config_file_data())],
            "extraConf": controller_extra_conf(spec, self.plans),
        }
        if spec.accounting.enabled:
            body["accountingRef"] = {"name": naming.CONTROLLER}
        if spec.metrics.enabled:
            body["metrics"] = self._metrics()
        self._cr("Controller", naming.CONTROLLER, WAVE_CONTROLLER, body, stateful=True)

    def _controller_template(self) -> dict[str, Any]:
        """slurmctld's pod template, annotated with the hash of our config files (see CONFIG_FILES_HASH)."""
        template = self._core_template("slurmctld")
        template["metadata"]["annotations"] = {CONFIG_FILES_HASH: config_files_hash(self._config_file_data())}
        if self.spec.accounting.enabled:  # QoS in slurmdbd before slurmctld starts (policy.bootstrap_pod)
            boot = bootstrap_pod(self.spec)
            pod = dict(template["spec"] or {})
            pod["initContainers"] = boot["initContainers"]
            pod["volumes"] = [*pod.get("volumes", []), *boot["volumes"]]
            template["spec"] = pod
        return template

    def _metrics(self) -> dict[str, Any]:
        sm = self.spec.metrics.service_monitor
        metrics: dict[str, Any] = {"enabled": True}
        if sm.enabled:
            metrics["serviceMonitor"] = {
                "enabled": True,
                "labels": dict(sm.labels),
                "interval": sm.interval,
                "scrapeTimeout": sm.scrape_timeout,
                "endpoints": [{"path": path} for path in METRICS_ENDPOINTS],
            }
        return metrics

    def _accounting(self) -> None:
        body = accounting_spec(self.spec, self._core_template("slurmdbd"))
        self._cr("Accounting", naming.CONTROLLER, WAVE_ACCOUNTING, body)

    def _restapi(self) -> None:
        # Required in practice: the operator drains and watches Slurm nodes only through a RestApi.
        body = {
            "controllerRef": {"name": naming.CONTROLLER},
            "replicas": 1,
            "slurmrestd": {"image": self.spec.images.for_component("slurmrestd")},
            "template": self._core_template("slurmrestd"),
        }
        self._cr("RestApi", naming.CONTROLLER, WAVE_WORKERS, body)

    def _loginset(self) -> None:
        volumes, mounts = pod_volumes(self.spec, gpu=False)
        extra_vols, extra_mounts = login_volumes(self.spec)
        volumes, mounts = volumes + extra_vols, mounts + extra_mounts
        body = loginset_spec(self.spec, self._core_template("login", volumes), mounts, sssd_secret(self.spec).as_ref())
        self._cr("LoginSet", naming.LOGIN, WAVE_WORKERS, body)
        if self.spec.login.service.enabled:
            ssh_service(self, self.spec, WAVE_WORKERS)

    def _nodeset(self, plan: NodeSetPlan) -> None:
        ns = plan.nodeset
        volumes, mounts = pod_volumes(self.spec, gpu=plan.instance.is_nvidia, memory_mi=plan.shape.memory_mi)
        ca_vols, ca_mounts = ca_volumes(self.spec)
        volumes, mounts = volumes + ca_vols, mounts + ca_mounts
        slurmd: dict[str, Any] = {
            "image": ns.image,
            "resources": {"requests": plan.slurmd_requests(), "limits": plan.slurmd_limits()},
        }
        if not slurmd["resources"]["limits"]:
            del slurmd["resources"]["limits"]
        if plan.bridged and plan.instance.is_nvidia:
            # No nvidia.com/gpu request (plan.slurmd_requests): the NVIDIA container runtime of the GPU
            # AMIs hands every GPU, and NVML for gres AutoDetect, to a container that asks by name.
            slurmd["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
                             {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"}]
        if mounts:
            slurmd["volumeMounts"] = mounts
        pod: dict[str, Any] = {
            "hostname": f"{ns.name}-",  # Slurm nodes <name>-0.. and Slurm NodeSet <name>
            "nodeSelector": plan.node_selector,
            "tolerations": [t.as_dict() for t in plan.tolerations],
        }
        if volumes:
            pod["volumes"] = volumes
        body: dict[str, Any] = {
            "controllerRef": {"name": naming.CONTROLLER},
            "slurmd": slurmd,
            "logfile": self._sidecar(),
            "extraConf": plan.slurm_conf,
            "template": {
                "metadata": {
                    "labels": {naming.COMPONENT_LABEL: "slurmd", naming.NODESET_LABEL: ns.name},
                    # Karpenter must never consolidate or drift a node out from under a running job.
                    "annotations": {DO_NOT_DISRUPT: "true"},
                },
                "spec": pod,
            },
        }
        if self.spec.directory is not None:
            # The operator mounts sssd.conf into slurmd only with ssh enabled (workerbuilder/worker_app.go
            # nodesetVolumes, v1.2.1); the image's sssd then resolves the job's user, groups and file
            # owners, and sshd (pam_slurm_adopt) admits a user with a job on the node.
            body["ssh"] = {"enabled": True, "sssdConfRef": sssd_secret(self.spec).as_ref(),
                           "extraSshdConfig": worker_sshd_config(self.spec.directory)}
        if ns.scaling_mode == "DaemonSet":
            body["scalingMode"] = "DaemonSet"  # one slurmd per matching node; replicas do not apply
        else:
            # Autoscaled: created at min, then KEDA owns the count (Argo CD ignores it, see apps).
            body["replicas"] = ns.autoscale.min if ns.autoscale else ns.replicas
        own = self.spec.own_partition(ns.name)
        if own is not None:
            body["partition"] = {"enabled": True, "config": " ".join(own.config_tokens(default_memory(own, self.plans)))}
        self._cr("NodeSet", naming.nodeset_cr(ns.name), WAVE_WORKERS, body)


def default_memory(part: Partition, plans: Mapping[str, NodeSetPlan]) -> tuple[str, ...]:
    """DefMemPerGPU (GPU partitions) or DefMemPerCPU: without one, a job that gives no --mem gets the
    whole node's memory and one single-GPU job would block an 8-GPU node."""
    members = [plans[name] for name in part.nodesets if name in plans]
    if not members:
        return ()
    real = {p.nodeset.name: slurm_real_memory_mb(p.shape) for p in members}
    if all(p.instance.is_nvidia and p.shape.accelerators for p in members):
        return (f"DefMemPerGPU={min(real[p.nodeset.name] // p.shape.accelerators for p in members)}",)
    cpus = {p.nodeset.name: slurm_cpus(p.instance, p.shape) for p in members}
    return (f"DefMemPerCPU={min(real[n] // max(cpus[n], 1) for n in real)}",)


def config_files_hash(files: Mapping[str, Mapping[str, str]]) -> str:
    """sha256 of the config files' names and contents, independent of key order."""
    return hashlib.sha256(json.dumps(files, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def nodeset_lines(spec: ClusterSpec) -> list[str]:
    """`NodeSet=<n> Feature=<n>` for every declared nodeset, whether or not its CR exists yet.

    The operator writes this line only for the NodeSet CRs that exist (slurm-operator v1.2.1
    internal/builder/controllerbuilder/controller_config.go, buildNodeSetConf). A partition in
    extraConf that names a nodeset without its line makes slurmctld exit: Slurm takes an unknown name
    for a host name (SchedMD/slurm slurm-26-05-1-1 src/slurmctld/read_config.c,
    nodespec_to_hostlist, then `fatal("Invalid node names in partition %s")`). With the Controller
    at wave 2 and NodeSets at wave 3 that is every first install, every nodeset added with its
    partition in one commit, and a removed CR while the partition still names it. The same
    definition written twice is harmless: the first match swaps the name for the nodes with the
    feature, the second finds nothing left to swap; a feature no node has yet is an empty set.
    """
    return [f"NodeSet={ns.name} Feature={ns.name}" for ns in spec.nodesets]


def controller_extra_conf(spec: ClusterSpec, plans: Mapping[str, NodeSetPlan]) -> str:
    """slurm.conf lines appended by the operator after its own: task plugins, GRES, policy, partitions."""
    gpus = has_gres(plans)
    # Dynamic nodes need cons_tres; set it even though 26.05 defaults to it, so the intent is explicit.
    lines: list[str] = ["SelectType=select/cons_tres", "SelectTypeParameters=CR_Core_Memory", *TASK_CONF]
    if gpus:
        lines.append("GresTypes=gpu")  # the operator does not set it; without it no GRES plugin loads
        if spec.accounting.enabled:
            lines.append("AccountingStorageTRES=gres/gpu")  # record GPU/Neuron usage for fair share
    fair = spec.scheduling.fair_share
    if fair.enabled:
        lines += [
            "PriorityType=priority/multifactor",
            f"PriorityDecayHalfLife={fair.decay_half_life}",
            f"PriorityWeightFairshare={fair.weight_fairshare}",
            f"PriorityWeightAge={fair.weight_age}",
            f"PriorityWeightJobSize={fair.weight_job_size}",
            f"PriorityWeightPartition={fair.weight_partition}",
            f"PriorityWeightQOS={fair.weight_qos}",
        ]
    if spec.policy is not None:
        lines.append("AccountingStorageEnforce=associations,limits,qos")  # jobs need a valid account and QoS
    if spec.bridge is not None:
        lines += list(BRIDGE_MCS)
    if spec.scheduling.preempt_lower_tiers:
        lines += ["PreemptType=preempt/partition_prio", "PreemptMode=REQUEUE"]
    elif spec.policy is not None and spec.policy.preempts:
        lines += ["PreemptType=preempt/qos", "PreemptMode=REQUEUE"]
    lines += nodeset_lines(spec)
    for part in spec.partitions:
        if spec.own_partition(part.name) is part:
            continue  # declared by its NodeSet, with the operator's own NodeSet line
        # [ALL] is written as its resolved list: Nodes=ALL would also take the spot and autoscaled
        # nodesets that did not opt in (includeInAll), and every node of any kind added later.
        nodes = ",".join(part.nodesets)
        tokens = part.config_tokens(default_memory(part, plans))
        lines.append(" ".join([f"PartitionName={part.name}", f"Nodes={nodes}", *tokens]))
    lines += list(spec.controller_extra_conf)
    return "".join(f"{line}\n" for line in lines)
