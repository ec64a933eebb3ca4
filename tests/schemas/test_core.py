"""Core kinds against kubernetes-validate's strict schemas, loaded once."""

from __future__ import annotations

import copy
import datetime
import time

import pytest
import yaml

from slurmgen.verify.schemas import SchemaUnavailable, Validator, format_path, object_problem
from slurmgen.verify.schemas.core import CoreSchemas, schema_issues, supported_versions

from tests.schemas.helpers import messages

VALID = {
    doc["kind"]: doc
    for doc in yaml.safe_load_all(
        """
apiVersion: v1
kind: Namespace
metadata: {name: slurm, labels: {app.kubernetes.io/part-of: slurm}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: slurm-config-extra, namespace: slurm}
data: {gres.conf: "AutoDetect=nvml\\n", cgroup.conf: "CgroupPlugin=autodetect\\n"}
---
apiVersion: v1
kind: Service
metadata: {name: slurm-exporter, namespace: slurm}
spec:
  type: LoadBalancer
  selector: {app.kubernetes.io/name: slurm-exporter}
  ports: [{name: metrics, port: 8080, targetPort: metrics, protocol: TCP}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: fsx-home, namespace: slurm}
spec: {accessModes: [ReadWriteMany], storageClassName: fsx, resources: {requests: {storage: 1200Gi}}}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fsx}
provisioner: fsx.csi.aws.com
parameters: {subnetId: subnet-0123, securityGroupIds: sg-0123, deploymentType: PERSISTENT_2}
reclaimPolicy: Retain
volumeBindingMode: Immediate
---
apiVersion: batch/v1
kind: Job
metadata: {name: slurm-init, namespace: slurm}
spec:
  backoffLimit: 3
  template:
    spec:
      restartPolicy: OnFailure
      containers:
      - name: init
        image: busybox:1.36
        command: [sh, -c, echo ok]
        resources: {requests: {cpu: 100m, memory: 64Mi}}
---
apiVersion: v1
kind: Secret
metadata: {name: slurm-auth-slurm, namespace: slurm}
type: Opaque
data: {slurm.key: c2VjcmV0}
"""
    )
}


@pytest.fixture(scope="module")
def core() -> CoreSchemas:
    return CoreSchemas("1.34")


def valid(kind: str) -> dict:
    return copy.deepcopy(VALID[kind])


# --------------------------------------------------------------------------- valid / invalid kinds
@pytest.mark.parametrize("kind", sorted(VALID))
def test_core_kinds_pass(validator: Validator, kind: str) -> None:
    # given a typical core object / when validated / then no problem
    assert validator.validate(valid(kind)) == []


@pytest.mark.parametrize(
    ("kind", "mutate", "expected"),
    [
        (
            "ConfigMap",
            lambda o: o.update(datta={"a": "b"}),
            ["ConfigMap slurm/slurm-config-extra: datta: Additional properties are not allowed ('datta' was unexpected)"],
        ),
        (
            "ConfigMap",
            lambda o: o["data"].update({"gres.conf": 1}),
            ["ConfigMap slurm/slurm-config-extra: data[\"gres.conf\"]: 1 is not of type 'string', 'null'"],
        ),
        (
            "Service",
            lambda o: o["spec"]["ports"][0].update(port="eighty"),
            ["Service slurm/slurm-exporter: spec.ports[0].port: 'eighty' is not of type 'integer'"],
        ),
        (
            "Service",
            lambda o: o["spec"].update(loadBalancerSourceRange=["10.0.0.0/8"]),
            ["Service slurm/slurm-exporter: spec.loadBalancerSourceRange: Additional properties are not allowed ('loadBalancerSourceRange' was unexpected)"],
        ),
        (
            "PersistentVolumeClaim",
            lambda o: o["spec"].update(acessModes=o["spec"].pop("accessModes")),
            ["PersistentVolumeClaim slurm/fsx-home: spec.acessModes: Additional properties are not allowed ('acessModes' was unexpected)"],
        ),
        (
            "StorageClass",
            lambda o: o.update(allowVolumeExpansion="yes"),
            ["StorageClass fsx: allowVolumeExpansion: 'yes' is not of type 'boolean', 'null'"],
        ),
        (
            "StorageClass",
            lambda o: o.pop("provisioner"),
            ["StorageClass fsx: 'provisioner' is a required property"],
        ),
        (
            "Namespace",
            lambda o: o["metadata"].update(label={"a": "b"}),
            ["Namespace slurm: metadata.label: Additional properties are not allowed ('label' was unexpected)"],
        ),
        (
            "Job",
            lambda o: o["spec"]["template"]["spec"]["containers"][0].pop("name"),
            ["Job slurm/slurm-init: spec.template.spec.containers[0]: 'name' is a required property"],
        ),
        (
            "Job",
            lambda o: o["spec"]["template"]["spec"]["containers"][0]["resources"].update(request={}),
            ["Job slurm/slurm-init: spec.template.spec.containers[0].resources.request: Additional properties are not allowed ('request' was unexpected)"],
        ),
        (
            "Secret",
            lambda o: o["data"].update({"slurm.key": "not base64!"}),
            ["Secret slurm/slurm-auth-slurm: data[\"slurm.key\"]: 'not base64!' is not base64 (format 'byte')"],
        ),
    ],
)
def test_core_kinds_fail(validator: Validator, kind: str, mutate, expected: list[str]) -> None:
    # given a valid object with one mistake
    obj = valid(kind)
    mutate(obj)
    # when it is validated
    found = messages(validator, obj)
    # then exactly that mistake is reported
    assert found == expected


