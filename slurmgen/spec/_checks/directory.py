"""The LDAP / Active Directory section: its settings, where its secrets come from, the keys sssd.conf leaves to us, paths, IDs."""

from __future__ import annotations

import re
from typing import Any, Iterator

from ...rule import Finding, rule
from .._paths import form_problem, item_name_problem, mount_problem, within
from ..grammar import Unreadable, sssd
from .slurm_text import holds_secret

# sssd.conf keys the generator writes itself (charts/directory.py); extraSssdConf must not
# set them, and never a password (the bind password is only a Secrets Manager reference). Each names
# the directory field it comes from, or why it is fixed.
_FIXED = "fixed by slurmgen (sssd reads the directory through LDAP); remove it"
DIRECTORY_OWNED_KEYS: dict[str, str] = {
    **dict.fromkeys(("id_provider", "chpass_provider", "ldap_default_authtok_type", "use_fully_qualified_names"), _FIXED),
    "auth_provider": "set by slurmgen from directory.tls.mode (none: no password logins); set that instead",
    "access_provider": "set by slurmgen from directory.access; set that instead",
    "ldap_schema": "set by slurmgen from directory.kind and directory.ldapSchema; set those instead",
    "ldap_uri": "set by slurmgen from directory.uris; set that instead",
    "ldap_search_base": "set by slurmgen from directory.searchBase; set that instead",
    "ldap_user_search_base": "set by slurmgen from directory.userSearchBase; set that instead",
    "ldap_group_search_base": "set by slurmgen from directory.groupSearchBase; set that instead",
    "ldap_default_bind_dn": "set by slurmgen from directory.bindDn; set that instead",
    "ldap_id_use_start_tls": "set by slurmgen from directory.tls.mode; set that instead",
    "ldap_tls_reqcert": "set by slurmgen from directory.tls.verify; set that instead",
    "ldap_tls_cacert": "set by slurmgen from directory.tls.ca; set that instead",
    "ldap_id_mapping": "set by slurmgen from directory.kind (ad maps IDs from SIDs); set that instead",
    "ldap_user_ssh_public_key": "set by slurmgen from directory.ssh.publicKeyAttribute; set that instead",
    "ldap_access_filter": "set by slurmgen from directory.access.filter; set that instead",
    "simple_allow_groups": "set by slurmgen from directory.access.allowedGroups; set that instead",
    "override_homedir": "set by slurmgen from directory.homes.path; set that instead",
    "override_shell": "set by slurmgen from directory.shell.override; set that instead",
    # What the directory section promises, which sssd would otherwise let a later key undo
    # (sssd-ldap(5), sssd-simple(5)): the access filter is checked only while ldap_access_order
    # holds `filter`; simple_allow_users admits users beside the allowed groups; the TLS opt-out
    # sends the bind password in clear.
    "ldap_access_order": "slurmgen relies on sssd's default (filter) so directory.access.filter holds; remove it",
    "simple_allow_users": "who may log in is directory.access (allowedGroups or filter); set that instead",
    "ldap_auth_disable_tls_never_use_in_production": "TLS is directory.tls.mode; remove it",
    "case_sensitive": ("names are always case-insensitive and lowercased (Slurm's accounting lowercases user names); "
                       "remove it"),
}

SSSD_SECRET_NAME = "slurm-sssd-conf"  # charts/secrets.py SSSD_SECRET (the spec layer imports no chart)

# Names sssd.conf filters out of the directory (charts/directory.py, [nss] filter_users): a policy user
# of that name would be the local account, never the directory's.
FILTERED_USERS = ("root", "slurm", "nobody")


