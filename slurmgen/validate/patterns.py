"""CRD `pattern`s are Go regular expressions (RE2); spelled here for the engines that check them.

The API server matches a CRD pattern with Go's `regexp`. jsonschema runs it with Python's `re`
and the pre-check (jsonschema-rs) with Rust's regex engine; the three read some constructs
differently, and a difference is either a false refusal or a pre-check more lenient than
jsonschema (the findings would then depend on which engine answered). So both get Go's meaning
spelled out in a syntax they share:

- `$` and `\\z` end the text in Go (no multi-line flag): `\\Z` for Python, `\\z` for Rust (in Python
  `$` also matches before a final newline);
- `\\d`, `\\s`, `\\w` (and `\\D`, `\\S`, `\\W`) are ASCII-only in Go, Unicode in Python and partly in
  Rust: written as explicit ASCII classes (`\\s` is `[\\t\\n\\f\\r ]`, without `\\v`);
- `.` is any character but `\\n` in Go; Rust's engine also stops at `\\r`, `\\u2028`, `\\u2029`:
  written `[^\\n]` (unless a `(?s)` flag makes `.` match `\\n` too; none of the pinned CRDs has one).

A negated class escape inside brackets (`[\\S]`) cannot be spelled out and is kept as it is.
"""

from __future__ import annotations

import re

__all__ = ["PYTHON_END", "RUST_END", "go_pattern"]

PYTHON_END = "\\Z"
RUST_END = "\\z"
#: Go's Perl character classes (ASCII only), as the inside of a bracket expression.
_CLASSES = {"d": "0-9", "s": "\\t\\n\\f\\r ", "w": "0-9A-Za-z_"}
_DOT_ALL = re.compile(r"\(\?[a-zA-Z]*s")


def go_pattern(pattern: str, end: str = PYTHON_END) -> str:
    """`pattern` (Go syntax) with Go's meaning, for Python's `re` (`end` PYTHON_END) or Rust's regex
    (`end` RUST_END): end-of-text anchors, ASCII Perl classes and the dot spelled out."""
    dot = "." if _DOT_ALL.search(pattern) else "[^\\n]"
    out: list[str] = []
    class_start = -1  # index of the `[` of the character class we are in, or -1
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            out.append(_escape(pattern[index + 1], end, inside=class_start >= 0))
            index += 2
            continue
        if class_start >= 0:
            # A `]` right after `[` or `[^` is a literal, not the end of the class.
            first = class_start + (2 if pattern[class_start + 1 : class_start + 2] == "^" else 1)
            if char == "]" and index > first:
                class_start = -1
        elif char == "[":
            class_start = index
        elif char == "$":
            char = end
        elif char == ".":
            char = dot
        out.append(char)
        index += 1
    return "".join(out)


def _escape(escaped: str, end: str, *, inside: bool) -> str:
    """One escape sequence `\\<escaped>`, inside a bracket expression or not."""
    if escaped == "z" and not inside:
        return end
    chars = _CLASSES.get(escaped.lower())
    if chars is None:
        return "\\" + escaped
    if inside:
        return chars if escaped.islower() else "\\" + escaped  # `[\S]`: no way to spell it out inside
    return f"[{chars}]" if escaped.islower() else f"[^{chars}]"
