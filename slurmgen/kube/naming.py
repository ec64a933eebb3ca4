"""Every object name the generator derives, in one place, so charts and checks agree on them."""

from __future__ import annotations

CONTROLLER = "slurm"  # Controller, RestApi and Accounting CRs; the operator derives slurm-controller, ...
LOGIN = "slurm-login"
CGROUP_CONF = "slurm-cgroup-conf"
GRES_CONF = "slurm-gres-conf"
TOPOLOGY_CONF = "slurm-topology-conf"  # topology.yaml, in the Controller's configFileRefs
TOPOLOGY_LABELER = "slurm-topology-labeler"
# slurm-bridge: the Secret its chart reads the JWT from (values.yaml sharedConfig.slurmJwtSecret @ v1.2.1,
# key `auth-token` in every Deployment), written by slurm-operator from the Token CR of the same name.
BRIDGE_TOKEN = "slurm-bridge-token"
BRIDGE_TOKEN_KEY = "auth-token"
BRIDGE_LABELER = "slurm-bridge-labeler"

# Label the generator puts on pods it wants to find again (login pods for the NLB Service, ...).
COMPONENT_LABEL = "slurmgen.dev/component"
NODESET_LABEL = "slurmgen.dev/nodeset"


def nodeset_cr(nodeset: str) -> str:
    """NodeSet CR name; the Slurm nodes are still <nodeset>-0, <nodeset>-1 (set by the hostname prefix)."""
    return f"slurm-worker-{nodeset}"


def nodepool(cluster: str, nodeset: str) -> str:
    """Karpenter NodePool (cluster-scoped), prefixed so several Slurm clusters can share one EKS cluster."""
    return f"{cluster}-{nodeset}"


def application(cluster: str, unit: str) -> str:
    """Argo CD Application names are global in the argocd namespace: prefix with the cluster."""
    return f"{cluster}-{unit}"


def root_application(cluster: str) -> str:
    return f"{cluster}-root"


def project(cluster: str) -> str:
    return f"{cluster}"


def topology_labeler(cluster: str) -> str:
    """ClusterRole/Binding of the topology labeler: cluster-scoped, so prefixed with the cluster."""
    return f"{cluster}-topology-labeler"


def bridge_labeler(cluster: str) -> str:
    """ClusterRole/Binding of the bridge's node name labeler: cluster-scoped, so prefixed with the cluster."""
    return f"{cluster}-bridge-labeler"
