"""slurm-bridge: the bridged partition, its namespaces and the policy that admits its user."""

from __future__ import annotations

from typing import Any, Iterator

from ...rule import Finding, rule
from ..model import BRIDGE_USER
from .names import SYSTEM_NAMESPACES, include_in_all

# Namespaces of the charts this tree installs whatever the spec says (apps/helm.py: cert-manager,
# External Secrets, KEDA, mariadb-operator); tests/synth/test_bridge.py proves the list covers every
# namespace an example renders into.
ADDON_NAMESPACES = ("cert-manager", "external-secrets", "keda", "mariadb-operator")


def _namespace_owner(spec: dict[str, Any], name: str) -> str | None:
    """Who already owns namespace `name` (Kubernetes, Argo CD, Slurm, an add-on), or None."""
    if name in SYSTEM_NAMESPACES or name.startswith("kube-"):
        return "a Kubernetes system namespace" if name != "argocd" else "Argo CD's namespace"
    if name == spec["gitops"]["argocdNamespace"]:
        return "Argo CD's namespace"
    if name == spec["slurm"]["namespace"]:
        return "the Slurm namespace (slurm-bridge itself runs there)"
    if name == spec["slurm"]["operatorNamespace"]:
        return "slurm-operator's namespace"
    if name == spec["monitoring"]["kubePrometheusStack"]["namespace"]:
        return "the monitoring namespace"
    if name in ADDON_NAMESPACES:
        return f"the namespace of the {name} chart this tree installs"
    return None


def _bridge_partition(spec: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((p for p in spec["partitions"] if p["name"] == name), None)


def _partition_nodesets(spec: dict[str, Any], part: dict[str, Any]) -> list[str]:
    """A partition's nodesets as Slurm sees them: [ALL] resolved as the loader does (include_in_all)."""
    if part["nodesets"] == ["ALL"]:
        return [ns["name"] for ns in spec["nodesets"] if include_in_all(ns)]
    return list(part["nodesets"])


def _bridge_policy(spec: dict[str, Any], bridge: dict[str, Any]) -> Iterator[Finding]:
    """bridge.account and bridge.qos name what policy declares, and the QoS is the one the jobs get."""
    policy = spec.get("policy")
    if policy is None:
        for key in ("account", "qos"):
            if key in bridge:
                yield f"bridge.{key}", f"names a {'QoS' if key == 'qos' else 'Slurm account'} of policy; declare policy (and accounting) first"
        return
    accounts = {a["name"]: a for a in policy.get("accounts", [])}
    qos_names = [q["name"] for q in policy.get("qos", [])]
    account = bridge.get("account")
    if account is None:
        yield "bridge.account", ("required with a policy: AccountingStorageEnforce=associations refuses a job whose user "
                                 "has no association; name the account bridged jobs are charged to")
    elif account not in accounts:
        yield "bridge.account", f"no account named {account!r} in policy.accounts; defined: {', '.join(accounts) or 'none'}"
    for index, user in enumerate(policy.get("users", [])):
        if user["name"] == BRIDGE_USER:
            yield (f"policy.users[{index}].name", f"{BRIDGE_USER!r} is the user slurm-bridge submits as; "
                   "its account comes from bridge.account, drop it here")
    qos = bridge.get("qos")
    if qos is None:
        return
    if qos not in qos_names:
        yield "bridge.qos", f"no QoS named {qos!r} in policy.qos; defined: {', '.join(qos_names) or 'none'}"
    elif account in accounts:
        given = accounts[account].get("defaultQos") or policy.get("defaultQos")
        if given != qos:
            yield "bridge.qos", (f"bridged jobs get account {account!r}'s default QoS ({given or 'none'}), not {qos!r}; "
                                 f"set defaultQos: {qos} on policy.accounts[{account}] (and list it in its qos)")


@rule("bridge", "partitions", "nodesets", "policy", "accounting", "gitops", "slurm", "monitoring")
def bridge_rules(spec: dict[str, Any]) -> Iterator[Finding]:
    """slurm-bridge's namespaces are the user's own, its partition and nodesets exist and agree, and
    Slurm can charge its jobs: accounting on, account and QoS declared (docs/bridge.md)."""
    bridge = spec.get("bridge")
    if bridge is None:
        return
    if not spec["accounting"]["enabled"]:
        yield "bridge", ("bridged jobs are charged to Slurm accounts and fair share in the accounting database; "
                         "enable accounting")
    for index, name in enumerate(bridge["namespaces"]):
        owner = _namespace_owner(spec, name)
        if owner:
            yield f"bridge.namespaces[{index}]", f"{name!r} is {owner}; bridge a namespace of your own workloads (e.g. inference)"
    part = _bridge_partition(spec, bridge["partition"])
    if part is None:
        names = ", ".join(p["name"] for p in spec["partitions"])
        yield "bridge.partition", f"no partition named {bridge['partition']!r}; defined partitions: {names}"
    else:
        held = _partition_nodesets(spec, part)
        if "nodesets" in bridge and sorted(set(bridge["nodesets"])) != sorted(set(held)):
            yield "bridge.nodesets", (f"partition {part['name']!r} holds nodesets {', '.join(held) or 'none'}: bridged jobs go to "
                                      "all of them, so list exactly those (or leave bridge.nodesets out)")
    yield from _bridge_policy(spec, bridge)
