"""Stage 4, the rendered objects checked before anything is written: schemas, placement, Slurm files, names, data-loss guards."""
