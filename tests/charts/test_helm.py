"""The Helm releases of one cluster alone (apps/helm.py): which charts a spec installs, pinned, with our values.

A release is plain data (HelmRelease); tests/charts/test_argocd.py checks the Application made of it.
"""

from __future__ import annotations

from typing import Any

from apps import helm
from tests.charts import model
from tests.charts.test_storage import STATIC


def units(**changes: Any) -> set[str]:
    """The Application suffixes of the minimal spec's releases, with `changes`."""
    return {r.unit for r in helm.releases(model(**changes))}


def test_the_minimal_spec_installs_the_operator_its_crds_and_what_its_units_need():
    # GIVEN the minimal spec (secrets generated, accounting in a managed MariaDB) / WHEN its releases are listed
    # THEN cert-manager, the operator and its CRDs, External Secrets and the MariaDB operator and its CRDs
    assert units() == {"cert-manager", "slurm-operator-crds", "slurm-operator", "external-secrets",
                       "mariadb-operator-crds", "mariadb-operator"}


def test_the_fsx_csi_driver_is_a_release_unless_it_is_an_eks_addon():
    # GIVEN static FSx with the driver from Helm, then from the EKS add-on
    # THEN only the first installs the chart
    assert "aws-fsx-csi-driver" in units(storage={"fsx": {**STATIC["fsx"], "csiDriver": "helm"}})
    assert "aws-fsx-csi-driver" not in units(storage=STATIC)


def test_precreated_secrets_install_no_external_secrets():
    # GIVEN Secrets made by hand and an external database (whose password cannot be generated)
    found = units(secrets={"mode": "precreated", "slurmKey": {"name": "k", "key": "slurm.key"},
                           "jwtKey": {"name": "j", "key": "jwt.key"}},
                  accounting={"database": {"mode": "external", "host": "db.example.com",
                                           "passwordSecret": {"name": "db", "key": "password"}}})
    # THEN neither External Secrets nor the MariaDB operator is installed
    assert found == {"cert-manager", "slurm-operator-crds", "slurm-operator"}
