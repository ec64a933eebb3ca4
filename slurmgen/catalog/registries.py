"""The regional Amazon ECR registry of the EKS add-on images, from AWS's published table (vendored).

The EFA device plugin chart defaults to the us-west-2 registry; nodes in private subnets that reach
ECR through their own Region's endpoints cannot pull from it, and some Regions use another account.
An unknown Region is a spec error rather than a guess.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

from ..rule import Finding, rule

DATA = Path(__file__).with_name("eks_addon_registries.json")


@lru_cache(maxsize=1)
def eks_addon_registries() -> dict[str, str]:
    """Region -> registry host, e.g. af-south-1 -> 877085696533.dkr.ecr.af-south-1.amazonaws.com."""
    return dict(json.loads(DATA.read_text(encoding="utf-8"))["registries"])


def eks_addon_registry(region: str) -> str:
    """The registry for `region`; KeyError when the table does not list it (the spec rule reports it first)."""
    return eks_addon_registries()[region]


def efa_plugin_deployed(spec: dict[str, Any]) -> bool:
    """The same condition build.py uses: some nodeset asks for EFA and the plugin is not turned off."""
    return spec["compute"]["devicePlugins"]["efa"] and any(ns["efa"] for ns in spec["nodesets"])


@rule("aws", "compute", "nodesets")
def region_has_registry(spec: dict[str, Any]) -> Iterator[Finding]:
    """Spec rule: the add-on images we deploy (EFA device plugin) need the Region's registry."""
    region = spec["aws"]["region"]
    if efa_plugin_deployed(spec) and region not in eks_addon_registries():
        yield ("aws.region",
               f"no Amazon EKS add-on image registry is known for {region!r} (the EFA device plugin image comes "
               f"from it); add the Region to slurmgen/catalog/{DATA.name} from the AWS table it cites")

