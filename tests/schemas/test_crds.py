"""CRD schemas made strict: conversion rules, the index, and real custom resources."""

from __future__ import annotations

import copy
from pathlib import Path

import jsonschema_rs
import pytest
import yaml

from slurmgen.verify.schemas import SchemaUnavailable, Validator
from slurmgen.verify.schemas.crds import FALLBACK_METADATA, CrdIndex, go_pattern, to_strict_schema, with_metadata
from slurmgen.verify.schemas.core import CoreSchemas, schema_issues
from slurmgen.verify.schemas.vendored import VendoredCrds

from tests.conftest import SHARED_CRDS, need_shared
from tests.schemas.helpers import messages

VALID = {
    doc["kind"]: doc
    for doc in yaml.safe_load_all(
        r"""
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: slurm
  namespace: argocd
  finalizers: [resources-finalizer.argocd.argoproj.io]
  annotations: {argocd.argoproj.io/sync-wave: "2"}
spec:
  project: slurm
  source: {repoURL: "https://github.com/example/gitops.git", targetRevision: main, path: dist/demo/slurm, directory: {recurse: true}}
  destination: {server: "https://kubernetes.default.svc", namespace: slurm}
  syncPolicy:
    automated: {prune: true, selfHeal: true}
    syncOptions: [CreateNamespace=true, ServerSideApply=true]
    retry: {limit: 5, backoff: {duration: 5s, factor: 2, maxDuration: 3m}}
  ignoreDifferences:
  - {group: slinky.slurm.net, kind: NodeSet, jsonPointers: [/spec/replicas]}
---
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: slurm, namespace: argocd}
spec:
  description: Slurm on EKS
  sourceRepos: ["https://github.com/example/gitops.git"]
  destinations: [{server: "https://kubernetes.default.svc", namespace: "*"}]
  clusterResourceWhitelist: [{group: "*", kind: "*"}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu}
spec:
  template:
    metadata: {labels: {slurm/nodeset: gpu}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements:
      - {key: node.kubernetes.io/instance-type, operator: In, values: [p5.48xlarge]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      taints: [{key: nvidia.com/gpu, effect: NoSchedule}]
      expireAfter: 720h
  limits: {cpu: "1000", nvidia.com/gpu: 64}
  disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: 10m}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: gpu}
spec:
  role: KarpenterNodeRole-demo
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  blockDeviceMappings:
  - deviceName: /dev/xvda
    ebs: {volumeSize: 500Gi, volumeType: gp3, encrypted: true}
---
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: slurm-exporter, namespace: slurm, labels: {release: prometheus}}
spec:
  selector: {matchLabels: {app.kubernetes.io/name: slurm-exporter}}
  endpoints: [{port: metrics, path: /metrics, interval: 30s, scrapeTimeout: 25s}]
---
apiVersion: k8s.mariadb.com/v1alpha1
kind: MariaDB
metadata: {name: mariadb, namespace: slurm}
spec:
  rootPasswordSecretKeyRef: {name: mariadb-root, key: password, generate: false}
  username: slurm
  database: slurm_acct_db
  passwordSecretKeyRef: {name: mariadb-password, key: password, generate: false}
  storage: {size: 20Gi, storageClassName: gp3}
  replicas: 1
  myCnf: |
    [mariadb]
    innodb_lock_wait_timeout=900
  resources: {requests: {cpu: 500m, memory: 1Gi}, limits: {memory: 2Gi}}
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: slurm-auth-slurm, namespace: slurm}
spec:
  refreshInterval: 1h
  secretStoreRef: {kind: ClusterSecretStore, name: aws-secrets-manager}
  target: {name: slurm-auth-slurm, creationPolicy: Owner, template: {type: Opaque}}
  data:
  - secretKey: slurm.key
    remoteRef: {key: demo/slurm/slurm-key}
---
apiVersion: generators.external-secrets.io/v1alpha1
kind: Password
metadata: {name: mariadb-password, namespace: slurm}
spec: {length: 32, digits: 5, symbols: 0, noUpper: false, allowRepeat: true}
---
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: slurm-worker-gpu, namespace: slurm}
spec:
  scaleTargetRef: {apiVersion: slinky.slurm.net/v1beta1, kind: NodeSet, name: slurm-worker-gpu}
  minReplicaCount: 0
  maxReplicaCount: 8
  pollingInterval: 30
  cooldownPeriod: 300
  triggers:
  - type: prometheus
    metadata: {serverAddress: "http://prometheus.monitoring:9090", query: 'sum(slurm_partition_jobs_pending{partition="gpu"})', threshold: "1"}
"""
    )
}


