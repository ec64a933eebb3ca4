"""Slurm accounts, users and QoS in plain words for the PR summary, and the settings that cannot take effect.

A reviewer of "ConfigMap slurm/slurm-accounts (data.accounts.cfg, data.declared-qos)" learns nothing;
"adds QoS urgent (priority 1000, preempts scavenger); adds account vision with alice, bob" says it.
Both sides are read from the rendered sacctmgr flat file (charts/policy.py flat_file), so base and head
are compared the same way whatever the base's spec was. The slurm.conf that decides whether a QoS
priority or a fair share matters is the effective one (slurmgen/slurmconf/operator.py), as
`--explain slurm.conf` prints it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..slurmconf.operator import SLURM_CONF, Tree, Unresolved, effective
from ..slurmconf.parse import parse
from ..verify.guards import POLICY_CONFIG_MAP

_ENTITY = re.compile(r"^(QOS|Cluster|Parent|Account|User) - '([^']*)'(.*)$")
_OPTION = re.compile(r":([A-Za-z]+)=('[^']*'|[^:]*)")
_MARKER = re.compile(r" ?\[slurmgen [^\]]*\]$")  # charts/policy.py mark(): in every Description we load
_TRES = ("MaxTRESPerUser", "MaxTRESPerJob", "GrpTRES")
# Slurm 26.05 defaults when slurm.conf does not set them (slurm.conf(5): PriorityType
# priority/multifactor, every PriorityWeight* 0; https://slurm.schedmd.com/priority_multifactor.html).
DEFAULT_PRIORITY_TYPE = "priority/multifactor"
SSSD_SECRET = "slurm-sssd-conf"  # charts/secrets.py SSSD_SECRET: the sssd.conf the login pods read


@dataclass
class PolicyModel:
    """What one render's flat file declares: QoS, accounts (with their parent), users and associations."""

    qos: dict[str, dict[str, str]] = field(default_factory=dict)
    accounts: dict[str, dict[str, str]] = field(default_factory=dict)  # "Parent" among the options
    users: dict[str, dict[str, str]] = field(default_factory=dict)  # options of the user's first line
    members: dict[str, list[str]] = field(default_factory=dict)  # account -> users, in file order
    default_qos: str | None = None


def _options(rest: str) -> dict[str, str]:
    out = {}
    for key, value in _OPTION.findall(rest):
        value = value[1:-1] if value.startswith("'") else value
        out[key] = _MARKER.sub("", value) if key == "Description" else value
    return out


def _flat_file(tree: Tree) -> str | None:
    for obj in tree.values():
        if obj.get("kind") == "ConfigMap" and obj.get("metadata", {}).get("name") == POLICY_CONFIG_MAP:
            return str((obj.get("data") or {}).get("accounts.cfg", ""))
    return None


def model(tree: Tree) -> PolicyModel | None:
    """The policy of a render, or None when it has no accounts ConfigMap (no policy managed here)."""
    text = _flat_file(tree)
    if text is None:
        return None
    found = PolicyModel()
    parent = "root"
    for line in text.splitlines():
        match = _ENTITY.match(line)
        if not match:
            continue
        kind, name, opts = match.group(1), match.group(2), _options(match.group(3))
        if kind == "QOS":
            found.qos[name] = opts
        elif kind == "Cluster":
            found.default_qos = opts.get("DefaultQOS")
        elif kind == "Parent":
            parent = name
        elif kind == "Account":
            found.accounts[name] = {"Parent": parent, **opts}
        else:
            found.users.setdefault(name, opts)
            found.members.setdefault(parent, []).append(name)
    return found


# -- words ------------------------------------------------------------------------------------------

def _names(values: str) -> str:
    return ", ".join(v for v in values.split(",") if v)


#: values sacctmgr's flat file carries whatever the spec says (schema defaults): not worth a word when added
_DEFAULTS = {"Priority": "0", "Fairshare": "1"}


def _added(opts: Mapping[str, str], skip: tuple[str, ...] = ("Description",)) -> list[str]:
    return [_word(k, v) for k, v in opts.items() if k not in skip and _DEFAULTS.get(k) != v]


def _word(key: str, value: str) -> str:
    """One option as a reviewer reads it: `priority 1000`, `preempts scavenger`, `MaxTRESPerUser gres/gpu=4`."""
    plain = {"Priority": "priority", "PreemptMode": "preempt mode", "GraceTime": "grace time (s)",
             "UsageFactor": "usage factor", "Fairshare": "fair share", "DefaultQOS": "default QoS",
             "Organization": "organization", "AdminLevel": "admin level", "DefaultAccount": "default account",
             "Flags": "flags"}
    if key == "Preempt":
        return f"preempts {_names(value)}"
    if key == "QOS":
        return f"QoS {_names(value)}"
    if key == "Description":
        return f"description '{value}'"
    return f"{plain.get(key, key)} {value}"


