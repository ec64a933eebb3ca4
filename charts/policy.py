"""Slurm accounts, users and QoS as code: sacctmgr flat files, the Job that applies them, and the
init container that puts in slurmdbd, before slurmctld starts, what slurmctld checks at startup.

Order on a fresh cluster (and on a change that adds a QoS with a partition naming it), proven with
real Slurm 26.05.3 daemons in tests/deep/:
1. The Controller's pod runs `qos-bootstrap` first (scripts/qos-bootstrap.sh): it creates every QoS
   of the spec in slurmdbd, without TRES limits or Preempt. slurmctld exits at startup on a
   partition's AllowQos/DenyQos naming an unknown QoS (SchedMD/slurm slurm-26-05-3-1
   src/slurmctld/read_config.c qos_list_build), whatever AccountingStorageEnforce says; and
   slurmdbd refuses a limit on gres/gpu until slurmctld has registered that TRES once. It also
   clears the `clustername` file a start that saved no state leaves behind, which would otherwise
   stop every later start (src/common/assoc_mgr.c load_assoc_usage).
2. slurmctld starts and registers its TRES.
3. The PostSync Job (scripts/accounts-load.sh) waits for those TRES, loads the whole file, sets what
   `sacctmgr load` silently skips on entities that exist (a QoS's Preempt=, the root association's
   QOS=/DefaultQOS=; every other setting of a QoS and an account's fair share and limits:
   scripts/accounts-settings.sh), removes what the spec dropped, and reads slurmdbd back
   (scripts/accounts-verify.sh): a difference fails the Job, so Argo CD shows it.

Both talk to slurmdbd directly, with a client slurm.conf of their own (`client_conf`): no dependency
on slurmctld being up. A Slurm 26.05 client signs through a local sackd only, and neither container
has one or can reach another's socket, so each starts its own first (scripts/sackd-start.sh: the
mounted slurm.conf and slurm.key, its socket in an emptyDir at /run/slurm). Names are lower-case:
sacctmgr lower-cases them.

Removals: every QoS and account we load carries `[slurmgen <cluster>]` in its Description, so the
Job can tell ours from what an admin made by hand, or what another cluster's spec manages in a
shared slurmdbd. After the load it deletes the user associations on this cluster under our
accounts that the spec no longer declares, then this cluster's associations of our accounts it no
longer declares (deepest first), then the account rows of ours left with no association on any
cluster, then our QoS. `root` and unmarked entities are never touched. The data-loss guard
(guards.policy_removals) makes removing an account or QoS need `--allow-destroy`.

The Job and the init container run the login image (Slurm's client tools, same Slurm version)
with their own command, which skips the image's entrypoint.

Admin groups (`directory.adminGroups`): Slurm keeps AdminLevel per user in slurmdbd, so membership is
resolved when the Job runs (each sync), for the users of policy.users only (scripts/admin-levels.sh).
The Job then also mounts the pods' sssd.conf (0600, root: sssd refuses anything else) and the
directory CA, starts the image's sssd as a daemon, and reads each user's groups with `id -nG`. A user
whose groups cannot be read keeps its level and fails the Job, so an outage never lowers anyone;
otherwise the level is the highest of the spec's and the groups', and a user who left every group
goes back to the spec's (else None).
"""

from __future__ import annotations

import hashlib
from importlib import resources
from typing import Any, Iterable

from constructs import Construct

from slurmgen.kube import naming
from slurmgen.spec import ClusterSpec
from slurmgen.spec.model import Pairs, Policy, PolicyAccount, Qos
from ._objects import emit, wave
from .directory import ca_volumes
from .secrets import sssd_secret

CONFIG_MAP = "slurm-accounts"
JOB = "slurm-accounts-load"
MOUNT = "/etc/slurm-accounts"
BOOTSTRAP_CONTAINER = "qos-bootstrap"
#: the emptyDir where scripts/sackd-start.sh's sackd makes its socket folder (the image's /run is root's)
SACKD_RUN_VOLUME = "sackd-run"
SACKD_RUN = "/run/slurm"
#: slurmctld's state volume in the operator's pod (slurm-operator v1.2.1
#: internal/builder/common/const.go SlurmctldStateSaveVolume; a PVC, an existing claim or an emptyDir)
STATE_VOLUME = "statesave"
STATE_ROOT = "/var/spool/slurmctld"  # const.go SlurmctldSpoolDir; the volume is mounted at <it>/<clusterName>
CLIENT_CONF = "/etc/slurm/slurm.conf"  # where the clients look by default; slurm.key is read beside it
DBD_TRIES = 30  # x 5 s: slurmdbd answering, and the TRES slurmctld registers
BOOTSTRAP_TRIES = 60  # x 5 s, in slurmctld's pod; past it the init container fails and the kubelet retries
SSSD_TRIES = 30  # x 2 s: sssd's NSS socket
#: TRES every slurmdbd has from its first start (src/common/slurmdb_defs.c, assoc_mgr): the others
#: (gres/*, license/*, ...) exist only once a slurmctld registered them.
BUILTIN_TRES = frozenset({"cpu", "mem", "energy", "node", "billing", "fs/disk", "vmem", "pages"})
SCRIPTS = resources.files(__package__) / "scripts"