def valid(kind: str) -> dict:
    return copy.deepcopy(VALID[kind])


def nodeset(**spec: object) -> dict:
    """A NodeSet with what its CRD requires, and `spec` fields added."""
    return {
        "apiVersion": "slinky.slurm.net/v1beta1",
        "kind": "NodeSet",
        "metadata": {"name": "gpu", "namespace": "slurm"},
        "spec": {
            "controllerRef": {"name": "slurm"},
            "slurmd": {"image": "ghcr.io/slinkyproject/slurmd:26.05-ubuntu26.04"},
            "logfile": {"image": "docker.io/library/alpine:latest"},
            **spec,
        },
    }


# --------------------------------------------------------------------------- real CRs
@pytest.mark.parametrize("kind", sorted(VALID))
def test_minimal_custom_resources_pass(validator: Validator, kind: str) -> None:
    # given a realistic custom resource the generator would render
    obj = valid(kind)
    # when it is validated
    problems = validator.validate(obj)
    # then nothing is reported
    assert problems == []


@pytest.mark.parametrize(
    ("kind", "parent", "expected"),
    [
        # top level
        ("ServiceMonitor", [], "ServiceMonitor slurm/slurm-exporter: typo: Additional properties are not allowed ('typo' was unexpected)"),
        # metadata is checked against the strict core ObjectMeta
        ("ServiceMonitor", ["metadata"], "ServiceMonitor slurm/slurm-exporter: metadata.typo: Additional properties are not allowed ('typo' was unexpected)"),
        # depth 2
        ("Application", ["spec"], "Application argocd/slurm: spec.typo: Additional properties are not allowed ('typo' was unexpected)"),
        # depth 4, inside a list item
        ("NodePool", ["spec", "template", "spec", "requirements", 0], "NodePool gpu: spec.template.spec.requirements[0].typo: Additional properties are not allowed ('typo' was unexpected)"),
        # depth 4, Argo CD
        ("Application", ["spec", "syncPolicy", "retry", "backoff"], "Application argocd/slurm: spec.syncPolicy.retry.backoff.typo: Additional properties are not allowed ('typo' was unexpected)"),
        # an empty-object schema (`type: object`, no properties) is closed too
        ("EC2NodeClass", ["spec", "blockDeviceMappings", 0, "ebs"], "EC2NodeClass gpu: spec.blockDeviceMappings[0].ebs.typo: Additional properties are not allowed ('typo' was unexpected)"),
    ],
)
def test_unknown_field_fails_at_any_depth(validator: Validator, kind: str, parent: list, expected: str) -> None:
    # given a valid object with one unknown field added at some depth
    obj = valid(kind)
    target = obj
    for key in parent:
        target = target[key]
    target["typo"] = 1
    # when it is validated
    found = messages(validator, obj)
    # then exactly that field is reported, with its path
    assert found == [expected]


def test_problem_fields_for_an_unknown_field(validator: Validator) -> None:
    # given an Application with a misspelt syncPolicy field
    obj = valid("Application")
    obj["spec"]["syncPolicy"]["automated"]["prun"] = True
    # when it is validated
    [problem] = validator.validate(obj)
    # then the structured fields are all filled in
    assert problem.where == "Application argocd/slurm"
    assert problem.path == "spec.syncPolicy.automated.prun"
    assert problem.what == "Additional properties are not allowed ('prun' was unexpected)"


def test_wrong_type_fails(validator: Validator) -> None:
    # given a ScaledObject whose maxReplicaCount is a string
    obj = valid("ScaledObject")
    obj["spec"]["maxReplicaCount"] = "8"
    # when it is validated
    found = messages(validator, obj)
    # then the type error names the field
    assert found == ["ScaledObject slurm/slurm-worker-gpu: spec.maxReplicaCount: '8' is not of type 'integer'"]


