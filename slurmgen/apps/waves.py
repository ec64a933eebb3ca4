"""Argo CD sync waves of the child Applications, lowest first.

Waves order only what the root Application syncs, and they wait for a child to be Healthy only
with the `argocd-cm` Application health check from the README's bootstrap section.
"""

PROJECT = -100      # the AppProject every child names
CRDS = -30          # CRD charts and cert-manager (its webhook must serve before the operator's Certificate)
OPERATORS = -20     # slurm-operator and its webhook
INFRA = -10         # node pools, storage, secrets: what the Slurm pods need to start
SLURM = 0           # the Slinky CRs
ADDONS = 10         # dashboards, policy jobs: need a running cluster
