"""The summary's picture of a cluster's compute: partitions → NodeSets → NodePools → instance types.

A reviewer reads a change to four tables faster as a drawing: GitHub renders a ```` ```mermaid ````
block of a pull-request comment as a diagram. Each element is marked as added, changed or removed
(`classDef`), a new link is thick (`==>`), a link that goes is dotted (`-.->`), and each NodeSet
carries its node and GPU counts now (replicas) and at the ceiling (its NodePool's `limits.nodes`).

Only long-standing flowchart syntax is used (packages/mermaid/src/diagrams/flowchart/parser/flow.jison
@ mermaid@11.14.0): `flowchart LR`, quoted labels in the `(["…"])`, `["…"]`, `[["…"]]` and `("…")`
shapes, `-->`, `==>` and `-.->` links with spaces around them, `classDef`/`class`, `<br/>` line
breaks. Ids are made here from the kind's letter and the name (letters, digits and `_`: never a
bare `end`, never starting with the `o`/`x` of an edge head). Every label character that means
something to Mermaid or HTML is an entity code: Diagram.ts runs encodeEntities and decodeEntities
(packages/mermaid/src/utils.ts @ mermaid@11.14.0), which read `#<digits>;` as `&#<digits>;`; and a
`classDef` line holds no `;`, at which encodeEntities would cut it.

The picture is the first thing dropped when a comment is short of room (summary.fit_comment): the
full picture, then only the changed parts and their neighbours, then none, with a note.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Protocol

from ..catalog.catalog import InstanceType
from ..kube.vocabulary import NODEPOOL_LABEL


class NodeSetCapacity(Protocol):
    """What the picture reads of one NodeSet's capacity; summary.NodeSetCapacity has it (summary
    imports this module, so the picture names the fields it needs rather than importing it back)."""

    @property
    def partitions(self) -> tuple[str, ...]: ...
    @property
    def instance_types(self) -> tuple[str, ...]: ...
    @property
    def replicas(self) -> int: ...
    @property
    def max_nodes(self) -> int: ...
    @property
    def accelerators(self) -> int: ...
    @property
    def capacity_type(self) -> str: ...


Obj = dict[str, Any]
Tree = Mapping[str, Obj]

#: Mermaid's defaults are maxTextSize 50,000 characters and maxEdges 500 (packages/mermaid/src/schemas/
#: config.schema.yaml @ mermaid@11.14.0; beyond them a diagram is an error box): a picture stays far
#: below both, and below a third of a 60,000-character comment.
PICTURE_MAX_CHARS = 20_000
PICTURE_MAX_LINKS = 400
#: picture levels, fullest first: what summary.fit_comment tries in turn
FULL, CHANGED_ONLY, NONE = 0, 1, 2

_KINDS = {"partition": ("p", '(["', '"])'), "nodeset": ("s", '["', '"]'), "pool": ("k", '[["', '"]]'),
          "type": ("t", '("', '")')}
#: no `;` in a style (see the module's docstring)
_CLASSES = {"added": "fill:#dafbe1,stroke:#1a7f37,color:#0f3d1c",
            "changed": "fill:#fff8c5,stroke:#9a6700,color:#4d2d00",
            "removed": "fill:#ffebe9,stroke:#cf222e,color:#82071e,stroke-dasharray:5 5"}
_ARROWS = {"kept": "-->", "added": "==>", "removed": "-.->"}
TOPIC = "partitions → NodeSets → NodePools → instance types"
HEADING = f"**Picture** of {TOPIC}"
LEGEND = ("Green: added; amber: changed; red, dashed: removed. A thick arrow is a new link, a dotted one a "
          "link that goes. Nodes and GPUs: now (replicas) and max (the NodePool's node limit).")
#: what Mermaid or the HTML label would read as syntax, as entity codes (`#` first: the codes use it)
_ESCAPES = {"#": "#35;", '"': "#34;", "&": "#38;", "<": "#60;", ">": "#62;", "`": "#96;", "|": "#124;",
            "[": "#91;", "]": "#93;", "{": "#123;", "}": "#125;", "(": "#40;", ")": "#41;"}
_ESCAPE = re.compile("|".join(re.escape(c) for c in _ESCAPES))


def label_text(text: str) -> str:
    """One line of a label, safe inside Mermaid's double quotes and as HTML: entity codes for syntax."""
    return _ESCAPE.sub(lambda m: _ESCAPES[m.group(0)], " ".join(text.split()))


def node_id(kind: str, name: str, taken: set[str]) -> str:
    """A Mermaid-safe id: the kind's letter and the name with every other character as `_`; unique."""
    base = _KINDS[kind][0] + "_" + re.sub(r"[^A-Za-z0-9]", "_", name)
    found, n = base, 2
    while found in taken:
        found, n = f"{base}_{n}", n + 1
    taken.add(found)
    return found


