"""Slurm accounting: the in-cluster MariaDB (mariadb-operator) and the Accounting CR that uses either database.

The MariaDB settings are the ones slurmdbd needs (Slurm's accounting guide): a buffer pool of at
least 4 GiB with a log file a quarter of it, `innodb_lock_wait_timeout=900`, a large
`max_allowed_packet`, and `innodb_snapshot_isolation=OFF` (MariaDB >= 11.6.2 turns it on, and
slurmdbd then stops on the first conflict). Passwords come from Secrets we never render
(`generate: false`: the operator waits for them).

The slurmdbd user is its own `User` + `Grant` pair, not the MariaDB CR's `username`: the operator
creates that initial user with `MaxUserConnections: 20` (mariadb-operator v26.6.0
internal/controller/mariadb_controller.go reconcileUsers), and slurmdbd holds one database
connection per client connection (SchedMD/slurm slurm-26-05-1-1 src/slurmdbd/proc_req.c,
REQUEST_PERSIST_INIT), so a busy cluster's sacct calls were refused. Our User and Grant take the
names of the operator's initial ones (`<mariadb>-user`, `<mariadb>-user-all`,
api/v1alpha1/mariadb_keys.go): the operator only creates those when they are missing and never
updates them (pkg/controller/auth/controller.go ReconcileUser), so ours, applied in wave -1 before
the MariaDB is even up, are the only ones; on a cluster where the operator already made them,
Argo CD updates them in place. Never two users, never the limit of 20.
"""

from __future__ import annotations

from typing import Any

from constructs import Construct


from slurmgen.kube import waves
from slurmgen.spec import ClusterSpec
from slurmgen.kube.vocabulary import KEEP, SKIP_DRY_RUN, SYNC_OPTIONS
from ._objects import emit, wave
from slurmgen.plan.secret_refs import mariadb_root_secret
from .unit import SyncSettings, UnitChart

MARIADB_API = "k8s.mariadb.com/v1alpha1"
CONNECTION_HEADROOM = 50  # max_connections above the slurmdbd user's: root, the operator, monitoring
CA_VOLUME = "db-ca"
CA_DIR = "/etc/slurm-db-ca"
PASSWORD_REVISION = "slurmgen.dev/db-password-revision"


def my_cnf(spec: ClusterSpec) -> str:
    ic = spec.accounting.database.in_cluster
    lines = [
        "[mariadb]",
        "bind-address=*",
        "default_storage_engine=InnoDB",
        "binlog_format=row",
        "innodb_autoinc_lock_mode=2",
        f"innodb_buffer_pool_size={ic.buffer_pool_size_mib}M",
        f"innodb_log_file_size={ic.buffer_pool_size_mib // 4}M",
        "innodb_lock_wait_timeout=900",
        f"max_allowed_packet={ic.max_allowed_packet_mib}M",
        "innodb_snapshot_isolation=OFF",
        f"max_connections={ic.max_user_connections + CONNECTION_HEADROOM}",
    ]
    return "".join(f"{line}\n" for line in lines)