def _script(name: str) -> str:
    return (SCRIPTS / name).read_text()


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


def _qos_description(q: Qos, marker: str) -> str:
    return f"{q.description or q.name} {marker}"


def _qos_line(q: Qos, marker: str) -> str:
    return f"QOS - '{q.name}'" + _opts([
        ("Description", _qos_description(q, marker)), ("Priority", q.priority),
        ("Preempt", q.preempt), ("PreemptMode", q.preempt_mode),
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


def _words(items: Iterable[tuple[str, Any]]) -> str:
    """`Key=Value` words for `sacctmgr modify ... set`; empty TRES lists are left out (stale ones are cleared
    by scripts/accounts-settings.sh, which reads what slurmdbd holds)."""
    return " ".join(f"{k}={v}" for k, v in items if v != "")


def qos_settings(q: Qos) -> str:
    """Every setting of a QoS but its name, description and Preempt (set by accounts-apply.sh), as it should
    be in slurmdbd: an unset one at Slurm's default (Flags=-1 clears them, src/common/slurmdb_defs.c
    str_2_qos_flags; MaxWall=-1 clears the limit; PreemptMode=cluster follows slurm.conf)."""
    return _words([
        ("Priority", q.priority), ("GraceTime", q.grace_time_seconds or 0),
        ("UsageFactor", q.usage_factor if q.usage_factor is not None else 1),
        ("MaxWallDurationPerJob", q.max_wall_duration_per_job or -1),
        ("PreemptMode", q.preempt_mode or "cluster"), ("Flags", ",".join(q.flags) or -1),
        ("MaxTRESPerUser", _tres(q.max_tres_per_user)), ("MaxTRESPerJob", _tres(q.max_tres_per_job)),
        ("GrpTRES", _tres(q.grp_tres)),
    ])


def account_settings(a: PolicyAccount) -> str:
    """An account association's fair share and TRES limits on this cluster, as they should be in slurmdbd."""
    return _words([("Fairshare", a.fairshare), ("GrpTRES", _tres(a.grp_tres)),
                   ("MaxTRESPerJob", _tres(a.max_tres_per_job))])


def settings(policy: Policy) -> dict[str, str]:
    """What scripts/accounts-settings.sh sets on entities that `sacctmgr load` found already there."""
    return {"qos-settings": "".join(f"{q.name}|{qos_settings(q)}\n" for q in policy.qos),
            "account-settings": "".join(f"{a.name}|{account_settings(a)}\n" for a in policy.accounts)}


def _children(policy: Policy, parent: str) -> list[PolicyAccount]:
    return [a for a in policy.accounts if a.parent == parent]


def flat_file(spec: ClusterSpec) -> str:
    """The sacctmgr flat file for the cluster (QoS first, then the cluster's association tree)."""
    policy = spec.policy
    if policy is None:
        raise ValueError(f"{spec.name} declares no policy")
    cluster = spec.slurm_cluster_name
    lines = [f"# Slurm accounts and QoS of {cluster}: generated by slurmgen from {spec.name}'s spec; do not edit"]
    lines += [_qos_line(q, mark(spec)) for q in policy.qos]
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


def _root_qos(policy: Policy) -> tuple[str, ...]:
    """The root association's QoS: every QoS when the spec names a default (flat_file's Cluster line)."""
    return tuple(q.name for q in policy.qos) if policy.default_qos else ()


def required_tres(policy: Policy) -> list[str]:
    """TRES the limits name that slurmdbd knows only once slurmctld registered them (e.g. gres/gpu)."""
    pairs = [p for q in policy.qos for p in (*q.max_tres_per_user, *q.max_tres_per_job, *q.grp_tres)]
    pairs += [p for a in policy.accounts for p in (*a.grp_tres, *a.max_tres_per_job)]
    return sorted({name for name, _ in pairs} - BUILTIN_TRES)


def expected(policy: Policy) -> dict[str, str]:
    """What slurmdbd must hold after the Job, as `sacctmgr -nP show` prints it (QoS names sorted).

    expected-qos: `name|preempt` for every QoS; expected-associations: `account|user|qos|defaultqos`
    for root (when the spec sets a default QoS) and for each account that declares its QoS.
    """
    qos = [f"{q.name}|{','.join(sorted(q.preempt))}" for q in policy.qos]
    assocs = []
    if policy.default_qos:
        assocs.append(f"root||{','.join(sorted(_root_qos(policy)))}|{policy.default_qos}")
    for a in policy.accounts:
        if a.qos and a.default_qos:
            assocs.append(f"{a.name}||{','.join(sorted(a.qos))}|{a.default_qos}")
    return {"expected-qos": "".join(f"{line}\n" for line in qos),
            "expected-associations": "".join(f"{line}\n" for line in assocs),
            "required-tres": "".join(f"{t}\n" for t in required_tres(policy))}


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


def client_conf(spec: ClusterSpec) -> str:
    """slurm.conf for sacctmgr talking to slurmdbd directly (the Accounting Service the operator names
    `<Accounting>-accounting`, slurm-operator v1.2.1 controller_config.go); SlurmctldHost is only there
    because every Slurm client requires one (src/common/read_config.c)."""
    return "\n".join([
        f"# sacctmgr's view of {spec.slurm_cluster_name}: slurmdbd only (generated by slurmgen)",
        f"ClusterName={spec.slurm_cluster_name}",
        # sackd makes its socket folder owned by SlurmUser (src/plugins/auth/slurm/sack.c _prepare_run_dir):
        # as root by default, which the init container (uid 401) may not chown to
        "SlurmUser=slurm",
        f"SlurmctldHost={naming.CONTROLLER}-controller-0({naming.CONTROLLER}-controller.{spec.namespace})",
        "AuthType=auth/slurm", "CredType=cred/slurm",
        "AccountingStorageType=accounting_storage/slurmdbd",
        f"AccountingStorageHost={naming.CONTROLLER}-accounting", "AccountingStoragePort=6819", ""])


def load_script(spec: ClusterSpec) -> str:
    """The Job's script: load, set what load skips, remove what the spec dropped, admin levels, verify."""
    parts = [_script("accounts-load.sh"), _script("sackd-start.sh"), _script("wait-slurmdbd.sh"), _script("qos-create.sh"),
             _script("accounts-apply.sh"), _script("accounts-settings.sh")]
    if admin_groups(spec):
        parts.append(_script("admin-levels.sh"))
    parts.append(_script("accounts-verify.sh"))
    return "".join(parts)


def bootstrap_script() -> str:
    """The init container's script: clear a failed start's leftover, start sackd, create the QoS."""
    return "".join(_script(name) for name in ("qos-bootstrap.sh", "sackd-start.sh", "wait-slurmdbd.sh",
                                              "qos-create.sh"))


def _admin_env(spec: ClusterSpec) -> list[dict[str, str]]:
    d = spec.directory
    if d is None or not admin_groups(spec):
        return []
    return [{"name": "ADMIN_GROUPS", "value": " ".join(g.lower() for g in d.admin_groups)},
            {"name": "OPERATOR_GROUPS", "value": " ".join(g.lower() for g in d.operator_groups)},
            {"name": "SSSD_TRIES", "value": str(SSSD_TRIES)}]


def config_hash(spec: ClusterSpec) -> str:
    """Changes with the file, so the Job's pod template (and the PR diff) shows a new policy."""
    return hashlib.sha256(flat_file(spec).encode()).hexdigest()[:16]


def _client_mounts(spec: ClusterSpec) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Volumes and mounts: the flat files, the client slurm.conf and slurm.key beside it, and the
    emptyDir for the container's own sackd."""
    key = spec.secrets.slurm_key
    volumes: list[dict[str, Any]] = [
        {"name": "accounts", "configMap": {"name": CONFIG_MAP}},
        # 0400 (root): the kubelet adds group read for the pod's fsGroup (slurmctld's pod: slurm)
        {"name": "accounts-slurm-key", "secret": {"secretName": key.name, "defaultMode": 0o400,
                                                  "items": [{"key": key.key, "path": "slurm.key"}]}},
        {"name": SACKD_RUN_VOLUME, "emptyDir": {"medium": "Memory"}},
    ]
    mounts: list[dict[str, Any]] = [
        {"name": "accounts", "mountPath": MOUNT, "readOnly": True},
        {"name": "accounts", "mountPath": CLIENT_CONF, "subPath": "slurm.conf", "readOnly": True},
        {"name": "accounts-slurm-key", "mountPath": "/etc/slurm/slurm.key", "subPath": "slurm.key", "readOnly": True},
        {"name": SACKD_RUN_VOLUME, "mountPath": SACKD_RUN},
    ]
    return volumes, mounts


def bootstrap_pod(spec: ClusterSpec) -> dict[str, list[dict[str, Any]]]:
    """The init container (and its volumes) that slurmctld's pod runs first, when accounting is on.

    The operator merges template.spec.initContainers by name after its own (slurm-operator v1.2.1
    internal/builder/common/pod_template.go BuildPodTemplate), so it runs after the logfile sidecar
    starts and before slurmctld. It runs as the pod's user (slurm, uid 401), whom slurmdbd admits as
    SlurmUser.
    """
    volumes, mounts = _client_mounts(spec)
    state = f"{STATE_ROOT}/{spec.slurm_cluster_name}"
    container = {
        "name": BOOTSTRAP_CONTAINER,
        "image": spec.images.for_component("login"),
        "command": ["/bin/sh", "-c", bootstrap_script()],
        "env": [{"name": "STATE_DIR", "value": state}, {"name": "ACCOUNTS_DIR", "value": MOUNT},
                {"name": "DBD_TRIES", "value": str(BOOTSTRAP_TRIES)}],
        "volumeMounts": [*mounts, {"name": STATE_VOLUME, "mountPath": state}],
    }
    return {"initContainers": [container], "volumes": volumes}


def configmap_data(spec: ClusterSpec) -> dict[str, str]:
    """Everything the init container and the Job read: flat files, expectations, the client slurm.conf."""
    data = {"slurm.conf": client_conf(spec)}
    if spec.policy is None:
        return {**data, "qos-bootstrap": "", "declared-qos": ""}
    bootstrap = "".join(f"{q.name}|{_qos_description(q, mark(spec))}\n" for q in spec.policy.qos)
    return {**data, "accounts.cfg": flat_file(spec), "qos-bootstrap": bootstrap, **declared(spec),
            **expected(spec.policy), **settings(spec.policy)}


def emit_accounts_config(scope: Construct, spec: ClusterSpec) -> None:
    """The ConfigMap the init container and the Job mount (wave 0: before the Controller)."""
    emit(scope, api_version="v1", kind="ConfigMap", name=CONFIG_MAP, namespace=spec.namespace,
         annotations=wave(0), body={"data": configmap_data(spec)})


def emit_policy(scope: Construct, spec: ClusterSpec, placement: dict[str, Any]) -> None:
    """The PostSync Job that loads the flat file into slurmdbd and proves the result."""
    volumes, mounts = _client_mounts(spec)
    env = [{"name": "CLUSTER", "value": spec.slurm_cluster_name}, {"name": "MARK", "value": mark(spec)},
           {"name": "ACCOUNTS_DIR", "value": MOUNT}, {"name": "DBD_TRIES", "value": str(DBD_TRIES)},
           *_admin_env(spec)]
    pod = {
        **placement,
        "restartPolicy": "Never",
        "containers": [{
            "name": "sacctmgr",
            "image": spec.images.for_component("login"),
            "command": ["/bin/sh", "-c", load_script(spec)],
            "env": env,
            # root: sacctmgr admits uid 0 (or SlurmUser) and reads slurm.key (0400, root) to sign
            "securityContext": {"runAsUser": 0, "runAsGroup": 0},
            "volumeMounts": [*mounts, {"name": "tmp", "mountPath": "/tmp"}],
        }],
        "volumes": [*volumes, {"name": "tmp", "emptyDir": {}}],
    }
    if admin_groups(spec):
        sssd = sssd_secret(spec)
        ca_vols, ca_mounts = ca_volumes(spec)
        pod["volumes"] += [{"name": "sssd-conf", "secret": {"secretName": sssd.name, "defaultMode": 0o600,
                                                            "items": [{"key": sssd.key, "path": "sssd.conf"}]}}, *ca_vols]
        pod["containers"][0]["volumeMounts"] += [
            {"name": "sssd-conf", "mountPath": "/etc/sssd/sssd.conf", "subPath": "sssd.conf", "readOnly": True},
            *ca_mounts]
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
