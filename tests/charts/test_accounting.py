"""DatabaseChart alone: the in-cluster MariaDB for slurmdbd (charts/accounting.py)."""

from __future__ import annotations

from charts.accounting import DatabaseChart
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
