"""Slurm accounting: the in-cluster MariaDB (mariadb-operator) and the Accounting CR that uses either database.

The MariaDB settings are the ones slurmdbd needs (Slurm's accounting guide): a buffer pool of at
least 4 GiB with a log file a quarter of it, `innodb_lock_wait_timeout=900`, a large
`max_allowed_packet`, and `innodb_snapshot_isolation=OFF` (MariaDB >= 11.6.2 turns it on, and
slurmdbd then stops on the first conflict). Passwords come from Secrets we never render
(`generate: false`: the operator waits for them).
"""

from __future__ import annotations

from typing import Any

from constructs import Construct


from ..apps import waves
from ..spec import ClusterSpec
from ._objects import KEEP, SYNC_OPTIONS, emit, wave
from .secrets import mariadb_root_secret
from .unit import SyncSettings, UnitChart

SKIP_DRY_RUN = "SkipDryRunOnMissingResource=true"


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
        emit(self, api_version="k8s.mariadb.com/v1alpha1", kind="MariaDB", name=db.host, namespace=spec.namespace,
             annotations=wave(0, **{SYNC_OPTIONS: f"{SKIP_DRY_RUN},{KEEP}"}), body={"spec": body})


def accounting_spec(spec: ClusterSpec, template: dict[str, Any]) -> dict[str, Any]:
    """Accounting CR spec: slurmdbd pointed at the in-cluster MariaDB or the external database."""
    db = spec.accounting.database
    return {
        "slurmKeyRef": spec.secrets.slurm_key.as_ref(),
        "jwtKeyRef": spec.secrets.jwt_key.as_ref(),
        "slurmdbd": {"image": spec.images.for_component("slurmdbd")},
        "template": template,
        "storageConfig": {
            "host": db.host, "port": db.port, "database": db.name, "username": db.user,
            "passwordKeyRef": db.password_secret.as_ref(),
        },
    }


