# AdminLevel from directory groups (directory.adminGroups), for policy.users only.
# Environment: ADMIN_GROUPS, OPERATOR_GROUPS (lower case, space-separated), SSSD_TRIES.
sssd -D
i=0
until [ -S "${SSSD_NSS_PIPE:-/var/lib/sss/pipes/nss}" ]; do
  i=$((i + 1)); [ "$i" -le "${SSSD_TRIES:-30}" ] || { echo "sssd: no NSS socket after $((${SSSD_TRIES:-30} * 2)) s" >&2; exit 1; }
  sleep 2
done
admins=" ${ADMIN_GROUPS:-} "
operators=" ${OPERATOR_GROUPS:-} "
while IFS='|' read -r user level; do
  groups=$(id -nG "$user" 2>/dev/null) || {
    echo "cannot read the directory groups of $user; its AdminLevel is left as it is" >&2; failed=1; continue; }
  groups=$(printf '%s\n' "$groups" | tr 'A-Z' 'a-z')  # AD names: sssd case_sensitive = false
  want=$level
  for g in $groups; do
    case "$operators" in *" $g "*) [ "$want" = None ] && want=Operator ;; esac
    case "$admins" in *" $g "*) want=Administrator ;; esac
  done
  have=$(sacctmgr -nP show user name="$user" format=adminlevel)
  if [ "$have" != "$want" ]; then
    echo "AdminLevel of $user: $have -> $want"
    sacctmgr -i modify user where name="$user" set adminlevel="$want" || failed=1
  fi
done < "$cfg/admin-levels"