@dataclass(frozen=True)
class Element:
    """One box, compared between base and head: a NodeSet's counts, a NodePool's capacity type,
    an instance type's accelerators per node."""

    kind: str  # partition, nodeset, pool or type
    name: str
    nodes: int = 0  # now (replicas)
    max_nodes: int = 0  # at the ceiling
    gpus: int = 0
    max_gpus: int = 0
    model: str = ""  # H100, L40S, TRAINIUM2 ('' without accelerators)
    note: str = ""  # pool: on-demand, spot, reserved; type: "8 × H100 per node"


Key = tuple[str, str]  # (kind, name)


@dataclass
class Graph:
    """The compute of one tree: boxes by (kind, name) and the links between them."""

    elements: dict[Key, Element]
    links: set[tuple[Key, Key]]


def _pools(tree: Tree) -> dict[str, Obj]:
    """NodeSet name -> its NodePool (by the NodeSet's `karpenter.sh/nodepool` selector)."""
    pools = {o["metadata"]["name"]: o for o in tree.values() if o.get("kind") == "NodePool"}
    out = {}
    for obj in tree.values():
        if obj.get("kind") == "NodeSet":
            pod = obj["spec"]["template"]["spec"]
            pool = pools.get((pod.get("nodeSelector") or {}).get(NODEPOOL_LABEL, ""))
            if pool is not None:
                out[pod["hostname"].rstrip("-")] = pool
    return out


def _per_node(itype: str, catalog: Mapping[str, InstanceType]) -> tuple[int, str]:
    """(accelerators per node, model) of an instance type; (0, '') without accelerators or when unknown."""
    it = catalog.get(itype)
    if it is None or not it.has_accelerator:
        return 0, ""
    return it.accelerator_count, (it.accelerator_model.upper() or "GPU")


def graph(tree: Tree, caps: Mapping[str, NodeSetCapacity], catalog: Mapping[str, InstanceType]) -> Graph:
    """The boxes and links of one tree's compute (`caps`: summary.capacity of that tree)."""
    elements: dict[Key, Element] = {}
    links: set[tuple[Key, Key]] = set()
    pools = _pools(tree)
    for name, cap in caps.items():
        types = [t for t in cap.instance_types if t != "?"]
        per_node, model = _per_node(types[0], catalog) if types else (0, "")
        nodeset: Key = ("nodeset", name)
        elements[nodeset] = Element("nodeset", name, nodes=cap.replicas, max_nodes=cap.max_nodes,
                                    gpus=cap.replicas * per_node, max_gpus=cap.accelerators if per_node else 0,
                                    model=model)
        for part in cap.partitions:
            elements[("partition", part)] = Element("partition", part)
            links.add((("partition", part), nodeset))
        parent = nodeset  # a NodeSet without a NodePool links to its types itself
        pool = pools.get(name)
        if pool is not None:
            parent = ("pool", pool["metadata"]["name"])
            elements[parent] = Element("pool", parent[1], note=cap.capacity_type)
            links.add((nodeset, parent))
        for itype in types:
            per, kind = _per_node(itype, catalog)
            elements[("type", itype)] = Element("type", itype, note=f"{per} × {kind} per node" if per else "")
            links.add((parent, ("type", itype)))
    return Graph(elements, links)


def _arrow(old: object, new: object) -> str:
    """`new`, `old` when there is no new, or `old → new` when they differ."""
    if old is None or old == new:
        return str(new)
    return str(old) if new is None else f"{old} → {new}"


def _fact_lines(old: Element | None, new: Element | None) -> list[str]:
    """The label lines under a box's title: before → after where they differ."""
    def of(attr: str) -> tuple[Any, Any]:
        return (getattr(old, attr) if old else None), (getattr(new, attr) if new else None)

    either = new or old
    kind = either.kind if either is not None else ""
    lines = []
    if kind == "nodeset":
        lines.append(f"nodes: {_arrow(*of('nodes'))} now, {_arrow(*of('max_nodes'))} max")
        models = {e.model for e in (old, new) if e is not None and e.model}
        if len(models) == 1:
            lines.append(f"{models.pop()}: {_arrow(*of('gpus'))} now, {_arrow(*of('max_gpus'))} max")
        elif models:  # another accelerator model: name it on each side
            def side(e: Element | None, attr: str) -> str | None:
                return f"{getattr(e, attr)} {e.model}".strip() if e is not None else None

            lines.append(f"GPUs: {_arrow(side(old, 'gpus'), side(new, 'gpus'))} now, "
                         f"{_arrow(side(old, 'max_gpus'), side(new, 'max_gpus'))} max")
    elif any(e is not None and e.note for e in (old, new)):
        lines.append(_arrow(*of("note")))
    return lines


_TITLES = {"partition": "partition", "nodeset": "NodeSet", "pool": "NodePool", "type": ""}


