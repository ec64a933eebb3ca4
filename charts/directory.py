"""Researchers as themselves: sssd.conf for the site's directory, and where it reaches the pods.

What the consumers do with it (read at the pinned tags):

- slurm-operator v1.2.1 mounts the Secret in `sssdConfRef` at /etc/sssd/sssd.conf (mode 0600) in the
  login container (internal/builder/loginbuilder/login_app.go, loginVolumes / loginContainer) and,
  only for a NodeSet with `ssh.enabled`, in the slurmd container
  (internal/builder/workerbuilder/worker_app.go, nodesetVolumes / slurmdContainer). Both pod templates
  carry a hash of the sssd.conf value (getLoginHashes / getWorkerHashes): a changed sssd.conf rolls them.
- The login and slurmd images (SlinkyProject/containers schedmd/slurm/26.05, ubuntu24.04 and
  ubuntu26.04 Dockerfiles) install sssd, sssd-ldap, sssd-ad, libnss-sss and libpam-sss, run
  `authselect select sssd with-mkhomedir`, and start `sssd -i` under supervisord
  (files/etc/supervisor/conf.d/sssd.conf); the slurmd image also has libnss-slurm and pam_slurm_adopt.
  So name resolution, PAM and pam_mkhomedir come from the images; we only give them the file.
- Homes: the images' `authselect ... with-mkhomedir` writes authselect's own PAM files, which Ubuntu's
  sshd does not include (/etc/pam.d/sshd includes common-*). So the login pods get common-session as
  Ubuntu's pam-auth-update writes it with the unix, sss and mkhomedir profiles, the last with
  umask=0077. mkhomedir_helper creates the missing parents (0755) and the home (0700, the user's
  uid/gid from sssd) as root, on FSx, before sshd changes into it (linux-pam v1.5.3
  modules/pam_mkhomedir/mkhomedir_helper.c, make_parent_dirs; Ubuntu 24.04 ships 1.5.3).
- slurmctld needs no directory: the operator writes `AuthInfo=use_client_ids` (internal/builder/common/
  const.go), so auth/slurm trusts the client's identity (slurm.conf(5), AuthInfo).

The bind password is never in git: the ExternalSecret template holds `{{ .bindPassword }}` and External
Secrets fills it in the cluster, from AWS Secrets Manager or from a Secret the site created in the Slurm
namespace (ESO's kubernetes provider, external-secrets v2.9.0 providers/v1/kubernetes: `GetSecret` is
one GET of the named Secret, so a Role limited to that name by `resourceNames` suffices; the store's
`Validate` asks SelfSubjectRulesReview/SelfSubjectAccessReview, which every authenticated identity may
create). With secrets mode precreated there is no External Secrets: the whole sssd.conf is a Secret the
site creates (`main.py --explain sssd.conf` prints the text to put in it).
"""

from __future__ import annotations

from typing import Any

from slurmgen.spec import ClusterSpec
from slurmgen.spec.model import Directory

BIND_PASSWORD_KEY = "bindPassword"  # the ExternalSecret's data key the template reads
# A pre-created bind password Secret is read through its own store and identity (charts/secrets.py).
BIND_STORE = "directory-bind-password"
BIND_READER = "directory-bind-password-reader"
# In `--explain sssd.conf` (secrets mode precreated) the value the site puts there itself.
PASSWORD_PLACEHOLDER = "<bind password>"
CA_VOLUME = "directory-ca"
CA_DIR = "/etc/slurmgen/directory-ca"
CA_FILE = "ca.pem"
DOMAIN = "default"
PAM_CONFIGMAP = "slurm-login-pam"
PAM_VOLUME = "pam-session"
COMMON_SESSION = "common-session"

# /etc/pam.d/common-session as pam-auth-update writes it (profiles unix, sss, mkhomedir), with the
# home mode made private. pam_systemd is left out: no logind in a container.
COMMON_SESSION_PAM = """\
session [default=1] pam_permit.so
session requisite pam_deny.so
session required pam_permit.so
session optional pam_umask.so
session required pam_unix.so
session optional pam_sss.so
session optional pam_mkhomedir.so umask=0077
"""
# /usr/bin/sss_ssh_authorizedkeys is in Debian/Ubuntu's sssd-common, a dependency of the images' sssd.
AUTHORIZED_KEYS_COMMAND = "/usr/bin/sss_ssh_authorizedkeys"

