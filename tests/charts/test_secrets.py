"""SecretsChart alone: generated secrets through External Secrets (charts/secrets.py)."""

from __future__ import annotations

from charts.secrets import SecretsChart
from tests.charts import unit


def test_each_generated_secret_is_a_generator_and_an_external_secret():
    # GIVEN the minimal spec (secrets generated in the cluster) / WHEN the secrets chart is built alone
    objects = unit(SecretsChart)
    # THEN each ExternalSecret has its Password generator, which it references by name
    externals = {name.split("/")[1]: o for name, o in objects.items() if name.startswith("ExternalSecret/")}
    generators = {name.split("/")[1] for name in objects if name.startswith("Password/")}
    assert {"slurm-auth-slurm", "slurm-auth-jwt", "mariadb-password", "mariadb-root"} <= set(externals)
    for name, external in externals.items():
        refs = [src["sourceRef"]["generatorRef"]["name"] for src in external["spec"].get("dataFrom", [])
                if "generatorRef" in src.get("sourceRef", {})]
        assert refs and set(refs) <= generators, name


def test_generated_secrets_are_created_once_and_never_overwritten():
    # GIVEN the keys generated in the cluster / WHEN the secrets chart is built alone
    objects = unit(SecretsChart)
    for name, key in (("slurm-auth-slurm", "slurm.key"), ("slurm-auth-jwt", "jwt.key"),
                      ("mariadb-password", "password"), ("mariadb-root", "password")):
        external, generator = objects[f"ExternalSecret/{name}"]["spec"], objects[f"Password/{name}"]["spec"]
        # THEN each Secret is generated once, outlives its ExternalSecret, and is immutable
        assert external["refreshPolicy"] == "CreatedOnce"
        assert {k: v for k, v in external["target"].items() if k != "template"} == {
            "name": name, "creationPolicy": "Orphan", "immutable": True}
        assert external["dataFrom"][0]["sourceRef"]["generatorRef"]["name"] == name
        assert generator["secretKeys"] == [key] and generator["symbols"] == 0  # no '#': slurmdbd.conf comment


def test_secrets_manager_mode_reads_every_value_from_aws():
    # GIVEN every value kept in AWS Secrets Manager under a prefix (read with External Secrets' IAM role)
    # and an external database
    objects = unit(SecretsChart, aws={"identity": {"mode": "irsa", "roles": {
                       "externalSecrets": "arn:aws:iam::111122223333:role/r"}}},
                   secrets={"mode": "external-secrets", "awsSecretsManager": {"prefix": "t/slurm"}},
                   accounting={"database": {"mode": "external", "host": "db.example.com",
                                            "passwordSecret": {"name": "slurm-db-password", "key": "password"}}})
    # THEN one SecretStore reads Secrets Manager in the cluster's region as the reader service account (IRSA)
    assert objects["ServiceAccount/slurm-secrets-reader"]["metadata"]["annotations"][
        "eks.amazonaws.com/role-arn"] == "arn:aws:iam::111122223333:role/r"
    assert objects["SecretStore/aws-secrets-manager"]["spec"] == {"provider": {"aws": {
        "service": "SecretsManager", "region": "us-west-2",
        "auth": {"jwt": {"serviceAccountRef": {"name": "slurm-secrets-reader"}}}}}}
    # AND each Secret comes from <prefix>/<name>; the Slurm keys are not generated
    [remote] = objects["ExternalSecret/slurm-db-password"]["spec"]["data"]
    assert remote["remoteRef"]["key"] == "t/slurm/slurm-db-password" and remote["remoteRef"]["property"] == "password"
    assert not [name for name in objects if name.startswith("Password/slurm-auth")]


def test_sssd_conf_is_rendered_from_the_spec_into_an_external_secret():
    # GIVEN the minimal spec (sssd.conf made by slurmgen) / WHEN the secrets chart is built alone
    external = unit(SecretsChart)["ExternalSecret/slurm-sssd-conf"]["spec"]
    # THEN the Secret slurm-sssd-conf is templated in the cluster, starting with its [sssd] section
    assert external["target"]["name"] == "slurm-sssd-conf"
    assert external["target"]["template"]["data"]["sssd.conf"].startswith("[sssd]\n")
