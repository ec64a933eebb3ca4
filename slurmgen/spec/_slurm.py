"""How Slurm compares the keys we write, in one place.

Keys: Slurm looks keys up case-insensitively ("NOTE - key is case insensitive", SchedMD/slurm
slurm-26-05-3-1 src/common/parse_config.c _conf_hashtbl_index / s_p_hashtbl lookups), so
`features=` in extra parameters is Features= and every check of a key goes through `slurm_key`.
How Slurm splits, unquotes and continues a line (comments, `\\`, quotes) is grammar/slurm_conf.py.
"""

from __future__ import annotations

from typing import Iterable


def slurm_key(key: str) -> str:
    """The spelling Slurm compares keys by: `NodeName`, `nodename` and `NODENAME` are one key."""
    return key.casefold()


def slurm_keys(keys: Iterable[str]) -> set[str]:
    """`slurm_key` of each key."""
    return {slurm_key(k) for k in keys}