def test_several_problems_are_sorted_by_path(validator: Validator) -> None:
    # given a Service with two unknown fields and a bad port
    obj = valid("Service")
    obj["spec"]["zzz"] = 1
    obj["spec"]["ports"][0]["port"] = "x"
    obj["aaa"] = 1
    # when it is validated
    paths = [problem.path for problem in validator.validate(obj)]
    # then all are reported, sorted by path
    assert paths == ["aaa", "spec.ports[0].port", "spec.zzz"]


def test_missing_name_is_a_problem(validator: Validator) -> None:
    # given a ConfigMap with only generateName
    obj = valid("ConfigMap")
    obj["metadata"] = {"generateName": "cfg-", "namespace": "slurm"}
    # when / then kubectl apply would refuse it
    assert messages(validator, obj) == [
        "ConfigMap slurm/cfg-: metadata.name: required: kubectl apply needs a name (generateName is not enough)"
    ]


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ({"apiVersion": "apps/v1", "kind": "Deploymnt", "metadata": {"name": "x"}}, "Deploymnt x: no schema for apps/v1 Deploymnt; is its CRD in"),
        ({"kind": "ConfigMap", "metadata": {"name": "x"}}, "ConfigMap x: apiVersion: required: a non-empty string"),
        ({"apiVersion": "v1", "metadata": {"name": "x"}}, "<no kind> x: kind: required: a non-empty string"),
    ],
)
def test_unknown_kind_or_missing_type_is_a_problem(validator: Validator, obj: dict, expected: str) -> None:
    # given an object without a known apiVersion/kind / when validated / then one problem
    [problem] = validator.validate(obj)
    assert str(problem).startswith(expected)


def test_validate_all_keeps_input_order(validator: Validator) -> None:
    # given a bad Service, a good ConfigMap and a bad Namespace
    bad_service, bad_namespace = valid("Service"), valid("Namespace")
    bad_service["x"] = 1
    bad_namespace["x"] = 1
    # when all are validated
    problems = validator.validate_all([bad_service, valid("ConfigMap"), bad_namespace])
    # then the problems follow the input order
    assert [problem.where.split()[0] for problem in problems] == ["Service", "Namespace"]


# --------------------------------------------------------------------------- sub-schemas
def test_container_sub_schemas(core: CoreSchemas) -> None:
    # given a container without a name
    container = {"image": "busybox", "resources": {"limits": {"nvidia.com/gpu": 8}}}
    # when / then the plain Container needs a name, the Slinky variant does not
    assert schema_issues(core.container, container) == [((), "'name' is a required property")]
    assert schema_issues(core.container_unnamed, container) == []
    # and both are strict
    assert schema_issues(core.container_unnamed, {"image": "x", "imagePullPolice": "Always"}) == [
        (("imagePullPolice",), "Additional properties are not allowed ('imagePullPolice' was unexpected)")
    ]


def test_pod_spec_sub_schema_does_not_need_containers(core: CoreSchemas) -> None:
    # given a pod spec with placement only
    spec = {"nodeSelector": {"a": "b"}, "tolerations": [{"key": "k", "operator": "Exists"}]}
    # when / then it passes, while a typo does not
    assert schema_issues(core.pod_spec, spec) == []
    assert schema_issues(core.pod_spec, {"nodeSelectr": {}}) == [
        (("nodeSelectr",), "Additional properties are not allowed ('nodeSelectr' was unexpected)")
    ]