def test_enum_and_required_fail(validator: Validator) -> None:
    # given a NodePool with a bad operator and no nodeClassRef
    obj = valid("NodePool")
    obj["spec"]["template"]["spec"]["requirements"][0]["operator"] = "Inn"
    del obj["spec"]["template"]["spec"]["nodeClassRef"]
    # when it is validated
    found = [(p.path, p.what) for p in validator.validate(obj)]
    # then both are reported
    assert ("spec.template.spec", "'nodeClassRef' is a required property") in found
    assert any(path == "spec.template.spec.requirements[0].operator" and "is not one of" in message for path, message in found)


def test_nullable_is_accepted_and_null_elsewhere_is_not(validator: Validator) -> None:
    # given a Controller with null in `nullable: true` fields (the chart renders these)
    obj = {
        "apiVersion": "slinky.slurm.net/v1beta1",
        "kind": "Controller",
        "metadata": {"name": "slurm", "namespace": "slurm"},
        "spec": {
            "slurmctld": {"image": "ghcr.io/slinkyproject/slurmctld:26.05-ubuntu26.04"},
            "logfile": {"image": "docker.io/library/alpine:latest"},
            "configFileRefs": None,
            "template": {"metadata": {"labels": None}},
        },
    }
    # when it is validated
    assert validator.validate(obj) == []
    # then null in a field without `nullable` is still a type error
    obj["spec"]["extraConf"] = None
    assert messages(validator, obj) == ["Controller slurm/slurm: spec.extraConf: None is not of type 'string'"]


