"""Whether Slurm's topology/block can place a job of n nodes on a block assignment (all nodes idle).

A model, for tests, of what src/plugins/topology/block/eval_nodes_block.c does at slurm-26-05-3-1
(_get_block_level, eval_nodes_block): the job's level is the smallest configured block level of at
least ceil(n / base) base blocks (none: the whole topology is one block); candidate blocks are the
aligned groups of that many base blocks (b0+b1, b2+b3, never b1+b2); inside one, the job may use at
most ceil(n / L) blocks of the next lower configured level L, the fullest ones. A base block counts
every node it holds, whatever its size. tests/deep/test_topology_blocks.py checks it against slurmctld.
"""

from __future__ import annotations

from math import ceil, log2


def levels(sizes: list[int]) -> set[int]:
    """Configured block levels: log2(size / base) of each size; the base level is always there."""
    return {0} | {int(log2(s // sizes[0])) for s in sizes}


def fits(counts: list[int], sizes: list[int], n: int) -> bool:
    """True when some aligned block of the job's level holds n nodes (counts: nodes per slot, in order)."""
    base, have = sizes[0], levels(sizes)
    want = ceil(log2(ceil(n / base))) if n > base else 0
    level = min((lv for lv in have if lv >= want), default=None)
    lower = max((lv for lv in have if lv < want), default=0)
    per_lower = 2 ** lower
    most_lower = ceil(n / (base * per_lower))
    group = len(counts) if level is None else 2 ** level
    for start in range(0, len(counts), group):
        block = counts[start:start + group]
        parts = sorted((sum(block[i:i + per_lower]) for i in range(0, len(block), per_lower)), reverse=True)
        if sum(parts[:most_lower]) >= n:
            return True
    return False
