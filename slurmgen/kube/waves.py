"""Argo CD sync waves of the child Applications, lowest first.

Waves order only what the root Application syncs, and they wait for a child to be Healthy only
with the `argocd-cm` Application health check (kube/health.py; dist/<cluster>/argocd/, patched in at bootstrap).
"""

PROJECT = -100      # the AppProject every child names
CRDS = -30          # CRD charts, cert-manager, External Secrets (their webhooks must serve before CRs arrive)
OPERATORS = -20     # slurm-operator, mariadb-operator, device plugins, the FSx CSI driver
SECRETS = -15       # generated keys and passwords: before the database and the Controller
INFRA = -10         # node pools, storage, the database: what the Slurm pods need to start
SLURM = 0           # the Slinky CRs
ADDONS = 10         # dashboards, policy jobs: need a running cluster
