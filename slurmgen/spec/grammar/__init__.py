"""Each consumer's own grammar, in one place: how sshd, Slurm, sacctmgr and sssd split and unquote a line.

A check that looks at the literal text misses what the consumer reads: sshd removes the quotes of
`"Match" all` before it looks the keyword up; Slurm joins a line ending in `\\` to the next one; sssd
keeps a no-break space as part of a value. So every check of a consumer's text reads it first with
that consumer's tokenizer (one module each, written from the consumer's source at the version the
images run and proven against the real program by tests/deep/test_consumer_grammars.py), and refuses
a line the tokenizer cannot read unambiguously, with the reason.
"""

from __future__ import annotations

import unicodedata


class Unreadable(ValueError):
    """A line a consumer would read differently from how it looks (or not at all); the message says why."""


def odd_space(text: str) -> str | None:
    """A space character other than U+0020 and tab (a no-break space, an em space): it looks like a
    separator, but no consumer here splits on it (they split on C isspace()), so `Key=\\u00a0value`
    holds a value that starts with it. Returns its description, or None."""
    for index, char in enumerate(text):
        if char not in " \t" and (unicodedata.category(char) == "Zs" or char in "\x85\u180e\u200b\ufeff"):
            name = unicodedata.name(char, "a space").lower()
            return f"U+{ord(char):04X} ({name}) at position {index}"
    return None
