"""The PR summary's chart section: what a chart bump or a values change adds, removes or changes.

Cheap unless needed: Helm sources of base and head are compared first (no SDK import); only the
Applications whose chart, version, repository, release, namespace or values changed are rendered,
on both sides, and their objects compared by kind, namespace and name.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..summary import changed_paths
from . import helm_sources, locator_from_env
from .charts import ChartLocator, ChartRender, HelmSource, PreviewUnavailable, render

Obj = dict[str, Any]
Key = tuple[str, str, str]


def _key(obj: Obj, namespace: str) -> Key:
    meta = obj.get("metadata") or {}
    return (str(obj.get("kind")), str(meta.get("namespace") or namespace), str(meta.get("name")))


def _label(key: Key, cluster_scoped: bool) -> str:
    return f"{key[0]} {key[2]}" if cluster_scoped else f"{key[0]} {key[1]}/{key[2]}"


def _objects(r: ChartRender | None) -> dict[Key, Obj]:
    if r is None:
        return {}
    return {_key(o, "" if not (o.get("metadata") or {}).get("namespace") and o.get("kind") in _SCOPED_HINT
                 else r.source.namespace): o for o in r.objects}


# Kinds shown without a namespace (cluster-scoped ones the charts create).
_SCOPED_HINT = {"CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "ValidatingWebhookConfiguration",
                "MutatingWebhookConfiguration", "APIService", "CSIDriver", "StorageClass", "PriorityClass",
                "Namespace", "PersistentVolume", "DeviceClass", "ValidatingAdmissionPolicy",
                "ValidatingAdmissionPolicyBinding"}


def _render(cluster: str, source: HelmSource | None, locator: ChartLocator) -> tuple[ChartRender | None, str]:
    if source is None:
        return None, ""
    path, notes, why = locator.locate(source)
    if path is None:
        return None, f"no chart source for {source.chart} {source.version} ({why})"
    try:
        return render(source, path, notes), ""
    except PreviewUnavailable:
        raise
    except Exception as err:  # noqa: BLE001  (the SDK's template and values errors)
        return None, f"{source.chart} {source.version} does not render: {str(err).splitlines()[0]}"


def _headline(app: str, was: HelmSource | None, now: HelmSource | None) -> str:
    if was is None and now is not None:
        return f"- `{app}` (new): chart {now.chart} {now.version}"
    if now is None and was is not None:
        return f"- `{app}` (removed): chart {was.chart} {was.version}"
    assert was is not None and now is not None
    parts = []
    if (was.chart, was.version) != (now.chart, now.version):
        parts.append(f"chart {was.chart} {was.version} → {now.chart} {now.version}")
    if was.values != now.values:
        parts.append("values " + ", ".join(f"`{p}`" for p in changed_paths(was.values, now.values, depth=4)))
    for field in ("repo_url", "release_name", "namespace"):
        if getattr(was, field) != getattr(now, field):
            parts.append(f"{field} {getattr(was, field)} → {getattr(now, field)}")
    return f"- `{app}`: " + "; ".join(parts)


def chart_section(cluster: str, old: Mapping[str, Obj], new: Mapping[str, Obj],
                  locator: ChartLocator | None = None) -> list[str]:
    """Markdown lines for the Helm Applications whose source changed; [] when none did."""
    was = {s.application: s for s in helm_sources(dict(old))}
    now = {s.application: s for s in helm_sources(dict(new))}
    changed = sorted(app for app in set(was) | set(now) if was.get(app) != now.get(app))
    if not changed:
        return []
    own = locator is None
    locator = locator or locator_from_env()
    lines: list[str] = []
    try:
        for app in changed:
            lines.append(_headline(app, was.get(app), now.get(app)))
            try:
                (before, why_before), (after, why_after) = (_render(cluster, was.get(app), locator),
                                                            _render(cluster, now.get(app), locator))
            except PreviewUnavailable:
                lines.append("  - objects not previewed: helm-python-sdk is not installed (make preview-install)")
                continue
            why = why_before or why_after
            if why:
                lines.append(f"  - objects not previewed: {why}")
                continue
            a, b = _objects(before), _objects(after)
            for verb, keys in (("adds", sorted(set(b) - set(a))), ("removes", sorted(set(a) - set(b)))):
                if keys:
                    lines.append(f"  - {verb} {len(keys)}: " + "; ".join(_label(k, not k[1]) for k in keys))
            diffs = [f"{_label(k, not k[1])} ({', '.join(changed_paths(a[k], b[k]))})"
                     for k in sorted(set(a) & set(b)) if a[k] != b[k]]
            if diffs:
                lines.append(f"  - changes {len(diffs)}: " + "; ".join(diffs))
            if not (set(a) ^ set(b)) and not diffs:
                lines.append("  - the rendered objects are the same")
    finally:
        if own:
            locator.close()
    return lines
