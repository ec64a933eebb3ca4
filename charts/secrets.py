r"""Secrets that never touch git: the External Secrets objects that create them in the cluster.

Without AWS Secrets Manager, a Password generator makes each value once: `refreshPolicy:
CreatedOnce` (a refresh would generate a new key), an immutable target (a re-created
ExternalSecret cannot overwrite it) and `creationPolicy: Orphan` (deleting the ExternalSecret,
or the Application, keeps the Secret). Generated passwords have no symbols at all: Slinky writes
the database password raw into slurmdbd.conf, where `#` starts a comment.

With AWS Secrets Manager, the values are read from `<prefix>/<secret name>` (one property per key)
through a namespaced SecretStore. Its identity (slurmgen/plan/identity.py): with IRSA, a service account of
the Slurm namespace annotated with aws.identity.roles.externalSecrets, named in `auth.jwt` (ESO
v2.9.0 providers/v1/aws/auth/auth.go reads the annotation and requests a token for it), so only
stores of this namespace can use the role; with EKS Pod Identity, no `auth`: the controller's own
credentials, from the association on external-secrets/external-secrets.

Every ExternalSecret has a `target.template` with explicit `metadata`: without a template ESO copies
the ExternalSecret's labels and annotations onto the Secret (v2.9.0
pkg/controllers/externalsecret/externalsecret_controller_template.go setMetadata), among them Argo
CD's tracking annotation and our sync options, and a Secret carrying another object's tracking id
shows as out of sync or to prune (argoproj/argo-cd#8683). The labels also select the generated
Secrets for backup (docs/storage-login-accounting.md: back up the generated Secrets).

A database password from Secrets Manager is the one value we do not choose, and Slinky writes it
raw as `StoragePass=` into slurmdbd.conf (slurm-operator v1.2.1
internal/builder/accountingbuilder/accounting_config.go), where Slurm's parser cuts at an unescaped
`#`, drops a `\` and stops at whitespace (SchedMD/slurm slurm-26-05-1-1 src/common/parse_config.c
_strip_comments, _strip_escapes, keyvalue_pattern). ESO sees the value, so its template does what
we cannot: for an external database, whose password only slurmdbd reads, it escapes `\` and `#`;
for the in-cluster MariaDB, whose User reads the same Secret raw, it refuses them; whitespace and
`"` are refused in both cases. A refusal shows as the ExternalSecret's sync error.
"""

from __future__ import annotations

from typing import Any

from constructs import Construct

from slurmgen.plan import identity
from slurmgen.kube import waves
from slurmgen.plan.secret_refs import PASSWORD, generated_secrets
from slurmgen.spec import ClusterSpec
from slurmgen.spec.model import Directory, SecretKeyRef
from .directory import BIND_PASSWORD_KEY, BIND_READER, BIND_STORE, remote_ref, sssd_conf_template, sssd_conf_text
from slurmgen.kube.vocabulary import SKIP_DRY_RUN, SYNC_OPTIONS
from ._objects import emit, wave
from .unit import SyncSettings, UnitChart

ESO = "external-secrets.io/v1"
GENERATORS = "generators.external-secrets.io/v1alpha1"
STORE = "aws-secrets-manager"

SSSD_SECRET = "slurm-sssd-conf"
BACKUP_LABEL = "slurmgen.dev/backup"  # "required" on Secrets that exist nowhere else (generated, CreatedOnce)

DEFAULT_SSSD_CONF = """\
[sssd]
services = nss,pam
domains = DEFAULT

[nss]
filter_groups = root,slurm
filter_users = root,slurm

[pam]

[domain/DEFAULT]
id_provider = proxy
proxy_lib_name = files
auth_provider = proxy
proxy_pam_target = sssd-shadowutils
"""


_UNSAFE = r'[\s"]'  # never representable in an unquoted slurmdbd.conf value
_UNSAFE_RAW = r'[\s"#\\]'  # also `#` and `\` when the value cannot be escaped


def db_password_template(key: str, *, escape: bool) -> str:
    """ESO v2 template (Go text/template + sprig, external-secrets v2.9.0 runtime/template/v2) for the DB password."""
    unsafe = _UNSAFE if escape else _UNSAFE_RAW
    what = "whitespace or a double quote" if escape else "whitespace, a double quote, '#' or a backslash"
    value = r'$p | replace "\\" "\\\\" | replace "#" "\\#"' if escape else "$p"
    return (f'{{{{ $p := index . "{key}" }}}}'
            f'{{{{ if regexMatch `{unsafe}` $p }}}}'
            f'{{{{ fail "the database password contains {what}: slurmdbd.conf cannot hold it" }}}}'
            f'{{{{ end }}}}{{{{ {value} }}}}')


