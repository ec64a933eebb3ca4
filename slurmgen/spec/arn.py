"""IAM role ARNs in a spec: the partition of a Region, and what is wrong with a role ARN.

Kept apart from the rules so the identity module and the spec checks share one definition.
Role names: 1-64 of `[A-Za-z0-9+=,.@_-]`; paths `/…/` of printable ASCII (IAM API reference,
CreateRole RoleName/Path). A role's partition must be the cluster Region's: an `arn:aws:` role
cannot be assumed from China or GovCloud, nor the reverse.
"""

from __future__ import annotations

import re

ROLE_ARN = re.compile(r"^arn:(?P<partition>[a-z-]+):iam::(?P<account>[0-9]{12}):role(?P<path>/(?:[\x21-\x7e]*/)?)(?P<name>[^/]*)$")
ROLE_NAME = re.compile(r"^[A-Za-z0-9+=,.@_-]{1,64}$")


# An Amazon Managed Prometheus workspace as KEDA's serverAddress (it appends /api/v1/query).
AMP_HOST = re.compile(r"^https?://aps-workspaces\.[a-z0-9-]+\.amazonaws\.com(?:\.cn)?(?:[:/]|$)")
AMP_URL = re.compile(r"^https://aps-workspaces\.(?P<region>[a-z]{2}(?:-gov)?-[a-z]+-[0-9])\.amazonaws\.com(?:\.cn)?"
                     r"/workspaces/(?P<workspace>ws-[A-Za-z0-9-]+)$")


def amp_workspace(address: str | None) -> tuple[str, str] | None:
    """(region, workspace id) of an Amazon Managed Prometheus query address, else None."""
    match = AMP_URL.match(address or "")
    return (match["region"], match["workspace"]) if match else None


def partition(region: str) -> str:
    """aws-cn for cn-* Regions, aws-us-gov for us-gov-*, aws otherwise."""
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def role_account(arn: str) -> str | None:
    match = ROLE_ARN.match(arn)
    return match["account"] if match else None


def role_problems(arn: str, region: str, account_id: str | None) -> list[str]:
    """Why `arn` cannot be the role of a controller in `region` (and account `account_id`, when known)."""
    match = ROLE_ARN.match(arn)
    if match is None:
        return [f"{arn!r} is not an IAM role ARN; expected arn:{partition(region)}:iam::<12-digit account>:role/<name>"]
    out = []
    want = partition(region)
    if match["partition"] != want:
        out.append(f"partition {match['partition']!r}, but aws.region {region} is in partition {want!r}; "
                   f"use arn:{want}:iam::…")
    if account_id and match["account"] != account_id:
        out.append(f"role is in account {match['account']}, but aws.accountId is {account_id}; "
                   "use a role of the cluster's account")
    if not ROLE_NAME.match(match["name"]):
        out.append(f"role name {match['name']!r} is not valid: 1-64 characters of letters, digits and +=,.@_-")
    if len(match["path"]) > 512:
        out.append("role path is longer than 512 characters")
    return out
