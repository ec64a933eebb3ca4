"""slurmgen: turn a short cluster spec into a validated Argo CD tree for Slurm on EKS.

Data flows one way: spec -> model -> constructs -> Argo CD apps -> validation -> dist/.
"""

from . import _runtime

_runtime.configure()
