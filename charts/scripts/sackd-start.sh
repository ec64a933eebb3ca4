# Slurm 26.05 clients never sign with slurm.key themselves: sacctmgr asks a sackd on a local socket
# (SchedMD/slurm slurm-26-05-3-1 src/plugins/auth/slurm/auth_slurm.c init(): the key is loaded by
# daemons only; src/common/sack_api.c looks for the socket in $SLURM_SACK_SOCKET, then under /run).
# This container has no sackd of its own and none of another container's sockets, so it starts one:
# the mounted slurm.conf (SlurmUser=slurm) and slurm.key, its socket in /run/slurm (an emptyDir), in
# a folder sackd makes itself (RUNTIME_DIRECTORY must start with /run/: src/common/proc_args.c).
# It ends with this script.
RUNTIME_DIRECTORY=/run/slurm/sack sackd -D -f "${SLURM_CONF:-/etc/slurm/slurm.conf}" \
  --key-file "${SLURM_KEY_FILE:-/etc/slurm/slurm.key}" &
sackd_pid=$!
trap 'kill "$sackd_pid" 2>/dev/null || true' EXIT
export SLURM_SACK_SOCKET=/run/slurm/sack/sack.socket
i=0
until [ -S "$SLURM_SACK_SOCKET" ]; do
  kill -0 "$sackd_pid" 2>/dev/null || { echo "sackd exited before it opened $SLURM_SACK_SOCKET" >&2; exit 1; }
  i=$((i + 1)); [ "$i" -le 100 ] || { echo "sackd: no $SLURM_SACK_SOCKET after 20 s" >&2; exit 1; }
  sleep 0.2
done