def password_spec(key: str, length: int, digits: int) -> dict[str, Any]:
    """A Password generator's spec: letters and digits only, one key."""
    return {"length": length, "digits": digits, "symbols": 0, "noUpper": False, "allowRepeat": True, "secretKeys": [key]}


def target_labels(spec: ClusterSpec, *, backup: bool) -> dict[str, str]:
    """The labels of a Secret External Secrets writes for us (backup: a generated value that exists nowhere else)."""
    labels = {"app.kubernetes.io/part-of": "slurmgen", "slurmgen.dev/cluster": spec.name}
    if backup:
        labels[BACKUP_LABEL] = "required"
    return labels


# kube-prometheus-stack's Grafana admin login (grafana.admin.existingSecret). Without it the grafana
# chart (12.11.1 templates/_helpers.tpl "grafana.password") makes the password with randAlphaNum
# whenever `lookup` finds no Secret, which is always under Argo CD's `helm template`: the Secret and
# the Deployment's checksum/secret annotation change at every render, so Grafana rolls with a new
# password after each manifest-cache expiry and the Application is OutOfSync.
GRAFANA_ADMIN = "grafana-admin"
GRAFANA_USER_KEY, GRAFANA_PASSWORD_KEY = "admin-user", "admin-password"
GRAFANA_ADMIN_USER = "admin"


def grafana_admin_objects(spec: ClusterSpec) -> list[dict[str, Any]]:
    """The Password generator and ExternalSecret that make the Grafana admin Secret once, in the monitoring namespace.

    They ship inside the kube-prometheus-stack Application (its `extraManifests`), so the Secret is
    made in the same sync as the Grafana that waits for it (a later wave would never come: the
    Application would not be Healthy before it). As the Slurm keys: made once (`CreatedOnce`),
    immutable, kept when the ExternalSecret goes (`Orphan`), labelled for backup. With Secrets
    Manager too: Grafana's own login is nobody else's, so it is generated in the cluster. Nothing here
    holds `{{` (the chart passes `extraManifests` through `tpl`): the user name is template text, merged
    with the generated key. `precreated`: none; the site creates the Secret (docs/storage-login-accounting.md).
    """
    if not spec.secrets.generated:
        return []
    ns = spec.kube_prometheus_stack.namespace

    def meta() -> dict[str, Any]:  # one copy per object: a shared dict would be a YAML alias
        return {"name": GRAFANA_ADMIN, "namespace": ns, "annotations": {SYNC_OPTIONS: SKIP_DRY_RUN},
                "labels": {"app.kubernetes.io/part-of": "slurmgen"}}

    generator = {"apiVersion": GENERATORS, "kind": "Password", "metadata": meta(),
                 "spec": password_spec(GRAFANA_PASSWORD_KEY, *PASSWORD)}
    external = {"apiVersion": ESO, "kind": "ExternalSecret", "metadata": meta(), "spec": {
        "refreshPolicy": "CreatedOnce",
        "target": {"name": GRAFANA_ADMIN, "creationPolicy": "Orphan", "immutable": True, "template": {
            "engineVersion": "v2", "type": "Opaque", "mergePolicy": "Merge",
            "metadata": {"labels": target_labels(spec, backup=True)},
            "data": {GRAFANA_USER_KEY: GRAFANA_ADMIN_USER}}},
        "dataFrom": [{"sourceRef": {"generatorRef": {"apiVersion": GENERATORS, "kind": "Password",
                                                     "name": GRAFANA_ADMIN}}}]}}
    return [generator, external]


def sssd_secret(spec: ClusterSpec) -> SecretKeyRef:
    """The sssd.conf Secret the LoginSet reads: rendered by us, or named by the user when precreated."""
    return SecretKeyRef(name=SSSD_SECRET, key="sssd.conf") if spec.secrets.generated else spec.login.sssd_conf_secret


def effective_sssd_conf(spec: ClusterSpec) -> tuple[str | None, str]:
    """sssd.conf as the pods will read it (the bind password as a placeholder), or None and why not.

    With a directory and secrets mode precreated this is the text the site puts into its
    login.sssdConfSecret, bind password filled in (docs/storage-login-accounting.md: Researchers as themselves)."""
    if spec.directory is not None:
        return sssd_conf_text(spec.directory), ""
    if not spec.secrets.generated:
        return None, (f"not rendered: with secrets.mode precreated and no directory, the Secret "
                      f"{spec.login.sssd_conf_secret.name} is entirely yours")
    if not spec.login.enabled:
        return None, "not rendered: login.enabled is false"
    return spec.login.sssd_conf or DEFAULT_SSSD_CONF, ""


