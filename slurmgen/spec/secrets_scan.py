"""A small, auditable secret detector: secret material must never reach git or dist/.

Free text of the spec lands verbatim in rendered files (sssd.conf, sshd_config, slurm.conf lines,
Slurm parameter maps, labels, descriptions), which Argo CD reads from git. Every string of the
spec is scanned (and, as a backstop, every rendered file) for:

- private-key blocks (`-----BEGIN … PRIVATE KEY-----`, PGP private key blocks);
- AWS access key IDs (`AKIA…`/`ASIA…`, 20 characters) and `aws_secret_access_key` assignments;
- tokens of a known format (GitHub `ghp_…`/`github_pat_…`, GitLab `glpat-…`, Slack `xox?-…`);
- assignments to a credential-looking key (`AccountingStoragePass=…`, `ldap_default_authtok = …`,
  `password: …`, `token=…`, and `bindpw secret` lines of whitespace-separated config files) whose
  value is not a reference (`${VAR}`, a file path, a type word such as `no` or `password`);
- map entries (Slurm parameters, labels) under a credential-looking key, same rule.

A key is credential-looking when one of its words (split on `_ - .` and case changes) is a
credential word; `…_type`, `…File`, `…Revision` and the like name something about a secret, not the
secret. Each finding says what was found, never the value.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any, Iterator

CREDENTIAL_WORDS = frozenset({
    "pass", "passwd", "password", "passphrase", "pwd", "secret", "token", "authtok", "apikey", "credential",
    "credentials", "privatekey", "storagepass", "bindpw", "rootpw",
})
# A last word that makes the key describe a secret rather than hold one.
_ABOUT_WORDS = frozenset({"type", "file", "path", "command", "cmd", "program", "revision", "ref", "name",
                          "length", "policy", "expiration", "ttl", "lifetime", "mode"})
_NON_SECRET_VALUES = frozenset({"", "none", "true", "false", "yes", "no", "on", "off", "password",
                                "obfuscated_password", "default", "required", "optional"})
_REFERENCE = re.compile(r"(\$\{[^}]+\}|\$\([^)]+\)|\{\{.+\}\}|<[^>]+>|/\S*|file:\S+|env:\S+|arn:aws[a-z-]*:[a-z0-9-]+:[a-z0-9-]*:(?:\d{12})?:\S+)\Z")  # an ARN (arn:partition:service:region:account:resource) names a resource, never holds one

_PRIVATE_KEY = re.compile(r"-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----")
_AWS_KEY_ID = re.compile(r"(?<![A-Z0-9])(AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])")
# The value may start with or hold `#`: a consumer may read it as a comment, but git holds the bytes.
_ASSIGNMENT = re.compile(r"(?<![\w.-])([A-Za-z_][\w.-]*)[ \t]*[=:][ \t]*(\"[^\"\n]*\"|'[^'\n]*'|[^\s;,]*)")
_TOKEN = re.compile(r"(?<![A-Za-z0-9_])(gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,}|glpat-[A-Za-z0-9_-]{20,}"
                    r"|xox[abposr]-[A-Za-z0-9-]{10,})")
_LINE_PAIR = re.compile(r"(?m)^[ \t]*([A-Za-z_][\w.-]*)[ \t]+([^\s;=:]+)[ \t]*(?:[#;].*)?$")  # `bindpw s3cret`
# user:password@ in a URL (any scheme), or any user-info in an http(s) URL (`https://<token>@host`):
# Argo CD and Prometheus take credentials from Secrets, never from the address (ssh://git@ is a user name).
_URL_CREDENTIALS = re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://[^\s/@:]*:[^\s/@]*@|\bhttps?://[^\s/@]+@")
# Credential words found inside a key however it is spelt (Slurm keys are case-insensitive:
# `accountingstoragepass` is AccountingStoragePass); short words (`pass`, `pwd`) only as a whole word.
_CREDENTIAL_PARTS = ("password", "passwd", "passphrase", "secret", "token", "authtok", "storagepass", "bindpw",
                     "rootpw", "credential", "apikey", "privatekey", "accesskey")
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def key_words(key: str) -> list[str]:
    """`AccountingStoragePass` -> ['accounting', 'storage', 'pass']; `ldap_default_authtok` -> [..., 'authtok']."""
    return [w.lower() for w in _WORDS.findall(key)]


def credential_key(key: str) -> bool:
    """True when the key names a credential itself (not its type, file or revision)."""
    words = key_words(key)
    if not words or words[-1] in _ABOUT_WORDS:
        return False
    joined = "".join(words)
    return any(w in CREDENTIAL_WORDS for w in words) or any(c in joined for c in _CREDENTIAL_PARTS)


def entropy(text: str) -> float:
    """Shannon entropy in bits per character (shown in findings as a hint, never the value)."""
    if not text:
        return 0.0
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def secret_value(value: str) -> bool:
    """True unless the value is empty, a reference (`${VAR}`, a path, a template) or a type word."""
    value = value.strip().strip("\"'")
    return not (value.lower() in _NON_SECRET_VALUES or _REFERENCE.match(value))


def scan_text(text: str) -> Iterator[str]:
    """What secret material a piece of free text holds: one description per kind found, no values."""
    if _PRIVATE_KEY.search(text):
        yield "holds a private-key block"
    if _AWS_KEY_ID.search(text):
        yield "holds an AWS access key ID"
    if _TOKEN.search(text):
        yield "holds an access token"
    if _URL_CREDENTIALS.search(text):
        yield "holds credentials in a URL (user:password@)"
    seen: set[str] = set()
    # `key value` lines only in multi-line text (config files): in a one-line description,
    # "Token bucket" is prose.
    pairs = _LINE_PAIR.finditer(text) if "\n" in text else iter(())
    for match in [*_ASSIGNMENT.finditer(text), *pairs]:
        key, value = match.group(1), match.group(2)
        if credential_key(key) and secret_value(value) and key not in seen:
            seen.add(key)
            yield f"sets {key} to a literal value"


def scan_entry(key: str, value: Any) -> Iterator[str]:
    """A map entry (Slurm parameter, label, annotation) whose key is a credential and value a literal."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if isinstance(value, str) and credential_key(key) and secret_value(value):
        yield f"sets {key} to a literal value ({len(value)} characters, {entropy(value):.1f} bits/char)"


def scan_spec(data: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], str]]:
    """Yield (path, finding) for every string and map entry of a parsed spec."""
    if isinstance(data, dict):
        for key, value in data.items():
            for finding in scan_entry(str(key), value):
                yield (*path, key), finding
            yield from scan_spec(value, (*path, key))
    elif isinstance(data, list):
        for index, item in enumerate(data):
            yield from scan_spec(item, (*path, index))
    elif isinstance(data, str):
        for finding in scan_text(data):
            yield path, finding


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def scan_rendered(obj: Any) -> Iterator[str]:
    """Backstop on a rendered object: key blocks and AWS key IDs anywhere in it, whatever field they came from."""
    found: set[str] = set()
    for text in _strings(obj):
        if _PRIVATE_KEY.search(text):
            found.add("holds a private-key block")
        if _AWS_KEY_ID.search(text):
            found.add("holds an AWS access key ID")
        if _TOKEN.search(text):
            found.add("holds an access token")
    yield from sorted(found)
