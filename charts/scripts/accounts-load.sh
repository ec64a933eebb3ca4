# The accounts Job (Argo CD PostSync): loads the spec's QoS, accounts and users into slurmdbd, sets
# what `sacctmgr load` leaves alone on existing entities, removes what the spec dropped (ours only),
# then reads the database back and fails when it differs from the spec.
# Environment: CLUSTER, MARK (in the Description of every QoS and account we manage), ACCOUNTS_DIR,
# SLURM_CONF (a client slurm.conf that reaches slurmdbd directly, with slurm.key beside it).
set -eu
cfg=${ACCOUNTS_DIR:-/etc/slurm-accounts}
cluster=${CLUSTER:?CLUSTER is not set}
mark=${MARK:?MARK is not set}
failed=0
t=$(mktemp -d)
