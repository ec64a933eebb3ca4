"""Free text handed to Slurm, sshd and sssd: read with the consumer's grammar (spec/grammar/), no key we set, no secret."""

from __future__ import annotations

from typing import Any, Iterator

from ...rule import Finding, rule
from .. import secrets_scan
from .._slurm import slurm_key, slurm_keys
from ..grammar import Unreadable, sacctmgr_file, slurm_conf, sshd, sssd


@rule("nodesets", "partitions")
def extra_conf_overrides(spec: dict[str, Any]) -> Iterator[Finding]:
    """Keys the generator owns must not be smuggled in through the free-form maps."""
    owned_partition = slurm_keys({"Nodes", "Default", "MaxTime", "PriorityTier", "PartitionName"})
    for index, part in enumerate(spec["partitions"]):
        for key in sorted(k for k in part["extraConfig"] if slurm_key(k) in owned_partition):
            yield f"partitions[{index}].extraConfig.{key}", f"{key} is set by the generator; use the partition's own field"
    owned_node = slurm_keys({"Gres", "NodeName", "Features", "Feature"})
    for index, ns in enumerate(spec["nodesets"]):
        for key in sorted(k for k in ns["extraSlurmdConf"] if slurm_key(k) in owned_node):
            yield f"nodesets[{index}].extraSlurmdConf.{key}", f"{key} is set by the generator; use features / gpusPerPod"


def holds_secret(text: str) -> bool:
    """Whether the secret scan refuses this text: its line (which never shows the text) is the one to
    give, not a grammar refusal of the same text."""
    return any(secrets_scan.scan_text(text))


@rule("nodesets", "partitions", "controller")
def slurm_values(spec: dict[str, Any]) -> Iterator[Finding]:
    """The one check of what reaches Slurm's parser as free text (extra node and partition
    parameters, extra slurm.conf lines), read with Slurm's own grammar (grammar/slurm_conf.py): no
    `#`, no backslash, no quote that does not wrap a value, one key per global line, and no key given
    twice in two spellings (Slurm keys ignore case; _slurm.py)."""
    maps = [(f"nodesets[{i}].extraSlurmdConf", ns["extraSlurmdConf"]) for i, ns in enumerate(spec["nodesets"])]
    maps += [(f"partitions[{i}].extraConfig", p["extraConfig"]) for i, p in enumerate(spec["partitions"])]
    for where, params in maps:
        seen: dict[str, str] = {}
        for key, value in params.items():
            if slurm_key(key) in seen:
                yield f"{where}.{key}", f"the same Slurm key as {seen[slurm_key(key)]} (Slurm keys ignore case); keep one"
            seen.setdefault(slurm_key(key), key)
            try:
                if not holds_secret(str(value)):
                    slurm_conf.read_value(str(value))
            except Unreadable as err:
                yield f"{where}.{key}", str(err)
    for index, line in enumerate(spec["controller"]["extraConf"]):
        try:
            if not holds_secret(line):
                slurm_conf.read_line(line)
        except Unreadable as err:
            yield f"controller.extraConf[{index}]", str(err)


# sacctmgr flat files (charts/policy.py): `#` starts a comment there too (a cut line makes `sacctmgr
# load` fatal), and the Job reads `sacctmgr -nP` output split on `|`; `'`, `:`, `"` and line breaks
# are refused by the schema's pattern. `[slurmgen ` is the ownership mark (policy.mark) the Job
# deletes entities by: a description must not claim another cluster's.
_FLAT_FILE_SPECIAL = ("#", "|")
# slurmdbd stores descriptions and organizations in MySQL `tinytext` columns (255 bytes; acct_table
# and qos_table in src/plugins/accounting_storage/mysql/accounting_storage_mysql.c): a longer one is
# refused or cut, cutting the ownership mark appended to it; and a long text would grow the
# accounts ConfigMap toward the API server's 1 MiB limit.
TEXT_COLUMN_BYTES = 255
OWNER_MARK = "[slurmgen"


