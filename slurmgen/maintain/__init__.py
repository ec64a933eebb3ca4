"""Maintenance commands (`python -m slurmgen.maintain.<command>`): never run by a render, never imported by one.

- `crd_schemas`: regenerate the vendored CRD schemas from their pinned upstream files (the network).
"""
