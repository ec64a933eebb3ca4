"""Which controllers we deploy call AWS, as which service account, with which IAM role and policy.

One table read by the Helm values (IRSA annotations), the secrets chart (SecretStore auth), and
`main.py --explain identity` (the EKS Pod Identity associations to create, and each policy).

What calls AWS, read in the code each chart runs (not assumed):
- aws-fsx-csi-driver controller (chart 1.17.0, driver v1.9.0): only for dynamic provisioning.
  CreateVolume calls fsx:DescribeFileSystems (find by CSIVolumeName tag) then fsx:CreateFileSystem
  with tags (fsx:TagResource) and polls DescribeFileSystems (pkg/driver/controller.go,
  pkg/cloud/cloud.go); the first file system of an account creates FSx's service-linked role.
  Growing a claim (allowVolumeExpansion, every type but SCRATCH_1) makes ControllerExpandVolume
  call DescribeFileSystems, then fsx:UpdateFileSystem with the new StorageCapacity, and poll
  DescribeFileSystems until the update is done (cloud.go ResizeFileSystem, WaitForFileSystemResize).
  DeleteFileSystem is never needed (reclaimPolicy Retain; leaving it out means no mistake in the
  cluster can delete the file system). A static PersistentVolume calls nothing; the node plugin
  reads node metadata only (node.go).
- External Secrets (v2.9.0): with a Secrets Manager store, secretsmanager:GetSecretValue per
  remoteRef (providers/v1/aws/secretsmanager/secretsmanager.go; DescribeSecret only with
  metadataPolicy Fetch, which we do not use). Password generators call nothing.
- KEDA (v2.20.2) only with an Amazon Managed Prometheus address: the prometheus scaler signs its
  queries (SigV4, service `aps`) with the credentials of the TriggerAuthentication's `podIdentity:
  {provider: aws}`, which without a roleArn are the operator's own (pkg/scalers/prometheus_scaler.go,
  pkg/scalers/aws/aws_sigv4.go, aws_authorization.go GetAwsAuthorization): aps:QueryMetrics (and the
  read calls of the query API) on the workspace. With an in-cluster Prometheus it calls nothing.
- Not AWS callers: the NVIDIA, EFA and Neuron device plugins (kubelet device-plugin API only),
  mariadb-operator, cert-manager (no Route53 issuer here), slurm-operator. Karpenter and the EKS FSx
  add-on get their roles where they are installed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Sequence

from .secret_refs import generated_secrets
from ..spec import ClusterSpec
from ..spec.arn import amp_workspace, partition, role_account

ROLE_ANNOTATION = "eks.amazonaws.com/role-arn"  # IRSA, read by EKS's pod identity webhook
FSX_NAMESPACE, FSX_CONTROLLER_SA = "kube-system", "fsx-csi-controller-sa"  # chart default, set explicitly
ESO_NAMESPACE, ESO_CONTROLLER_SA = "external-secrets", "external-secrets"
SECRETS_READER_SA = "slurm-secrets-reader"  # irsa: the SecretStore's own identity, in the Slurm namespace
KEDA_NAMESPACE, KEDA_OPERATOR_SA = "keda", "keda-operator"  # chart 2.20.2 default name, set explicitly


@dataclass(frozen=True)
class Grant:
    """One service account that needs an IAM role, and how it gets it."""

    controller: str        # aws.identity.roles key
    namespace: str
    service_account: str
    role_arn: str
    how: str               # pod-identity-association | irsa-annotation | eks-addon
    policy: dict[str, Any] = field(compare=False)


def fsx_policy(spec: ClusterSpec, role_arn: str) -> dict[str, Any]:
    """Create (and describe, tag) file systems; grow them when the deployment type can grow, on this
    Region's and account's file systems only (UpdateFileSystem takes a file-system ARN)."""
    region = spec.aws.region
    part = partition(region)
    statements: list[dict[str, Any]] = [
        {"Sid": "CreateLustreFileSystems", "Effect": "Allow",
         "Action": ["fsx:CreateFileSystem", "fsx:DescribeFileSystems", "fsx:TagResource"], "Resource": "*"},
    ]
    if spec.storage.fsx.can_grow:
        account = spec.aws.account_id or role_account(role_arn) or "*"
        statements.append({"Sid": "GrowLustreFileSystems", "Effect": "Allow", "Action": "fsx:UpdateFileSystem",
                           "Resource": f"arn:{part}:fsx:{region}:{account}:file-system/*"})
    statements.append({"Sid": "FsxServiceLinkedRole", "Effect": "Allow", "Action": "iam:CreateServiceLinkedRole",
                       "Resource": f"arn:{part}:iam::*:role/aws-service-role/fsx.amazonaws.com/*",
                       "Condition": {"StringLike": {"iam:AWSServiceName": "fsx.amazonaws.com"}}})
    return {"Version": "2012-10-17", "Statement": statements}


def reads_secrets_manager(spec: ClusterSpec) -> bool:
    """External Secrets reads Secrets Manager: the generated secrets' values, or the directory's bind password
    when it is kept there (a pre-created Secret is read inside the cluster, no AWS call)."""
    return spec.secrets.generated and (spec.secrets.aws_prefix is not None or _bind_password_in_aws(spec))


def _bind_password_in_aws(spec: ClusterSpec) -> bool:
    return spec.directory is not None and spec.directory.bind_password_name is not None


def secret_names(spec: ClusterSpec) -> list[str]:
    """The Secrets Manager secrets the ExternalSecrets read: `<prefix>/<k8s secret name>` for the
    generated ones, and the directory's bind password (a name, or a full ARN kept as it is)."""
    names = {f"{spec.secrets.aws_prefix}/{ref.name}" for ref, _ in generated_secrets(spec)} if spec.secrets.aws_prefix else set()
    if spec.secrets.generated and spec.directory is not None and spec.directory.bind_password_name is not None:
        names.add(spec.directory.bind_password_name)
    return sorted(names)


