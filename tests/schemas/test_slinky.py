"""Slinky CRs: the CRD schema plus the schemaless wrappers checked against core schemas."""

from __future__ import annotations

import copy

import pytest
import yaml

from slurmgen.verify.schemas import Validator

from tests.schemas.helpers import messages

# One valid object of each Slinky v1beta1 kind, plus a Token; `alpine:latest` is fine for schema purposes.
VALID = {
    doc["kind"]: doc
    for doc in yaml.safe_load_all(
        """
apiVersion: slinky.slurm.net/v1beta1
kind: Controller
metadata: {name: slurm, namespace: slurm}
spec:
  slurmKeyRef: {name: slurm-auth-slurm, key: slurm.key}
  jwtKeyRef:   {name: slurm-auth-jwt,   key: jwt.key}
  accountingRef: {name: slurm}
  slurmctld: {image: ghcr.io/slinkyproject/slurmctld:26.05-ubuntu26.04}
  reconfigure: {image: ghcr.io/slinkyproject/slurmctld:26.05-ubuntu26.04}
  logfile: {image: docker.io/library/alpine:latest}
  persistence: {enabled: true, storageClassName: gp3, accessModes: [ReadWriteOnce], resources: {requests: {storage: 4Gi}}}
  configFileRefs: [{name: slurm-config-extra}]
  extraConf: |
    GresTypes=gpu
    PartitionName=all Nodes=ALL Default=YES MaxTime=UNLIMITED
  metrics: {enabled: true, serviceMonitor: {enabled: true, endpoints: [{path: /metrics/nodes}]}}
---
apiVersion: slinky.slurm.net/v1beta1
kind: RestApi
metadata: {name: slurm, namespace: slurm}
spec:
  controllerRef: {name: slurm}
  slurmrestd: {image: ghcr.io/slinkyproject/slurmrestd:26.05-ubuntu26.04}
---
apiVersion: slinky.slurm.net/v1beta1
kind: NodeSet
metadata: {name: slurm-worker-gpu, namespace: slurm}
spec:
  controllerRef: {name: slurm}
  replicas: 2
  slurmd:
    image: ghcr.io/slinkyproject/slurmd:26.05-ubuntu26.04
    resources: {limits: {nvidia.com/gpu: 8}}
    volumeMounts: [{name: home, mountPath: /home}]
  logfile: {image: docker.io/library/alpine:latest}
  extraConf: "Features=h100 Gres=gpu:h100:8"
  partition: {enabled: true, config: "State=UP MaxTime=UNLIMITED"}
  template:
    spec:
      hostname: gpu-
      nodeSelector: {node.kubernetes.io/instance-type: p5.48xlarge}
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      volumes: [{name: home, persistentVolumeClaim: {claimName: fsx-home}}]
  updateStrategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 1}}
  volumeClaimTemplates:
  - metadata: {name: scratch}
    spec: {accessModes: [ReadWriteOnce], storageClassName: gp3, resources: {requests: {storage: 100Gi}}}
---
apiVersion: slinky.slurm.net/v1beta1
kind: LoginSet
metadata: {name: slurm-login, namespace: slurm}
spec:
  controllerRef: {name: slurm}
  sssdConfRef: {name: slurm-sssd-conf, key: sssd.conf}
  login: {image: ghcr.io/slinkyproject/login:26.05-ubuntu26.04, volumeMounts: [{name: home, mountPath: /home}]}
  initconf: {image: docker.io/library/alpine:latest}
  rootSshAuthorizedKeys: "ssh-ed25519 AAAA admin"
  template: {spec: {volumes: [{name: home, persistentVolumeClaim: {claimName: fsx-home}}]}}
  service:
    metadata: {annotations: {service.beta.kubernetes.io/aws-load-balancer-scheme: internet-facing}}
    spec: {type: LoadBalancer, loadBalancerSourceRanges: [10.0.0.0/8]}
---
apiVersion: slinky.slurm.net/v1beta1
kind: Accounting
metadata: {name: slurm, namespace: slurm}
spec:
  slurmKeyRef: {name: slurm-auth-slurm, key: slurm.key}
  jwtKeyRef:   {name: slurm-auth-jwt,   key: jwt.key}
  slurmdbd: {image: ghcr.io/slinkyproject/slurmdbd:26.05-ubuntu26.04}
  storageConfig: {host: mariadb, port: 3306, database: slurm_acct_db, username: slurm,
                  passwordKeyRef: {name: mariadb-password, key: password}}
---
apiVersion: slinky.slurm.net/v1beta1
kind: Token
metadata: {name: slurm-exporter, namespace: slurm}
spec:
  username: slurm
  jwtKeyRef: {name: slurm-auth-jwt, key: jwt.key}
"""
    )
}


