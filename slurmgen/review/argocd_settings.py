"""The Argo CD settings the sync waves need, for each kind of Argo CD install, and a check that they are live.

The root Application's waves wait for each child Application only while Argo CD has a health
check for `argoproj.io/Application` (removed from Argo CD in 1.8; docs/operator-manual/health.md
@ v3.5.1), and the slurm unit's waves wait for the Slinky objects only with checks for the
`slinky.slurm.net` kinds (kube/health.py). Where those checks live depends on who owns `argocd-cm`:
- plain (kubectl-installed): `argocd-cm` is ours to patch: dist/<cluster>/argocd/ holds the merge patch.
- helm (argo/argo-cd chart): the chart renders `argocd-cm` from `configs.cm`, so a `helm upgrade`
  without the keys drops a hand patch; the keys belong in the values.
- operator (argocd-operator, OpenShift GitOps): the operator rewrites `argocd-cm` from the `ArgoCD`
  CR, reverting a hand patch; the checks belong in `spec.resourceHealthChecks` (group, kind, check),
  which it writes to the same `resource.customizations.health.<group>_<kind>` keys
  (argocd-operator controllers/argocd/configmap.go, getResourceHealthChecks).
Every form carries the same Lua text. `verify` reads `kubectl get cm argocd-cm -o yaml` and says
whether each check is in place, whichever install wrote it.
"""

from __future__ import annotations

from typing import Any

import yaml

from ..write.output import dump
from ..kube.health import CHECKS, argocd_cm_data
from ..kube.documents import load_document

FORMS = ("plain", "helm", "operator")
def settings(form: str, namespace: str = "argocd") -> str:
    """The health checks as the `form` of install takes them, as YAML to apply or merge."""
    if form == "plain":
        patch = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "argocd-cm", "namespace": namespace},
                 "data": argocd_cm_data()}
        return f"# kubectl -n {namespace} patch configmap argocd-cm --type merge --patch-file <this file>\n" + dump(patch)
    if form == "helm":
        values = {"configs": {"cm": argocd_cm_data()}}
        return "# merge into the argo/argo-cd chart's values (configs.cm), then helm upgrade\n" + dump(values)
    if form == "operator":
        checks = [{"group": c.group, "kind": c.kind, "check": c.lua} for c in CHECKS]
        return ("# add these entries to your ArgoCD CR's spec.resourceHealthChecks (a merge patch would replace the\n"
                "# list; keep your other entries): kubectl -n <ns> edit argocd <name>\n"
                + dump({"spec": {"resourceHealthChecks": checks}}))
    raise ValueError(f"unknown Argo CD install {form!r} (one of {', '.join(FORMS)})")


def _lines(lua: str) -> list[str]:
    """Lua compared line by line without indentation, blank lines or comments (YAML re-indents block
    scalars; a check applied before its comments were added still counts)."""
    return [line.strip() for line in lua.splitlines() if line.strip() and not line.strip().startswith("--")]


def verify(text: str) -> list[str]:
    """Problems with a live `argocd-cm` (YAML of `kubectl get cm argocd-cm -o yaml`); [] when every check is in place."""
    try:
        obj: Any = load_document(text)  # bounded: a file or stdin of anyone's
    except yaml.YAMLError as err:
        return [f"not YAML: {str(err).splitlines()[0]}; pass the output of kubectl get cm argocd-cm -o yaml"]
    if not isinstance(obj, dict) or obj.get("kind") != "ConfigMap" or (obj.get("metadata") or {}).get("name") != "argocd-cm":
        return ["not the argocd-cm ConfigMap; pass the output of kubectl get cm argocd-cm -o yaml"]
    data = obj.get("data") or {}
    problems = []
    for check in CHECKS:
        lua = data.get(check.key)
        if lua is None:
            problems.append(f"argocd-cm has no {check.key}: {check.waits}; "
                            "apply it for your install (main.py --argocd-settings plain|helm|operator)")
        elif _lines(str(lua)) != _lines(check.lua):
            problems.append(f"argocd-cm {check.key} differs from slurmgen's check; replace it "
                            "(main.py --argocd-settings plain|helm|operator)")
    return problems
