"""Problems found in a spec, reported one line each as `FILE:LINE: field.path: what is wrong` (`errors.Problem`)."""

from __future__ import annotations

import re
from typing import Any, Iterable

from ..errors import Problem, UserError

__all__ = ["Problem", "SpecError", "dotted", "name_keyed"]


class SpecError(UserError):
    """Raised when one or more spec files are invalid; carries every problem, not just the first."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        super().__init__(str(p) for p in self.problems)


def dotted(parts: Iterable[object]) -> str:
    """Render a JSON path like ['nodesets', 0, 'name'] as 'nodesets[0].name'."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


# A name shown inside brackets must read as a name, never as an index or as path syntax.
_SHOWN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.@+-]*$")
_INDEX = re.compile(r"\[(\d+)\]")


def _item_label(items: list[Any], index: int) -> str:
    """The item's `name` when it identifies it (a plain, unique string), else its index."""
    item = items[index]
    name = item.get("name") if isinstance(item, dict) else None
    if not isinstance(name, str) or not _SHOWN_NAME.match(name):
        return str(index)
    same = sum(1 for other in items if isinstance(other, dict) and other.get("name") == name)
    return name if same == 1 else str(index)


def _step(node: Any, text: str) -> tuple[Any, int]:
    """Follow the longest run of dotted keys at the start of `text` that `node` has (keys may hold dots).

    Returns the value reached and how many characters were consumed (0 when no key matched)."""
    if not isinstance(node, dict):
        return None, 0
    key_run = re.match(r"[^\[]*", text).group(0)  # type: ignore[union-attr]
    parts = key_run.split(".")
    for count in range(len(parts), 0, -1):
        key = ".".join(parts[:count])
        if key in node:
            return node[key], len(key)
    return None, 0


def name_keyed(path: str, data: Any) -> str:
    """Rewrite list indexes in a field path as the item names the user wrote, using the spec data.

    'nodesets[3].replicas' becomes 'nodesets[slinky].replicas' when nodesets[3] is named 'slinky'.
    An item without a name, whose name is not a plain string, or whose name is shared by another
    item of the same list keeps its index; so does anything the data does not have (a path into a
    missing key). Rules and the schema keep yielding index paths: this is the one place that turns
    them into what the user sees."""
    out, node, pos = [], data, 0
    while pos < len(path):
        if path[pos] == ".":
            out.append(".")
            pos += 1
            continue
        index = _INDEX.match(path, pos)
        if index:
            i = int(index.group(1))
            if isinstance(node, list) and i < len(node):
                out.append(f"[{_item_label(node, i)}]")
                node = node[i]
            else:
                out.append(index.group(0))
                node = None
            pos = index.end()
            continue
        node, used = _step(node, path[pos:])
        if not used:  # not in the data: show the rest exactly as the rule wrote it
            out.append(path[pos:])
            break
        out.append(path[pos:pos + used])
        pos += used
    return "".join(out)
