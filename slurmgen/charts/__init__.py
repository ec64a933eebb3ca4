"""The cdk8s charts, one module per deploy unit.

Importing them readies jsii's direct kernel channel first (_jsii_channel.py): they import cdk8s,
which starts the kernel.
"""

from .._jsii_channel import install

install()
