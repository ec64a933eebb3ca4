"""Kubernetes and Argo CD words every stage shares: object names, quantities, annotation keys, sync waves."""
