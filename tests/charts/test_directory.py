"""The directory (LDAP/AD through sssd) wiring alone: what charts/directory.py gives the Slurm cluster
chart's login and slurmd pods, and the sssd.conf the secrets chart renders (the sssd.conf text itself:
tests/charts/test_directory_sssd.py; whole-cluster behaviour: tests/synth/test_directory.py)."""

from __future__ import annotations

from pathlib import Path

from charts.secrets import SecretsChart
from charts.slurm_cluster import SlurmClusterChart
from slurmgen.spec import parse_text
from tests.charts import build

DATA = Path(__file__).parents[1] / "data" / "directory"
LDAP = parse_text("ldap.yaml", (DATA / "ldap-two-nodesets.yaml").read_text())


def test_login_and_every_slurmd_pod_get_the_same_sssd_conf_and_ca():
    # GIVEN an LDAP directory with its CA in a Secret, and two nodesets / WHEN the Slurm chart is built alone
    objects = build(SlurmClusterChart, LDAP)
    login = objects["LoginSet/slurm-login"]["spec"]
    nodesets = [o for name, o in objects.items() if name.startswith("NodeSet/")]
    assert len(nodesets) == 2
    # THEN the LoginSet names the sssd.conf Secret
    assert login["sssdConfRef"] == {"name": "slurm-sssd-conf", "key": "sssd.conf"}
    # AND every NodeSet enables ssh with the same Secret (the operator mounts sssd.conf into slurmd only then)
    for ns in nodesets:
        assert ns["spec"]["ssh"]["enabled"] is True
        assert ns["spec"]["ssh"]["sssdConfRef"] == login["sssdConfRef"]
    # AND the CA is mounted read-only at the path sssd.conf names, in login and slurmd containers
    ca_volume = {"name": "directory-ca", "secret": {"secretName": "corp-ldap-ca", "defaultMode": 0o444,
                                                    "items": [{"key": "ca.crt", "path": "ca.pem"}]}}
    ca_mount = {"name": "directory-ca", "mountPath": "/etc/slurmgen/directory-ca", "readOnly": True}
    pods = [(login["template"]["spec"], login["login"])] + [(ns["spec"]["template"]["spec"], ns["spec"]["slurmd"])
                                                            for ns in nodesets]
    for pod, container in pods:
        assert ca_volume in pod["volumes"] and ca_mount in container["volumeMounts"]
        # AND the FSx homes are mounted beside it
        assert {"name": "fsx", "mountPath": "/fsx"} in container["volumeMounts"]


def test_the_secrets_chart_renders_the_sssd_conf_the_pods_name():
    # GIVEN the same directory / WHEN the secrets chart is built alone
    external = build(SecretsChart, LDAP)["ExternalSecret/slurm-sssd-conf"]["spec"]
    # THEN it writes the Secret the pods name, with sssd.conf templated from the bind password reference
    assert external["target"]["name"] == "slurm-sssd-conf"
    sssd = external["target"]["template"]["data"]["sssd.conf"]
    assert "ldap_default_authtok = {{ .bindPassword }}" in sssd
    assert "ldap_tls_cacert = /etc/slurmgen/directory-ca/ca.pem" in sssd
