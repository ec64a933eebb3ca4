"""The Slurm policy (accounts, QoS, users, fair share): references between its parts, people rather than system accounts."""

from __future__ import annotations

from typing import Any, Iterator

from ...rule import Finding, rule
from .directory import FILTERED_USERS


@rule("scheduling", "accounting")
def fair_share_needs_accounting(spec: dict[str, Any]) -> Iterator[Finding]:
    if spec["scheduling"]["fairShare"]["enabled"] and not spec["accounting"]["enabled"]:
        yield ("scheduling.fairShare.enabled",
               "fair share needs the accounting database (usage is stored by slurmdbd); enable accounting or set this to false")


@rule("policy", "partitions", "accounting", "scheduling")
def policy_references(spec: dict[str, Any]) -> Iterator[Finding]:
    """Every name the policy uses exists, the account tree has one root and no cycle."""
    policy = spec.get("policy")
    qos_names = {q["name"] for q in (policy or {}).get("qos", [])}
    for index, part in enumerate(spec["partitions"]):
        if "qos" in part:
            yield (f"partitions[{index}].qos",
                   "a partition QOS= is not supported yet; use allowQos to admit only the QoS you name")
        for name in part.get("allowQos", []):
            if name not in qos_names:
                yield f"partitions[{index}].allowQos", f"no QoS named {name!r} in policy.qos"
    if policy is None:
        return
    if not spec["accounting"]["enabled"]:
        yield "policy", "accounts and QoS live in the accounting database; enable accounting"
    if spec["scheduling"]["preemptLowerTiers"] and any(q.get("preempt") for q in policy.get("qos", [])):
        yield ("scheduling.preemptLowerTiers",
               "QoS preemption (policy.qos[].preempt) and partition-tier preemption exclude each other; pick one")
    repeated: set[tuple[str, int]] = set()  # (section, index) of every second and later use of a name
    for section in ("qos", "accounts", "users"):
        seen: set[str] = set()
        for index, item in enumerate(policy.get(section, [])):
            if item["name"] in seen:
                yield f"policy.{section}[{index}].name", f"duplicate name {item['name']!r}"
                repeated.add((section, index))
            seen.add(item["name"])
    # A repeated item's checks that hang on its own name (preempting itself, its place in the tree)
    # would only echo the duplicate; they run once it is renamed.
    for index, qos in enumerate(policy.get("qos", [])):
        for name in qos.get("preempt", []):
            if name == qos["name"] and ("qos", index) in repeated:
                continue
            if name == qos["name"]:
                yield f"policy.qos[{index}].preempt", "a QoS cannot preempt itself"
            elif name not in qos_names:
                yield f"policy.qos[{index}].preempt", f"no QoS named {name!r} in policy.qos"
    if "defaultQos" in policy and policy["defaultQos"] not in qos_names:
        yield "policy.defaultQos", f"no QoS named {policy['defaultQos']!r} in policy.qos"
    accounts: dict[str, dict[str, Any]] = {}
    for acct in policy.get("accounts", []):
        accounts.setdefault(acct["name"], acct)  # the first definition of a repeated name
    for index, acct in enumerate(policy.get("accounts", [])):
        where = f"policy.accounts[{index}]"
        if acct["name"] == "root":
            yield f"{where}.name", "root is the implicit top of the tree; use it as a parent"
            continue  # its parent and cycle would only echo this
        if acct["parent"] != "root" and acct["parent"] not in accounts:
            yield f"{where}.parent", f"no account named {acct['parent']!r}; the tree's single root is 'root'"
        for name in acct.get("qos", []):
            if name not in qos_names:
                yield f"{where}.qos", f"no QoS named {name!r} in policy.qos"
        if "defaultQos" in acct:
            if acct["defaultQos"] not in qos_names:
                yield f"{where}.defaultQos", f"no QoS named {acct['defaultQos']!r} in policy.qos"
            elif acct.get("qos") and acct["defaultQos"] not in acct["qos"]:
                yield f"{where}.defaultQos", f"{acct['defaultQos']!r} must also be in this account's qos list"
        if ("accounts", index) in repeated:
            continue
        chain, node = [acct["name"]], acct["parent"]
        while node != "root" and node in accounts and node not in chain:
            chain.append(node)
            node = accounts[node]["parent"]
        if node in chain:
            yield f"{where}.parent", f"account parents form a cycle: {' -> '.join([*chain, node])}"
    for index, user in enumerate(policy.get("users", [])):
        for key, names in (("defaultAccount", [user["defaultAccount"]]), ("accounts", user.get("accounts", []))):
            for name in names:
                if name not in accounts:
                    yield f"policy.users[{index}].{key}", f"no account named {name!r} in policy.accounts"


# Accounts of the Slurm images (SlinkyProject/containers schedmd/slurm/26.05/ubuntu26.04/Dockerfile: FROM
# ubuntu:26.04, which removes the image's `ubuntu` user, adds SlurmUser `slurm` (uid 401), and installs
# openssh-server and sssd on the login and slurmd images): Debian's base-passwd `passwd.master` (every
# Debian and Ubuntu image's /etc/passwd; `_apt` since 3.6.1, `gnats` until 3.6.0), `ubuntu` (uid 1000 of
# ubuntu >= 23.04 images), and the packages' own (`sshd`, `sssd`, `messagebus`, `systemd-*`, and Debian's
# `_name` convention for new system users). A policy user of that name is whatever runs as that uid in a
# pod: a service account would hold a Slurm account, fair share and, with adminLevel or an admin group,
# Slurm's admin rights. `root` is allowed: without a directory it is the one login (sshAuthorizedKeys),
# Slurm already treats uid 0 as its super user, and the accounts Job never touches root's own association
# (with a directory, sssd filters root and directory_user_names refuses it).
SYSTEM_ACCOUNTS = frozenset({
    "daemon", "bin", "sys", "sync", "games", "man", "lp", "mail", "news", "uucp", "proxy", "www-data", "backup",
    "list", "irc", "gnats", "nobody", "ubuntu", "slurm", "sshd", "sssd", "messagebus", "polkitd", "syslog",
    "uuidd", "tss", "tcpdump", "dnsmasq", "lxd", "pollinate", "landscape", "usbmux", "fwupd-refresh", "dhcpcd",
})
SYSTEM_ACCOUNT_PREFIXES = ("systemd-", "_")


def system_account(name: str) -> bool:
    """True for an account of the images (SYSTEM_ACCOUNTS), which no person logs in as."""
    return name in SYSTEM_ACCOUNTS or name.startswith(SYSTEM_ACCOUNT_PREFIXES)


@rule("policy", "directory", "bridge")
def policy_users_are_people(spec: dict[str, Any]) -> Iterator[Finding]:
    """No policy user named like a system account of the images (SYSTEM_ACCOUNTS)."""
    users = (spec.get("policy") or {}).get("users", [])
    filtered = FILTERED_USERS if spec.get("directory") is not None else ()
    bridged = ("slurm",) if spec.get("bridge") is not None else ()  # bridge_rules says why slurm is not theirs
    for index, user in enumerate(users):
        name = user["name"]
        # those get directory_user_names' line, or bridge_rules'
        if system_account(name) and name not in filtered and name not in bridged:
            yield (f"policy.users[{index}].name", f"{name!r} is a system account of the Slurm images, which whatever "
                   "runs as that user in a pod would act as (a Slurm user, an administrator with adminLevel); "
                   "use the person's own login name")
