"""Cross-field rules the JSON Schema cannot express (references between sections, uniqueness).

Each rule returns (field path, message) pairs on the *defaulted* spec dict, so every problem in a
file is reported at once. Paths use list indexes (`nodesets[0].zones`); the loader shows them with
item names (errors.name_keyed). A rule runs only when the sections it declares (`@rule(...)`, slurmgen/rule.py)
passed the schema.

One module per topic (names, references, slurm_text, policy, aws, access, directory, bridge); RULES
lists them in the order their lines are reported.
"""

from __future__ import annotations

from typing import Any

from ...rule import Finding, Rule
from .._images import pinned_images
from .._topology import topology_rules
from .access import autoscaling, database_mode, identity_roles, login_exposure, secrets_mode
from .aws import ami_version_matches_family, fsx_settings, fsx_zones, region_coherence, reservations_match_capacity_type
from .bridge import bridge_rules
from .directory import (
    directory_admin_groups,
    directory_ids_not_root,
    directory_placement,
    directory_settings,
    directory_user_names,
    paths,
)
from .names import (
    derived_names_fit,
    every_nodeset_in_a_partition,
    features_are_not_nodeset_names,
    no_labels_of_others,
    no_names_of_others,
    no_reserved_slurm_names,
    one_default_partition,
    partition_references,
    unique_names,
)
from .policy import fair_share_needs_accounting, policy_references, policy_users_are_people
from .references import gitops_path, image_references
from .slurm_text import extra_conf_overrides, flat_file_values, slurm_values, sshd_extra_config, sssd_conf_file

SpecRule = Rule[dict[str, Any]]


RULES: tuple[SpecRule, ...] = (
    unique_names,
    partition_references,
    one_default_partition,
    features_are_not_nodeset_names,
    every_nodeset_in_a_partition,
    no_reserved_slurm_names,
    no_names_of_others,
    derived_names_fit,
    image_references,
    gitops_path,
    slurm_values,
    flat_file_values,
    sshd_extra_config,
    sssd_conf_file,
    extra_conf_overrides,
    fair_share_needs_accounting,
    reservations_match_capacity_type,
    ami_version_matches_family,
    fsx_settings,
    fsx_zones,
    region_coherence,
    login_exposure,
    database_mode,
    secrets_mode,
    autoscaling,
    identity_roles,
    policy_references,
    topology_rules,
    directory_settings,
    directory_placement,
    directory_user_names,
    directory_admin_groups,
    paths,
    pinned_images,
    no_labels_of_others,
    policy_users_are_people,
    directory_ids_not_root,
    bridge_rules,
)


EVERYTHING = "*"  # in `failed`: the schema failed at the top level, so no rule can trust any section


def run(spec: dict[str, Any], rules: tuple[SpecRule, ...] = RULES, failed: frozenset[str] = frozenset()) -> list[Finding]:
    """All findings of the rules whose sections are schema-valid, in rule order.

    `rules` is RULES plus the catalog rules (the loader passes both), each declared with `@rule(sections)`
    (slurmgen/rule.py); one that declares none reads everything, so it runs only on a schema-valid spec.
    `failed` names the top-level sections with schema errors."""
    findings: list[Finding] = []
    for each in rules:
        if failed and (EVERYTHING in failed or not each.reads or failed.intersection(each.reads)):
            continue
        findings.extend(each(spec))
    return findings
