"""sssd.conf that a real sssd accepts (issue 20, item 11): what a real sssd against a real LDAP server
showed the earlier file got wrong.

- The bind password reaches sssd.conf only in the cluster (External Secrets' template). sssd reads the
  file through ding-libs' ini parser and its own LDIF step, which change some values; the template
  refuses exactly those (modelled here from the parser's code, `sssd_reads`).
- A user's loginShell the image lacks falls back to a shell it has, or one shell is forced.
- RFC 2307 directories (memberUid groups) have their own field.
- Names are case-insensitive and lowercased for both kinds, as Slurm's accounting stores them.
- Every option we write is one `sssctl config-check` knows (tests/data/sssd-options.txt, vendored
  from sssd's cfg_rules.ini), with a value sssd accepts.

Each test builds its spec from tests/data/directory/ldap.yaml, changing only `directory:`.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from charts.directory import sssd_conf_template, sssd_conf_text
from charts.secrets import DEFAULT_SSSD_CONF
from slurmgen.spec import SpecError, parse_text
from tests.conftest import TESTS

DATA = TESTS / "data"
BASE = DATA / "directory" / "ldap.yaml"
OPTIONS = DATA / "sssd-options.txt"
POLICY = {"accounting": {"enabled": True}, "policy": {
    "qos": [{"name": "normal", "priority": 1}], "accounts": [{"name": "research", "fairshare": 1}],
    "users": [{"name": "alice", "defaultAccount": "research"}]}}


def spec_text(top: dict[str, Any] | None = None, **directory: Any) -> str:
    """The base spec with `directory` keys replaced (None removes one) and top-level sections added."""
    data = yaml.safe_load(BASE.read_text())
    for key, value in directory.items():
        if value is None:
            data["directory"].pop(key, None)
        else:
            data["directory"][key] = value
    data.update(top or {})
    return yaml.safe_dump(data, sort_keys=False)


def load(top: dict[str, Any] | None = None, **directory: Any):
    return parse_text("ldap.yaml", spec_text(top, **directory))


def problems(top: dict[str, Any] | None = None, **directory: Any) -> list[str]:
    with pytest.raises(SpecError) as err:
        load(top, **directory)
    return [str(p) for p in err.value.problems]


def sections(text: str) -> dict[str, list[tuple[str, str]]]:
    """sssd.conf as {section: [(key, value)]}, the template's guard lines skipped."""
    out: dict[str, list[tuple[str, str]]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("{{"):
            continue
        if line.startswith("["):
            current = line.strip("[]")
            out[current] = []
        elif line.strip():
            key, _, value = line.partition("=")
            assert current is not None, line
            out[current].append((key.strip(), value.strip()))
    return out


# --- a) the bind password: refuse exactly what sssd would change --------------------------------

# One refusal of the template: `{{- if regexMatch `RE2` .bindPassword }}{{ fail "MESSAGE" }}{{ end -}}`
GUARD = re.compile(r'\{\{-? if regexMatch `([^`]*)` \.bindPassword \}\}\{\{ fail "([^"]*)" \}\}\{\{ end -?\}\}')
ISSPACE = b" \t\n\v\f\r"  # C isspace() in the C locale, what ding-libs trims with


def python_re(re2: str) -> str:
    """An RE2 pattern (Go regexp, as sprig's regexMatch runs it) as Python's `re` reads it the same way.

    Where the two differ (google/re2 syntax, Go regexp/syntax): RE2 `\\s` is [\\t\\n\\f\\r ] (no \\v),
    `$` without (?m) and `\\z` are the end of the text (Python's `$` also matches before a final
    newline), and code points are written `\\x{FFFD}`."""
    out, i, in_class = [], 0, False
    while i < len(re2):
        char = re2[i]
        if char == "\\":
            pair = re2[i:i + 2]
            if pair == r"\x" and re2[i + 2:i + 3] == "{":
                end = re2.index("}", i)
                out.append(f"\\U{int(re2[i + 3:end], 16):08x}")
                i = end + 1
                continue
            out.append({r"\z": r"\Z", r"\s": r"\t\n\f\r " if in_class else r"[\t\n\f\r ]"}.get(pair, pair))
            i += 2
            continue
        in_class = (char == "[") or (in_class and char != "]")
        out.append(r"\Z" if char == "$" and not in_class else char)
        i += 1
    return "".join(out)


def guards(template: str) -> list[tuple[re.Pattern[str], str]]:
    """The template's refusals: (pattern as Python reads it, message)."""
    return [(re.compile(python_re(p)), m) for p, m in GUARD.findall(template)]


def refusal(template: str, value: bytes) -> str | None:
    """The message External Secrets fails with for `value`, or None when it renders sssd.conf.

    Go's regexp reads each byte of invalid UTF-8 as U+FFFD (package regexp docs), as `replace` does."""
    text = value.decode("utf-8", errors="replace")
    return next((message for pattern, message in guards(template) if pattern.search(text)), None)


def sssd_reads(value: bytes) -> bytes | None:
    """What sssd keeps of `ldap_default_authtok = <value>`; None when it keeps nothing or refuses the file.

    ding-libs 0.6.2 (sssd 2.9.4 parses with INI_PARSE_NOWRAP, src/util/sss_ini.c): the file goes through
    iconv to UTF-8, invalid bytes fail it (ini/ini_fileobj.c common_file_convert, EILSEQ); lines end at
    '\\n' and lose trailing '\\r'/'\\n' (ini/ini_parse.c parser_read, getline); the value loses C
    isspace() on both ends (handle_kvp, ini/ini_valueobj.c trim_last) and ends at a NUL (C strings);
    sssd drops an empty value ("has empty value, ignoring", sss_confdb_create_ldif). The LDIF step after
    it ("%s: %s\\n", then ldb's next_attr) keeps a trimmed one-line value as it is."""
    data = b"ldap_default_authtok = " + value + b"\n"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    line = data.split(b"\n", 1)[0].rstrip(b"\r\n").split(b"\0", 1)[0]
    kept = line.partition(b"=")[2].strip(ISSPACE)
    return kept or None


KEPT = [b"s3cret", b"with spaces inside", b"tab\tinside", b"#;not a comment", b"[section]", b":colon",
        b"<angle", b"a=b", b"caf\xc3\xa9", b"{{ .x }}", b"quote\"'`", b"back\\slash", b"esc\x1bape",
        b"cr\rinside", b"%u"]
CHANGED = [b"", b" lead", b"trail ", b"\tlead", b"trail\t", b"\vlead", b"trail\v", b"\flead", b"trail\f",
           b"trail\r", b"trail\n", b"\r\n", b"line\nbreak", b"nul\x00byte", b"bad\xffutf8", b"\xc3"]


def test_re2_patterns_are_read_as_go_reads_them():
    assert python_re(r"^\s|\s$|[\s\x{FFFD}]|\A\z") == r"^[\t\n\f\r ]|[\t\n\f\r ]\Z|[\t\n\f\r \U0000fffd]|\A\Z"
    assert re.search(python_re(r"\s$"), "pw\v") is None and re.search(python_re("a$"), "a\n") is None


@pytest.fixture(scope="module")
def template() -> str:
    directory = load().directory
    assert directory is not None
    return sssd_conf_template(directory)


def test_the_model_of_sssds_parser_sorts_the_samples():
    # GIVEN the samples WHEN read as sssd reads them THEN the kept ones survive and the others do not
    assert [v for v in KEPT if sssd_reads(v) != v] == []
    assert [v for v in CHANGED if sssd_reads(v) == v] == []


@pytest.mark.parametrize("value", KEPT + CHANGED, ids=repr)
def test_the_template_refuses_exactly_the_passwords_sssd_would_change(template, value):
    # GIVEN a bind password WHEN External Secrets renders the template
    # THEN it fails exactly when sssd would not read the password back unchanged
    assert (refusal(template, value) is not None) == (sssd_reads(value) != value)


def test_u_fffd_is_refused_as_go_cannot_tell_it_from_invalid_utf8(template):
    # the one over-refusal: a literal U+FFFD, which Go's regexp cannot tell from an invalid byte
    assert refusal(template, "a\ufffdb".encode()) is not None


def test_each_refusal_says_what_is_wrong_where_the_password_lives_and_what_to_do(template):
    where = "Secrets Manager secret corp/ldap/reader, property password"
    empty, blank, control = (refusal(template, v) for v in (b"", b"\vpw", b"a\x00b"))
    assert empty and blank and control
    for message in (empty, blank, control):
        assert message.startswith(f"directory bind password ({where}) ") and "sssd" in message
    assert "is empty" in empty and "vertical tab" in blank and "NUL" in control and "UTF-8" in control
    # AND it names the Secret for a pre-created one
    d = load({"aws": {"region": "us-west-2", "eksClusterName": "eks"}},
             bindPassword={"secret": {"name": "directory-bind", "key": "password"}}).directory
    assert d is not None
    assert str(refusal(sssd_conf_template(d), b"")).startswith("directory bind password (Secret directory-bind, key password) ")


# --- b) login shells ---------------------------------------------------------------------------


def test_a_login_shell_the_image_lacks_falls_back_to_bash():
    conf = sections(sssd_conf_text(load().directory))
    # THEN sssd keeps a user's shell found in /etc/shells and gives /bin/bash for any other
    # (src/responder/common/responder_utils.c sss_resp_get_shell_override: allowed_shells "*")
    assert ("allowed_shells", "*") in conf["nss"] and ("shell_fallback", "/bin/bash") in conf["nss"]
    assert "override_shell" not in dict(conf["domain/default"])


def test_the_fallback_shell_can_be_chosen():
    conf = sections(sssd_conf_text(load(shell={"fallback": "/bin/sh"}).directory))
    assert ("shell_fallback", "/bin/sh") in conf["nss"]


def test_one_shell_can_be_forced_for_everyone():
    conf = sections(sssd_conf_text(load(shell={"override": "/bin/bash"}).directory))
    # THEN every directory user gets /bin/bash, whatever loginShell says
    assert ("override_shell", "/bin/bash") in conf["domain/default"]
    assert "allowed_shells" not in dict(conf["nss"])


def test_a_shell_must_be_an_absolute_path():
    assert problems(shell={"override": "bash"}) == [
        "ldap.yaml:47: directory.shell.override: 'bash' must be an absolute path: '/', then letters, digits, '.', '_', '-' and '/'"]


# --- c) RFC 2307 -------------------------------------------------------------------------------


def test_rfc2307_directories_are_supported():
    # GIVEN groups that list member names (memberUid) THEN sssd reads them with its rfc2307 schema
    conf = dict(sections(sssd_conf_text(load(ldapSchema="rfc2307").directory))["domain/default"])
    assert conf["ldap_schema"] == "rfc2307"
    assert dict(sections(sssd_conf_text(load().directory))["domain/default"])["ldap_schema"] == "rfc2307bis"


def test_active_directory_has_no_ldap_schema_to_choose():
    ad = {"kind": "ad", "ldapSchema": "rfc2307"}
    assert problems(**ad) == [
        "ldap.yaml:46: directory.ldapSchema: only for kind ldap: Active Directory is read with sssd's ad schema; remove ldapSchema"]


def test_an_extra_setting_we_own_names_the_field_that_sets_it():
    found = problems(extraSssdConf={"ldap_schema": "rfc2307", "override_shell": "/bin/sh", "case_sensitive": "true"})
    assert found == [
        "ldap.yaml:49: directory.extraSssdConf.case_sensitive: names are always case-insensitive and lowercased "
        "(Slurm's accounting lowercases user names); remove it",
        "ldap.yaml:47: directory.extraSssdConf.ldap_schema: set by slurmgen from directory.kind and directory.ldapSchema; "
        "set those instead",
        "ldap.yaml:48: directory.extraSssdConf.override_shell: set by slurmgen from directory.shell.override; set that instead",
    ]


# --- d) case ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["ldap", "ad"])
def test_names_are_case_insensitive_and_lowercased_for_both_kinds(kind):
    conf = dict(sections(sssd_conf_text(load(kind=kind).directory))["domain/default"])
    assert conf["case_sensitive"] == "false"


def test_a_mixed_case_user_name_is_refused_with_the_rule():
    top = {**POLICY, "policy": {**POLICY["policy"], "users": [{"name": "JSmith", "defaultAccount": "research"}]}}
    [line] = problems(top)
    assert line.startswith("ldap.yaml:56: policy.users[JSmith].name: 'JSmith' must be a lowercase login name")
    assert "slurmdbd" in line and "case_sensitive = false" in line


# --- e) only options sssd knows ---------------------------------------------------------------


def known_options() -> dict[str, dict[str, set[str] | None]]:
    """tests/data/sssd-options.txt: {cfg_rules.ini rule: {option: accepted values, or None for any}}."""
    out: dict[str, dict[str, set[str] | None]] = {}
    rule = ""
    for raw in OPTIONS.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line.startswith("[rule/"):
            rule = line[len("[rule/"):-1]
            out[rule] = {}
        elif line:
            name, _, values = line.partition("=")
            out[rule][name.strip()] = set(values.split()) if values.strip() else None
    return out


def rule_of(section: str) -> str:
    """The cfg_rules.ini rule that checks `section` (allowed_domain_options: ^(domain|application)/[^/]+$)."""
    return "allowed_domain_options" if section.startswith("domain/") else f"allowed_{section}_options"


VARIANTS = {
    "ldap": {},
    "ldap-filter": {"access": {"filter": "(memberOf=cn=hpc,dc=corp,dc=example,dc=com)"}},
    "starttls": {"uris": ["ldap://ldap1.corp.example.com"], "tls": {"mode": "starttls", "ca": {"configMap": {"name": "ca", "key": "ca.pem"}}}},
    "tls-none": {"uris": ["ldap://ldap1.corp.example.com"], "tls": {"mode": "none"}},
    "no-verify": {"tls": {"verify": False}},
    "ad": {"kind": "ad"},
    "rfc2307": {"ldapSchema": "rfc2307", "userSearchBase": "ou=People,dc=corp,dc=example,dc=com",
                "groupSearchBase": "ou=Groups,dc=corp,dc=example,dc=com"},
    "override-shell": {"shell": {"override": "/bin/sh"}},
}


def rendered(name: str) -> str:
    """sssd.conf of one variant (the template, guard lines and all), or the file without a directory."""
    return DEFAULT_SSSD_CONF if name == "no-directory" else sssd_conf_template(load(**VARIANTS[name]).directory)


@pytest.mark.parametrize("name", [*VARIANTS, "no-directory"])
def test_every_option_we_write_is_one_sssctl_config_check_knows(name):
    text, known = rendered(name), known_options()
    unknown, bad_values = [], []
    for section, lines in sections(text).items():
        allowed = known.get(rule_of(section))
        assert allowed is not None, f"{name}: section [{section}] has no rule in {OPTIONS.name}"
        for key, value in lines:
            if key not in allowed:
                unknown.append(f"[{section}] {key}")
            elif allowed[key] is not None and value.lower() not in allowed[key]:
                bad_values.append(f"[{section}] {key} = {value}")
    # THEN sssctl config-check finds nothing to reject, and sssd parses every value
    assert unknown == [] and bad_values == []


def test_tls_none_turns_password_logins_off_instead_of_an_option_sssd_does_not_document():
    text = sssd_conf_template(load(**VARIANTS["tls-none"]).directory)
    conf = dict(sections(text)["domain/default"])
    # THEN no hidden option; sssd never sends a researcher's password over the clear channel
    assert "ldap_auth_disable_tls_never_use_in_production" not in text
    assert conf["auth_provider"] == "none" and conf["ldap_id_use_start_tls"] == "false"
