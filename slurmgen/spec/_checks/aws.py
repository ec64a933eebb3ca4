"""AWS facts: capacity reservations, the AMI family, FSx for Lustre settings and zone, and one Region for every Region-bearing value."""

from __future__ import annotations

import re
from typing import Any, Iterator, NamedTuple

from ...rule import Finding, rule


@rule("nodesets")
def reservations_match_capacity_type(spec: dict[str, Any]) -> Iterator[Finding]:
    for index, ns in enumerate(spec["nodesets"]):
        reserved = ns["capacityType"] == "reserved"
        if reserved and "capacityReservation" not in ns:
            yield (f"nodesets[{index}].capacityReservation",
                   "capacityType reserved needs the ODCR or Capacity Block to use (ids or tags)")
        if not reserved and "capacityReservation" in ns:
            yield f"nodesets[{index}].capacityReservation", "only used with capacityType: reserved"


@rule("compute")
def ami_version_matches_family(spec: dict[str, Any]) -> Iterator[Finding]:
    compute = spec["compute"]
    dated = compute["amiVersion"][1:].isdigit()
    if compute["amiFamily"] == "al2023" and not dated:
        yield "compute.amiVersion", f"{compute['amiVersion']!r} is not an AL2023 release; use vYYYYMMDD, e.g. v20260724"
    if compute["amiFamily"] == "bottlerocket" and dated:
        yield "compute.amiVersion", f"{compute['amiVersion']!r} is not a Bottlerocket release; use vX.Y.Z, e.g. v1.50.0"


FSX_THROUGHPUT = {"PERSISTENT_1": (50, 100, 200), "PERSISTENT_2": (125, 250, 500, 1000)}


def fsx_valid_size(deployment_type: str, size: int) -> bool:
    """FSx for Lustre capacities: 1200, 2400, then steps of 2400 (SCRATCH_1: of 3600)."""
    step = 3600 if deployment_type == "SCRATCH_1" else 2400
    return size in (1200, 2400) or (size > 0 and size % step == 0)


def _fsx_section_missing(mode: str, deployment: str) -> str:
    """The missing mode section, with every key it needs: one run says all of it, and that static is the default."""
    if mode == "static":
        return ("mode static (the default: mount an existing file system) needs storage.fsx.static with fileSystemId, "
                "dnsName and mountName; or set mode: dynamic to have the CSI driver create one")
    needs = "subnetId and securityGroupIds"
    if deployment in FSX_THROUGHPUT:
        needs = (f"subnetId, securityGroupIds and perUnitStorageThroughput (one of "
                 f"{', '.join(map(str, FSX_THROUGHPUT[deployment]))} for {deployment})")
    return f"mode dynamic needs storage.fsx.dynamic with {needs}"


@rule("storage")
def fsx_settings(spec: dict[str, Any]) -> Iterator[Finding]:
    """The file system's own settings (mode section, size, zone, throughput, backups): storage only."""
    fsx = spec["storage"]["fsx"]
    if not fsx["enabled"]:
        return
    mode, other = fsx["mode"], "static" if fsx["mode"] == "dynamic" else "dynamic"
    if mode not in fsx:
        yield f"storage.fsx.{mode}", _fsx_section_missing(mode, fsx["deploymentType"])
    if other in fsx:
        yield f"storage.fsx.{other}", f"only used with mode: {other}; remove it or change mode"
    for key in ("sizeGiB", "zone"):
        if key not in fsx:
            yield f"storage.fsx.{key}", {"sizeGiB": "the file system size is required (1200, 2400, then steps of 2400 GiB)",
                                         "zone": "the file system's availability zone is required: compute is pinned to it"}[key]
    deployment = fsx["deploymentType"]
    if "sizeGiB" in fsx and not fsx_valid_size(deployment, fsx["sizeGiB"]):
        step = 3600 if deployment == "SCRATCH_1" else 2400
        yield "storage.fsx.sizeGiB", f"{fsx['sizeGiB']} GiB is not a valid {deployment} size; use 1200, 2400 or a multiple of {step}"
    throughput = fsx.get("dynamic", {}).get("perUnitStorageThroughput")
    allowed = FSX_THROUGHPUT.get(deployment)
    if throughput is not None:
        if allowed is None:
            yield "storage.fsx.dynamic.perUnitStorageThroughput", f"{deployment} has no per-unit throughput setting; remove it"
        elif throughput not in allowed:
            yield ("storage.fsx.dynamic.perUnitStorageThroughput",
                   f"{throughput} MB/s/TiB is not offered for {deployment}; use one of {', '.join(map(str, allowed))}")
    elif allowed is not None and "dynamic" in fsx and mode == "dynamic":
        yield "storage.fsx.dynamic.perUnitStorageThroughput", f"required for {deployment}: one of {', '.join(map(str, allowed))}"
    backups = fsx.get("dynamic", {}).get("automaticBackupRetentionDays", 0)
    if backups and deployment.startswith("SCRATCH") and mode == "dynamic":
        yield ("storage.fsx.dynamic.automaticBackupRetentionDays",
               f"{deployment} file systems have no automatic backups; use a PERSISTENT type or remove it")