@pytest.mark.parametrize("value", [1, "25%"])
def test_int_or_string_accepts_both(validator: Validator, value: object) -> None:
    # given a NodeSet whose maxUnavailable is an int or a percentage string
    obj = nodeset(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": value}})
    # when / then it validates
    assert validator.validate(obj) == []


def test_int_or_string_rejects_other_types(validator: Validator) -> None:
    # given a ServiceMonitor endpoint targetPort that is a list
    obj = valid("ServiceMonitor")
    obj["spec"]["endpoints"][0]["targetPort"] = [8080]
    # when it is validated
    found = messages(validator, obj)
    # then it is a type error
    assert found == ["ServiceMonitor slurm/slurm-exporter: spec.endpoints[0].targetPort: [8080] is not of type 'integer', 'string'"]


def test_go_end_anchor_rejects_trailing_newline(validator: Validator) -> None:
    # given a NodeSet partition config that ends with a newline (a YAML `|` block)
    obj = nodeset(partition={"enabled": True, "config": "State=UP\n"})
    # when it is validated
    found = messages(validator, obj)
    # then `^[^\n]+$` fails as in Go (Python's `$` would accept it), quoting the CRD pattern
    assert found == [r"NodeSet slurm/gpu: spec.partition.config: 'State=UP\n' does not match '^[^\\n]+$'"]


def test_date_time_format_is_checked(validator: Validator) -> None:
    # given a ScheduledUpdate whose startTime is not RFC 3339
    obj = nodeset(updateStrategy={"type": "ScheduledUpdate", "scheduledUpdate": {"startTime": "2026-09-01 02:00"}})
    # when it is validated
    found = messages(validator, obj)
    # then the format error is reported; a proper timestamp passes
    assert found == ["NodeSet slurm/gpu: spec.updateStrategy.scheduledUpdate.startTime: '2026-09-01 02:00' is not an RFC 3339 date-time"]
    obj["spec"]["updateStrategy"]["scheduledUpdate"]["startTime"] = "2026-09-01T02:00:00Z"
    assert validator.validate(obj) == []


def test_unserved_version_is_explained(validator: Validator) -> None:
    # given an ExternalSecret at v1beta1, which the CRD lists but no longer serves
    obj = valid("ExternalSecret")
    obj["apiVersion"] = "external-secrets.io/v1beta1"
    # when it is validated
    found = messages(validator, obj)
    # then the message says which version is served
    assert found == [
        "ExternalSecret slurm/slurm-auth-slurm: external-secrets.io/v1beta1 ExternalSecret is not served "
        "by its CRD (external-secrets.io_externalsecrets.yaml); served: external-secrets.io/v1"
    ]


def test_unknown_custom_kind_is_a_problem(validator: Validator) -> None:
    # given a kind no CRD defines
    obj = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Foo", "metadata": {"name": "x", "namespace": "argocd"}}
    # when it is validated
    found = messages(validator, obj)
    # then the problem points at where the CRD schemas come from
    assert found == ["Foo argocd/x: no schema for argoproj.io/v1alpha1 Foo; is its CRD in the vendored schemas (slurmgen/verify/schemas/vendored)?"]


# --------------------------------------------------------------------------- conversion rules
def test_conversion_closes_objects_but_not_preserved_or_junctor_nodes() -> None:
    # given an OpenAPI schema with a closed object, a preserved one and an anyOf branch
    openapi = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "open": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    "map": {"type": "object", "additionalProperties": {"type": "string"}},
                    "either": {
                        "type": "object",
                        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                        "anyOf": [{"required": ["a"]}, {"properties": {"b": {"minLength": 1}}}],
                    },
                },
            }
        },
    }
    # when it is converted
    schema = to_strict_schema(openapi)
    spec = schema["properties"]["spec"]
    # then only structural objects get additionalProperties: false
    assert schema["additionalProperties"] is False
    assert spec["additionalProperties"] is False
    assert "additionalProperties" not in spec["properties"]["open"]
    assert spec["properties"]["map"]["additionalProperties"] == {"type": "string"}
    assert spec["properties"]["either"]["additionalProperties"] is False
    assert all("additionalProperties" not in branch for branch in spec["properties"]["either"]["anyOf"])
    # and an object with both fields satisfies the anyOf
    jsonschema_rs.Draft202012Validator(schema).validate(
        {"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "x"}, "spec": {"either": {"a": "1", "b": "2"}}}
    )


def test_conversion_of_openapi_keywords() -> None:
    # given OpenAPI 3.0 idioms
    openapi = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "maximum": 10, "exclusiveMaximum": True},
            "e": {"type": "string", "enum": ["a"], "nullable": True},
            "s": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
            "i": {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True},
            "x": {"type": "string", "x-kubernetes-validations": [{"rule": "self != ''"}], "default": "a"},
        },
    }
    # when it is converted
    props = to_strict_schema(openapi)["properties"]
    # then each maps to its JSON Schema meaning (and CEL rules/defaults are dropped)
    assert props["n"] == {"type": "integer", "exclusiveMaximum": 10}
    assert props["e"] == {"type": ["string", "null"], "enum": ["a", None]}
    assert props["s"]["uniqueItems"] is True
    assert props["i"] == {"type": ["integer", "string"]}
    assert props["x"] == {"type": "string"}


@pytest.mark.parametrize(
    ("go", "rust"),
    [
        (r"^[^\n]+$", r"^[^\n]+\z"),
        (r"^a$|^b$", r"^a\z|^b\z"),
        (r"[$]x", r"[$]x"),
        (r"[]$]$", r"[]$]\z"),
        (r"\$$", r"\$\z"),
        (r"abc\z", r"abc\z"),
        # Go's Perl classes are ASCII only, its dot stops at \n only: spelled out
        (r"^\d+\.\d*$", r"^[0-9]+\.[0-9]*\z"),
        (r"[^\s]+( \S+)", r"[^\t\n\f\r ]+( [^\t\n\f\r ]+)"),
        (r"\w\W", r"[0-9A-Za-z_][^0-9A-Za-z_]"),
        (r"@every .*", r"@every [^\n]*"),
        (r"[.\d]", r"[.0-9]"),
        (r"[\S]", r"[\S]"),  # a negated class escape inside brackets cannot be spelled out
        (r"(?s)a.b", r"(?s)a.b"),  # with the dot-all flag the dot is every character
    ],
)
def test_go_pattern_spells_out_gos_meaning(go: str, rust: str) -> None:
    # given a Go pattern / when translated / then Go's anchors, classes and dot, spelled out for Rust
    assert go_pattern(go) == rust


