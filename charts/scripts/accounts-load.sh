# The accounts Job (Argo CD PostSync): loads the spec's QoS, accounts and users into slurmdbd, sets
# what `sacctmgr load` leaves alone on existing entities, removes what the spec dropped (ours only),
# then reads the database back and fails when it differs from the spec.
# Environment: CLUSTER, MARK (in the Description of every QoS and account we manage), ACCOUNTS_DIR,
# SLURM_CONF (a client slurm.conf that reaches slurmdbd directly, with slurm.key beside it).
set -eu
cfg=${ACCOUNTS_DIR:-/etc/slurm-accounts}
cluster=${CLUSTER:?CLUSTER is not set}
mark=${MARK:?MARK is not set}
tries=${DBD_TRIES:-30}
failed=0
t=$(mktemp -d)

i=0
until sacctmgr -n ping >/dev/null 2>&1; do
  i=$((i + 1)); [ "$i" -le "$tries" ] || { echo "slurmdbd did not answer for $((tries * 5)) s" >&2; exit 1; }
  sleep 5
done
# TRES such as gres/gpu exist once slurmctld has registered them; a limit on an unknown one fails the load
i=0
while :; do
  sacctmgr -nP show tres format=type,name | awk -F'|' '{print ($2 == "" ? $1 : $1 "/" $2)}' > $t/tres
  grep -vxF -f $t/tres "$cfg/required-tres" > $t/no-tres || true
  [ -s $t/no-tres ] || break
  i=$((i + 1)); [ "$i" -le "$tries" ] || {
    echo "slurmdbd has no TRES $(tr '\n' ' ' < $t/no-tres)after $((tries * 5)) s: has slurmctld started?" >&2; exit 1; }
  sleep 5
done


