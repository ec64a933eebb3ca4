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
