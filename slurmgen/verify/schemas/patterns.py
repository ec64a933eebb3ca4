"""CRD `pattern`s are Go regular expressions (RE2); spelled here for the engine that checks them.

The API server matches a CRD pattern with Go's `regexp`; the validator (jsonschema-rs, core.Schema)
with Rust's `regex` crate, linear-time like RE2 (`ENGINE`). The two read a few constructs
differently, and each difference is a false refusal or a pattern more lenient than the cluster's.
So a pattern gets Go's meaning spelled out in Rust's syntax:

- `$` and `\\z` end the text in Go (no multi-line flag): written `\\z` (Rust's `$` is the same
  today, `\\z` says so whatever flags a pattern sets);
- `\\d`, `\\s`, `\\w` (and `\\D`, `\\S`, `\\W`) are ASCII-only in Go, Unicode in Rust: written as
  explicit ASCII classes (`\\s` is `[\\t\\n\\f\\r ]`, without `\\v`);
- `.` is any character but `\\n` in Go; Rust's engine (in jsonschema-rs) also stops at `\\r`,
  `\\u2028`, `\\u2029`: written `[^\\n]` (unless a `(?s)` flag makes `.` match `\\n` too; none of
  the pinned CRDs has one).

A negated class escape inside brackets (`[\\S]`) cannot be spelled out and is kept as it is.
Go's reading: regexp/syntax (go1.24 src/regexp/syntax/perl_groups.go, doc.go).
"""

from __future__ import annotations

import re

import jsonschema_rs

__all__ = ["ENGINE", "compiles", "go_pattern"]

#: Rust's `regex` crate, not the default fancy-regex: no backtracking, like Go's RE2.
ENGINE = jsonschema_rs.RegexOptions()
_END = "\\z"
#: Go's Perl character classes (ASCII only), as the inside of a bracket expression.
_CLASSES = {"d": "0-9", "s": "\\t\\n\\f\\r ", "w": "0-9A-Za-z_"}
_DOT_ALL = re.compile(r"\(\?[a-zA-Z]*s")


def go_pattern(pattern: str) -> str:
    """`pattern` (Go syntax) with Go's meaning for Rust's regex: end-of-text anchors, ASCII Perl
    classes and the dot spelled out."""
    dot = "." if _DOT_ALL.search(pattern) else "[^\\n]"
    out: list[str] = []
    class_start = -1  # index of the `[` of the character class we are in, or -1
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            out.append(_escape(pattern[index + 1], inside=class_start >= 0))
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
            char = _END
        elif char == ".":
            char = dot
        out.append(char)
        index += 1
    return "".join(out)


def compiles(pattern: str) -> bool:
    """Whether the validator's engine takes `pattern` (a translated one; RE2 and Rust's regex
    share almost all syntax, so this is False only for a pattern the API server refuses too)."""
    try:
        jsonschema_rs.Draft202012Validator({"pattern": pattern}, pattern_options=ENGINE)
    except (jsonschema_rs.ValidationError, ValueError):
        return False
    return True


def _escape(escaped: str, *, inside: bool) -> str:
    """One escape sequence `\\<escaped>`, inside a bracket expression or not."""
    if escaped == "z" and not inside:
        return _END
    chars = _CLASSES.get(escaped.lower())
    if chars is None:
        return "\\" + escaped
    if inside:
        return chars if escaped.islower() else "\\" + escaped  # `[\S]`: no way to spell it out inside
    return f"[{chars}]" if escaped.islower() else f"[^{chars}]"
