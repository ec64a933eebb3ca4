"""The one Argo CD setting the sync waves need, for each kind of Argo CD install, and a check that it is live.

The root Application's waves wait for each child Application only while Argo CD has a health
check for `argoproj.io/Application` (removed from Argo CD in 1.8; docs/operator-manual/health.md
@ v3.5.1). Where that check lives depends on who owns `argocd-cm`:
- plain (kubectl-installed): `argocd-cm` is ours to patch: dist/<cluster>/argocd/ holds the merge patch.
- helm (argo/argo-cd chart): the chart renders `argocd-cm` from `configs.cm`, so a `helm upgrade`
  without the key drops a hand patch; the key belongs in the values.
- operator (argocd-operator, OpenShift GitOps): the operator rewrites `argocd-cm` from the `ArgoCD`
  CR, reverting a hand patch; the check belongs in `spec.resourceHealthChecks` (group, kind, check),
  which it writes to the same `resource.customizations.health.<group>_<kind>` key.
`verify` reads `kubectl get cm argocd-cm -o yaml` and says whether the check is in place, whichever
install wrote it.
"""

from __future__ import annotations

from typing import Any

import yaml

from ..write.output import dump
from ..kube.vocabulary import APPLICATION_HEALTH_LUA, HEALTH_KEY
from ..spec._yaml import load_document

FORMS = ("plain", "helm", "operator")
def settings(form: str, namespace: str = "argocd") -> str:
    """The health check as the `form` of install takes it, as YAML to apply or merge."""
    if form == "plain":
        patch = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "argocd-cm", "namespace": namespace},
                 "data": {HEALTH_KEY: APPLICATION_HEALTH_LUA}}
        return f"# kubectl -n {namespace} patch configmap argocd-cm --type merge --patch-file <this file>\n" + dump(patch)
    if form == "helm":
        values = {"configs": {"cm": {HEALTH_KEY: APPLICATION_HEALTH_LUA}}}
        return "# merge into the argo/argo-cd chart's values (configs.cm), then helm upgrade\n" + dump(values)
    if form == "operator":
        check = {"group": "argoproj.io", "kind": "Application", "check": APPLICATION_HEALTH_LUA}
        return ("# add this entry to your ArgoCD CR's spec.resourceHealthChecks (a merge patch would replace the\n"
                "# list; keep your other entries): kubectl -n <ns> edit argocd <name>\n"
                + dump({"spec": {"resourceHealthChecks": [check]}}))
    raise ValueError(f"unknown Argo CD install {form!r} (one of {', '.join(FORMS)})")


def _lines(lua: str) -> list[str]:
    """Lua compared line by line without indentation or blank lines (YAML re-indents block scalars)."""
    return [line.strip() for line in lua.splitlines() if line.strip()]


def verify(text: str) -> list[str]:
    """Problems with a live `argocd-cm` (YAML of `kubectl get cm argocd-cm -o yaml`); [] when the check is in place."""
    try:
        obj: Any = load_document(text)  # bounded: a file or stdin of anyone's
    except yaml.YAMLError as err:
        return [f"not YAML: {str(err).splitlines()[0]}; pass the output of kubectl get cm argocd-cm -o yaml"]
    if not isinstance(obj, dict) or obj.get("kind") != "ConfigMap" or (obj.get("metadata") or {}).get("name") != "argocd-cm":
        return ["not the argocd-cm ConfigMap; pass the output of kubectl get cm argocd-cm -o yaml"]
    data = obj.get("data") or {}
    lua = data.get(HEALTH_KEY)
    if lua is None:
        return [f"argocd-cm has no {HEALTH_KEY}: sync waves do not wait for child Applications; "
                "apply it for your install (main.py --argocd-settings plain|helm|operator)"]
    if _lines(str(lua)) != _lines(APPLICATION_HEALTH_LUA):
        return [f"argocd-cm {HEALTH_KEY} differs from slurmgen's check; replace it "
                "(main.py --argocd-settings plain|helm|operator)"]
    return []