def secrets_policy(spec: ClusterSpec, role_arn: str) -> dict[str, Any]:
    """GetSecretValue on exactly the named secrets (`-??????`: the random suffix of every secret ARN)."""
    region = spec.secrets.aws_region or spec.aws.region
    account = spec.aws.account_id or role_account(role_arn) or "*"
    base = f"arn:{partition(region)}:secretsmanager:{region}:{account}:secret:"
    return {"Version": "2012-10-17", "Statement": [
        {"Sid": "ReadSlurmSecrets", "Effect": "Allow", "Action": "secretsmanager:GetSecretValue",
         "Resource": [name if name.startswith("arn:") else f"{base}{name}-??????" for name in secret_names(spec)]},
    ]}


def amp_policy(spec: ClusterSpec, role_arn: str) -> dict[str, Any]:
    """The Prometheus query API of one Amazon Managed Prometheus workspace, read only."""
    region, workspace = amp_workspace(spec.prometheus_address) or (spec.aws.region, "*")
    account = spec.aws.account_id or role_account(role_arn) or "*"
    return {"Version": "2012-10-17", "Statement": [
        {"Sid": "QuerySlurmMetrics", "Effect": "Allow",
         "Action": ["aps:QueryMetrics", "aps:GetSeries", "aps:GetLabels", "aps:GetMetricMetadata"],
         "Resource": f"arn:{partition(region)}:aps:{region}:{account}:workspace/{workspace}"},
    ]}


def uses_amp(spec: ClusterSpec) -> bool:
    """KEDA queries Amazon Managed Prometheus (so it signs with an AWS identity)."""
    return amp_workspace(spec.prometheus_address) is not None and any(ns.autoscale for ns in spec.nodesets)


