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
import urllib.parse
from collections import Counter
from typing import Any, Iterator

from .grammar import Unreadable, slurm_conf, sshd, sssd

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
# The value may start with or hold `#`, `;` or `,`, and follow a no-break space: a consumer may read it
# as a comment or keep the odd space, but git holds the bytes. So the value runs to the next ASCII
# whitespace (what Slurm, sshd and sssd split on) after any run of spaces of any kind, and matches
# may overlap (`x\u00a0AccountingStoragePass=…` holds a second key inside the first value), but not
# inside an ARN or a path (`arn:aws:secretsmanager:…:secret:name` names a secret).
_ASSIGNMENT = re.compile(r"(?<![\w.:/-])(?=([A-Za-z_][\w.-]*)[^\S\n]*[=:][^\S\n]*(\"[^\"\n]*\"|'[^'\n]*'|[^ \t\n\r\f\v]*))")
_TOKEN = re.compile(r"(?<![A-Za-z0-9_])(gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,}|glpat-[A-Za-z0-9_-]{20,}"
                    r"|xox[abposr]-[A-Za-z0-9-]{10,})")
# `bindpw s3cret`, also commented out (`;bindpw s3cret` is in git all the same)
_LINE_PAIR = re.compile(r"(?m)^[^\S\n]*(?:[;#]+|//)?[^\S\n]*([A-Za-z_][\w.-]*)[^\S\n]+([^\s=:][^ \t\n\r\f\v]*)")
# Lines a consumer joins: Slurm's and sacctmgr's `\` at the end of a line, an ini continuation (a line
# starting with whitespace). A secret split over two lines is scanned joined.
_JOINS = (re.compile(r"\\[ \t]*\n"), re.compile(r"[ \t]*\n[ \t]+"))
_URL = re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://[^\s\"'<>]+")
# Query and fragment parameters that carry a credential (OAuth's access_token in a fragment, a
# signed URL's signature, an API key).
_URL_PARAMS = frozenset({"auth", "access_token", "id_token", "refresh_token", "token", "auth_token", "key", "apikey",
                         "api_key", "sig", "signature", "code", "client_secret", "private_token", "password", "passwd",
                         "pass", "pwd", "secret", "jwt", "session", "sessionid", "x-amz-signature",
                         "x-amz-credential", "x-amz-security-token"})
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
    """True unless the value is empty, a reference (`${VAR}`, a path, a template) or a type word
    (trailing punctuation aside: `no,`). Leading punctuation makes no value harmless (`;hunter2`)."""
    value = value.strip().strip("\"'").strip()
    harmless = {value.lower(), value.rstrip(",;.").lower()} & _NON_SECRET_VALUES
    return not (harmless or _REFERENCE.match(value))


def _decoded(text: str) -> str:
    """Percent-decoding applied until nothing changes (bounded): `%2561` is `%61` is `a`."""
    for _ in range(4):
        decoded = urllib.parse.unquote(text)
        if decoded == text:
            break
        text = decoded
    return text


def _url_findings(text: str) -> Iterator[str]:
    """Credentials in a URL, read as a client reads it: user-info, and query or fragment parameters,
    each percent-decoded (`?auth=…`, `#access_token=…`, `%61ccess_token`)."""
    for match in _URL.finditer(text):
        url = match.group(0)
        # split by hand: urllib's urlsplit raises on odd hosts (`[a-z]`), and this must read any text
        before, _, fragment = url.partition("#")
        query = before.partition("?")[2]
        for place in (query, fragment):
            for key, value in urllib.parse.parse_qsl(place, keep_blank_values=True, separator="&"):
                for k, v in [(key, value), *[tuple(p.split("=", 1)) for p in value.split(";") if "=" in p]]:
                    k, v = _decoded(k).strip(), _decoded(v)
                    if (k.lower() in _URL_PARAMS or credential_key(k)) and v and secret_value(v):
                        yield "holds credentials in a URL's query or fragment"
        decoded = _decoded(url)
        if decoded != url:
            yield from _pattern_findings(decoded)
            if _URL_CREDENTIALS.search(decoded):
                yield "holds credentials in a URL (user:password@)"


def _pattern_findings(text: str) -> Iterator[str]:
    if _PRIVATE_KEY.search(text):
        yield "holds a private-key block"
    if _AWS_KEY_ID.search(text):
        yield "holds an AWS access key ID"
    if _TOKEN.search(text):
        yield "holds an access token"


def scan_text(text: str) -> Iterator[str]:
    """What secret material a piece of free text holds: one description per kind found, no values.

    The text is scanned as written and with the lines its consumers join (a `\\` continuation, an
    indented continuation line) joined, so a value never hides on the next line."""
    found: list[str] = []
    variants = [text, *(join.sub(" " if join is _JOINS[1] else "", text) for join in _JOINS)] if "\n" in text else [text]
    for variant in dict.fromkeys(variants):
        found += _scan_one(variant)
    yield from dict.fromkeys(found)


