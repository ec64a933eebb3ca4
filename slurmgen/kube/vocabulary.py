"""Words several layers share: Argo CD annotations and sync options, AWS Load Balancer Controller keys.

The charts, the Argo CD layer and the checks of the rendered tree all import them from here (the
sync waves live beside it, in waves.py), so none of those packages imports another for a string.
"""

MANAGED_BY = {"app.kubernetes.io/managed-by": "slurmgen"}

# Argo CD resource annotations and the sync options we set in them.
SYNC_WAVE = "argocd.argoproj.io/sync-wave"
SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
KEEP = "Prune=false,Delete=false"  # stateful: never pruned, never cascaded away with its Application
SKIP_DRY_RUN = "SkipDryRunOnMissingResource=true"  # the CRDs come from another Application
PRUNE_LAST = "PruneLast=true"

#: Prefix of the AWS Load Balancer Controller's Service annotations.
LBC = "service.beta.kubernetes.io/aws-load-balancer-"

# The Argo CD health checks the sync waves need are in health.py (Lua sources in lua/).

# Node labels the pods select on: the well-known instance-type label (kubelet sets it) and Karpenter's
# NodePool label (karpenter.sh/nodepool on every node a NodePool launches).
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
NODEPOOL_LABEL = "karpenter.sh/nodepool"
