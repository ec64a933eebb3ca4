"""A strict YAML reader: PyYAML's safe loader, but a repeated key is an error, not a silent overwrite."""

from __future__ import annotations

from typing import Any

import yaml


class _StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """The safe loader (libyaml's parser when available) refusing duplicate mapping keys."""


def _construct_mapping(loader: Any, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen[key] = loader.construct_object(value_node, deep=deep)
    return seen


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


class YamlSyntaxError(ValueError):
    """A YAML error with a 1-based line and column, for one-line reporting."""

    def __init__(self, message: str, line: int | None, column: int | None) -> None:
        self.line, self.column = line, column
        where = f"line {line}, column {column}: " if line is not None else ""
        super().__init__(f"{where}{message}")


def load_yaml(text: str) -> Any:
    """Parse one YAML document; raise YamlSyntaxError with the position of the first problem."""
    try:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - SafeLoader subclass
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        problem = err.problem or err.context or "invalid YAML"
        if mark is None:
            raise YamlSyntaxError(f"invalid YAML: {problem}", None, None) from None
        raise YamlSyntaxError(f"invalid YAML: {problem}", mark.line + 1, mark.column + 1) from None
    except yaml.YAMLError as err:
        raise YamlSyntaxError(f"invalid YAML: {err}", None, None) from None