def valid(kind: str) -> dict:
    return copy.deepcopy(VALID[kind])


@pytest.mark.parametrize("kind", sorted(VALID))
def test_minimal_slinky_set_passes(validator: Validator, kind: str) -> None:
    # given the documented minimal v1beta1 object / when validated / then no problem
    assert validator.validate(valid(kind)) == []


def test_typo_inside_container_wrapper_is_caught(validator: Validator) -> None:
    # given a NodeSet whose slurmd wrapper has `resourcez` (the API server would store it)
    obj = valid("NodeSet")
    obj["spec"]["slurmd"]["resourcez"] = obj["spec"]["slurmd"].pop("resources")
    # when it is validated
    found = messages(validator, obj)
    # then the typo is reported against the core Container schema
    assert found == [
        "NodeSet slurm/slurm-worker-gpu: spec.slurmd.resourcez: Additional properties are not allowed ('resourcez' was unexpected)"
    ]


def test_typo_inside_pod_template_is_caught(validator: Validator) -> None:
    # given a NodeSet whose template.spec says `nodeSelectr`
    obj = valid("NodeSet")
    obj["spec"]["template"]["spec"]["nodeSelectr"] = obj["spec"]["template"]["spec"].pop("nodeSelector")
    # when it is validated
    found = messages(validator, obj)
    # then it is reported with its full path
    assert found == [
        "NodeSet slurm/slurm-worker-gpu: spec.template.spec.nodeSelectr: Additional properties are not allowed ('nodeSelectr' was unexpected)"
    ]