@rule("storage", "nodesets", "compute", "aws")
def fsx_zones(spec: dict[str, Any]) -> Iterator[Finding]:
    """The compute zones must include the FSx zone. Apart from fsx_settings, which reads only storage, so
    a schema error in aws, compute or nodesets does not hide the file system's own problems."""
    fsx = spec["storage"]["fsx"]
    if not fsx["enabled"]:
        return
    zone = fsx.get("zone")
    region = spec["aws"]["region"]

    def excluded(zones: list[str]) -> bool:
        # a zone outside aws.region is region_coherence's finding; this one would only echo it
        return bool(zone and zones and zone not in zones and _in_region(zone, region)
                    and all(_in_region(z, region) for z in zones))

    # compute.zones once, at that field: a nodeset without zones of its own is pinned to the FSx zone
    # (model.py ClusterSpec.pool_zones), so a per-nodeset line would name a nodesets[].zones never written.
    shared = list(spec["compute"]["zones"])
    if excluded(shared) and any("zones" not in ns for ns in spec["nodesets"]):
        yield ("compute.zones", f"FSx is in {zone}, which these zones ({', '.join(shared)}) exclude; nodesets without "
                                "zones of their own run in the file system's zone anyway: add it, or leave compute.zones empty")
    for index, ns in enumerate(spec["nodesets"]):
        zones = ns.get("zones")
        if zones is not None and excluded(zones):
            yield (f"nodesets[{index}].zones", f"FSx is in {zone}, which this nodeset's zones ({', '.join(zones)}) exclude; "
                   "its pods could not mount it without cross-zone traffic")


# Region-bearing values. Zones are names (us-east-1a): the schema refuses zone IDs (use1-az1), since
# NodePools select on topology.kubernetes.io/zone, which holds the name.
_ZONE_REGION = re.compile(r"^([a-z]{2}(?:-gov)?-[a-z]+-[0-9])[a-z]$")
_FSX_DNS_REGION = re.compile(r"^fs-[0-9a-f]+\.fsx\.([a-z0-9-]+)\.amazonaws\.com$")
_ECR_REGION = re.compile(r"^[0-9]{12}\.dkr\.ecr(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?(?:[:/]|$)")
_RDS_REGION = re.compile(r"^[a-z0-9-]+\.[a-z0-9-]+\.([a-z]{2}(?:-gov)?-[a-z]+-[0-9])\.rds\.amazonaws\.com(?:\.cn)?$")
_EKS_REGION = re.compile(r"^https://[^/]+\.([a-z]{2}(?:-gov)?-[a-z]+-[0-9])\.eks\.amazonaws\.com(?:\.cn)?(?:[:/]|$)")


def zone_region(zone: str) -> str | None:
    """The region of an availability zone name: us-east-1a -> us-east-1."""
    match = _ZONE_REGION.match(zone)
    return match.group(1) if match else None


def _in_region(zone: str, region: str) -> bool:
    return zone_region(zone) in (None, region)


class _Regional(NamedTuple):
    """One region-bearing value in use: where it is, the region it names, what it is, how to fix it."""

    path: str
    region: str
    what: str
    kind: str
    fix: str


