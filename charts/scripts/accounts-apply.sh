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

# the whole file, once every QoS exists (scripts/qos-create.sh runs before this part)
sacctmgr -i load file="$cfg/accounts.cfg"

# `load` skips Preempt= on a QoS that exists, and QOS=/DefaultQOS= on the Cluster line of a cluster,
# or on an account, that exists (sacctmgr 26.05 exits 0 on both): set them explicitly where they differ.
sacctmgr -nP show qos format=name,preempt > $t/qos
while IFS='|' read -r qos preempt; do
  grep -qxF "$qos|$preempt" $t/qos || sacctmgr -i modify qos where name="$qos" set preempt="$preempt" || failed=1
done < "$cfg/expected-qos"
while IFS='|' read -r account user qos defqos; do
  have=$(sacctmgr -nP show assoc where cluster="$cluster" account="$account" user= format=qos,defaultqos | head -n 1)
  [ "$have" = "$qos|$defqos" ] ||
    sacctmgr -i modify account where name="$account" cluster="$cluster" set qos="$qos" defaultqos="$defqos" || failed=1
done < "$cfg/expected-associations"

# removals: only what carries our mark (QoS, accounts) or hangs under it (user associations)
# (awk: FILENAME == ARGV[1], not NR == FNR, as the first file may be empty)
sacctmgr -nP show account format=account,description | awk -F'|' -v m="$mark" 'index($2, m) {print $1}' > $t/marked
sacctmgr -nP show assoc cluster="$cluster" format=account,user,parentname > $t/assocs
awk -F'|' 'FILENAME == ARGV[1] {m[$1]; next} $2 == "" && ($1 in m) {print $1}' $t/marked $t/assocs |
  sort -u > $t/ours
awk -F'|' 'FILENAME == ARGV[1] {ours[$1]; next} ($1 in ours) && $2 != "" {print $2 "|" $1}' $t/ours $t/assocs |
  sort -u | grep -vxF -f "$cfg/declared-associations" - > $t/gone-assocs || true
while IFS='|' read -r user account; do
  echo "removing user $user from account $account"
  sacctmgr -i delete user name="$user" account="$account" cluster="$cluster" || failed=1
done < $t/gone-assocs
grep -vxF -f "$cfg/declared-accounts" $t/ours | grep -vx root > $t/gone-accounts || true
# deepest first: depth from the account associations' parents
awk -F'|' 'FILENAME == ARGV[1] {gone[$1]; next} $2 == "" {parent[$1] = $3}
  END {for (a in gone) {d = 0; p = a; while ((p in parent) && d < 100) {p = parent[p]; d++}; print d, a}}' \
  $t/gone-accounts $t/assocs | sort -rn > $t/gone-order
while read -r depth account; do
  echo "removing account $account from $cluster"
  sacctmgr -i delete account name="$account" cluster="$cluster" || failed=1
done < $t/gone-order
# with cluster= only the associations go; the account row goes once no cluster uses it
sacctmgr -nP show assoc format=account > $t/used
awk 'FILENAME == ARGV[1] {used[$1]; next} !($1 in used)' $t/used $t/marked | grep -vx root > $t/unused || true
while read -r account; do
  echo "removing account $account"
  sacctmgr -i delete account name="$account" || failed=1
done < $t/unused
sacctmgr -nP show qos format=name,description | awk -F'|' -v m="$mark" 'index($2, m) {print $1}' |
  grep -vxF -f "$cfg/declared-qos" - > $t/gone-qos || true
while read -r qos; do
  echo "removing qos $qos"
  sacctmgr -i delete qos name="$qos" || failed=1
done < $t/gone-qos