@rule("directory")
def directory_settings(spec: dict[str, Any]) -> Iterator[Finding]:
    """Encrypted transport unless explicitly opted out, a CA whenever the certificate is verified,
    who may log in, and no extra sssd setting that overrides ours or carries a password."""
    directory = spec.get("directory")
    if directory is None:
        return
    if directory["kind"] == "ad" and "ldapSchema" in directory:
        yield ("directory.ldapSchema", "only for kind ldap: Active Directory is read with sssd's ad schema; "
               "remove ldapSchema")
    tls = directory["tls"]
    scheme = {"ldaps": "ldaps://", "starttls": "ldap://", "none": "ldap://"}[tls["mode"]]
    for index, uri in enumerate(directory["uris"]):
        if not uri.startswith(scheme):
            fix = ("use ldaps://, or ldap:// with tls.mode: starttls" if tls["mode"] == "ldaps"
                   else f"tls.mode {tls['mode']} speaks {scheme}; use that scheme or change tls.mode")
            yield f"directory.uris[{index}]", f"{uri} does not match tls.mode {tls['mode']}; {fix}"
    if tls["mode"] != "none" and tls["verify"] and "ca" not in tls:
        yield ("directory.tls.ca", "verifying the directory's certificate needs its CA: name a ConfigMap or Secret "
               "holding the PEM bundle (tls.ca.configMap or tls.ca.secret), or set tls.verify: false")
    if tls["mode"] == "none" and ("ca" in tls or not tls["verify"]):
        yield "directory.tls", "tls.mode none uses no TLS: remove tls.ca and tls.verify"
    access = directory["access"]
    if "filter" in access and access["allowedGroups"]:
        yield "directory.access", "set either filter or allowedGroups, not both (sssd uses one access provider)"
    if "filter" not in access and not access["allowedGroups"]:
        yield ("directory.access", "say who may log in: an LDAP filter (access.filter) or directory groups "
               "(access.allowedGroups); otherwise every account of the directory could")
    # Every other value we write into sssd.conf must read back as itself (grammar/sssd.py).
    values = [(f"directory.{k}", directory.get(k)) for k in ("searchBase", "userSearchBase", "groupSearchBase", "bindDn")]
    values += [("directory.access.filter", access.get("filter"))]
    values += [(f"directory.access.allowedGroups[{i}]", g) for i, g in enumerate(access["allowedGroups"])]
    for where, value in values:
        if isinstance(value, str):
            try:
                sssd.read_value(value)
            except Unreadable as err:
                yield where, str(err)
    for key in sorted(directory["extraSssdConf"]):
        if "authtok" in key or "password" in key:
            yield f"directory.extraSssdConf.{key}", "no passwords here: the bind password is only a reference (directory.bindPassword)"
        elif key in DIRECTORY_OWNED_KEYS:
            yield f"directory.extraSssdConf.{key}", DIRECTORY_OWNED_KEYS[key]
        else:
            try:
                if not holds_secret(directory["extraSssdConf"][key]):
                    sssd.read_value(directory["extraSssdConf"][key])
            except Unreadable as err:
                yield f"directory.extraSssdConf.{key}", str(err)


@rule("directory", "storage", "secrets", "login", "aws")
def directory_placement(spec: dict[str, Any]) -> Iterator[Finding]:
    """Homes on the shared file system, a bind password reference exactly when External Secrets renders
    sssd.conf (precreated: the site's sssd.conf Secret holds it), root login off unless kept."""
    directory = spec.get("directory")
    if directory is None:
        return
    fsx = spec["storage"]["fsx"]
    homes = directory["homes"].get("path")
    if not fsx["enabled"]:
        yield ("directory.homes", "homes must be on the shared file system so slurmd pods see them; "
               "enable storage.fsx")
    elif (homes is not None and form_problem(homes) is None and form_problem(fsx["mountPath"]) is None
          and (homes == fsx["mountPath"] or not within(homes, fsx["mountPath"]))):
        yield ("directory.homes.path", f"{homes} is not under the FSx mount {fsx['mountPath']}; "
               "slurmd pods would not see the homes")
    bind = directory.get("bindPassword")
    if spec["secrets"]["mode"] == "external-secrets" and bind is None:
        yield ("directory.bindPassword", "External Secrets renders sssd.conf with the bind password: name where it lives, "
               "secretsManager: {name, property} or a pre-created Secret of the Slurm namespace, secret: {name, key}")
    if spec["secrets"]["mode"] == "precreated" and bind is not None:
        yield ("directory.bindPassword", "unused with secrets.mode: precreated: sssd.conf, bind password included, is the "
               "Secret login.sssdConfSecret you create (main.py --explain sssd.conf prints it); remove bindPassword")
    if bind is not None and bind.get("secret", {}).get("name") == SSSD_SECRET_NAME:
        yield ("directory.bindPassword.secret.name", f"{SSSD_SECRET_NAME} is the Secret External Secrets writes sssd.conf "
               "into; keep the bind password in a Secret of another name")
    if "sssdConf" in spec["login"]:
        yield "login.sssdConf", "the directory section writes sssd.conf; remove login.sssdConf"
    store_region = spec["secrets"].get("awsSecretsManager", {}).get("region") or spec["aws"]["region"]
    in_aws = (bind or {}).get("secretsManager", {}).get("name", "")
    arn = re.match(r"arn:aws[a-z-]*:secretsmanager:([a-z0-9-]+):", in_aws)
    if arn and arn.group(1) != store_region and spec["secrets"]["mode"] == "external-secrets":
        yield ("directory.bindPassword.secretsManager.name",
               f"the secret is in {arn.group(1)}, but the SecretStore reads {store_region} "
               "(secrets.awsSecretsManager.region, else aws.region); copy the secret there or set that region")
    if not directory["ssh"]["rootLogin"] and spec["login"]["sshAuthorizedKeys"]:
        yield ("login.sshAuthorizedKeys", "root login is off with a directory; remove the keys, "
               "or keep root for break-glass with directory.ssh.rootLogin: true")