CORE = CoreSchemas()


@pytest.mark.parametrize(("go", "text", "go_matches"), [
    # Go's `$` ends the text: a trailing newline (a YAML `|` block) does not match
    (r"^[^\n]+$", "State=UP\n", False), (r"^[^\n]+$", "State=UP", True), (r"abc\z", "abc\n", False),
    # Go's \d, \s, \w are ASCII: an Arabic-Indic digit, a vertical tab, a no-break space, an é
    (r"^\d+$", "٣", False), (r"^\d+$", "12", True), (r"^\s$", "\v", False), (r"^\S+$", "1\xa0Gi", True),
    (r"^\w+$", "é", False), (r"^\s$", "\t", True),
    # Go's dot is every character but \n (jsonschema-rs's own also stops at \r, U+2028, U+2029)
    (r"^a.b$", "a\rb", True), (r"^a.b$", "a\u2028b", True), (r"^a.b$", "a\nb", False),
    # Karpenter's and External Secrets' schedules
    (r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly)|@every [^\s]+.*|[^\s]+( [^\s]+){4})$",
     "0 0 * * *", True),
    (r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly)|@every [^\s]+.*|[^\s]+( [^\s]+){4})$",
     "0\xa00 * * *", False),
])
def test_the_validator_reads_a_crd_pattern_as_go_does(go: str, text: str, go_matches: bool) -> None:
    # given a CRD field with a Go pattern, converted as the vendored CRDs are
    crd = to_strict_schema({"type": "object", "properties": {"f": {"type": "string", "pattern": go}}})
    schema = CORE.validator_for(crd)
    # when a text is checked / then it passes exactly when Go's regexp matches it
    issues = schema_issues(schema, {"f": text})
    assert (issues == []) is go_matches
    # and a refusal quotes the pattern as the CRD spells it
    assert issues in ([], [(("f",), f"{text!r} does not match {go!r}")])


def test_a_go_pattern_rusts_regex_lacks_is_skipped_not_fatal() -> None:
    # given a pattern in Go's syntax that Rust's regex does not take (`\Q...\E` quotes literal text)
    # when converted / then the field keeps its type and loses only that check
    crd = to_strict_schema({"type": "object", "properties": {"f": {"type": "string", "pattern": r"^\Q1.0\E$"}}})
    assert crd["properties"]["f"] == {"type": "string"}


def _served_crds() -> list:
    return [crd for crd in VendoredCrds.load() if crd.served]


@pytest.mark.parametrize("crd", _served_crds(), ids=lambda crd: f"{crd.kind}.{crd.version}")
def test_every_vendored_schema_is_valid_json_schema(crd) -> None:
    # given a vendored (already strict) CRD version
    body = VendoredCrds.load().strict_body(crd)
    # when its metadata is filled in as the validator does
    schema = with_metadata(body, FALLBACK_METADATA)
    # then it is a valid draft 2020-12 schema, closed at the top
    jsonschema_rs.meta.validate(schema)
    assert schema["additionalProperties"] is False


# --------------------------------------------------------------------------- the index
def test_index_lists_every_served_version() -> None:
    # given the vendored CRDs
    index = VendoredCrds.load()
    # when listed
    served = {(crd.api_version, crd.kind) for crd in index if crd.served}
    unserved = {(crd.api_version, crd.kind) for crd in index if not crd.served}
    # then every pinned kind is there, and ESO's v1beta1 is known but not served
    assert len(served) == 25
    assert {
        ("slinky.slurm.net/v1beta1", "NodeSet"),
        ("argoproj.io/v1alpha1", "Application"),
        ("karpenter.k8s.aws/v1", "EC2NodeClass"),
        ("generators.external-secrets.io/v1alpha1", "Password"),
        ("keda.sh/v1alpha1", "ScaledObject"),
    } <= served
    assert unserved == {
        ("external-secrets.io/v1beta1", "ExternalSecret"),
        ("external-secrets.io/v1beta1", "SecretStore"),
        ("external-secrets.io/v1beta1", "ClusterSecretStore"),
    }
    assert index.get("karpenter.sh/v1", "NodePool").scope == "Cluster"
    assert index.get("external-secrets.io/v1beta1", "ExternalSecret") is None


