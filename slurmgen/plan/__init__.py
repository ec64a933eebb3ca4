"""Stage 2, model -> plan: what the charts must agree on (nodesets, topology, IAM identity, generated Secrets)."""
