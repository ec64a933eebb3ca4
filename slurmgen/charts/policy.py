"""Slurm accounts, users and QoS as code: a sacctmgr flat file and the Job that applies it.

`sacctmgr -i load` adds what is missing and updates what changed, and never deletes. All `QOS -`
lines must precede the `Cluster -` line, and on the very first load a QoS (or an account) cannot
refer to a QoS the same file creates; so the Job first loads the QoS alone (without `Preempt=`)
whenever one of them is missing, then the full file. Names are lower-case: sacctmgr lower-cases
them anyway.

Removals: every QoS and account we load carries `[slurmgen <cluster>]` in its Description, so the
Job can tell ours from what an admin made by hand, or what another cluster's spec manages in a
shared slurmdbd. After the load it deletes the user associations on this cluster under our
accounts that the spec no longer declares, then this cluster's associations of our accounts it no
longer declares (deepest first), then the account rows of ours left with no association on any
cluster, then our QoS. `root` and unmarked entities are never touched. The data-loss guard
(guards.policy_removals) makes removing an account or QoS need `--allow-destroy`.

The Job runs the login image with its own command, which skips the image's entrypoint (supervisord
starting sackd: SlinkyProject/containers schedmd/slurm/26.05/*/files/usr/local/bin/login-entrypoint.sh).
The clients authenticate through sackd's socket (auth/slurm, SchedMD/slurm slurm-26-05-1-1
src/common/sack_api.c: /run/slurm/sack.socket) and read the slurm.conf sackd caches in
/run/slurm/conf (src/common/read_config.c), so the script starts sackd itself, configless, as
Slinky's LoginSet does (slurm-operator v1.2.1 internal/builder/common/common.go ConfiglessArgs).

Admin groups (`directory.adminGroups`): Slurm keeps AdminLevel per user in slurmdbd, so membership is
resolved when the Job runs (each sync), for the users of policy.users only. The Job then also mounts
the pods' sssd.conf (0600, root: sssd refuses anything else) and the directory CA, starts the
image's sssd as a daemon (in login pods supervisord runs `sssd -i`: SlinkyProject/containers
schedmd/slurm/26.05/ubuntu24.04/files/etc/supervisor/conf.d/sssd.conf), and
reads each user's groups with `id -nG`. A user whose groups cannot be read (directory unreachable,
unknown user: a fresh sssd has no cache) keeps its level and fails the Job, so an outage never
lowers anyone; otherwise the level is the highest of the spec's and the groups', and a user who left
every group goes back to the spec's (else None).
"""

from __future__ import annotations

import hashlib
from typing import Any, Iterable

from constructs import Construct

from .. import naming
from ..spec import ClusterSpec
from ..spec.model import Pairs, Policy, PolicyAccount, Qos
from ._objects import emit, wave
from .directory import ca_volumes
from .secrets import sssd_secret

CONFIG_MAP = "slurm-accounts"
JOB = "slurm-accounts-load"
MOUNT = "/etc/slurm-accounts"
SACKD_DIR = "/run/slurm"  # sackd's default runtime directory (src/sackd/sackd.c DEFAULT_RUN_DIR)
SACKD_WAIT = (60, 2)  # tries, seconds: sackd's socket and cached slurm.conf
PING_WAIT = (30, 5)  # tries, seconds: slurmdbd answering `sacctmgr ping`
SSSD_WAIT = (30, 2)  # tries, seconds: sssd's NSS socket
SSSD_NSS_PIPE = "/var/lib/sss/pipes/nss"  # sssd's NSS responder socket (sssd's default pipe path)


def _tres(pairs: Pairs) -> str:
    return ",".join(f"{k}={v}" for k, v in pairs)


def _opts(items: Iterable[tuple[str, Any]]) -> str:
    out = []
    for key, value in items:
        if value is None or value == "" or value == ():
            continue
        if isinstance(value, tuple):
            value = ",".join(value)
        out.append(f"{key}='{value}'" if isinstance(value, str) else f"{key}={value}")
    return "".join(f":{o}" for o in out)


def mark(spec: ClusterSpec) -> str:
    """In the Description of every QoS and account this cluster's spec manages."""
    return f"[slurmgen {spec.slurm_cluster_name}]"  # no colon: the flat file separates options with it