@rule("policy", "slurm")
def flat_file_values(spec: dict[str, Any]) -> Iterator[Finding]:
    """The one check of the free text that reaches the accounts flat file: QoS and account descriptions, organizations."""
    policy = spec.get("policy") or {}
    fields = [(f"policy.qos[{i}].description", q.get("description")) for i, q in enumerate(policy.get("qos", []))]
    for i, acct in enumerate(policy.get("accounts", [])):
        fields += [(f"policy.accounts[{i}].description", acct.get("description")),
                   (f"policy.accounts[{i}].organization", acct.get("organization"))]
    for where, text in fields:
        if not isinstance(text, str):
            continue
        special = [c for c in _FLAT_FILE_SPECIAL if c in text]
        if special:
            yield where, (f"holds {' and '.join(repr(c) for c in special)}, which the sacctmgr flat file and the "
                          "accounts Job read as a comment or separator; remove it")
        else:
            try:
                sacctmgr_file.read_back(where.rsplit(".", 1)[-1].capitalize(), text)
            except Unreadable as err:
                yield where, str(err)
        if OWNER_MARK in text.casefold():
            yield where, f"holds {OWNER_MARK!r}, slurmgen's mark of the entities a cluster owns; remove it"
        room = TEXT_COLUMN_BYTES - len(f" {OWNER_MARK} {spec['slurm']['clusterName']}]".encode())
        if len(text.encode()) > room:
            yield where, (f"{len(text.encode())} bytes; slurmdbd keeps {TEXT_COLUMN_BYTES} with slurmgen's mark, "
                          f"so at most {room}")


# sshd reads `Match` blocks to the end of the file, and `Include` pulls in other files: after our
# key-only lines either could switch passwords or root login back on for some connections
# (sshd_config(5): "If a keyword appears in multiple Match blocks ... the first"; a Match line
# applies until the next Match or the end). Keywords are read as sshd reads them (grammar/sshd.py):
# `"Match" all` is a Match line.
_SSHD_REFUSED = ("match", "include")
# What slurmgen's own lines set (charts/login.py, charts/directory.py), with the aliases sshd maps to
# the same option (servconf.c keywords[]): sshd keeps a keyword's first value, so a later line never
# applies; it is refused rather than silently ignored.
_SSHD_OURS = {
    "passwordauthentication": "PasswordAuthentication", "kbdinteractiveauthentication": "KbdInteractiveAuthentication",
    "challengeresponseauthentication": "KbdInteractiveAuthentication", "pubkeyauthentication": "PubkeyAuthentication",
    "permitrootlogin": "PermitRootLogin", "authorizedkeyscommand": "AuthorizedKeysCommand",
    "authorizedkeyscommanduser": "AuthorizedKeysCommandUser",
}


@rule("login")
def sshd_extra_config(spec: dict[str, Any]) -> Iterator[Finding]:
    """Refuse `Match` and `Include` in login.extraSshdConfig, the keywords slurmgen sets, and any line
    sshd would read differently from how it looks: only global keywords, which sshd keeps first-come,
    so ours (before it) hold."""
    text = spec["login"].get("extraSshdConfig") or ""
    if holds_secret(text):
        return  # the secret scan's line says it, without the text
    in_match = False  # the lines of a (refused) Match block are said with it
    for number, raw in enumerate(text.split("\n"), start=1):
        try:
            line = sshd.read_line(raw, number)
        except Unreadable as err:
            yield "login.extraSshdConfig", f"line {number}: {err}"
            continue
        if line is None:
            continue
        if line.key in _SSHD_REFUSED:
            in_match = in_match or line.key == "match"
            yield ("login.extraSshdConfig", f"line {number}: {line.keyword} is refused: it would apply after slurmgen's "
                   "lines and could re-enable passwords or root login; use global keywords only")
        elif line.key in _SSHD_OURS and not in_match:
            yield ("login.extraSshdConfig", f"line {number}: {line.keyword} is set by slurmgen, and sshd keeps the first "
                   "value, so this line would never apply; remove it (root login: directory.ssh.rootLogin)")


@rule("login")
def sssd_conf_file(spec: dict[str, Any]) -> Iterator[Finding]:
    """login.sssdConf is read by sssd's own parser (grammar/sssd.py): a line it refuses stops sssd."""
    text = spec["login"].get("sssdConf") or ""
    if holds_secret(text):
        return  # the secret scan's line says it, without the text
    try:
        sssd.read(text)
    except Unreadable as err:
        yield "login.sssdConf", str(err)
