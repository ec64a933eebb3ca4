"""The login pods' SSH entry alone: charts/login.py ssh_service, and the LoginSet it selects."""

from __future__ import annotations

from charts.login import ssh_service
from charts.slurm_cluster import SlurmClusterChart
from tests.charts import build, model, part

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHdlbW9ja2tleWZvcmV4YW1wbGVvbmx5IHJlcGxhY2Vt platform@example.com"
LBC = "service.beta.kubernetes.io/aws-load-balancer-"


def test_nlb_selects_the_login_pods_by_our_label():
    # GIVEN an internal NLB open to two ranges
    spec = model(login={"service": {"scheme": "internal", "sourceRanges": ["10.0.0.0/16", "192.168.100.0/24"]},
                        "sshAuthorizedKeys": [KEY]})
    # WHEN the SSH Service is emitted alone, and the LoginSet in its chart
    svc = part(ssh_service, spec, 5)["Service/slurm-login-ssh"]
    login = build(SlurmClusterChart, spec)["LoginSet/slurm-login"]["spec"]
    # THEN the Service selects the login pods by their label, through an NLB of target type ip
    assert svc["spec"]["selector"].items() <= login["template"]["metadata"]["labels"].items()
    assert svc["spec"]["type"] == "LoadBalancer" and svc["spec"]["loadBalancerClass"] == "service.k8s.aws/nlb"
    assert svc["spec"]["ports"] == [{"name": "ssh", "port": 22, "protocol": "TCP", "targetPort": 22}]
    assert svc["spec"]["loadBalancerSourceRanges"] == ["10.0.0.0/16", "192.168.100.0/24"]
    assert svc["metadata"]["annotations"][LBC + "nlb-target-type"] == "ip"
    assert svc["metadata"]["annotations"][LBC + "scheme"] == "internal"
    assert svc["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] == "5"
    assert "externalIPs" not in svc["spec"]  # a plain object: nothing to patch away (cdk8s-plus added it)
    assert login["service"] == {"spec": {"type": "ClusterIP"}}  # the operator's own Service stays internal


def test_internet_facing_nlb_has_explicit_ranges():
    spec = model(login={"service": {"scheme": "internet-facing", "sourceRanges": ["203.0.113.0/24", "198.51.100.17/32"]}})
    svc = part(ssh_service, spec, 5)["Service/slurm-login-ssh"]
    assert svc["metadata"]["annotations"][LBC + "scheme"] == "internet-facing"
    assert svc["spec"]["loadBalancerSourceRanges"] == ["203.0.113.0/24", "198.51.100.17/32"]


def test_sshd_is_key_only_and_keys_come_from_the_spec():
    login = build(SlurmClusterChart, model(login={"sshAuthorizedKeys": [KEY]}))["LoginSet/slurm-login"]["spec"]
    assert "PasswordAuthentication no\n" in login["extraSshdConfig"]
    assert login["rootSshAuthorizedKeys"] == KEY + "\n"
