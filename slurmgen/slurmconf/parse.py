"""slurm.conf read back into entities (global keys, partitions, NodeSets) for checks and diffs.

Lines are read with Slurm's own grammar (spec/grammar/slurm_conf.py, from src/common/parse_config.c):
`Key=Value` tokens, quoted values, keys case-insensitive, `#` to end of line a comment; for global
keys the last value wins.
Lines starting with PartitionName=, NodeSet= or NodeName= define one entity each.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..spec.grammar import slurm_conf

ENTITY_KEYS = ("partitionname", "nodeset", "nodename")


@dataclass
class Entity:
    """One PartitionName= / NodeSet= / NodeName= line: its name and parameters in order."""

    kind: str                                   # PartitionName, NodeSet or NodeName as written
    name: str
    params: list[tuple[str, str]] = field(default_factory=list)
    line: str = ""

    def get(self, key: str) -> str | None:
        found = [v for k, v in self.params if k.lower() == key.lower()]
        return found[-1] if found else None


@dataclass
class Conf:
    """A parsed slurm.conf: every global assignment in order, and the entities by kind and name."""

    settings: list[tuple[str, str]] = field(default_factory=list)  # (key as written, value), in file order
    partitions: dict[str, list[Entity]] = field(default_factory=dict)  # a name may be defined twice
    nodesets: dict[str, list[Entity]] = field(default_factory=dict)

    def values(self) -> dict[str, tuple[str, str]]:
        """lower-cased key -> (key as first written, effective value: the last one)."""
        out: dict[str, tuple[str, str]] = {}
        for key, value in self.settings:
            first = out.get(key.lower(), (key, ""))[0]
            out[key.lower()] = (first, value)
        return out

    def get(self, key: str) -> str | None:
        found = self.values().get(key.lower())
        return found[1] if found else None


def tokens(line: str) -> list[tuple[str, str]]:
    """`Key=Value` tokens of one line as Slurm reads them (spec/grammar/slurm_conf.py: comments cut,
    quoted values unquoted); text Slurm cannot read as `Key=Value` is kept word by word with an
    empty value, so a check can still name it.

    A value of ours that starts with `<` runs to its `>` (the `<secret NAME/KEY>` placeholder
    operator.build_slurmdbd_conf writes for the password): one value, not two broken tokens."""
    line = slurm_conf.strip_comment(line)
    out: list[tuple[str, str]] = []
    while line.strip():
        read, stopped = slurm_conf.scan(line)
        out += [(t.key, t.value) for t in read]
        word, _, line = line[stopped:].strip().partition(" ")
        if word:
            key, _, value = word.partition("=")
            out.append((key, value))
    merged: list[tuple[str, str]] = []
    for key, value in out:
        if merged and merged[-1][1].startswith("<") and not merged[-1][1].endswith(">"):
            merged[-1] = (merged[-1][0], f"{merged[-1][1]} {key}{'=' if value else ''}{value}")
        else:
            merged.append((key, value))
    return merged


def parse(text: str) -> Conf:
    conf = Conf()
    for raw in text.splitlines():
        toks = tokens(raw)
        if not toks:
            continue
        head, name = toks[0]
        if head.lower() in ENTITY_KEYS:
            entity = Entity(kind=head, name=name, params=toks[1:], line=raw.split("#", 1)[0].strip())
            if head.lower() == "partitionname":
                conf.partitions.setdefault(name, []).append(entity)
            elif head.lower() == "nodeset":
                conf.nodesets.setdefault(name, []).append(entity)
            continue
        conf.settings += toks
    return conf
