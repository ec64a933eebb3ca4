"""DatabaseChart alone: the in-cluster MariaDB for slurmdbd (charts/accounting.py)."""

from __future__ import annotations

from charts.accounting import DatabaseChart
from charts.slurm_cluster import SlurmClusterChart
from tests.charts import unit


def test_the_managed_database_is_a_mariadb_with_its_user_and_grant():
    # GIVEN the minimal spec (accounting on, database managed in the cluster) / WHEN built alone
    objects = unit(DatabaseChart)
    # THEN it is one MariaDB, one User and one Grant
    assert sorted(objects) == ["Grant/mariadb-user-all", "MariaDB/mariadb", "User/mariadb-user"]


def test_slurmdbd_user_is_its_own_user_and_grant_with_a_limit_that_fits():
    # GIVEN the in-cluster database
    objects = unit(DatabaseChart)
    user, grant = objects["User/mariadb-user"], objects["Grant/mariadb-user-all"]
    mariadb = objects["MariaDB/mariadb"]["spec"]
    # THEN the User takes the operator's initial-user name (so the operator never creates a second one)
    # and allows far more than the operator's 20 connections
    assert user["spec"]["name"] == mariadb["username"] == grant["spec"]["username"] == "slurm"
    assert user["spec"]["maxUserConnections"] == 200
    assert user["spec"]["passwordSecretKeyRef"] == {"name": "mariadb-password", "key": "password"}
    # AND the grant covers the accounting database only
    assert grant["spec"]["database"] == mariadb["database"] and grant["spec"]["privileges"] == ["ALL PRIVILEGES"]
    # AND MariaDB's max_connections leaves room above it
    assert "max_connections=250\n" in mariadb["myCnf"]
    # AND neither object can take the SQL user with it, nor be pruned
    for obj in (user, grant):
        assert obj["spec"]["cleanupPolicy"] == "Skip"
        assert "Prune=false,Delete=false" in obj["metadata"]["annotations"]["argocd.argoproj.io/sync-options"]
        assert int(obj["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"]) < 0

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


EXTERNAL = {"database": {"mode": "external", "host": "db.example.com", "port": 3306, "name": "slurm_acct_db",
                         "user": "slurm", "passwordSecret": {"name": "slurm-db-password", "key": "password"},
                         "tls": {"caConfigMap": {"name": "rds-ca-bundle", "key": "global-bundle.pem"}}}}


def test_external_db_mounts_the_ca_and_sets_ssl_ca():
    # GIVEN an external database with a CA ConfigMap / WHEN the Slurm cluster chart is built alone
    # (its password in a Secret made outside: an external database's cannot be generated)
    accounting = unit(SlurmClusterChart, accounting=EXTERNAL, secrets={"mode": "precreated"})["Accounting/slurm"]["spec"]
    # THEN slurmdbd gets StorageParameters=SSL_CA pointing at the mounted bundle, and the given host
    assert accounting["extraConf"] == "StorageParameters=SSL_CA=/etc/slurm-db-ca/global-bundle.pem"
    mount = accounting["slurmdbd"]["volumeMounts"][0]
    volume = next(v for v in accounting["template"]["spec"]["volumes"] if v["name"] == mount["name"])
    assert mount["mountPath"] == "/etc/slurm-db-ca"
    assert volume["configMap"]["name"] == "rds-ca-bundle"
    assert accounting["storageConfig"]["host"] == "db.example.com"
    assert accounting["storageConfig"]["passwordKeyRef"] == {"name": "slurm-db-password", "key": "password"}