def _tres(value: str | None) -> dict[str, str]:
    return dict(pair.split("=", 1) for pair in (value or "").split(",") if "=" in pair)


def _change(key: str, old: str | None, new: str | None) -> str:
    """`priority 1000 → 500`, `MaxTRESPerUser gres/gpu=4 → 2`, `preempts scavenger → -`."""
    if key in _TRES:
        a, b = _tres(old), _tres(new)
        return f"{key} " + ", ".join(f"{t}={a.get(t, '-')} → {b.get(t, '-')}"
                                     for t in sorted(set(a) | set(b)) if a.get(t) != b.get(t))
    label = _word(key, "").strip()
    show = _names if key in ("Preempt", "QOS") else (lambda v: v)
    return f"{label} {show(old) if old else '-'} → {show(new) if new else '-'}"


def _changes(old: Mapping[str, str], new: Mapping[str, str], skip: tuple[str, ...] = ()) -> list[str]:
    return [_change(key, old.get(key), new.get(key)) for key in sorted(set(old) | set(new))
            if key not in skip and old.get(key) != new.get(key)]


def _qos_lines(a: PolicyModel, b: PolicyModel) -> list[str]:
    lines = []
    for name in sorted(set(a.qos) | set(b.qos)):
        was, now = a.qos.get(name), b.qos.get(name)
        if now is None:
            lines.append(f"removes QoS `{name}`")
        elif was is None:
            words = _added(now)
            lines.append(f"adds QoS `{name}`" + (f" ({', '.join(words)})" if words else ""))
        elif was != now:
            lines.append(f"changes QoS `{name}`: " + "; ".join(_changes(was, now)))
    if a.default_qos != b.default_qos:
        lines.append(f"default QoS {a.default_qos or '-'} → {b.default_qos or '-'}")
    return lines


def _user_note(opts: Mapping[str, str]) -> str:
    extra = [_word(k, opts[k]) for k in ("AdminLevel",) if opts.get(k)]
    extra += [_word("Fairshare", opts["Fairshare"])] if opts.get("Fairshare", "1") != "1" else []
    return f" ({', '.join(extra)})" if extra else ""


def _account_lines(a: PolicyModel, b: PolicyModel) -> list[str]:
    lines = []
    for name in sorted(set(a.accounts) | set(b.accounts)):
        was, now = a.accounts.get(name), b.accounts.get(name)
        if now is None:
            lines.append(f"removes account `{name}`")
        elif was is None:
            words = [f"under {now['Parent']}"] if now.get("Parent", "root") != "root" else []
            words += _added(now, ("Parent", "Description"))
            users = [f"{u}{_user_note(b.users.get(u, {}))}" for u in b.members.get(name, [])]
            lines.append(f"adds account `{name}`" + (f" ({', '.join(words)})" if words else "")
                         + (f" with {', '.join(users)}" if users else ""))
        elif was != now:
            moved = [f"parent {was.get('Parent')} → {now.get('Parent')}"] if was.get("Parent") != now.get("Parent") else []
            lines.append(f"changes account `{name}`: " + "; ".join(moved + _changes(was, now, skip=("Parent",))))
    return lines


def _user_lines(a: PolicyModel, b: PolicyModel) -> list[str]:
    """Users joining or leaving accounts that stay (a new account lists its users), and option changes."""
    def of(m: PolicyModel, user: str) -> list[str]:
        return [acct for acct, users in m.members.items() if user in users]

    lines = []
    for user in sorted(set(a.users) | set(b.users)):
        before, after = of(a, user), of(b, user)
        joined = [x for x in after if x not in before and x in a.accounts]
        left = [x for x in before if x not in after and x in b.accounts]
        if joined:
            note = _user_note(b.users[user]) if user not in a.users else ""
            lines.append(f"adds user {user}{note} to {', '.join(joined)}")
        if left:
            lines.append(f"removes user {user} from {', '.join(left)}")
        if user in a.users and user in b.users and a.users[user] != b.users[user]:
            lines.append(f"changes user {user}: " + "; ".join(_changes(a.users[user], b.users[user])))
    return lines


def policy_lines(old: Tree, new: Tree) -> list[str]:
    """Headline items (no leading `- `) saying what the change does to QoS, accounts and users."""
    a, b = model(old), model(new)
    if b is None or a == b or not (a or b.qos or b.accounts or b.users):
        return []
    if a is None or not (a.qos or a.accounts or a.users):
        return [f"Slurm policy: {len(b.qos)} QoS ({', '.join(b.qos) or '-'}), {len(b.accounts)} account(s) "
                f"({', '.join(b.accounts) or '-'}), {len(b.users)} user(s)"]
    return _qos_lines(a, b) + _account_lines(a, b) + _user_lines(a, b)


# -- settings that cannot take effect ---------------------------------------------------------------

