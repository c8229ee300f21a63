"""benchmarks/flash_stamps_lead.py without a GPU (docs/validation/2026-12-05-same-launch.md,
"Leaders")."""

from __future__ import annotations

import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import flash_stamps_lead as fl  # noqa: E402

PAGE = os.path.join(ROOT, "docs", "validation", "2026-12-05-same-launch.md")


def test_the_first_reader_of_a_tile_leads_and_a_close_follower_does_not():
    """Two blocks of one head walk tiles 1 then 0; the second reads each 1 MB of traffic later
    (six reads of 1 MiB over 6 ns: 1 MiB a ns). A third, of another head, leads on its own."""
    ids, steps = [(0, 0), (0, 1), (1, 0)], np.array([2, 2, 2])
    times = [[0.0, 10.0, 12.0], [1.0, 11.0, 13.0], [1.0, 11.0, 13.0]]
    got = fl.lead_share(ids, steps, times, 2 ** 20, 6.0, 2.0)
    assert got.tolist() == [1.0, 0.0, 1.0]
    assert fl.lead_share(ids, steps, times, 2 ** 20, 6.0, 0.5).tolist() == [1.0, 1.0, 1.0]


def test_the_pages_table_is_the_committed_stamps():
    table = fl.markdown(fl.rows(30.0))
    assert table in open(PAGE).read()
    assert table.count("\n") == 8       # header, rule, the seven causal configs with long blocks