class SecretsChart(UnitChart):
    unit = "secrets"

    def __init__(self, scope: Construct, spec: ClusterSpec) -> None:
        super().__init__(scope, spec, SyncSettings(wave=waves.SECRETS, namespace=spec.namespace, create_namespace=True))
        from_aws = spec.secrets.aws_prefix is not None
        if identity.reads_secrets_manager(spec):  # generated values, or the directory's bind password
            self._store()
        for ref, size in generated_secrets(spec):
            if from_aws:
                self._external(ref)
            else:
                self._generated(ref, *size)
        if spec.directory is not None:
            if spec.directory.bind_password_secret is not None:
                self._bind_password_store(spec.directory.bind_password_secret)
            self._directory_sssd_conf(spec.directory)
        elif spec.login.enabled:
            self._sssd_conf()

    def _target_metadata(self, *, backup: bool) -> dict[str, Any]:
        """The Secret's own labels, no annotations: nothing copied from the ExternalSecret (see module doc).

        No empty `annotations: {}` either: an empty map the API server might drop would be a perpetual diff.
        """
        return {"labels": target_labels(self.spec, backup=backup)}

    def _annotations(self, wave_no: int) -> dict[str, str]:
        return wave(wave_no, **{SYNC_OPTIONS: SKIP_DRY_RUN})

    def _store(self) -> None:
        aws: dict[str, Any] = {"service": "SecretsManager",
                               "region": self.spec.secrets.aws_region or self.spec.aws.region}
        role = identity.irsa_role(self.spec, "externalSecrets")
        if role:
            emit(self, api_version="v1", kind="ServiceAccount", name=identity.SECRETS_READER_SA,
                 namespace=self.spec.namespace, annotations={**wave(0), identity.ROLE_ANNOTATION: role},
                 body={"automountServiceAccountToken": False})  # only ESO requests tokens for it
            aws["auth"] = {"jwt": {"serviceAccountRef": {"name": identity.SECRETS_READER_SA}}}
        emit(self, api_version=ESO, kind="SecretStore", name=STORE, namespace=self.spec.namespace,
             annotations=self._annotations(0), body={"spec": {"provider": {"aws": aws}}})

    def _bind_password_store(self, ref: SecretKeyRef) -> None:
        """A store that reads the one pre-created bind password Secret of this namespace, and nothing else.

        ESO's kubernetes provider (v2.9.0 providers/v1/kubernetes, runtime/esutils/k8s_rest_config.go)
        needs a server URL, a CA (none given = the system roots, which do not sign the API server's
        certificate: `kube-root-ca.crt` is in every namespace) and an identity: a token ESO requests for
        our service account (the chart's default `rbac.serviceAccountTokenCreate: true`), bound to a
        Role allowed to `get` only that Secret (GetSecret is one GET; validation asks SelfSubject*Reviews,
        which every authenticated identity may create).
        """
        ns = self.spec.namespace
        rbac = "rbac.authorization.k8s.io/v1"
        emit(self, api_version="v1", kind="ServiceAccount", name=BIND_READER, namespace=ns,
             annotations=wave(0), body={"automountServiceAccountToken": False})  # only ESO requests tokens for it
        emit(self, api_version=rbac, kind="Role", name=BIND_READER, namespace=ns, annotations=wave(0),
             body={"rules": [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": [ref.name], "verbs": ["get"]}]})
        emit(self, api_version=rbac, kind="RoleBinding", name=BIND_READER, namespace=ns, annotations=wave(0),
             body={"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": BIND_READER},
                   "subjects": [{"kind": "ServiceAccount", "name": BIND_READER, "namespace": ns}]})
        emit(self, api_version=ESO, kind="SecretStore", name=BIND_STORE, namespace=ns,
             annotations=self._annotations(0), body={"spec": {"provider": {"kubernetes": {
                 "remoteNamespace": ns,
                 "server": {"url": "https://kubernetes.default.svc",
                            "caProvider": {"type": "ConfigMap", "name": "kube-root-ca.crt", "key": "ca.crt"}},
                 "auth": {"serviceAccount": {"name": BIND_READER}}}}}})

    def _password(self, name: str, key: str, length: int, digits: int) -> None:
        emit(self, api_version=GENERATORS, kind="Password", name=name, namespace=self.spec.namespace,
             annotations=self._annotations(0), body={"spec": password_spec(key, length, digits)})

    def _generator_ref(self, name: str) -> list[dict[str, Any]]:
        return [{"sourceRef": {"generatorRef": {"apiVersion": GENERATORS, "kind": "Password", "name": name}}}]

    def _generated(self, ref: SecretKeyRef, length: int, digits: int) -> None:
        self._password(ref.name, ref.key, length, digits)
        emit(self, api_version=ESO, kind="ExternalSecret", name=ref.name, namespace=self.spec.namespace,
             annotations=self._annotations(1), body={"spec": {
                 "refreshPolicy": "CreatedOnce",
                 "target": {"name": ref.name, "creationPolicy": "Orphan", "immutable": True, "template": {
                     "engineVersion": "v2", "type": "Opaque", "metadata": self._target_metadata(backup=True)}},
                 "dataFrom": self._generator_ref(ref.name)}})

    def _external(self, ref: SecretKeyRef) -> None:
        db = self.spec.accounting.database
        template: dict[str, Any] = {"template": {"engineVersion": "v2", "type": "Opaque",
                                                 "metadata": self._target_metadata(backup=False)}}
        if self.spec.accounting.enabled and ref == db.password_secret:
            template["template"].update({"mergePolicy": "Replace", "data": {
                ref.key: db_password_template(ref.key, escape=not db.managed)}})
        remote = {"key": f"{self.spec.secrets.aws_prefix}/{ref.name}", "property": ref.key,
                  "conversionStrategy": "Default", "decodingStrategy": "None", "metadataPolicy": "None",
                  "nullBytePolicy": "Ignore"}
        emit(self, api_version=ESO, kind="ExternalSecret", name=ref.name, namespace=self.spec.namespace,
             annotations=self._annotations(1), body={"spec": {
                 "refreshInterval": "1h",
                 "secretStoreRef": {"kind": "SecretStore", "name": STORE},
                 "target": {"name": ref.name, "creationPolicy": "Orphan", "deletionPolicy": "Retain", **template},
                 "data": [{"secretKey": ref.key, "remoteRef": remote}]}})

    def _sssd_conf(self) -> None:
        """sssd.conf holds no secret value, but the LoginSet reads it from a Secret: ESO renders one.

        ExternalSecret needs a data source, so a tiny generator feeds it; the template replaces the
        output entirely, and `OnChange` re-renders when the spec's sssd.conf changes.
        """
        seed = f"{SSSD_SECRET}-seed"
        self._password(seed, "seed", 8, 2)
        emit(self, api_version=ESO, kind="ExternalSecret", name=SSSD_SECRET, namespace=self.spec.namespace,
             annotations=self._annotations(1), body={"spec": {
                 "refreshPolicy": "OnChange",
                 "target": {"name": SSSD_SECRET, "creationPolicy": "Owner", "template": {
                     "engineVersion": "v2", "mergePolicy": "Replace", "type": "Opaque",
                     "data": {"sssd.conf": self.spec.login.sssd_conf or DEFAULT_SSSD_CONF}}},
                 "dataFrom": self._generator_ref(seed)}})

    def _directory_sssd_conf(self, d: Directory) -> None:
        """sssd.conf for the site's directory: the template is in git, the bind password only in the cluster.

        External Secrets reads the password (Secrets Manager, or the site's Secret) and renders the template into the
        Secret the LoginSet and the NodeSets name (charts/directory.py). `Owner`: the Secret goes with
        its ExternalSecret; the hourly refresh follows a rotated password, which rolls the pods.
        """
        emit(self, api_version=ESO, kind="ExternalSecret", name=SSSD_SECRET, namespace=self.spec.namespace,
             annotations=self._annotations(1), body={"spec": {
                 "refreshInterval": "1h",
                 "secretStoreRef": {"kind": "SecretStore",
                                    "name": BIND_STORE if d.bind_password_secret is not None else STORE},
                 "target": {"name": SSSD_SECRET, "creationPolicy": "Owner", "template": {
                     "engineVersion": "v2", "mergePolicy": "Replace", "type": "Opaque",
                     "data": {"sssd.conf": sssd_conf_template(d)}}},
                 "data": [{"secretKey": BIND_PASSWORD_KEY, "remoteRef": remote_ref(d)}]}})
