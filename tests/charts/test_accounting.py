"""DatabaseChart alone: the in-cluster MariaDB for slurmdbd (charts/accounting.py)."""

from __future__ import annotations

from charts.accounting import DatabaseChart
from charts.slurm_cluster import SlurmClusterChart
from tests.charts import unit


def test_the_managed_database_is_a_kept_mariadb_with_its_user_and_grant():
    # GIVEN the minimal spec (accounting on, database managed in the cluster) / WHEN built alone
    objects = unit(DatabaseChart)
    # THEN it is one MariaDB, one User and one Grant, and the database is never pruned or deleted
    assert sorted(objects) == ["Grant/mariadb-user-all", "MariaDB/mariadb", "User/mariadb-user"]
    mariadb = objects["MariaDB/mariadb"]
    assert "Prune=false,Delete=false" in mariadb["metadata"]["annotations"]["argocd.argoproj.io/sync-options"]
    # AND slurmdbd's user may do everything on the accounting database only, with the generated password
    user, grant = objects["User/mariadb-user"]["spec"], objects["Grant/mariadb-user-all"]["spec"]
    assert user["name"] == grant["username"] == "slurm"
    assert user["passwordSecretKeyRef"] == {"key": "password", "name": "mariadb-password"}
    assert grant["database"] == mariadb["spec"]["database"] == "slurm_acct_db"
    assert grant["privileges"] == ["ALL PRIVILEGES"] and grant["grantOption"] is False


def test_in_cluster_mariadb_has_the_settings_slurmdbd_needs():
    # GIVEN an in-cluster database of 50Gi on gp3 / WHEN the database chart is built alone
    mariadb = unit(DatabaseChart, accounting={"database": {"mode": "in-cluster", "inCluster": {
        "storageClassName": "gp3", "size": "50Gi"}}})["MariaDB/mariadb"]["spec"]
    # THEN MariaDB runs with the InnoDB settings slurmdbd's documentation asks for, on that volume
    for line in ("innodb_lock_wait_timeout=900", "innodb_snapshot_isolation=OFF", "innodb_buffer_pool_size=4096M",
                 "innodb_log_file_size=1024M", "max_allowed_packet=256M"):
        assert f"{line}\n" in mariadb["myCnf"]
    assert mariadb["passwordSecretKeyRef"] == {"name": "mariadb-password", "key": "password", "generate": False}
    assert mariadb["storage"] == {"size": "50Gi", "storageClassName": "gp3"}


def test_slurmdbd_reaches_the_in_cluster_database_with_its_password():
    # GIVEN the same database / WHEN the Slurm cluster chart is built alone
    storage = unit(SlurmClusterChart)["Accounting/slurm"]["spec"]["storageConfig"]
    # THEN slurmdbd connects to the MariaDB Service with the generated password
    assert storage["host"] == "mariadb" and storage["passwordKeyRef"] == {"name": "mariadb-password", "key": "password"}
