# `sacctmgr load` creates what is missing and leaves what exists as it is, exiting 0: a later change to a
# QoS's limits or an account's fair share would never reach slurmdbd. Set the settings of every QoS and
# account of the spec as it declares them (qos-settings, account-settings: `<name>|<Key=Value> ...`,
# no value has a space), and clear (=-1) each TRES limit slurmdbd holds that the spec no longer names.
# sacctmgr says "Modified" whether or not a value changed, so its output is shown only on an error.
stale_tres() {  # $1: the limit fields, in the order of the held values on stdin; $2: the spec's settings
  awk -F'|' -v fields="$1" -v want="$2" '
    BEGIN { n = split(want, toks, " ")
            for (i = 1; i <= n; i++) { k = substr(toks[i], 1, index(toks[i], "=") - 1)
              m = split(substr(toks[i], index(toks[i], "=") + 1), pairs, ",")
              for (j = 1; j <= m; j++) has[k, substr(pairs[j], 1, index(pairs[j], "=") - 1)] = 1 } }
    { n = split(fields, f, " ")
      for (i = 1; i <= n; i++) { m = split($i, pairs, ",")
        for (j = 1; j <= m; j++) { t = substr(pairs[j], 1, index(pairs[j], "=") - 1)
          if (t != "" && !((f[i], t) in has)) printf "%s=%s=-1 ", f[i], t } } }'
}
while IFS='|' read -r qos settings; do
  clear=$(sacctmgr -nP show qos where name="$qos" format=maxtrespu,maxtrespj,grptres |
    stale_tres "MaxTRESPerUser MaxTRESPerJob GrpTRES" "$settings")
  # shellcheck disable=SC2086 # settings are words by construction
  sacctmgr -i modify qos where name="$qos" set $settings $clear > $t/out || { cat $t/out; failed=1; }
done < "$cfg/qos-settings"
while IFS='|' read -r account settings; do
  clear=$(sacctmgr -nP show assoc where cluster="$cluster" account="$account" user= format=grptres,maxtresperjob |
    head -n 1 | stale_tres "GrpTRES MaxTRESPerJob" "$settings")
  # shellcheck disable=SC2086
  sacctmgr -i modify account where name="$account" cluster="$cluster" set $settings $clear > $t/out ||
    { cat $t/out; failed=1; }
done < "$cfg/account-settings"
