"""benchmarks/bench_pairwise_inversion.py: a tiny run writes its table, and the intervals that
invert their test never disagree with it."""

from __future__ import annotations

import pytest
from _bench import load_bench


@pytest.fixture(scope="module")
def bench():
    yield from load_bench("bench_pairwise_inversion")


def test_tiny_run_writes_the_table(bench, tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "CELLS", ((8, 3, 0.8, 0.3),))
    out = tmp_path / "inversion.md"
    assert bench.main(["--reps", "6", "--markdown", str(out)]) == 0
    rows = [line for line in out.read_text().splitlines() if line.startswith("| 8 x 3")]
    assert len(rows) == 3
    for line in rows:
        if "`permutation`" in line or "`cluster-t`" in line:
            assert line.endswith("| 0 of 6 |")
