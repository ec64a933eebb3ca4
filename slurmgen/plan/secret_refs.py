"""Which Secrets a cluster needs generated, and how long each value is: a fact of the model.

The secrets chart renders them, the identity layer names them in Secrets Manager, the database
chart reads the MariaDB root password: each asks here, so no model code reaches into the charts.
"""

from __future__ import annotations

from ..spec import ClusterSpec
from ..spec.model import SecretKeyRef

# (length, digits) per generated value; all letters and digits, never symbols.
SLURM_KEY = (1024, 256)
JWT_KEY = (128, 32)
PASSWORD = (32, 8)


def mariadb_root_secret(spec: ClusterSpec) -> SecretKeyRef:
    """The in-cluster MariaDB's root password (mariadb-operator reads it, we generate it)."""
    return SecretKeyRef(name="mariadb-root", key="password")


def generated_secrets(spec: ClusterSpec) -> list[tuple[SecretKeyRef, tuple[int, int]]]:
    """Every Secret the cluster needs, with its generated length: keys first, then database passwords."""
    out = [(spec.secrets.slurm_key, SLURM_KEY), (spec.secrets.jwt_key, JWT_KEY)]
    db = spec.accounting.database
    if spec.accounting.enabled:
        out.append((db.password_secret, PASSWORD))
        if db.managed:
            out.append((mariadb_root_secret(spec), PASSWORD))
    return out