def _conf(tree: Tree) -> dict[str, str] | None:
    """The effective slurm.conf's global keys (lower-cased key -> value), None without a Controller."""
    try:
        eff = effective(tree) if tree else None
    except Unresolved:
        return None
    if eff is None or SLURM_CONF not in eff.files:
        return None
    return {key: value for key, (_, value) in parse(eff.files[SLURM_CONF]).values().items()}


def _weight(conf: Mapping[str, str], key: str) -> int:
    try:
        return int(conf.get(key.lower(), "0"))
    except ValueError:
        return 0


def _why_not(conf: Mapping[str, str], weight: str, field_name: str) -> str | None:
    """Why a priority factor is ignored by this slurm.conf (None when it counts), and the spec's fix."""
    kind = conf.get("prioritytype", DEFAULT_PRIORITY_TYPE)
    if kind != "priority/multifactor":
        return f"`PriorityType` is {kind} in slurm.conf (set scheduling.fairShare.enabled: true)"
    if _weight(conf, weight) <= 0:
        fix = (f"set scheduling.fairShare.weights.{field_name}" if "prioritytype" in conf
               else f"set scheduling.fairShare.enabled: true and weights.{field_name}")
        return f"`{weight}` is 0 in slurm.conf ({fix})"
    return None


def _touched(a: dict[str, dict[str, str]], b: dict[str, dict[str, str]], key: str, all_of_them: bool) -> list[str]:
    """Entities of b whose `key` is set to something that matters (not 0 or 1) and is new in this change."""
    idle = _DEFAULTS[key]
    return [name for name, opts in b.items() if opts.get(key, idle) != idle
            and (all_of_them or a.get(name, {}).get(key) != opts.get(key))]


def _local_only(sssd: str) -> bool:
    """sssd.conf that knows local files only (charts/secrets.py DEFAULT_SSSD_CONF): no directory user exists."""
    providers = re.findall(r"^\s*id_provider\s*=\s*(\S+)", sssd, re.M)
    libs = re.findall(r"^\s*proxy_lib_name\s*=\s*(\S+)", sssd, re.M)
    return bool(providers) and set(providers) <= {"proxy", "files"} and set(libs) <= {"files"}


def _root_only(tree: Tree) -> bool | None:
    """True when only root can log in: no sshd key lookup for users (no `directory:`, charts/login.py
    sshd_config) and an sssd.conf of local files only; None when the render has no login or its sssd.conf
    is not in git (a pre-created Secret may name a directory)."""
    logins = [o for o in tree.values() if o.get("kind") == "LoginSet"]
    if not logins:
        return None
    if any("AuthorizedKeysCommand" in str(o.get("spec", {}).get("extraSshdConfig", "")) for o in logins):
        return False
    for obj in tree.values():
        if obj.get("kind") == "ExternalSecret" and obj.get("metadata", {}).get("name") == SSSD_SECRET:
            data: Any = obj.get("spec", {}).get("target", {}).get("template", {}).get("data", {})
            text = data.get("sssd.conf") if isinstance(data, dict) else None
            return _local_only(text) if isinstance(text, str) else None
    return None


def no_effect(old: Tree, new: Tree) -> list[str]:
    """Needs-attention notes for policy settings of this change that the head's slurm.conf or logins ignore:
    a QoS priority without `PriorityWeightQOS`, a fair share without `PriorityWeightFairshare` (or with
    priority/basic), users declared while only root can log in (docs/storage-login-accounting.md)."""
    a, b = model(old) or PolicyModel(), model(new)
    if b is None:
        return []
    conf, before = _conf(new), _conf(old)
    notes = []
    if conf is not None:
        weights_changed = before is None or any(before.get(k) != conf.get(k) for k in (
            "prioritytype", "priorityweightqos", "priorityweightfairshare"))
        why = _why_not(conf, "PriorityWeightQOS", "qos")
        names = _touched(a.qos, b.qos, "Priority", weights_changed)
        if why and names:
            shown = ", ".join(f"`{n}` {b.qos[n]['Priority']}" for n in names)
            notes.append(f"will not take effect: QoS priority ({shown}): {why}")
        why = _why_not(conf, "PriorityWeightFairshare", "fairshare")
        shares = ([f"account `{n}` {b.accounts[n]['Fairshare']}"
                   for n in _touched(a.accounts, b.accounts, "Fairshare", weights_changed)]
                  + [f"user {n} {b.users[n]['Fairshare']}" for n in _touched(a.users, b.users, "Fairshare", weights_changed)])
        if why and shares:
            notes.append(f"will not take effect: fair share ({', '.join(shares)}): {why}")
    root_only = _root_only(new)
    added = [u for u in b.users if u not in a.users or _root_only(old) is not True]
    if root_only and added:
        notes.append(f"will not take effect: users {', '.join(added)} are declared, but only root can log in "
                     "(no `directory:` section): they exist in slurmdbd only and every job runs as root "
                     "(docs/storage-login-accounting.md)")
    return notes
