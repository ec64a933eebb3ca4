"""Controllers that call AWS get an identity; FSx backups by default; generated Secrets carry our metadata only.

Decisions rest on the code of the consumers (cited in slurmgen/plan/identity.py and charts/secrets.py):
aws-fsx-csi-driver 1.17.0 (controller.serviceAccount values, CreateVolume's AWS calls, StorageClass
parameters), External Secrets v2.9.0 (auth.jwt reads eks.amazonaws.com/role-arn; without a
target.template, setMetadata copies the ExternalSecret's labels and annotations onto the Secret).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from slurmgen.synth.build import render
from slurmgen.cli import main
from slurmgen.plan.identity import ESO_CONTROLLER_SA, FSX_CONTROLLER_SA, ROLE_ANNOTATION, SECRETS_READER_SA, grants
from slurmgen.spec import parse_text
from slurmgen.spec.arn import partition, role_problems
from tests import spec_builder
from tests.conftest import CHARTS, EXAMPLES, MINIMAL_SPEC, SHARED, need_shared
from tests.scheduling import helm_values

FSX_ROLE = "arn:aws:iam::111122223333:role/fsx-controller"
ESO_ROLE = "arn:aws:iam::111122223333:role/secrets-reader"


def spec_text(mode: str = "podIdentity", *, fsx: bool = True, sm: bool = True, driver: str = "helm") -> str:
    roles = {}
    if fsx:
        roles["fsxCsiController"] = FSX_ROLE
    if sm:
        roles["externalSecrets"] = ESO_ROLE
    top: dict[str, Any] = {"aws": {"accountId": "111122223333", "identity": {"mode": mode, "roles": roles}}}
    if fsx:
        top["storage"] = dynamic_fsx("PERSISTENT_2", perUnitStorageThroughput=250)
        top["storage"]["fsx"]["csiDriver"] = driver
    if sm:
        top["secrets"] = {"awsSecretsManager": {"prefix": "t/slurm"}}
    return spec_builder.spec_text(**top)


def dynamic_fsx(deployment: str, **dynamic: Any) -> dict[str, Any]:
    """The storage section of a dynamic FSx file system of `deployment`, `dynamic` added to its dynamic keys."""
    return {"fsx": {"enabled": True, "mode": "dynamic", "sizeGiB": 2400, "zone": "us-west-2a",
                    "deploymentType": deployment, "dynamic": {
                        "subnetId": "subnet-0123456789abcdef0", "securityGroupIds": ["sg-0123456789abcdef0"], **dynamic}}}


def render_text(text: str):
    [cluster] = render([parse_text("t.yaml", text)])
    return cluster


def values(cluster, unit: str) -> dict[str, Any]:
    return cluster.files[f"apps/application-{cluster.spec.name}-{unit}.yaml"]["spec"]["source"]["helm"]["valuesObject"]


def service_accounts(cluster) -> dict[str, dict[str, Any]]:
    return {rel: o for rel, o in cluster.files.items() if o["kind"] == "ServiceAccount"}


# --- IRSA: the role annotation on the service account each consumer reads ------------------------

def test_irsa_annotates_the_fsx_controller_and_a_secrets_reader_in_the_slurm_namespace():
    # GIVEN dynamic FSx (helm driver) and Secrets Manager, with IRSA roles
    cluster = render_text(spec_text("irsa"))
    # THEN the FSx chart's controller service account carries the FSx role (controller.serviceAccount @ 1.17.0)
    assert values(cluster, "aws-fsx-csi-driver")["controller"]["serviceAccount"] == {
        "name": FSX_CONTROLLER_SA, "annotations": {ROLE_ANNOTATION: FSX_ROLE}}
    # AND the SecretStore authenticates as a service account of its own namespace that carries the role
    store = cluster.files["secrets/secretstore-aws-secrets-manager.yaml"]
    assert store["spec"]["provider"]["aws"]["auth"] == {"jwt": {"serviceAccountRef": {"name": SECRETS_READER_SA}}}
    sa = cluster.files[f"secrets/serviceaccount-{SECRETS_READER_SA}.yaml"]
    assert sa["metadata"]["namespace"] == store["metadata"]["namespace"] == "slurm"
    assert sa["metadata"]["annotations"][ROLE_ANNOTATION] == ESO_ROLE
    # AND the External Secrets controller itself holds no role (any namespace's store could use it)
    assert values(cluster, "external-secrets")["serviceAccount"] == {"name": ESO_CONTROLLER_SA}


def test_pod_identity_renders_no_annotation_and_lists_the_associations():
    # GIVEN the same cluster with EKS Pod Identity
    text = spec_text("podIdentity")
    cluster = render_text(text)
    # THEN nothing in the cluster names a role: no annotation, no extra service account, no store auth
    rendered = yaml.safe_dump(list(cluster.files.values()))
    assert ROLE_ANNOTATION not in rendered and FSX_ROLE not in rendered and ESO_ROLE not in rendered
    assert service_accounts(cluster) == {}
    assert "auth" not in cluster.files["secrets/secretstore-aws-secrets-manager.yaml"]["spec"]["provider"]["aws"]
    # AND the associations name the controllers' service accounts, which the chart values pin by name
    assert values(cluster, "aws-fsx-csi-driver")["controller"]["serviceAccount"] == {"name": FSX_CONTROLLER_SA}
    assert values(cluster, "external-secrets")["serviceAccount"] == {"name": ESO_CONTROLLER_SA}
    got = [(g.controller, g.namespace, g.service_account, g.role_arn, g.how) for g in grants(cluster.spec)]
    assert got == [("fsxCsiController", "kube-system", FSX_CONTROLLER_SA, FSX_ROLE, "pod-identity-association"),
                   ("externalSecrets", "external-secrets", ESO_CONTROLLER_SA, ESO_ROLE, "pod-identity-association")]


@pytest.mark.skipif(not CHARTS.is_dir(), reason=f"pinned chart defaults not found at {CHARTS}")
def test_the_service_account_names_we_pin_are_the_charts_own_defaults():
    # GIVEN the pinned chart defaults WHEN merged with our values THEN the names are those the templates use
    cluster = render_text(spec_text("irsa"))
    fsx = helm_values(CHARTS, cluster.files["apps/application-t-aws-fsx-csi-driver.yaml"]["spec"]["source"])
    assert fsx["controller"]["serviceAccount"]["create"] is True
    assert fsx["controller"]["serviceAccount"]["name"] == FSX_CONTROLLER_SA
    eso = helm_values(CHARTS, cluster.files["apps/application-t-external-secrets.yaml"]["spec"]["source"])
    assert eso["serviceAccount"]["create"] is True and eso["rbac"]["serviceAccountTokenCreate"] is True  # jwt auth


def test_deep_the_charts_templates_read_the_service_account_values_we_set():
    # GIVEN the pinned chart sources beside the checkout (research material; skipped without it)
    fsx = need_shared(SHARED / "chart-sources" / "aws-fsx-csi-driver" / "templates")
    eso = need_shared(SHARED / "chart-sources" / "external-secrets" / "templates")
    # THEN the FSx controller's service account takes its name and annotations from controller.serviceAccount
    sa = (fsx / "controller-serviceaccount.yaml").read_text()
    assert "name: {{ .Values.controller.serviceAccount.name }}" in sa
    assert "{{- with .Values.controller.serviceAccount.annotations }}" in sa
    assert "serviceAccountName: {{ .Values.controller.serviceAccount.name }}" in (fsx / "controller-deployment.yaml").read_text()
    # AND External Secrets' service account is serviceAccount.name, and it may request tokens (auth.jwt)
    helpers = (eso / "_helpers.tpl").read_text()
    assert "{{- default (include \"external-secrets.fullname\" .) .Values.serviceAccount.name }}" in helpers
    assert '"serviceaccounts/token"' in (eso / "rbac.yaml").read_text()


def test_eks_addon_driver_gets_its_role_on_the_add_on_not_in_the_tree():
    # GIVEN the FSx CSI driver as an EKS add-on, with a role
    cluster = render_text(spec_text("podIdentity", sm=False, driver="eks-addon"))
    # THEN no driver Application is rendered, and the identity plan says to set the role on the add-on
    assert "apps/application-t-aws-fsx-csi-driver.yaml" not in cluster.files
    [grant] = grants(cluster.spec)
    assert grant.how == "eks-addon" and grant.role_arn == FSX_ROLE


def test_a_cluster_without_aws_callers_needs_no_role():
    # GIVEN generated secrets and no FSx THEN the spec is valid without any role and nothing is granted
    cluster = render_text(MINIMAL_SPEC)
    assert grants(cluster.spec) == [] and service_accounts(cluster) == {}


# --- Policies: exactly what the consumers call ---------------------------------------------------

def test_policies_grant_only_what_the_controllers_call():
    cluster = render_text(spec_text("irsa"))
    fsx, eso = grants(cluster.spec)
    actions = {a for s in fsx.policy["Statement"] for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    # THEN the FSx controller may create, describe and grow, never delete (reclaimPolicy Retain)
    assert actions == {"fsx:CreateFileSystem", "fsx:DescribeFileSystems", "fsx:TagResource", "fsx:UpdateFileSystem",
                       "iam:CreateServiceLinkedRole"}
    # AND it grows only this Region's and account's file systems
    [grow] = [s for s in fsx.policy["Statement"] if s["Action"] == "fsx:UpdateFileSystem"]
    assert grow["Resource"] == "arn:aws:fsx:us-west-2:111122223333:file-system/*"
    # AND External Secrets may read exactly the named secrets, nothing else
    [statement] = eso.policy["Statement"]
    assert statement["Action"] == "secretsmanager:GetSecretValue"
    assert statement["Resource"] == [f"arn:aws:secretsmanager:us-west-2:111122223333:secret:t/slurm/{n}-??????"
                                     for n in ("mariadb-password", "mariadb-root", "slurm-auth-jwt", "slurm-auth-slurm")]


def test_explain_identity_prints_the_associations_as_json(tmp_path, capsys):
    # GIVEN a Pod Identity spec on disk
    spec = tmp_path / "t.yaml"
    spec.write_text(spec_text("podIdentity"))
    # WHEN --explain identity runs
    rc = main(["--spec", str(spec), "--explain", "identity"])
    # THEN exit 0 and JSON with one create-pod-identity-association command per controller
    assert rc == 0
    [plan] = json.loads(capsys.readouterr().out)
    commands = [g["command"] for g in plan["grants"]]
    assert commands == [
        f"aws eks create-pod-identity-association --region us-west-2 --cluster-name eks --namespace kube-system "
        f"--service-account {FSX_CONTROLLER_SA} --role-arn {FSX_ROLE}",
        f"aws eks create-pod-identity-association --region us-west-2 --cluster-name eks --namespace external-secrets "
        f"--service-account {ESO_CONTROLLER_SA} --role-arn {ESO_ROLE}"]
    assert plan["grants"][0]["trustPolicy"]["Statement"][0]["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    # AND an unknown cluster is one line, exit 2
    assert main(["--spec", str(spec), "--explain", "identity", "--cluster", "nope"]) == 2
    assert capsys.readouterr().err == "--cluster: no cluster 'nope' (rendered: t)\n"


# --- ARN checks ----------------------------------------------------------------------------------

@pytest.mark.parametrize("region, expected", [("us-east-1", "aws"), ("cn-north-1", "aws-cn"),
                                              ("us-gov-west-1", "aws-us-gov"), ("eu-west-1", "aws")])
def test_partition_of_a_region(region, expected):
    assert partition(region) == expected


@pytest.mark.parametrize("arn, problems", [
    ("arn:aws:iam::111122223333:role/ok", 0),
    ("arn:aws:iam::111122223333:role/service-role/path/ok_name+=,.@-", 0),
    ("arn:aws-cn:iam::111122223333:role/ok", 1),
    ("arn:aws:iam::999999999999:role/ok", 1),
    ("arn:aws:iam::111122223333:role/" + "x" * 65, 1),
    ("arn:aws:iam::111122223333:role/bad name", 1),
    ("arn:aws:iam::111122223333:user/ok", 1),
    ("arn:aws-cn:iam::999999999999:role/bad*", 3),
])
def test_role_problems(arn, problems):
    assert len(role_problems(arn, "us-east-1", "111122223333")) == problems


# --- FSx backups ---------------------------------------------------------------------------------

def storage_class(text: str) -> dict[str, str]:
    cluster = render_text(text)
    return cluster.files["storage/storageclass-t-fsx.yaml"]["parameters"]


def with_fsx(deployment: str, **dynamic: Any) -> str:
    if deployment == "PERSISTENT_2":
        dynamic = {"perUnitStorageThroughput": 250, **dynamic}
    return spec_builder.spec_text(aws={"identity": {"roles": {"fsxCsiController": FSX_ROLE}}},
                                  storage=dynamic_fsx(deployment, **dynamic))


def test_persistent_file_systems_are_backed_up_daily_for_a_week_by_default():
    params = storage_class(with_fsx("PERSISTENT_2"))
    # THEN the driver's parameters (controller.go @ 1.17.0) ask for 7 days of daily backups, tags copied
    assert (params["automaticBackupRetentionDays"], params["dailyAutomaticBackupStartTime"],
            params["copyTagsToBackups"]) == ("7", "03:00", "true")


def test_backups_can_be_turned_off_explicitly_and_then_render_as_before():
    params = storage_class(with_fsx("PERSISTENT_2", automaticBackupRetentionDays=0))
    assert params["automaticBackupRetentionDays"] == "0"
    assert "dailyAutomaticBackupStartTime" not in params and "copyTagsToBackups" not in params


def test_scratch_file_systems_have_no_backups():
    params = storage_class(with_fsx("SCRATCH_2"))
    assert params["automaticBackupRetentionDays"] == "0" and "copyTagsToBackups" not in params


# --- Generated Secrets: our metadata only, labelled for backup ------------------------------------

@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_external_secret_has_a_template_so_nothing_is_copied_from_it(rendered, path):
    cluster = rendered[path.stem]
    for rel, obj in cluster.files.items():
        if obj["kind"] != "ExternalSecret":
            continue
        target = obj["spec"]["target"]
        # ESO v2.9.0 setMetadata copies the ExternalSecret's labels/annotations (Argo CD's tracking id) only without a template
        assert "template" in target, rel
        if obj["spec"].get("refreshPolicy") == "CreatedOnce":
            labels = target["template"]["metadata"]["labels"]
            assert labels["slurmgen.dev/backup"] == "required" and labels["slurmgen.dev/cluster"] == cluster.spec.name
            assert "annotations" not in target["template"]["metadata"]  # none of the ExternalSecret's
            assert "data" not in target["template"]  # the generator's keys pass through unchanged


# --- KEDA and Amazon Managed Prometheus ----------------------------------------------------------

AMP = "https://aps-workspaces.us-west-2.amazonaws.com/workspaces/ws-0123abcd-ef45"
KEDA_ROLE = "arn:aws:iam::111122223333:role/keda-amp"


def autoscaled(address: str, mode: str = "irsa", role: bool = True) -> str:
    aws = {"identity": {"mode": mode, "roles": {"keda": KEDA_ROLE}}} if role else {}
    return spec_builder.spec_text(nodeset={"autoscale": {"min": 0, "max": 4}}, aws=aws,
                                  autoscaling={"prometheusAddress": address})


def test_amp_queries_are_signed_as_the_keda_operator():
    # GIVEN an autoscaled nodeset reading Amazon Managed Prometheus, with an IRSA role for KEDA
    cluster = render_text(autoscaled(AMP))
    # THEN the trigger names the workspace's region and an aws podIdentity TriggerAuthentication (KEDA v2.20.2)
    [trigger] = cluster.files["slurm/scaledobject-slurm-worker-gpu.yaml"]["spec"]["triggers"]
    assert trigger["metadata"]["awsRegion"] == "us-west-2" and trigger["metadata"]["serverAddress"] == AMP
    assert trigger["authenticationRef"] == {"name": "keda-aws-identity", "kind": "TriggerAuthentication"}
    auth = cluster.files["slurm/triggerauthentication-keda-aws-identity.yaml"]
    assert auth["spec"] == {"podIdentity": {"provider": "aws"}} and auth["metadata"]["namespace"] == "slurm"
    # AND the operator's service account carries the role; the policy reads only that workspace
    assert values(cluster, "keda")["serviceAccount"]["operator"] == {
        "name": "keda-operator", "annotations": {ROLE_ANNOTATION: KEDA_ROLE}}
    [grant] = grants(cluster.spec)
    [statement] = grant.policy["Statement"]
    assert statement["Resource"] == "arn:aws:aps:us-west-2:111122223333:workspace/ws-0123abcd-ef45"
    assert statement["Action"] == ["aps:QueryMetrics", "aps:GetSeries", "aps:GetLabels", "aps:GetMetricMetadata"]


def test_amp_with_pod_identity_is_an_association_on_the_keda_operator():
    cluster = render_text(autoscaled(AMP, mode="podIdentity"))
    assert values(cluster, "keda")["serviceAccount"]["operator"] == {"name": "keda-operator"}
    assert [(g.namespace, g.service_account, g.how) for g in grants(cluster.spec)] == [
        ("keda", "keda-operator", "pod-identity-association")]


def test_an_in_cluster_prometheus_needs_no_aws_identity():
    cluster = render_text(autoscaled("http://prometheus.monitoring:9090", role=False))
    [trigger] = cluster.files["slurm/scaledobject-slurm-worker-gpu.yaml"]["spec"]["triggers"]
    assert "awsRegion" not in trigger["metadata"] and "authenticationRef" not in trigger
    assert not any(o["kind"] == "TriggerAuthentication" for o in cluster.files.values())
    assert grants(cluster.spec) == []


def test_a_directory_bind_password_needs_the_external_secrets_role_and_is_in_its_policy(rendered):
    # GIVEN prod: a directory whose bind password is in Secrets Manager, no secrets.awsSecretsManager
    spec = rendered["prod"].spec
    assert spec.directory is not None and spec.secrets.aws_prefix is None
    # WHEN its grants are listed
    [grant] = grants(spec)
    # THEN External Secrets gets a Pod Identity association whose policy reads exactly that secret
    assert (grant.controller, grant.namespace, grant.service_account, grant.how) == (
        "externalSecrets", "external-secrets", ESO_CONTROLLER_SA, "pod-identity-association")
    [statement] = grant.policy["Statement"]
    assert statement["Action"] == "secretsmanager:GetSecretValue"
    assert statement["Resource"] == [
        f"arn:aws:secretsmanager:us-east-2:222222222222:secret:{spec.directory.bind_password_name}-??????"]
