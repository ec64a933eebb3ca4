"""Stage 3, plan -> objects: one cdk8s App per cluster from charts/ and apps/, synthesized in memory."""
