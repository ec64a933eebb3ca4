# Read back what the spec promises (QoS preemption, the QoS each association may use) and fail when
# slurmdbd holds something else: sacctmgr exits 0 on changes it did not make.
sacctmgr -nP show qos format=name,preempt > $t/qos
grep -vxF -f $t/qos "$cfg/expected-qos" > $t/qos-diff || true
while IFS='|' read -r qos preempt; do
  echo "QoS $qos: slurmdbd has Preempt='$(grep "^$qos|" $t/qos | cut -d'|' -f2)', the spec says '$preempt'" >&2
  failed=1
done < $t/qos-diff
sacctmgr -nP show assoc where cluster="$cluster" format=account,user,qos,defaultqos > $t/assoc-qos
grep -vxF -f $t/assoc-qos "$cfg/expected-associations" > $t/assoc-diff || true
while IFS='|' read -r account user qos defqos; do
  echo "association $account${user:+/$user}: slurmdbd does not hold QOS='$qos' DefaultQOS='$defqos' as the spec says" >&2
  failed=1
done < $t/assoc-diff
if [ "$failed" = 1 ]; then echo "slurmdbd does not hold what the spec declares (above); the next sync retries" >&2; exit 1; fi
