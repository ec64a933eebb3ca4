"""The spec layer: `clusters/<name>.yaml` in, a validated immutable ClusterSpec out."""

from ._images import floating_image, image_parts
from ._yaml import YamlSyntaxError, field_lines, load_yaml
from .errors import Problem, SpecError
from .loader import load_spec, load_specs, parse_text, rules_for
from .model import ClusterSpec, NodeSetSpec, Partition

__all__ = ["ClusterSpec", "NodeSetSpec", "Partition", "Problem", "SpecError", "YamlSyntaxError",
           "field_lines", "floating_image", "image_parts", "load_spec", "load_specs", "load_yaml", "parse_text",
           "rules_for"]
