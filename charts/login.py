"""The login nodes: the LoginSet (sackd + sshd + sssd) and the SSH entry point, an AWS NLB.

The NLB Service is ours, not the LoginSet's: the operator's Service stays internal (ClusterIP),
and a separate LoadBalancer Service selects the login pods by a label the generator puts on them.
All its settings live in git (the blueprint patched them by hand after install, so every sync
could drift). AWS Load Balancer Controller conventions: `loadBalancerClass: service.k8s.aws/nlb`,
IP targets, an explicit scheme (internal unless the spec says otherwise) and the allowed source
ranges in `spec.loadBalancerSourceRanges` (the spec layer refuses 0.0.0.0/0 without opt-in).
"""

from __future__ import annotations

from typing import Any

from constructs import Construct

from slurmgen.kube import naming
from slurmgen.spec import ClusterSpec
from slurmgen.kube.vocabulary import LBC, SYNC_WAVE
from ._objects import emit
from .directory import sshd_config as directory_sshd_config

SSH_SERVICE = "slurm-login-ssh"

SSHD_CONFIG = """\
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
"""


def sshd_config(spec: ClusterSpec) -> str:
    """Our sshd lines, before the user's (sshd keeps a keyword's first value): key-only, and with a
    directory its users' keys from sssd, root only when kept for break-glass."""
    if spec.directory is None:
        return SSHD_CONFIG
    return SSHD_CONFIG.replace("PermitRootLogin prohibit-password\n", "") + directory_sshd_config(spec.directory)


def loginset_spec(spec: ClusterSpec, template: dict[str, Any], mounts: list[dict[str, Any]],
                  sssd_ref: dict[str, str]) -> dict[str, Any]:
    login = spec.login
    sshd = sshd_config(spec) + (login.extra_sshd_config if login.extra_sshd_config.endswith("\n") or not login.extra_sshd_config
                                else login.extra_sshd_config + "\n")
    container: dict[str, Any] = {"image": spec.images.for_component("login")}
    if mounts:
        container["volumeMounts"] = mounts
    body: dict[str, Any] = {
        "controllerRef": {"name": naming.CONTROLLER},
        "replicas": login.replicas,
        "sssdConfRef": sssd_ref,
        "login": container,
        "initconf": {"image": spec.images.sidecar},
        "extraSshdConfig": sshd,
        "template": template,
        # The operator's own Service stays inside the cluster; the NLB below is the way in.
        "service": {"spec": {"type": "ClusterIP"}},
    }
    if login.ssh_authorized_keys:
        body["rootSshAuthorizedKeys"] = "".join(f"{key}\n" for key in login.ssh_authorized_keys)
    return body


def ssh_service(scope: Construct, spec: ClusterSpec, wave_no: int) -> None:
    """The LoadBalancer Service in front of the login pods.

    A plain object, like every other one: cdk8s-plus' Service (used here before) added an empty
    `externalIPs` to be patched away, and loading cdk8s-plus cost each rendering process ~23 MB
    and ~0.15 s for this one object.
    """
    svc_spec = spec.login.service
    annotations = {
        f"{LBC}nlb-target-type": "ip",
        f"{LBC}scheme": svc_spec.scheme,
        f"{LBC}healthcheck-protocol": "tcp",
        f"{LBC}healthcheck-port": "traffic-port",
        f"{LBC}attributes": "load_balancing.cross_zone.enabled=true",
        f"{LBC}target-group-attributes": "preserve_client_ip.enabled=true,deregistration_delay.timeout_seconds=30",
        SYNC_WAVE: str(wave_no),
    }
    if svc_spec.subnets:
        annotations[f"{LBC}subnets"] = ",".join(svc_spec.subnets)
    body: dict[str, Any] = {
        "type": "LoadBalancer",
        "loadBalancerClass": "service.k8s.aws/nlb",
        "loadBalancerSourceRanges": list(svc_spec.source_ranges) or None,
        "ports": [{"name": "ssh", "port": 22, "targetPort": 22, "protocol": "TCP"}],
        "selector": {naming.COMPONENT_LABEL: "login"},
    }
    emit(scope, api_version="v1", kind="Service", name=SSH_SERVICE, namespace=spec.namespace,
         annotations=annotations, body={"spec": body})
