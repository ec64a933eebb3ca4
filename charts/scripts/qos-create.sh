# Create every QoS of the spec that slurmdbd lacks, by name and description only: what slurmctld
# checks at startup, and what lets a QoS or an account of the flat file name another QoS. Limits,
# Preempt= and the rest come with the accounts Job's load. `sacctmgr add` needs only an admin
# (SlurmUser is one); `sacctmgr load` would also need the caller in slurmdbd's users (root is).
sacctmgr -nP show qos format=name > "$t/qos-names"
while IFS='|' read -r qos description; do
  grep -qxF "$qos" "$t/qos-names" && continue
  echo "creating QoS $qos"
  sacctmgr -i add qos name="$qos" description="$description"
done < "$cfg/qos-bootstrap"
sacctmgr -nP show qos format=name > "$t/qos-names"
grep -vxF -f "$t/qos-names" "$cfg/declared-qos" > "$t/qos-missing" || true
if [ -s "$t/qos-missing" ]; then
  echo "QoS not in slurmdbd after creating them: $(tr '\n' ' ' < "$t/qos-missing")" >&2
  exit 1
fi
