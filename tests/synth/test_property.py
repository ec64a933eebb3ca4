"""Property: any spec the schema and checks accept renders without crashing, and its output validates.

Specs are generated from the catalog (so GPU splits and EFA are ones the instances can hold) and
cover the modes: FSx static/dynamic/off, secrets generated/from AWS/precreated, in-cluster or
external database, login exposure, autoscaling and a policy tree.
"""

from __future__ import annotations

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurmgen.synth.build import render
from slurmgen.catalog.catalog import load_catalog
from slurmgen.catalog.sizing import SizingError, pod_resources
from slurmgen.write.output import dump
from slurmgen.spec import parse_text
from slurmgen.spec._checks.names import include_in_all
from slurmgen.verify.objects import verify

CATALOG = load_catalog()


def _sizes(name: str, gpus: int | None = None) -> bool:
    try:
        pod_resources(CATALOG[name], gpus_per_pod=gpus)
    except SizingError:
        return False
    return True


# CPU-only and NVIDIA types that hold a slurmd pod (the rest need a device plugin slurmgen does not
# deploy, or are refused as too small: tests/catalog/test_sizing.py covers those).
TYPES = sorted(name for name, it in CATALOG.items() if (it.is_nvidia or not it.has_accelerator) and _sizes(name))
NAMES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=3, max_size=8)


@st.composite
def nodesets(draw, names):
    out = []
    for name in names:
        it = CATALOG[draw(st.sampled_from(TYPES))]
        ns = {"name": name, "instanceType": it.instance_type,
              "capacityType": draw(st.sampled_from(["on-demand", "spot"]))}
        if it.has_accelerator:
            gpus = draw(st.sampled_from([d for d in range(1, it.accelerator_count + 1)
                                         if it.accelerator_count % d == 0 and _sizes(it.instance_type, d)]))
            ns["gpusPerPod"] = gpus
            if it.efa_max >= it.accelerator_count // gpus and draw(st.booleans()):
                ns["efa"] = True
        if draw(st.booleans()):
            ns["autoscale"] = {"min": draw(st.integers(0, 2)), "max": draw(st.integers(2, 16))}
        else:
            ns["replicas"] = draw(st.integers(0, 12))
        included = draw(st.sampled_from([None, True, False]))
        if included is not None:
            ns["includeInAll"] = included
        pod_resources(it, gpus_per_pod=ns.get("gpusPerPod"), efa=ns.get("efa", False))  # sanity
        out.append(ns)
    if not any(include_in_all(ns) for ns in out):
        out[0]["includeInAll"] = True  # the `all` partition must match a nodeset
    return out


@st.composite
def specs(draw):
    names = draw(st.lists(NAMES, min_size=1, max_size=3, unique=True))
    spec = {
        "schemaVersion": 1, "name": draw(NAMES),
        "aws": {"region": "us-west-2", "eksClusterName": "eks"},
        "gitops": {"repoURL": "https://github.com/o/r.git"},
        "nodesets": draw(nodesets(names)),
        "partitions": [{"name": f"p{n}", "nodesets": [n], "priorityTier": draw(st.integers(1, 20))} for n in names]
                      + [{"name": "all", "nodesets": ["ALL"], "default": True}],
        "autoscaling": {"prometheusAddress": "http://prometheus.monitoring:9090"},
    }
    mode = draw(st.sampled_from(["generated", "aws", "precreated"]))
    spec["secrets"] = {"mode": "precreated" if mode == "precreated" else "external-secrets"}
    if mode == "aws":
        spec["secrets"]["awsSecretsManager"] = {"prefix": "x/y"}
        spec["aws"]["identity"] = {"mode": draw(st.sampled_from(["irsa", "podIdentity"])),
                                   "roles": {"externalSecrets": "arn:aws:iam::111122223333:role/secrets"}}
    if mode != "generated" and draw(st.booleans()):
        spec["accounting"] = {"database": {"mode": "external", "host": "db.example.com"}}
    fsx = draw(st.sampled_from(["off", "static", "dynamic"]))
    if fsx == "static":
        spec["storage"] = {"fsx": {"enabled": True, "sizeGiB": 2400, "zone": "us-west-2a", "static": {
            "fileSystemId": "fs-0123456789abcdef0", "dnsName": "fs-0123456789abcdef0.fsx.us-west-2.amazonaws.com",
            "mountName": "abc"}}}
    elif fsx == "dynamic":
        spec["storage"] = {"fsx": {"enabled": True, "mode": "dynamic", "sizeGiB": 2400 * draw(st.integers(1, 4)),
                                   "zone": "us-west-2b", "dynamic": {"subnetId": "subnet-0123456789abcdef0",
                                                                     "securityGroupIds": ["sg-0123456789abcdef0"],
                                                                     "perUnitStorageThroughput": 250}}}
        spec["aws"].setdefault("identity", {}).setdefault("roles", {})["fsxCsiController"] = \
            "arn:aws:iam::111122223333:role/fsx"
    spec["login"] = {"service": draw(st.sampled_from([
        {"scheme": "internal"}, {"scheme": "internet-facing", "sourceRanges": ["203.0.113.0/24"]},
        {"scheme": "internet-facing", "allowPublicSsh": True}]))}
    if draw(st.booleans()):
        spec["policy"] = {"qos": [{"name": "normal", "preempt": ["low"]}, {"name": "low", "preemptMode": "requeue"}],
                          "accounts": [{"name": "a", "fairshare": draw(st.integers(1, 100))},
                                       {"name": "b", "parent": "a"}],
                          "users": [{"name": "u", "defaultAccount": "b"}]}
    spec["monitoring"] = {"kubePrometheusStack": {"enabled": draw(st.booleans())}}
    return spec


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs())
def test_any_accepted_spec_renders_and_validates(raw):
    # GIVEN a random valid spec, WHEN it is loaded and rendered
    spec = parse_text("random.yaml", yaml.safe_dump(raw, sort_keys=False))
    [cluster] = render([spec])
    # THEN every object validates and passes every synth-time check
    assert verify([cluster]) == []
    # AND the YAML written reads back as the very object (no value retyped, e.g. "8080" or "yes" as a string)
    for rel, obj in cluster.files.items():
        assert yaml.safe_load(dump(obj)) == obj, rel


@settings(max_examples=10, deadline=None)
@given(specs(), st.randoms())
def test_key_order_of_the_spec_does_not_change_the_output(raw, rnd):
    def shuffled(value):
        if isinstance(value, dict):
            items = list(value.items())
            rnd.shuffle(items)
            return {k: shuffled(v) for k, v in items}
        if isinstance(value, list):
            return [shuffled(v) for v in value]
        return value
    # GIVEN the same spec twice, the second with every mapping's keys in another order
    first, second = yaml.safe_dump(raw, sort_keys=False), yaml.safe_dump(shuffled(raw), sort_keys=False)
    # WHEN both are rendered
    a = render([parse_text("a.yaml", first)])[0]
    b = render([parse_text("b.yaml", second)])[0]
    # THEN the files are the same bytes
    assert {k: dump(v) for k, v in a.files.items()} == {k: dump(v) for k, v in b.files.items()}