def grants(spec: ClusterSpec) -> list[Grant]:
    """Every service account of this cluster that needs a role, in a fixed order."""
    ident = spec.aws.identity
    out: list[Grant] = []
    fsx = spec.storage.fsx
    if fsx.enabled and ident.fsx_csi_controller:
        how = "eks-addon" if fsx.csi_driver == "eks-addon" else (
            "irsa-annotation" if ident.mode == "irsa" else "pod-identity-association")
        out.append(Grant("fsxCsiController", FSX_NAMESPACE, FSX_CONTROLLER_SA, ident.fsx_csi_controller, how,
                         fsx_policy(spec, ident.fsx_csi_controller)))
    if reads_secrets_manager(spec) and ident.external_secrets:
        if ident.mode == "irsa":
            grant = Grant("externalSecrets", spec.namespace, SECRETS_READER_SA, ident.external_secrets,
                          "irsa-annotation", secrets_policy(spec, ident.external_secrets))
        else:
            grant = Grant("externalSecrets", ESO_NAMESPACE, ESO_CONTROLLER_SA, ident.external_secrets,
                          "pod-identity-association", secrets_policy(spec, ident.external_secrets))
        out.append(grant)
    if uses_amp(spec) and ident.keda:
        out.append(Grant("keda", KEDA_NAMESPACE, KEDA_OPERATOR_SA, ident.keda,
                         "irsa-annotation" if ident.mode == "irsa" else "pod-identity-association",
                         amp_policy(spec, ident.keda)))
    return out


def irsa_role(spec: ClusterSpec, controller: str) -> str | None:
    """The role to annotate on `controller`'s service account, with IRSA only."""
    return next((g.role_arn for g in grants(spec) if g.controller == controller and g.how == "irsa-annotation"), None)


def _trust(spec: ClusterSpec, grant: Grant) -> dict[str, Any]:
    if grant.how == "irsa-annotation":
        return {"Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Action": "sts:AssumeRoleWithWebIdentity",
            "Principal": {"Federated": "<the cluster's IAM OIDC provider ARN>"},
            "Condition": {"StringEquals": {
                "<oidc issuer host/path>:sub": f"system:serviceaccount:{grant.namespace}:{grant.service_account}",
                "<oidc issuer host/path>:aud": "sts.amazonaws.com"}}}]}
    return {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Action": ["sts:AssumeRole", "sts:TagSession"],
        "Principal": {"Service": "pods.eks.amazonaws.com"}}]}


def _command(spec: ClusterSpec, grant: Grant) -> str:
    cluster, region = spec.aws.eks_cluster_name, spec.aws.region
    if grant.how == "pod-identity-association":
        return (f"aws eks create-pod-identity-association --region {region} --cluster-name {cluster} "
                f"--namespace {grant.namespace} --service-account {grant.service_account} --role-arn {grant.role_arn}")
    if grant.how == "eks-addon":
        if spec.aws.identity.mode == "irsa":
            return (f"aws eks update-addon --region {region} --cluster-name {cluster} --addon-name aws-fsx-csi-driver "
                    f"--service-account-role-arn {grant.role_arn}")
        return (f"aws eks update-addon --region {region} --cluster-name {cluster} --addon-name aws-fsx-csi-driver "
                f"--pod-identity-associations serviceAccount={grant.service_account},roleArn={grant.role_arn}")
    return f"none: the rendered service account carries {ROLE_ANNOTATION}: {grant.role_arn}"


def describe(spec: ClusterSpec) -> dict[str, Any]:
    """The machine-readable identity plan of one cluster."""
    return {"cluster": spec.name, "eksClusterName": spec.aws.eks_cluster_name, "region": spec.aws.region,
            "mode": spec.aws.identity.mode, "grants": [{
                "controller": g.controller, "namespace": g.namespace, "serviceAccount": g.service_account,
                "roleArn": g.role_arn, "how": g.how, "command": _command(spec, g),
                "permissionsPolicy": g.policy, "trustPolicy": _trust(spec, g)} for g in grants(spec)]}


def explain(specs: Sequence[ClusterSpec], cluster: str | None) -> str:
    """`--explain identity`: JSON, one entry per cluster (only `cluster` when given); None if unknown."""
    chosen = [s for s in specs if cluster is None or s.name == cluster]
    if not chosen:
        raise KeyError(cluster)
    return json.dumps([describe(s) for s in sorted(chosen, key=lambda s: s.name)], indent=2, sort_keys=True) + "\n"