def _qos_line(q: Qos, marker: str, *, with_preempt: bool) -> str:
    return f"QOS - '{q.name}'" + _opts([
        ("Description", f"{q.description or q.name} {marker}"), ("Priority", q.priority),
        ("Preempt", q.preempt if with_preempt else None), ("PreemptMode", q.preempt_mode),
        ("GraceTime", q.grace_time_seconds), ("UsageFactor", q.usage_factor),
        ("MaxTRESPerUser", _tres(q.max_tres_per_user)), ("MaxTRESPerJob", _tres(q.max_tres_per_job)),
        ("GrpTRES", _tres(q.grp_tres)), ("MaxWallDurationPerJob", q.max_wall_duration_per_job),
        ("Flags", q.flags),
    ])


def _account_line(a: PolicyAccount, marker: str) -> str:
    return f"Account - '{a.name}'" + _opts([
        ("Description", f"{a.description or a.name} {marker}"), ("Organization", a.organization), ("Fairshare", a.fairshare),
        ("QOS", a.qos), ("DefaultQOS", a.default_qos), ("GrpTRES", _tres(a.grp_tres)),
        ("MaxTRESPerJob", _tres(a.max_tres_per_job)),
    ])


def _children(policy: Policy, parent: str) -> list[PolicyAccount]:
    return [a for a in policy.accounts if a.parent == parent]


def flat_file(spec: ClusterSpec, *, first_pass: bool = False) -> str:
    """The sacctmgr flat file for the cluster; `first_pass` holds only the QoS, without Preempt=."""
    policy = spec.policy
    if policy is None:
        raise ValueError(f"{spec.name} declares no policy")
    cluster = spec.slurm_cluster_name
    lines = [f"# Slurm accounts and QoS of {cluster}: generated by slurmgen from {spec.name}'s spec; do not edit"]
    lines += [_qos_line(q, mark(spec), with_preempt=not first_pass) for q in policy.qos]
    if first_pass:
        lines.append(f"Cluster - '{cluster}'")
        return "\n".join(lines) + "\n"
    all_qos = tuple(q.name for q in policy.qos)
    lines.append(f"Cluster - '{cluster}'" + _opts([("Fairshare", 1), ("QOS", all_qos if policy.default_qos else ()),
                                                   ("DefaultQOS", policy.default_qos)]))
    # Breadth-first from root, so every Parent is defined before its children. A user appears first
    # under its default account (sacctmgr reads DefaultAccount/AdminLevel only there), then under
    # its further accounts, after the whole tree exists.
    queue = ["root"]
    while queue:
        parent = queue.pop(0)
        accounts = _children(policy, parent)
        users = [u for u in policy.users if u.default_account == parent]
        if not accounts and not users:
            continue
        lines.append(f"Parent - '{parent}'")
        lines += [_account_line(a, mark(spec)) for a in accounts]
        lines += [f"User - '{u.name}'" + _opts([("DefaultAccount", u.default_account), ("AdminLevel", u.admin_level),
                                                ("Fairshare", u.fairshare)]) for u in users]
        queue += [a.name for a in accounts]
    for account in [a.name for a in policy.accounts]:
        extra = [u for u in policy.users if account in u.accounts and account != u.default_account]
        if extra:
            lines.append(f"Parent - '{account}'")
            lines += [f"User - '{u.name}'" + _opts([("Fairshare", u.fairshare)]) for u in extra]
    return "\n".join(lines) + "\n"


def declared(spec: ClusterSpec) -> dict[str, str]:
    """What the spec declares, one name (or `user|account`) a line: the Job deletes ours that are not listed."""
    policy = spec.policy
    if policy is None:
        raise ValueError(f"{spec.name} declares no policy")
    assocs = sorted({f"{u.name}|{a}" for u in policy.users for a in (u.default_account, *u.accounts)})
    out = {"declared-qos": "".join(f"{q.name}\n" for q in policy.qos),
           "declared-accounts": "".join(f"{a.name}\n" for a in policy.accounts),
           "declared-associations": "".join(f"{line}\n" for line in assocs)}
    if admin_groups(spec):
        out["admin-levels"] = "".join(f"{u.name}|{u.admin_level or 'None'}\n" for u in policy.users)
    return out


def admin_groups(spec: ClusterSpec) -> bool:
    """The Job resolves directory admin groups (and so needs sssd)."""
    d = spec.directory
    return d is not None and bool(d.admin_groups or d.operator_groups)