def test_service_spec_and_pvc_sub_schemas(core: CoreSchemas) -> None:
    # given a ServiceSpec and a PVC with one typo each / when validated / then found
    assert schema_issues(core.service_spec, {"type": "LoadBalancer", "externalTrafficPolicy": "Local"}) == []
    assert schema_issues(core.service_spec, {"tpye": "LoadBalancer"})[0][0] == ("tpye",)
    claim = {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
    assert schema_issues(core.persistent_volume_claim, claim) == []
    claim["spec"]["storageClass"] = "gp3"
    assert schema_issues(core.persistent_volume_claim, claim)[0][0] == ("spec", "storageClass")


@pytest.mark.parametrize(("schema", "good", "bad", "message"), [
    # our format checks, not jsonschema-rs's own (its date-time is not RFC 3339 as the API server reads it)
    ({"type": "string", "format": "byte"}, "aGVsbG8=", "hello!", "'hello!' is not base64 (format 'byte')"),
    ({"type": "string", "format": "date-time"}, "2026-12-01T18:00:00Z", "2026-12-01 18:00",
     "'2026-12-01 18:00' is not an RFC 3339 date-time"),
    # numbers: the Go decoder refuses what overflows the field
    ({"type": "integer", "format": "int32"}, 2**31 - 1, 2**31, "2147483648 is out of range for int32"),
    ({"type": "integer", "format": "int64"}, -(2**63), -(2**63) - 1, "-9223372036854775809 is out of range for int64"),
    # other formats are annotations, as they were: a value they would refuse passes, the type still counts
    ({"type": "string", "format": "uri"}, "not a uri", 1, "1 is not of type 'string'"),
    ({"enum": ["In", "NotIn"]}, "In", "in", "'in' is not one of ['In', 'NotIn']"),
])
def test_formats_and_messages(core: CoreSchemas, schema: dict, good: object, bad: object, message: str) -> None:
    # given a schema with a checked format or a constraint / when compiled by the one engine
    checked = core.validator_for(schema)
    # then the good value passes and the bad one is one line saying what is wrong, values as in YAML specs
    assert schema_issues(checked, good) == []
    assert schema_issues(checked, bad) == [((), message)]


@pytest.mark.parametrize(("data", "issue"), [
    ({"image": "x", 1: "y"}, ((), "cannot be checked: key 1 is not a string")),
    ({"image": "x", "env": [{"name": "A", "value": datetime.date(2026, 1, 1)}]},
     (("env", 0, "value"), "cannot be checked: a date is not JSON data")),
])
def test_data_that_is_not_json_is_one_problem_at_its_path(core: CoreSchemas, data: dict, issue: tuple) -> None:
    # given a container holding a value no JSON (and no API server) holds / when validated
    # then one issue names where it is, instead of an exception from the engine
    assert schema_issues(core.container_unnamed, data) == [issue]


def test_a_schema_the_engine_refuses_is_schema_unavailable(core: CoreSchemas) -> None:
    # given a schema that is not JSON Schema (a type that does not exist) / when compiled
    # then one plain error, which the run reports as "cannot validate the rendered objects: ..."
    with pytest.raises(SchemaUnavailable, match="a schema cannot be compiled"):
        core.validator_for({"type": "integr"})


def test_validators_are_cached(core: CoreSchemas) -> None:
    # given the same kind asked twice / when / then the same validator object comes back
    assert core.kind("v1", "ConfigMap") is core.kind("v1", "ConfigMap")
    assert core.pod_spec is core.pod_spec
    assert core.kind("v1", "Nope") is None


# --------------------------------------------------------------------------- versions
@pytest.mark.parametrize(("asked", "used"), [("1.34", "1.34"), ("v1.31.4", "1.31"), ("1.25", "1.25")])
def test_kubernetes_version_selects_bundled_schemas(asked: str, used: str) -> None:
    # given a requested version / when loaded / then the matching bundled minor is used
    assert CoreSchemas(asked).version == used


@pytest.mark.parametrize("asked", ["1.99", "1.20", "latest"])
def test_unsupported_kubernetes_version_is_refused(asked: str) -> None:
    # given a version outside 1.25..1.37 / when / then a plain error
    with pytest.raises(SchemaUnavailable, match=r"(no strict schemas|not a Kubernetes version)"):
        CoreSchemas(asked)


def test_supported_versions_span() -> None:
    # given the installed kubernetes-validate / when listed / then 1.25 .. 1.37
    versions = supported_versions()
    assert versions[0] == "1.25" and versions[-1] == "1.37"


def test_version_matters() -> None:
    # given a field added in a later release (Container.resizePolicy, 1.27)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "i", "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}]}]}}
    # when validated for 1.26 and 1.34 / then only 1.26 rejects it
    old, new = CoreSchemas("1.26").kind("v1", "Pod"), CoreSchemas("1.34").kind("v1", "Pod")
    assert schema_issues(old, pod)[0][0] == ("spec", "containers", 0, "resizePolicy")
    assert schema_issues(new, pod) == []


# --------------------------------------------------------------------------- Problem / paths
def test_problem_str_and_path_format() -> None:
    # given problems with and without namespace and path / when rendered / then readable
    assert str(object_problem("NodeSet", "gpu", "slurm", "spec.slurmd.resourcez", "boom")) == \
        "NodeSet slurm/gpu: spec.slurmd.resourcez: boom"
    assert str(object_problem("StorageClass", "fsx", None, "", "boom")) == "StorageClass fsx: boom"
    assert format_path(("spec", "containers", 0, "env", 1, "name")) == "spec.containers[0].env[1].name"
    assert format_path(("metadata", "labels", "app.kubernetes.io/name")) == 'metadata.labels["app.kubernetes.io/name"]'
    assert format_path(()) == ""


# --------------------------------------------------------------------------- speed
def test_two_hundred_objects_take_well_under_a_second(validator: Validator) -> None:
    # given 200 typical core objects (validators warmed by one pass)
    objs = [valid(kind) for kind in sorted(VALID)] * 29
    validator.validate_all(objs[:7])
    # when all are validated
    start = time.perf_counter()
    problems = validator.validate_all(objs[:200])
    elapsed = time.perf_counter() - start
    # then it is fast (about 50 ms on a laptop; the bound leaves room for slow CI)
    assert problems == []
    assert elapsed < 1.0
