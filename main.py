#!/usr/bin/env python3
"""Entry point of the generator (`make synth`, `cdk8s synth`): see slurmgen/cli.py."""

import sys

from slurmgen.cli import main

if __name__ == "__main__":
    sys.exit(main())
