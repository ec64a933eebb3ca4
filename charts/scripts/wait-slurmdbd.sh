# Wait (bounded: DBD_TRIES x 5 s) until slurmdbd answers; past it the container fails and is retried.
tries=${DBD_TRIES:-30}
i=0
until sacctmgr -n ping >/dev/null 2>&1; do
  i=$((i + 1)); [ "$i" -le "$tries" ] || { echo "slurmdbd did not answer for $((tries * 5)) s" >&2; exit 1; }
  sleep 5
done