# The bind password arrives in the cluster, so the ExternalSecret's template refuses what sssd would not read back
# unchanged (its status then says why). sssd (2.9.4, as 2.13.1) parses sssd.conf with ding-libs 0.6.2 and
# INI_PARSE_NOWRAP (src/util/sss_ini.c): the whole file goes through iconv to UTF-8 and fails on invalid bytes
# (ini/ini_fileobj.c common_file_convert); a line ends at '\n' (ini/ini_parse.c parser_read); a value loses
# C isspace() on both ends, vertical tab and form feed included (handle_kvp, ini/ini_valueobj.c trim_last)
# and ends at a NUL (C strings); an empty value is dropped ("has empty value, ignoring",
# sss_confdb_create_ldif), leaving no password. The LDIF step after it ("%s: %s\n", ldb's next_attr) keeps a
# trimmed one-line value as it is. RE2 (Go regexp, sprig regexMatch): `\s` lacks \v, so the class is spelled
# out; each byte of invalid UTF-8 reads as U+FFFD, so a literal U+FFFD is refused too.
_BLANK = r"[\t\n\v\f\r ]"
_PASSWORD_REFUSALS = (
    (r"\A\z", "is empty: sssd ignores an empty ldap_default_authtok, so it binds with no password; store the password there"),
    (rf"\A{_BLANK}|{_BLANK}\z", "starts or ends with whitespace (space, tab, vertical tab, form feed, CR or LF), which "
     "sssd's config parser strips: remove it there, or give the bind account a password without it"),
    (r"[\n\x00\x{FFFD}]", "holds a line break, a NUL byte or bytes that are not UTF-8 (or U+FFFD), which sssd.conf "
     "cannot hold (sssd cuts the value or refuses the file): give the bind account a password without them"),
)


def _password_source(d: Directory) -> str:
    """Where the bind password lives, for the refusal messages (names only, never the value)."""
    if d.bind_password_secret is not None:
        return f"Secret {d.bind_password_secret.name}, key {d.bind_password_secret.key}"
    prop = f", property {d.bind_password_property}" if d.bind_password_property else ""
    return f"Secrets Manager secret {d.bind_password_name}{prop}"


def _password_guard(d: Directory) -> str:
    """Template lines that fail the ExternalSecret, with the reason, instead of writing a password sssd alters."""
    where = _password_source(d)
    return "".join(
        f'{{{{- if regexMatch `{pattern}` .{BIND_PASSWORD_KEY} }}}}'
        f'{{{{ fail "directory bind password ({where}) {why}" }}}}{{{{ end -}}}}\n'
        for pattern, why in _PASSWORD_REFUSALS)


def _domain_lines(d: Directory, password: str) -> list[tuple[str, str]]:
    """[domain/default] settings, in a fixed order (same spec, same bytes)."""
    ad = d.kind == "ad"
    clear = d.tls_mode == "none"
    lines: list[tuple[str, str]] = [
        ("id_provider", "ldap"),
        # tls.mode none: sssd's LDAP provider refuses a user's password over a clear channel
        # (src/providers/ldap/ldap_auth.c, "Aborting the authentication request"); its only switch,
        # ldap_auth_disable_tls_never_use_in_production, is undocumented and absent from cfg_rules.ini
        # (`sssctl config-check` rejects it). So password logins are off, explicitly: keys only.
        ("auth_provider", "none" if clear else "ldap"),
        ("chpass_provider", "none"),
        ("ldap_schema", d.ldap_schema),
        ("ldap_uri", ", ".join(d.uris)),
        ("ldap_search_base", d.search_base),
    ]
    if d.user_search_base:
        lines.append(("ldap_user_search_base", d.user_search_base))
    if d.group_search_base:
        lines.append(("ldap_group_search_base", d.group_search_base))
    lines += [
        ("ldap_default_bind_dn", d.bind_dn),
        ("ldap_default_authtok_type", "password"),
        ("ldap_default_authtok", password),
        ("ldap_id_use_start_tls", "true" if d.tls_mode == "starttls" else "false"),
    ]
    if not clear:
        lines.append(("ldap_tls_reqcert", "demand" if d.tls_verify else "never"))
        if d.ca_ref is not None:
            lines.append(("ldap_tls_cacert", f"{CA_DIR}/{CA_FILE}"))
    # AD: UIDs/GIDs mapped from SIDs (no POSIX attributes needed), referrals off (slow, and the
    # read-only user cannot follow them), as ParallelCluster does.
    # Names: case-insensitive and lowercased for both kinds (sssd.conf(5) case_sensitive; true is invalid
    # for AD). Slurm's accounting lowercases user names (slurmdbd.conf(5) PreserveCaseUser, off) and
    # compares them case-insensitively, and policy.users / adminGroups are matched lowercased; LDAP's uid
    # attribute itself matches case-insensitively (caseIgnoreMatch), so `JSmith` logs in as `jsmith`.
    lines += [
        ("ldap_id_mapping", "true" if ad else "false"),
        ("ldap_referrals", "false"),
        ("case_sensitive", "false"),
        ("use_fully_qualified_names", "false"),
        ("ldap_user_ssh_public_key", d.public_key_attribute),
    ]
    if d.access_filter:
        lines += [("access_provider", "ldap"), ("ldap_access_filter", d.access_filter)]
    else:
        lines += [("access_provider", "simple"), ("simple_allow_groups", ", ".join(d.allowed_groups))]
    lines += [
        ("override_homedir", f"{d.homes_path}/%u"),  # on FSx: the same home on login and slurmd pods
        ("default_shell", "/bin/bash"),  # a user without loginShell
    ]
    if d.override_shell:
        lines.append(("override_shell", d.override_shell))
    lines += [
        ("cache_credentials", "true"),
        ("enumerate", "false"),
    ]
    return lines + list(d.extra_sssd_conf)


