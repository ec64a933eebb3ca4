"""Stage 5, objects -> dist/<cluster>/: one object per file, each cluster folder replaced in one step."""
