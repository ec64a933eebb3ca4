"""Golden files: the committed dist/ must be exactly what the examples render to."""

from __future__ import annotations

from slurmgen.output import dump, read_tree
from tests.conftest import EXAMPLES, REPO


def test_every_example_has_a_committed_tree(rendered):
    # GIVEN every clusters/*.yaml
    # THEN each has a dist/<name>/ folder
    assert {p.stem for p in EXAMPLES} <= {c for c in rendered}
    for name in rendered:
        assert (REPO / "dist" / name).is_dir(), f"dist/{name} missing: run `make synth`"


def test_dist_matches_a_fresh_render_byte_for_byte(rendered):
    # GIVEN a fresh render of every example
    for name, cluster in rendered.items():
        # WHEN compared with the committed tree
        committed = read_tree(REPO / "dist" / name)
        fresh = {rel: dump(obj) for rel, obj in cluster.files.items()}
        # THEN nothing is missing, extra or different
        assert sorted(committed) == sorted(fresh), f"dist/{name} file list is stale: run `make synth`"
        stale = [rel for rel in fresh if committed[rel] != fresh[rel]]
        assert not stale, f"dist/{name} is stale in {stale[:5]}: run `make synth`"