class DatabaseChart(UnitChart):
    """`dist/<cluster>/database/`: the MariaDB CR (in-cluster mode only)."""

    unit = "database"

    def __init__(self, scope: Construct, spec: ClusterSpec) -> None:
        super().__init__(scope, spec, SyncSettings(wave=waves.INFRA, namespace=spec.namespace, create_namespace=True))
        db = spec.accounting.database
        ic = db.in_cluster
        body: dict[str, Any] = {
            "rootPasswordSecretKeyRef": {**mariadb_root_secret(spec).as_ref(), "generate": False},
            # Kept although our User replaces the initial user: `username` is immutable in the
            # operator's webhook (api/v1alpha1/mariadb_types.go `webhook:"inmutable"`), and
            # without a password ref SetDefaults would generate one.
            "username": db.user,
            "database": db.name,
            "passwordSecretKeyRef": {**db.password_secret.as_ref(), "generate": False},
            "replicas": 1,
            "port": db.port,
            "storage": {"size": ic.size, "storageClassName": ic.storage_class_name},
            "resources": {"requests": {"cpu": ic.cpu, "memory": ic.memory}, "limits": {"memory": ic.memory}},
            "myCnf": my_cnf(spec),
            **spec.placement.pod_spec(),
        }
        emit(self, api_version=MARIADB_API, kind="MariaDB", name=db.host, namespace=spec.namespace,
             annotations=wave(0, **{SYNC_OPTIONS: f"{SKIP_DRY_RUN},{KEEP}"}), body={"spec": body})
        self._user_and_grant(spec)

    def _user_and_grant(self, spec: ClusterSpec) -> None:
        """slurmdbd's user with a connection limit that fits, and ALL on its database only.

        `cleanupPolicy: Skip`: deleting either object (a pruned sync, a deleted Application) leaves
        the SQL user and its grant in place, and Prune=false/Delete=false keep the objects (were they
        gone, the operator would re-create its own user with the limit of 20).
        """
        db = spec.accounting.database
        ref = {"name": db.host, "namespace": spec.namespace, "waitForIt": True}
        annotations = wave(-1, **{SYNC_OPTIONS: f"{SKIP_DRY_RUN},{KEEP}"})
        emit(self, api_version=MARIADB_API, kind="User", name=f"{db.host}-user", namespace=spec.namespace,
             annotations=annotations, body={"spec": {
                 "mariaDbRef": ref, "name": db.user, "host": "%",
                 "passwordSecretKeyRef": db.password_secret.as_ref(),
                 "maxUserConnections": db.in_cluster.max_user_connections,
                 "cleanupPolicy": "Skip"}})
        emit(self, api_version=MARIADB_API, kind="Grant", name=f"{db.host}-user-all", namespace=spec.namespace,
             annotations=annotations, body={"spec": {
                 "mariaDbRef": ref, "username": db.user, "host": "%", "privileges": ["ALL PRIVILEGES"],
                 "database": db.name, "table": "*", "grantOption": False, "cleanupPolicy": "Skip"}})


def accounting_spec(spec: ClusterSpec, template: dict[str, Any]) -> dict[str, Any]:
    """Accounting CR spec: slurmdbd pointed at the in-cluster MariaDB or the external database.

    External database extras. TLS: `StorageParameters=SSL_CA=<file>` (SchedMD/slurm slurm-26-05-1-1
    src/database/mysql_common.c) through `extraConf`, with the CA ConfigMap mounted into slurmdbd.
    Rotation: the operator rebuilds slurmdbd.conf (StoragePass) only when it reconciles the
    Accounting, and a change of the password Secret does not trigger that (slurm-operator v1.2.1
    internal/controller/accounting/eventhandler/eventhandler_secret.go watches the key Secrets
    only); bumping `passwordRevision` changes the Accounting's spec (an annotation in
    `template.metadata`), so the operator reconciles: it rewrites slurmdbd.conf from the current
    Secret, and the config hash on the pod template (accountingbuilder/accounting_app.go getHashes)
    restarts slurmdbd.
    """
    db = spec.accounting.database
    template = {**template, "metadata": {**(template.get("metadata") or {})},
                "spec": {**(template.get("spec") or {})}}
    slurmdbd: dict[str, Any] = {"image": spec.images.for_component("slurmdbd")}
    out: dict[str, Any] = {
        "slurmKeyRef": spec.secrets.slurm_key.as_ref(),
        "jwtKeyRef": spec.secrets.jwt_key.as_ref(),
        "slurmdbd": slurmdbd,
        "template": template,
        "storageConfig": {
            "host": db.host, "port": db.port, "database": db.name, "username": db.user,
            "passwordKeyRef": db.password_secret.as_ref(),
        },
    }
    if db.password_revision:
        template["metadata"]["annotations"] = {**template["metadata"].get("annotations", {}),
                                               PASSWORD_REVISION: str(db.password_revision)}
    if db.tls_ca is not None:
        slurmdbd["volumeMounts"] = [{"name": CA_VOLUME, "mountPath": CA_DIR, "readOnly": True}]
        template["spec"]["volumes"] = [*template["spec"].get("volumes", []), {
            "name": CA_VOLUME, "configMap": {"name": db.tls_ca.name,
                                             "items": [{"key": db.tls_ca.key, "path": db.tls_ca.key}]}}]
        out["extraConf"] = f"StorageParameters=SSL_CA={CA_DIR}/{db.tls_ca.key}"
    return out
