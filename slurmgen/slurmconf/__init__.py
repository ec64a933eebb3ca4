"""The effective Slurm configuration: what slurm-operator v1.2.1 writes from the rendered CRs.

operator.py rebuilds the files (slurm.conf, cgroup.conf, gres.conf, slurmdbd.conf), parse.py reads
slurm.conf back into entities, checks.py runs the synth-time checks on it, diff.py describes
the change between two renders for the PR summary, explain.py prints a file for `--explain`.
"""

from .operator import Effective, Unresolved, effective

__all__ = ["Effective", "Unresolved", "effective"]
