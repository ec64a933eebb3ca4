"""The Argo CD layer: root Application, AppProject, one child Application per unit or Helm chart.

Importing it readies jsii's direct kernel channel first (_jsii_channel.py): it imports cdk8s,
which starts the kernel.
"""

from .._jsii_channel import install

install()
