"""What slurm-bridge needs inside the Slurm unit: its JWT (a Token) and the node name labeler.

slurm-bridge (SchedMD's Slinky project, chart and code read at v1.2.1) itself is a pinned Helm
Application (apps/helm.py `slurm_bridge`); this module holds the objects its chart does not make:

- the `Token` slurm-operator turns into the Secret `slurm-bridge-token` (key `auth-token`) that every
  slurm-bridge Deployment reads as SLURM_JWT (templates/*/deployment.yaml @ v1.2.1). Issued to the
  Slurm user `slurm`, signed with the cluster's JWT key, for a year and refreshed: slurm-bridge does
  not restart when the Secret changes, so a short lifetime would leave it with an expired token
  (docs/quickstart.md @ v1.2.1, which issues the same Token).
- the labeler that writes each bridged node's Slurm node name (charts/bridge_labeler.py says why),
  built like the topology labeler: one replica on the core placement, its script and config in one
  ConfigMap, a ClusterRole limited to reading and patching Nodes, a Role to list the slurmd pods.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from constructs import Construct

from slurmgen.kube import naming
from slurmgen.kube.vocabulary import SKIP_DRY_RUN, SYNC_OPTIONS
from slurmgen.kube.vocabulary import NODEPOOL_LABEL
from slurmgen.plan.nodesets import NodeSetPlan
from slurmgen.spec import ClusterSpec
from slurmgen.spec.model import BRIDGE_USER
from ._node_labeler import emit_node_labeler
from ._objects import emit, wave

SCRIPT = Path(__file__).resolve().parent / "bridge_labeler.py"  # shipped as is in a ConfigMap
RBAC = "rbac.authorization.k8s.io/v1"
#: slurm-bridge's lookup of a Slurm node's Kubernetes node (internal/wellknown/labels.go @ v1.2.1 LabelSlurmNodeName)
SLURM_NODENAME_LABEL = "slinky.slurm.net/slurm-nodename"
TOKEN_LIFETIME = "8760h"
LABELER_INTERVAL_SECONDS = 15


def token_spec(spec: ClusterSpec) -> dict[str, Any]:
    """The Token CR's spec (slurm-operator v1.2.1 api/v1beta1/token_types.go)."""
    return {"username": BRIDGE_USER, "jwtKeyRef": spec.secrets.jwt_key.as_ref(),
            "secretRef": {"name": naming.BRIDGE_TOKEN, "key": naming.BRIDGE_TOKEN_KEY},
            "lifetime": TOKEN_LIFETIME, "refresh": True}


def labeler_config(spec: ClusterSpec, plans: Mapping[str, NodeSetPlan]) -> dict[str, Any]:
    """What the labeler reads: the slurmd pods of the bridged nodesets and their NodePools' nodes."""
    bridged = sorted(p.nodeset.name for p in plans.values() if p.bridged)
    return {"namespace": spec.namespace, "podSelector": f"{naming.NODESET_LABEL} in ({','.join(bridged)})",
            "nodeLabel": SLURM_NODENAME_LABEL, "poolLabel": NODEPOOL_LABEL,
            "pools": sorted(plans[name].nodepool for name in bridged), "interval": LABELER_INTERVAL_SECONDS}


def labeler_files(spec: ClusterSpec, plans: Mapping[str, NodeSetPlan]) -> dict[str, str]:
    """ConfigMap data: the script (byte for byte the packaged module) and its JSON config."""
    config = json.dumps(labeler_config(spec, plans), indent=2, sort_keys=True) + "\n"
    return {"labeler.py": SCRIPT.read_text(encoding="utf-8"), "config.json": config}


def emit_bridge(scope: Construct, spec: ClusterSpec, plans: Mapping[str, NodeSetPlan],
                token_wave: int, labeler_wave: int) -> None:
    """The Token (after the Controller whose JWT key signs it) and the node name labeler."""
    if spec.bridge is None:
        return
    emit(scope, api_version="slinky.slurm.net/v1beta1", kind="Token", name=naming.BRIDGE_TOKEN,
         namespace=spec.namespace, annotations=wave(token_wave, **{SYNC_OPTIONS: SKIP_DRY_RUN}),
         body={"spec": token_spec(spec)})
    _emit_labeler(scope, spec, plans, labeler_wave)


def _emit_labeler(scope: Construct, spec: ClusterSpec, plans: Mapping[str, NodeSetPlan], wave_no: int) -> None:
    """The node labeler, which also lists the slurmd pods of its namespace (a Role of its own)."""
    sa, ns = naming.BRIDGE_LABELER, spec.namespace
    emit_node_labeler(scope, spec, cluster_role=naming.bridge_labeler(spec.name), account=sa,
                      component="bridge-labeler", image=spec.bridge.labeler_image if spec.bridge else "",
                      files=labeler_files(spec, plans), wave_no=wave_no)
    emit(scope, api_version=RBAC, kind="Role", name=sa, namespace=ns, annotations=wave(wave_no),
         body={"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]})
    emit(scope, api_version=RBAC, kind="RoleBinding", name=sa, namespace=ns, annotations=wave(wave_no),
         body={"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": sa},
               "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}]})