#: Every field naming a ConfigMap/Secret key: kubelet mounts some of them as item paths.
KEY_FIELDS: tuple[tuple[str, ...], ...] = (("login", "sssdConfSecret"), ("directory", "bindPassword", "secret"), ("directory", "tls", "ca", "configMap"),
              ("directory", "tls", "ca", "secret"), ("accounting", "database", "passwordSecret"),
              ("accounting", "database", "tls", "caConfigMap"), ("secrets", "slurmKey"), ("secrets", "jwtKey"))


def _at(spec: dict[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = spec
    for step in path:
        node = node.get(step) if isinstance(node, dict) else None
    return node


@rule("storage", "directory", "login", "accounting", "secrets")
def paths(spec: dict[str, Any]) -> Iterator[Finding]:
    """The one path rule (_paths): every path in normal form before any other check reads it; no
    mount over what the image or the operator provides; no key kubelet reserves or refuses."""
    fields = [(("storage", "fsx", "mountPath"), True), (("directory", "homes", "path"), False),
              (("directory", "shell", "override"), False), (("directory", "shell", "fallback"), False)]
    for field, mounted in fields:
        value = _at(spec, field)
        if not isinstance(value, str):
            continue
        problem = form_problem(value) or (mount_problem(value) if mounted else None)
        if problem:
            yield ".".join(field), f"{value} {problem}"
    for key_field in KEY_FIELDS:
        key = _at(spec, (*key_field, "key"))
        if isinstance(key, str) and (problem := item_name_problem(key)):
            yield ".".join((*key_field, "key")), problem


@rule("directory", "policy")
def directory_user_names(spec: dict[str, Any]) -> Iterator[Finding]:
    """policy.users must be names the directory hands out (the schema already requires POSIX login
    names, lowercase as sssd reports directory names with case_sensitive = false)."""
    if spec.get("directory") is None or spec.get("policy") is None:
        return
    for index, user in enumerate(spec["policy"]["users"]):
        if user["name"] in FILTERED_USERS:
            yield (f"policy.users[{index}].name",
                   f"{user['name']!r} is a local account sssd never looks up in the directory; use the researcher's directory name")


# sssd settings that let a directory entry be root (uid or gid 0). sssd reads them as integers
# (confdb.c get_entry_as_uint32: leading blanks and zeros accepted). min_id (default 1, SSSD_MIN_ID)
# bounds the ids sssd accepts from the directory (sdap_async_users.c OUT_OF_ID_RANGE), as ldap_min_id
# and ldap_idmap_range_min do for assigned and mapped ids; override_gid = 0 is root's group, which sssd
# reads as "no override" (0 is its unset value), so it never means what it says.
ROOT_ID_KEYS = ("min_id", "ldap_min_id", "ldap_idmap_range_min", "override_gid")
_SSSD_INTEGER = re.compile(r"\s*[+-]?[0-9]+\s*")


@rule("directory")
def directory_ids_not_root(spec: dict[str, Any]) -> Iterator[Finding]:
    """No extra sssd setting that admits or sets id 0 (ROOT_ID_KEYS)."""
    directory = spec.get("directory")
    if directory is None:
        return
    for key in ROOT_ID_KEYS:
        value = directory["extraSssdConf"].get(key)
        if isinstance(value, str) and _SSSD_INTEGER.fullmatch(value) and int(value) <= 0:
            what = ("is root's group (sssd reads 0 as no override)" if key == "override_gid"
                    else "admits root's id 0 from the directory (sssd's default min_id is 1)")
            yield (f"directory.extraSssdConf.{key}", f"{value.strip()} {what}: no directory entry may be root on the "
                   "login and slurmd pods; remove it")


@rule("directory", "policy")
def directory_admin_groups(spec: dict[str, Any]) -> Iterator[Finding]:
    """Admin groups act through the accounts Job on the users of policy.users: without them nothing would."""
    directory = spec.get("directory")
    if directory is None:
        return
    groups = directory["adminGroups"]
    if not (groups["administrators"] or groups["operators"]):
        return
    if not (spec.get("policy") or {}).get("users"):
        yield ("directory.adminGroups", "admin levels are set by the accounts Job for the users of policy.users; "
               "declare policy.users (with accounting), or set AdminLevel by hand (docs/storage-login-accounting.md, Slurm admins)")
    for group in sorted(set(groups["administrators"]) & set(groups["operators"])):
        yield "directory.adminGroups.operators", f"{group!r} is also an administrators group; name it once"