def _regional_values(spec: dict[str, Any]) -> Iterator[_Regional]:
    """Every region-bearing value the render uses (a section that is off or unused is not counted)."""
    zones = "list zones of {region}"
    for index, zone in enumerate(spec["compute"]["zones"]):
        yield _Regional(f"compute.zones[{index}]", zone_region(zone) or "", f"zone {zone}", "the zones", zones)
    for n_index, ns in enumerate(spec["nodesets"]):
        for index, zone in enumerate(ns.get("zones", [])):
            yield _Regional(f"nodesets[{n_index}].zones[{index}]", zone_region(zone) or "", f"zone {zone}",
                            "the zones", zones)
    fsx = spec["storage"]["fsx"]
    if fsx["enabled"] and "zone" in fsx:
        yield _Regional("storage.fsx.zone", zone_region(fsx["zone"]) or "", f"zone {fsx['zone']}", "the zones",
                        "use the file system's own zone, a zone of {region}")
    dns = fsx.get("static", {}).get("dnsName", "")
    if fsx["enabled"] and fsx["mode"] == "static" and (match := _FSX_DNS_REGION.match(dns)):
        yield _Regional("storage.fsx.static.dnsName", match.group(1), "the file system", "the FSx file system",
                        "mount a file system in {region} (Lustre is not mounted across regions)")
    secrets = spec["secrets"]
    region = secrets.get("awsSecretsManager", {}).get("region")
    if secrets["mode"] == "external-secrets" and region:
        yield _Regional("secrets.awsSecretsManager.region", region, "Secrets Manager", "Secrets Manager",
                        "replicate the secrets to {region} and remove this key (it defaults to aws.region)")
    images = spec["images"]
    refs = [("images.registry", images["registry"]), ("images.sidecar", images["sidecar"]),
            *((f"images.overrides.{c}", ref) for c, ref in sorted(images["overrides"].items())),
            *((f"nodesets[{i}].image", ns["image"]) for i, ns in enumerate(spec["nodesets"]) if "image" in ns)]
    for path, ref in refs:
        if match := _ECR_REGION.match(ref):
            yield _Regional(path, match.group(1), "the ECR registry", "the ECR images",
                            "pull from a replica in {region} (ECR replication)")
    accounting = spec["accounting"]
    host = accounting["database"].get("host", "")
    if accounting["enabled"] and accounting["database"]["mode"] == "external" and (match := _RDS_REGION.match(host)):
        yield _Regional("accounting.database.host", match.group(1), "the RDS database", "the accounting database",
                        "use a database in {region} (slurmdbd would cross regions for every write)")
    if match := _EKS_REGION.match(spec["gitops"]["destinationServer"]):
        yield _Regional("gitops.destinationServer", match.group(1), "the EKS API endpoint", "the EKS API endpoint",
                        "point at the EKS cluster in {region}")


@rule("aws", "compute", "nodesets", "storage", "secrets", "images", "gitops", "accounting")
def region_coherence(spec: dict[str, Any]) -> Iterator[Finding]:
    """Every zone, the FSx file system, Secrets Manager, ECR, an RDS database and the EKS endpoint are in aws.region.

    A zone outside the region pins NodePools where Karpenter can never launch. When two or more values
    agree on one other region and none is in aws.region, aws.region itself is the likely typo: one
    line on aws.region says so instead of one line per value."""
    region = spec["aws"]["region"]
    values = [v for v in _regional_values(spec) if v.region]
    wrong = [v for v in values if v.region != region]
    others = {v.region for v in values}
    if len(wrong) > 1 and len(others) == 1:
        kinds = list(dict.fromkeys(v.kind for v in wrong))
        listed = ", ".join(kinds[:-1]) + " and " + kinds[-1] if len(kinds) > 1 else kinds[0]
        other = wrong[0].region
        yield "aws.region", f"{region}, but {listed} are all in {other}; set aws.region: {other}, or move them to {region}"
        return
    for v in wrong:
        yield v.path, f"{v.what} is in {v.region}, but aws.region is {region}; {v.fix.format(region=region)}"