def _box(ident: str, key: Key, old: Element | None, new: Element | None) -> str:
    kind, name = key
    title = f"{_TITLES[kind]} {name}".strip()
    text = "<br/>".join(label_text(line) for line in [title, *_fact_lines(old, new)])
    _, opening, closing = _KINDS[kind]
    return f"    {ident}{opening}{text}{closing}"


def _status(key: Key, old: Graph, new: Graph) -> str:
    """added, removed, changed (its facts, or for a partition its members) or kept."""
    if key not in old.elements:
        return "added"
    if key not in new.elements:
        return "removed"
    if old.elements[key] != new.elements[key]:
        return "changed"
    if key[0] == "partition" and {x for x in old.links if x[0] == key} != {x for x in new.links if x[0] == key}:
        return "changed"
    return "kept"


_ORDER = {"partition": 0, "nodeset": 1, "pool": 2, "type": 3}


def changed(old: Graph, new: Graph) -> bool:
    """Whether the compute the picture draws differs at all."""
    return old.elements != new.elements or old.links != new.links


def mermaid(old: Graph, new: Graph, level: int = FULL) -> list[str]:
    """The diagram's lines, inside a ```mermaid fence; at CHANGED_ONLY only what changed and its
    neighbours (every link of a changed box, and the boxes at their other end)."""
    keys = sorted(set(old.elements) | set(new.elements), key=lambda k: (_ORDER[k[0]], k[1]))
    status = {k: _status(k, old, new) for k in keys}
    links = sorted(old.links | new.links, key=lambda x: (_ORDER[x[0][0]], x[0][1], _ORDER[x[1][0]], x[1][1]))
    link_status = {x: "added" if x not in old.links else "removed" if x not in new.links else "kept" for x in links}
    if level == CHANGED_ONLY:
        marked = {k for k in keys if status[k] != "kept"}
        links = [x for x in links if link_status[x] != "kept" or x[0] in marked or x[1] in marked]
        shown = marked | {end for x in links for end in x}
        keys = [k for k in keys if k in shown]
    taken: set[str] = set()
    ids = {k: node_id(k[0], k[1], taken) for k in keys}
    used = [cls for cls in _CLASSES if any(status[k] == cls for k in keys)]
    lines = ["```mermaid", "flowchart LR", *(f"    classDef {cls} {_CLASSES[cls]}" for cls in used)]
    lines += [_box(ids[k], k, old.elements.get(k), new.elements.get(k)) for k in keys]
    lines += [f"    {ids[a]} {_ARROWS[link_status[(a, b)]]} {ids[b]}" for a, b in links]
    lines += [f"    class {','.join(ids[k] for k in keys if status[k] == cls)} {cls}" for cls in used]
    return [*lines, "```"]


@dataclass
class Picture:
    """One cluster's picture at each level; `lines(level)` is what the summary prints."""

    old: Graph
    new: Graph
    omitted_note: str = ""  # where the whole picture can be read when it is left out

    def lines(self, level: int = FULL) -> list[str]:
        """The heading, the diagram and the legend; at NONE, or when even the changed parts pass
        PICTURE_MAX_CHARS or PICTURE_MAX_LINKS, one line saying so instead."""
        if level < NONE:
            full = mermaid(self.old, self.new, FULL)
            tries = [full, mermaid(self.old, self.new, CHANGED_ONLY)] if level == FULL else \
                [mermaid(self.old, self.new, CHANGED_ONLY)]
            for diagram in tries:
                if _fits(diagram):
                    note = [] if diagram == full else ["", "_Only the changed parts and their links are drawn._"]
                    return [HEADING, "", *diagram, "", LEGEND, *note, ""]
        why = "too large to draw" if level < NONE else "left out to fit one comment"
        where = f"; {self.omitted_note}" if self.omitted_note else ""
        return [f"_Picture of {TOPIC}: {why}{where}._", ""]


def _fits(diagram: list[str]) -> bool:
    """Within PICTURE_MAX_CHARS and PICTURE_MAX_LINKS."""
    links = sum(1 for line in diagram if any(f" {arrow} " in line for arrow in _ARROWS.values()))
    return len("\n".join(diagram)) <= PICTURE_MAX_CHARS and links <= PICTURE_MAX_LINKS


def picture(old_tree: Tree, new_tree: Tree, before: Mapping[str, NodeSetCapacity],
            after: Mapping[str, NodeSetCapacity], catalog: Mapping[str, InstanceType],
            omitted_note: str = "") -> Picture | None:
    """The cluster's picture when its compute changes and the cluster stays; None otherwise."""
    if not new_tree:
        return None
    old, new = graph(old_tree, before, catalog), graph(new_tree, after, catalog)
    return Picture(old, new, omitted_note) if changed(old, new) else None