def _nss_lines(d: Directory) -> list[tuple[str, str]]:
    """[nss]: local accounts stay local; a loginShell the image lacks becomes the fallback shell.

    sssd keeps a user's shell listed in the image's /etc/shells and, with `allowed_shells = *`, gives any
    other the shell_fallback (src/responder/common/responder_utils.c sss_resp_get_shell_override, 2.9.4);
    without allowed_shells it hands out a shell the image lacks and the login fails. override_shell
    (domain) wins over both. The Slinky images (SlinkyProject/containers schedmd/slurm/26.05
    ubuntu24.04 Dockerfile, FROM ubuntu:24.04) have bash and sh (dash) only: no zsh, tcsh, ksh or fish.
    """
    lines = [("filter_users", "root, slurm, nobody"), ("filter_groups", "root, slurm, nogroup")]
    if not d.override_shell:
        lines += [("allowed_shells", "*"), ("shell_fallback", d.shell_fallback)]
    return lines


def sssd_conf_template(d: Directory) -> str:
    """sssd.conf as an External Secrets v2 template: everything but the bind password, which ESO fills."""
    return _password_guard(d) + _sssd_conf(d, f"{{{{ .{BIND_PASSWORD_KEY} }}}}")


def sssd_conf_text(d: Directory) -> str:
    """sssd.conf as the site writes it into its pre-created Secret (secrets mode precreated): the same
    file, with a placeholder where the bind password goes."""
    return _sssd_conf(d, PASSWORD_PLACEHOLDER)


def _sssd_conf(d: Directory, password: str) -> str:
    sections = [
        # No config_file_version: optional since long (default 2) and removed in sssd 2.10.0, whose
        # `sssctl config-check` rejects it (SSSD/sssd e57093067 "CONFDB: get rid of 'config_file_version'").
        ("sssd", [("services", "nss, pam, ssh"), ("domains", DOMAIN)]),
        ("nss", _nss_lines(d)),
        ("pam", []),
        ("ssh", []),
        (f"domain/{DOMAIN}", _domain_lines(d, password)),
    ]
    return "\n".join(f"[{name}]\n" + "".join(f"{k} = {v}\n" for k, v in lines) for name, lines in sections)


def sshd_config(d: Directory) -> str:
    """sshd lines for login and slurmd pods: keys from the directory; root only when kept for break-glass.

    sshd keeps the first value of a keyword, and the operator puts extraSshdConfig after its own
    few lines (loginbuilder/login_config.go buildSshdConfig), none of which set these.
    """
    return (f"AuthorizedKeysCommand {AUTHORIZED_KEYS_COMMAND}\n"
            "AuthorizedKeysCommandUser nobody\n"
            f"PermitRootLogin {'prohibit-password' if d.root_login else 'no'}\n")


def worker_sshd_config(d: Directory) -> str:
    """sshd lines for slurmd pods (the operator's own config there also allows passwords): key-only."""
    return "PasswordAuthentication no\nKbdInteractiveAuthentication no\n" + sshd_config(d)


def ca_volumes(spec: ClusterSpec) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The CA bundle as a read-only volume and its mount, for the login and slurmd pods; none without a CA."""
    d = spec.directory
    if d is None or d.ca_ref is None:
        return [], []
    items = [{"key": d.ca_ref.key, "path": CA_FILE}]
    source: dict[str, Any] = (
        {"configMap": {"name": d.ca_ref.name, "items": items, "defaultMode": 0o444}} if d.ca_kind == "configMap"
        else {"secret": {"secretName": d.ca_ref.name, "items": items, "defaultMode": 0o444}})
    return [{"name": CA_VOLUME, **source}], [{"name": CA_VOLUME, "mountPath": CA_DIR, "readOnly": True}]


def remote_ref(d: Directory) -> dict[str, str]:
    """The bind password's reference as the ExternalSecret reads it: a Secrets Manager secret (and
    property), or the pre-created Secret's name and key (kubernetes provider: key = Secret name)."""
    name, prop = ((d.bind_password_secret.name, d.bind_password_secret.key) if d.bind_password_secret
                  else (d.bind_password_name, d.bind_password_property))
    ref = {"key": name or "", "conversionStrategy": "Default", "decodingStrategy": "None",
           "metadataPolicy": "None", "nullBytePolicy": "Ignore"}
    if prop:
        ref["property"] = prop
    return ref


def login_volumes(spec: ClusterSpec) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The login pods' extra volumes: the CA, and the PAM session file that creates homes."""
    volumes, mounts = ca_volumes(spec)
    d = spec.directory
    if d is not None and d.create_homes:
        volumes.append({"name": PAM_VOLUME, "configMap": {
            "name": PAM_CONFIGMAP, "items": [{"key": COMMON_SESSION, "path": COMMON_SESSION}], "defaultMode": 0o444}})
        mounts.append({"name": PAM_VOLUME, "mountPath": f"/etc/pam.d/{COMMON_SESSION}", "subPath": COMMON_SESSION,
                       "readOnly": True})
    return volumes, mounts
