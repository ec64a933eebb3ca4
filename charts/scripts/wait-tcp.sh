# A Sync hook: hold the sync wave until $WHAT answers on $HOST:$PORT (bounded: WAIT_TRIES x 5 s; past it
# the Job fails, the sync operation fails and Argo CD retries it). The Service forwards only to pods that
# passed their readiness probe, so a connection means the daemon's pod is ready.
tries=${WAIT_TRIES:-120}
i=0
until timeout 3 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$HOST" "$PORT" 2>/dev/null; do
  i=$((i + 1))
  [ "$i" -le "$tries" ] || { echo "$WHAT ($HOST:$PORT) did not answer for $((tries * 5)) s" >&2; exit 1; }
  sleep 5
done
echo "$WHAT answers on $HOST:$PORT"
