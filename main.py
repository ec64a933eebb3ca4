#!/usr/bin/env python3
"""Entry point of the generator (`make synth`, `cdk8s synth`, `python main.py`): see slurmgen/cli.py.

Any Python 3 will do: without the pinned packages it hands over to `.venv/bin/python` (slurmgen/_venv.py).
"""

import gc
import sys

from slurmgen._venv import handoff

if __name__ == "__main__":
    handoff()
    from slurmgen.cli import main

    status = main()
    # The process ends here: its objects need no cycle collection on the way out (a fleet's
    # rendered objects made the interpreter's final collections cost ~0.08 s of a ~2.3 s run).
    gc.freeze()
    sys.exit(status)
