"""Stage 6, reading a render: the PR summary, --explain, --preview, the Argo CD settings check."""