def test_deep_error_inside_pod_template_is_caught(validator: Validator) -> None:
    # given a toleration with a misspelt field and a volume with a wrong type
    obj = valid("NodeSet")
    obj["spec"]["template"]["spec"]["tolerations"][0]["effects"] = "NoSchedule"
    obj["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]["readOnly"] = "yes"
    # when it is validated
    found = [(problem.path, problem.what) for problem in validator.validate(obj)]
    # then both are found
    assert found == [
        ("spec.template.spec.tolerations[0].effects", "Additional properties are not allowed ('effects' was unexpected)"),
        ("spec.template.spec.volumes[0].persistentVolumeClaim.readOnly", "'yes' is not of type 'boolean', 'null'"),
    ]


def test_service_spec_is_checked(validator: Validator) -> None:
    # given a LoginSet service spec with a misspelt field
    obj = valid("LoginSet")
    obj["spec"]["service"]["spec"]["loadBalancerSourceRange"] = obj["spec"]["service"]["spec"].pop("loadBalancerSourceRanges")
    # when / then
    assert messages(validator, obj) == [
        "LoginSet slurm/slurm-login: spec.service.spec.loadBalancerSourceRange: Additional properties are not allowed ('loadBalancerSourceRange' was unexpected)"
    ]


def test_service_outer_fields_are_checked_by_the_crd(validator: Validator) -> None:
    # given a typo beside service.spec (typed by the CRD itself)
    obj = valid("LoginSet")
    obj["spec"]["service"]["metdata"] = obj["spec"]["service"].pop("metadata")
    # when / then
    assert messages(validator, obj) == [
        "LoginSet slurm/slurm-login: spec.service.metdata: Additional properties are not allowed ('metdata' was unexpected)"
    ]


def test_volume_claim_templates_are_checked(validator: Validator) -> None:
    # given a claim template with a typo, and one that is not an object
    obj = valid("NodeSet")
    obj["spec"]["volumeClaimTemplates"][0]["spec"]["acessModes"] = ["ReadWriteOnce"]
    obj["spec"]["volumeClaimTemplates"].append("scratch")
    # when it is validated
    found = [(problem.path, problem.what) for problem in validator.validate(obj)]
    # then both are reported per index
    assert found == [
        ("spec.volumeClaimTemplates[0].spec.acessModes", "Additional properties are not allowed ('acessModes' was unexpected)"),
        ("spec.volumeClaimTemplates[1]", "'scratch' is not of type 'object', 'null'"),
    ]


def test_container_wrapper_types_are_checked(validator: Validator) -> None:
    # given env as a mapping instead of a list (a common Helm-values habit)
    obj = valid("RestApi")
    obj["spec"]["slurmrestd"]["env"] = {"SLURM_JWT": "x"}
    # when / then
    assert messages(validator, obj) == [
        "RestApi slurm/slurm: spec.slurmrestd.env: {'SLURM_JWT': 'x'} is not of type 'array', 'null'"
    ]


@pytest.mark.parametrize(
    ("kind", "field"),
    [
        ("Controller", "slurmctld"),
        ("Controller", "logfile"),
        ("NodeSet", "slurmd"),
        ("NodeSet", "logfile"),
        ("LoginSet", "login"),
        ("LoginSet", "initconf"),
        ("RestApi", "slurmrestd"),
        ("Accounting", "slurmdbd"),
    ],
)
def test_missing_image_is_caught(validator: Validator, kind: str, field: str) -> None:
    # given a wrapper without image (the operator has no default)
    obj = valid(kind)
    del obj["spec"][field]["image"]
    obj["spec"][field]["imagePullPolicy"] = "Always"
    # when it is validated
    found = [(problem.path, problem.what) for problem in validator.validate(obj)]
    # then the missing image is reported at the image path
    assert found == [(f"spec.{field}.image", "required: the Slinky operator has no default image")]


def test_missing_wrapper_is_caught(validator: Validator) -> None:
    # given a NodeSet with no logfile wrapper at all
    obj = valid("NodeSet")
    del obj["spec"]["logfile"]
    # when / then
    assert messages(validator, obj) == [
        "NodeSet slurm/slurm-worker-gpu: spec.logfile: required: the Slinky operator has no default image (set logfile.image)"
    ]


def test_empty_image_is_caught(validator: Validator) -> None:
    # given an empty image string
    obj = valid("Accounting")
    obj["spec"]["slurmdbd"]["image"] = ""
    # when / then
    assert messages(validator, obj) == [
        "Accounting slurm/slurm: spec.slurmdbd.image: required: the Slinky operator has no default image"
    ]


def test_reconfigure_is_needed_only_for_inplace_reconfigure(validator: Validator) -> None:
    # given a Controller without the reconfigure wrapper
    obj = valid("Controller")
    del obj["spec"]["reconfigure"]
    # when / then it is fine by default ...
    assert validator.validate(obj) == []
    # ... and an error once in-place reconfigure is on
    obj["spec"]["inplaceReconfigure"] = True
    assert [problem.path for problem in validator.validate(obj)] == ["spec.reconfigure"]


def test_external_controller_needs_no_images(validator: Validator) -> None:
    # given an external (hybrid) Controller: it runs no pods
    obj = {
        "apiVersion": "slinky.slurm.net/v1beta1",
        "kind": "Controller",
        "metadata": {"name": "slurm", "namespace": "slurm"},
        "spec": {"external": True, "externalConfig": {"host": "slurmctld.example.com", "port": 6817}},
    }
    # when / then
    assert validator.validate(obj) == []


def test_crd_and_wrapper_problems_are_reported_together(validator: Validator) -> None:
    # given one CRD-level typo and one wrapper-level typo
    obj = valid("NodeSet")
    obj["spec"]["replica"] = obj["spec"].pop("replicas")
    obj["spec"]["slurmd"]["volumeMount"] = obj["spec"]["slurmd"].pop("volumeMounts")
    # when it is validated
    found = [problem.path for problem in validator.validate(obj)]
    # then both are there, sorted by path
    assert found == ["spec.replica", "spec.slurmd.volumeMount"]


def test_cel_rules_are_not_evaluated(validator: Validator) -> None:
    # given a Controller that breaks its CEL rule (no slurmKeyRef while not external)
    obj = valid("Controller")
    del obj["spec"]["slurmKeyRef"]
    # when / then it passes: CEL is a documented gap, the API server will catch it
    assert validator.validate(obj) == []


def test_volume_claim_templates_must_be_a_list(validator: Validator) -> None:
    # given claim templates written as a mapping (the schema itself is untyped there)
    obj = valid("NodeSet")
    obj["spec"]["volumeClaimTemplates"] = {"scratch": {}}
    # when / then the shape error is reported
    assert messages(validator, obj) == [
        "NodeSet slurm/slurm-worker-gpu: spec.volumeClaimTemplates: {'scratch': {}} is not of type 'array'"
    ]
