"""Security and policy checks run on every synth, fed with hand-made bad objects."""

from __future__ import annotations

import copy
import dataclasses

import pytest

from slurmgen.verify import objects as verify


def with_files(cluster, **changes):
    files = copy.deepcopy(dict(cluster.files))
    files.update(changes)
    return dataclasses.replace(cluster, files=files)


def test_examples_pass_every_check(rendered):
    assert verify.static_checks(list(rendered.values())) == []


def test_a_secret_with_data_is_refused(rendered):
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "leak", "namespace": "slurm"},
              "data": {"password": "aHVudGVyMg=="}}
    cluster = with_files(rendered["example"], **{"slurm/secret-leak.yaml": secret})
    assert verify.static_checks([cluster]) == [
        "example/slurm/secret-leak.yaml: a Secret with data would put a secret value in git; reference it instead"]


def test_unpinned_images_are_refused(rendered):
    def mutate(tag):
        cluster = rendered["example"]
        obj = copy.deepcopy(cluster.files["slurm/restapi-slurm.yaml"])
        obj["spec"]["slurmrestd"]["image"] = f"ghcr.io/slinkyproject/slurmrestd{tag}"
        return verify.static_checks([with_files(cluster, **{"slurm/restapi-slurm.yaml": obj})])
    assert mutate(":latest") == ["example/slurm/restapi-slurm.yaml: image 'ghcr.io/slinkyproject/slurmrestd:latest' "
                                 "has the floating tag 'latest' (fewer than major.minor.patch: its publisher moves it "
                                 "to each new release); pin a patch release or a sha256 digest"]
    assert len(mutate("")) == 1
    assert len(mutate(":26.05-ubuntu26.04")) == 1  # a minor line moves with every patch
    assert mutate(":26.05.1-ubuntu26.04") == []
    assert mutate("@sha256:" + "a" * 64) == []


def test_an_untagged_image_in_chart_values_is_refused(rendered):
    # GIVEN the EFA device plugin's Application with only image.repository in its values (the chart's
    # tag would then be whatever the chart says, which the tree does not show)
    cluster = rendered["training"]
    rel = next(r for r, o in cluster.files.items() if o["kind"] == "Application"
               and o["spec"]["source"].get("chart") == "aws-efa-k8s-device-plugin")
    app = copy.deepcopy(cluster.files[rel])
    del app["spec"]["source"]["helm"]["valuesObject"]["image"]["tag"]
    repository = app["spec"]["source"]["helm"]["valuesObject"]["image"]["repository"]
    # THEN the static checks name the file and the image as the chart would build it
    assert verify.static_checks([with_files(cluster, **{rel: app})]) == [
        f"training/{rel}: image {repository!r} has no tag (a floating tag: the registry serves whatever latest is); "
        "pin a patch release or a sha256 digest"]


@pytest.mark.parametrize("entry", ["*", "https://github.com/o/{r,x}.git", "https://github.com/o/r?.git",
                                   "https://github.com/o/[a-z].git", "!https://github.com/o/r.git"])
def test_a_glob_character_in_the_project_is_refused(rendered, entry):
    # GIVEN the example's AppProject with one source repository that Argo CD would read as a glob
    cluster = rendered["example"]
    project = copy.deepcopy(cluster.files["apps/appproject-example.yaml"])
    project["spec"]["sourceRepos"].append(entry)
    # THEN the static checks refuse it
    assert verify.static_checks([with_files(cluster, **{"apps/appproject-example.yaml": project})]) == [
        "example/apps/appproject-example.yaml: the AppProject must list repositories, destinations and kinds "
        "explicitly (no glob character: * ? [ ] { } ! \\)"]


def test_a_private_key_in_any_rendered_object_is_refused(rendered):
    # GIVEN a rendered ConfigMap whose text holds a private-key block (however it got there)
    cluster = rendered["example"]
    rel, obj = next((r, o) for r, o in cluster.files.items() if o["kind"] == "ConfigMap")
    obj = copy.deepcopy(obj)
    obj.setdefault("data", {})["leak"] = "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n"
    # THEN the backstop names the file
    assert verify.static_checks([with_files(cluster, **{rel: obj})]) == [
        f"example/{rel}: holds a private-key block, which would land in git; keep it in a Secret and reference it"]


def test_a_typo_inside_a_slinky_wrapper_fails_schema_validation(rendered):
    cluster = rendered["example"]
    obj = copy.deepcopy(cluster.files["slurm/nodeset-slurm-worker-slinky.yaml"])
    obj["spec"]["slurmd"]["resourcez"] = obj["spec"]["slurmd"].pop("resources")
    problems = verify.schema_checks([with_files(cluster, **{"slurm/nodeset-slurm-worker-slinky.yaml": obj})])
    assert len(problems) == 1 and "spec.slurmd" in problems[0] and "resourcez" in problems[0]