def test_vendored_index_agrees_with_the_upstream_yaml() -> None:
    # given (deep test) the pinned upstream CRD YAML beside the checkout
    upstream = CrdIndex.load(need_shared(SHARED_CRDS))
    # when both are listed
    def rows(index: CrdIndex) -> set:
        return {(crd.api_version, crd.kind, crd.scope, crd.served, crd.source.name) for crd in index}
    # then group, version, kind, scope, served flag and source file name all agree
    assert rows(VendoredCrds.load()) == rows(upstream)
    assert len(rows(upstream)) == 28


def test_index_reads_multi_document_files(tmp_path: Path) -> None:
    # given a file with a ConfigMap, a CRD with two versions (one unserved) and an alias
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "mixed.yaml").write_text(
        """
apiVersion: v1
kind: ConfigMap
metadata: {name: not-a-crd}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Cluster
  names: {kind: Widget, plural: widgets}
  versions:
  - name: v2
    served: true
    storage: true
    schema:
      openAPIV3Schema: &schema
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
  - name: v1
    served: false
    storage: false
    schema:
      openAPIV3Schema: *schema
"""
    )
    # when it is indexed
    index = CrdIndex.load(tmp_path)
    # then both versions are found, with the right flags and schemas
    assert [(crd.api_version, crd.kind, crd.served, crd.scope) for crd in index] == [
        ("example.com/v2", "Widget", True, "Cluster"),
        ("example.com/v1", "Widget", False, "Cluster"),
    ]
    assert index.openapi(index.get("example.com/v2", "Widget"))["properties"]["spec"]["type"] == "object"
    assert index.get("example.com/v1", "Widget") is None

    # and a validator built on that dir (as with --crd-dir) uses it, strictly
    validator = Validator.create(tmp_path)
    widget = {"apiVersion": "example.com/v2", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1, "colour": "red"}}
    assert [str(p) for p in validator.validate(widget)] == [
        "Widget w: spec.colour: Additional properties are not allowed ('colour' was unexpected)"
    ]


def test_duplicate_crd_is_refused(tmp_path: Path) -> None:
    # given the same CRD in two files
    crd = (
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
        "spec: {group: karpenter.sh, scope: Cluster, names: {kind: NodePool}, versions: "
        "[{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]}\n"
    )
    (tmp_path / "a.yaml").write_text(crd)
    (tmp_path / "b.yaml").write_text(crd)
    # when / then indexing refuses with both paths in the message
    with pytest.raises(SchemaUnavailable, match=r"karpenter.sh/v1 NodePool is defined twice") as raised:
        CrdIndex.load(tmp_path)
    assert str(tmp_path / "a.yaml") in str(raised.value) and str(tmp_path / "b.yaml") in str(raised.value)


def test_v1beta1_crd_is_refused(tmp_path: Path) -> None:
    # given a pre-1.16 CRD
    (tmp_path / "old.yaml").write_text(
        "apiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\n"
        "spec: {group: example.com, names: {kind: Old}, versions: [{name: v1, served: true}]}\n"
    )
    # when / then
    with pytest.raises(SchemaUnavailable, match="only apiextensions.k8s.io/v1 CRDs are supported"):
        CrdIndex.load(tmp_path)


@pytest.mark.parametrize("setup", ["missing", "empty", "no-crds"])
def test_create_refuses_missing_or_empty_dir(tmp_path: Path, setup: str) -> None:
    # given a CRD dir that does not exist, is empty, or holds no CRD
    crd_dir = tmp_path / "crds"
    if setup != "missing":
        crd_dir.mkdir()
    if setup == "no-crds":
        (crd_dir / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    # when / then creating a validator fails with a plain message naming the dir
    with pytest.raises(SchemaUnavailable, match=r"(does not exist|has no CRD files|no CustomResourceDefinition)") as raised:
        Validator.create(crd_dir)
    assert str(crd_dir) in str(raised.value)