def _scan_one(text: str) -> Iterator[str]:
    yield from _pattern_findings(text)
    if "://" in text:
        if _URL_CREDENTIALS.search(text):
            yield "holds credentials in a URL (user:password@)"
        yield from _url_findings(text)
    if "=" not in text and ":" not in text and "\n" not in text:
        return  # no assignment and no config line: a name or a word (most strings of a spec)
    seen: set[str] = set()
    # `key value` lines only in multi-line text (config files): in a one-line description,
    # "Token bucket" is prose.
    pairs = _LINE_PAIR.finditer(text) if "\n" in text else iter(())
    for match in [*_ASSIGNMENT.finditer(text), *pairs]:
        key, value = match.group(1), match.group(2)
        if credential_key(key) and secret_value(value) and key not in seen:
            seen.add(key)
            yield f"sets {key} to a literal value"


def scan_consumer(path: tuple[Any, ...], text: str) -> Iterator[str]:
    """The same text read with its consumer's tokenizer (grammar/): every key that consumer reads,
    with the value it reads, so a credential key is found however the line is spelt."""
    pairs: list[tuple[str, str]] = []
    try:
        if path == ("login", "sssdConf"):
            pairs = [(e.key, e.value) for e in sssd.read(text)]
        elif path == ("login", "extraSshdConfig"):
            pairs = [(line.keyword, " ".join(line.args)) for line in sshd.read(text)]
        elif path[:2] == ("controller", "extraConf"):
            pairs = [(t.key, t.value) for t in slurm_conf.read_line(text)]
    except Unreadable:
        pass  # refused by the consumer's check; the raw scan above still ran
    for key, value in pairs:
        key = key.strip()
        if _KEY.fullmatch(key) and credential_key(key) and secret_value(value):
            yield f"sets {key} to a literal value"


_KEY = re.compile(r"[A-Za-z_][\w.-]*")
_TOKEN_RUN = re.compile(r"[A-Za-z0-9+/=_.-]{16,}")
_SEPARATED = re.compile(r"[=:\s,;]")


def _token_shaped(text: str) -> bool:
    """A run of 16+ token characters mixing upper case, lower case and digits with high entropy: what a
    generated key or token looks like (image tags, IDs and digests are one case, or hex)."""
    return any(any(c.isupper() for c in run) and any(c.islower() for c in run) and any(c.isdigit() for c in run)
               and entropy(run) >= 3.5 for run in _TOKEN_RUN.findall(text))


def shown_value(text: str) -> bool:
    """Whether an error line may quote this value: no secret material, no credential word with
    something after it (`password=…`), nothing shaped like a token. Anything else is described, not shown."""
    if any(scan_text(text)) or _token_shaped(text):
        return False
    if _REFERENCE.match(text.strip()):
        return True  # an ARN, a path or a variable names where a secret is
    mentions = any(w in CREDENTIAL_WORDS for w in key_words(text)) or any(p in text.casefold() for p in _CREDENTIAL_PARTS)
    return not (mentions and _SEPARATED.search(text.strip()))


def shown_key(key: str) -> bool:
    """Whether an error line may name this key (a field path): not shaped like a token, no secret in it."""
    return not (_token_shaped(key) or any(scan_text(key)))


def hidden(text: str) -> str:
    """What an error line says instead of a value it may not show."""
    return f"<{len(text)} characters, not shown: they may be a secret>"


def unshown(data: Any) -> set[str]:
    """Every string value and key of parsed spec data that an error line may not show."""
    out: set[str] = set()
    if isinstance(data, dict):
        for key, value in data.items():
            if isinstance(key, str) and not shown_key(key):
                out.add(key)
            out |= unshown(value)
    elif isinstance(data, list):
        for item in data:
            out |= unshown(item)
    elif isinstance(data, str) and data and not shown_value(data):
        out.add(data)
    return out


def redact(line: str, secrets: set[str]) -> str:
    """`line` with every string of `secrets` (and its repr, in any case) replaced by `hidden`, longest
    first, and every token-shaped run replaced too, wherever it came from (a rule quoting a part of a
    value, a keyword a tokenizer read from it)."""
    for secret in sorted(secrets, key=len, reverse=True):
        shown = hidden(secret)
        for form in (repr(secret), secret):
            if form.casefold() in line.casefold():
                line = re.compile(re.escape(form), re.IGNORECASE).sub(shown.replace("\\", "\\\\"), line)
    return _TOKEN_RUN.sub(lambda m: hidden(m.group(0)) if _token_shaped(m.group(0)) else m.group(0), line)


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
        raw = list(scan_text(data))
        for finding in dict.fromkeys([*raw, *(f for f in scan_consumer(path, data) if not raw)]):
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
