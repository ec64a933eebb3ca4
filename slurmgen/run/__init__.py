"""The run that strings the stages together: render cache, worker processes, timings."""