def _admin_block(spec: ClusterSpec) -> str:
    """Shell: AdminLevel from directory groups, for the users we manage (see module doc)."""
    d = spec.directory
    if d is None or not admin_groups(spec):
        return ""
    admins = " ".join(g.lower() for g in d.admin_groups)
    operators = " ".join(g.lower() for g in d.operator_groups)
    tries, pause = SSSD_WAIT
    return f"""# admin levels from directory groups (directory.adminGroups), for policy.users only
sssd -D
i=0
until [ -S {SSSD_NSS_PIPE} ]; do
  i=$((i + 1)); [ "$i" -le {tries} ] || {{ echo "sssd: no NSS socket after {tries * pause} s" >&2; exit 1; }}
  sleep {pause}
done
admins=' {admins} '
operators=' {operators} '
while IFS='|' read -r user level; do
  groups=$(id -nG "$user" 2>/dev/null) || {{
    echo "cannot read the directory groups of $user; its AdminLevel is left as it is" >&2; failed=1; continue; }}
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
done < $cfg/admin-levels
"""


def controller_address(spec: ClusterSpec) -> str:
    return f"{naming.CONTROLLER}-controller.{spec.namespace}:6817"


def load_script(spec: ClusterSpec) -> str:
    """sackd, a bounded wait for slurmdbd, the load, then the removals; idempotent, exit 0 when nothing changes.

    A deletion can fail (e.g. jobs still run under the association): the script tries every one,
    then exits 1 so the hook (and the Argo CD sync) shows it; the next sync tries again.
    """
    policy = spec.policy
    if policy is None:
        raise ValueError(f"{spec.name} declares no policy")
    check = "".join(f'sacctmgr -nP show qos name={q.name} format=name | grep -qx {q.name} || missing=1\n'
                    for q in policy.qos)
    tries, pause = SACKD_WAIT
    pings, ping_pause = PING_WAIT
    return f"""set -eu
cfg={MOUNT}
cluster='{spec.slurm_cluster_name}'
mark='{mark(spec)}'
# sackd: the image's entrypoint is skipped; --disable-reconfig: this pod is not a login node
/usr/sbin/sackd -D --disable-reconfig --conf-server {controller_address(spec)} &
sackd=$!
trap 'kill "$sackd" 2>/dev/null || true' EXIT
i=0
until [ -S {SACKD_DIR}/sack.socket ] && [ -f {SACKD_DIR}/conf/slurm.conf ]; do
  kill -0 "$sackd" 2>/dev/null || {{ echo "sackd exited before its socket appeared" >&2; exit 1; }}
  i=$((i + 1)); [ "$i" -le {tries} ] || {{ echo "sackd: no socket after {tries * pause} s" >&2; exit 1; }}
  sleep {pause}
done
i=0
until sacctmgr ping; do
  i=$((i + 1)); [ "$i" -le {pings} ] || {{ echo "slurmdbd did not answer for {pings * ping_pause} s" >&2; exit 1; }}
  sleep {ping_pause}
done
missing=0
{check}if [ "$missing" = 1 ]; then sacctmgr -i load file=$cfg/qos-first-pass.cfg; fi
sacctmgr -i load file=$cfg/accounts.cfg
# removals: only what carries our mark (QoS, accounts) or hangs under it (user associations)
# (awk: FILENAME == ARGV[1], not NR == FNR, as the first file may be empty)
failed=0
t=$(mktemp -d)
sacctmgr -nP show account format=account,description | awk -F'|' -v m="$mark" 'index($2, m) {{print $1}}' > $t/marked
sacctmgr -nP show assoc cluster="$cluster" format=account,user,parentname > $t/assocs
awk -F'|' 'FILENAME == ARGV[1] {{m[$1]; next}} $2 == "" && ($1 in m) {{print $1}}' $t/marked $t/assocs |
  sort -u > $t/ours
awk -F'|' 'FILENAME == ARGV[1] {{ours[$1]; next}} ($1 in ours) && $2 != "" {{print $2 "|" $1}}' $t/ours $t/assocs |
  sort -u | grep -vxF -f $cfg/declared-associations - > $t/gone-assocs || true
while IFS='|' read -r user account; do
  echo "removing user $user from account $account"
  sacctmgr -i delete user name="$user" account="$account" cluster="$cluster" || failed=1
done < $t/gone-assocs
grep -vxF -f $cfg/declared-accounts $t/ours | grep -vx root > $t/gone-accounts || true
# deepest first: depth from the account associations' parents
awk -F'|' 'FILENAME == ARGV[1] {{gone[$1]; next}} $2 == "" {{parent[$1] = $3}}
  END {{for (a in gone) {{d = 0; p = a; while ((p in parent) && d < 100) {{p = parent[p]; d++}}; print d, a}}}}' $t/gone-accounts $t/assocs |
  sort -rn | while read -r depth account; do
  echo "removing account $account from $cluster"
  sacctmgr -i delete account name="$account" cluster="$cluster" || echo 1 > $t/failed
done
# with cluster= only the associations go; the account row goes once no cluster uses it
sacctmgr -nP show assoc format=account > $t/used
awk 'FILENAME == ARGV[1] {{used[$1]; next}} !($1 in used)' $t/used $t/marked | grep -vx root > $t/unused || true
while read -r account; do
  echo "removing account $account"
  sacctmgr -i delete account name="$account" || failed=1
done < $t/unused
sacctmgr -nP show qos format=name,description | awk -F'|' -v m="$mark" 'index($2, m) {{print $1}}' |
  grep -vxF -f $cfg/declared-qos - > $t/gone-qos || true
while read -r qos; do
  echo "removing qos $qos"
  sacctmgr -i delete qos name="$qos" || failed=1
done < $t/gone-qos
{_admin_block(spec)}[ ! -f $t/failed ] || failed=1
if [ "$failed" = 1 ]; then echo "some removals failed (jobs still running?); the next sync retries" >&2; exit 1; fi
"""


