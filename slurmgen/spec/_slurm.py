"""How Slurm's own parser reads what we write, in one place: keys and comments.

Keys: Slurm looks keys up case-insensitively ("NOTE - key is case insensitive", SchedMD/slurm
slurm-26-05-3-1 src/common/parse_config.c _conf_hashtbl_index / s_p_hashtbl lookups), so
`features=` in extra parameters is Features= and every check of a key goes through `slurm_key`.
Comments: `#` starts one anywhere on a slurm.conf line, in a partition line and in the slurmd
--conf string the operator builds from sorted keys (parse_config.c _strip_comments; only `\\#` is
literal), so a value holding `#` silently drops every key after it.
"""

from __future__ import annotations

from typing import Iterable

COMMENT = "#"


def slurm_key(key: str) -> str:
    """The spelling Slurm compares keys by: `NodeName`, `nodename` and `NODENAME` are one key."""
    return key.casefold()


def slurm_keys(keys: Iterable[str]) -> set[str]:
    """`slurm_key` of each key."""
    return {slurm_key(k) for k in keys}
