# Before slurmctld starts (an init container in its pod): what slurmctld checks against slurmdbd at
# startup must already be there, and a failed earlier start must not block this one.
# Environment: STATE_DIR (slurmctld's StateSaveLocation), ACCOUNTS_DIR (the slurm-accounts files),
# SLURM_CONF (a client slurm.conf that reaches slurmdbd directly; slurmctld is not up yet).
set -eu
cfg=${ACCOUNTS_DIR:-/etc/slurm-accounts}
state=${STATE_DIR:?STATE_DIR is not set}

# 1. A start that stopped before saving any state leaves only `clustername` behind; the next start
#    then takes the folder for saved state and exits on the missing assoc_usage
#    (SchedMD/slurm slurm-26-05-3-1: src/slurmctld/controller.c _create_clustername_file,
#    src/common/assoc_mgr.c load_assoc_usage with clustername_existed). Nothing else is touched.
if [ -d "$state" ]; then
  left=$(ls -A "$state" | grep -vx 'lost+found' || true)
  if [ "$left" = clustername ]; then
    echo "removing $state/clustername: left by a start that saved no state"
    rm -f "$state/clustername"
  fi
fi

# 2. Every QoS of the spec exists: slurmctld refuses to start when a partition's AllowQos/DenyQos
#    or QOS names one slurmdbd does not know (src/slurmctld/read_config.c qos_list_build). Limits on
#    TRES such as gres/gpu are left to the accounts Job: slurmdbd knows those TRES only once
#    slurmctld has registered them (scripts/qos-create.sh follows this one).
[ -s "$cfg/qos-bootstrap" ] || exit 0
t=$(mktemp -d)