def config_hash(spec: ClusterSpec) -> str:
    """Changes with the file, so the Job's pod template (and the PR diff) shows a new policy."""
    return hashlib.sha256(flat_file(spec).encode()).hexdigest()[:16]


def emit_policy(scope: Construct, spec: ClusterSpec, placement: dict[str, Any]) -> None:
    """The flat files as a ConfigMap, and the PostSync Job that loads them into slurmdbd."""
    emit(scope, api_version="v1", kind="ConfigMap", name=CONFIG_MAP, namespace=spec.namespace,
         annotations=wave(0), body={"data": {"accounts.cfg": flat_file(spec),
                                             "qos-first-pass.cfg": flat_file(spec, first_pass=True),
                                             **declared(spec)}})
    key = spec.secrets.slurm_key
    pod = {
        **placement,
        "restartPolicy": "Never",
        "containers": [{
            "name": "sacctmgr",
            "image": spec.images.for_component("login"),  # Slurm client tools, same Slurm version
            "command": ["/bin/sh", "-c", load_script(spec)],
            # root: sacctmgr admits uid 0 (or SlurmUser); sackd reads slurm.key (0400, root) to sign for us
            "securityContext": {"runAsUser": 0, "runAsGroup": 0},
            "volumeMounts": [
                {"name": "accounts", "mountPath": MOUNT, "readOnly": True},
                {"name": "slurm-key", "mountPath": "/etc/slurm/slurm.key", "subPath": key.key, "readOnly": True},
                {"name": "sackd", "mountPath": SACKD_DIR},
                {"name": "tmp", "mountPath": "/tmp"},
            ],
        }],
        "volumes": [
            {"name": "accounts", "configMap": {"name": CONFIG_MAP}},
            {"name": "sackd", "emptyDir": {}},
            {"name": "tmp", "emptyDir": {}},
            {"name": "slurm-key", "secret": {"secretName": key.name, "defaultMode": 0o400,
                                             "items": [{"key": key.key, "path": key.key}]}},
        ],
    }
    if admin_groups(spec):
        sssd = sssd_secret(spec)
        volumes, mounts = ca_volumes(spec)
        pod["volumes"] += [{"name": "sssd-conf", "secret": {"secretName": sssd.name, "defaultMode": 0o600,
                                                            "items": [{"key": sssd.key, "path": "sssd.conf"}]}}, *volumes]
        pod["containers"][0]["volumeMounts"] += [
            {"name": "sssd-conf", "mountPath": "/etc/sssd/sssd.conf", "subPath": "sssd.conf", "readOnly": True}, *mounts]
    emit(scope, api_version="batch/v1", kind="Job", name=JOB, namespace=spec.namespace,
         annotations={"argocd.argoproj.io/hook": "PostSync",
                      "argocd.argoproj.io/hook-delete-policy": "BeforeHookCreation"},
         body={"spec": {
             "backoffLimit": 6,
             "activeDeadlineSeconds": 1800,
             "ttlSecondsAfterFinished": 86400,
             "template": {"metadata": {"labels": {naming.COMPONENT_LABEL: "sacctmgr"},
                                       "annotations": {"slurmgen.dev/policy-sha256": config_hash(spec)}},
                          "spec": pod},
         }})
