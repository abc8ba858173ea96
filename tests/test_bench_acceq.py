"""benchmarks/bench_acceq.py on tiny sizes: the search, the quadratic reference and the
every-pair count agree, and the table says so."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_acceq.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("storyeval_bench_acceq", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


def test_brute_counts_match_a_direct_count(bench):
    pytest.importorskip("numba")
    h, m = bench.make_data(300, "flat")
    eps = np.array([0.0, 0.1, 0.5, 2.0])
    got = bench._brute_counts(h, m, eps)
    i, j = np.triu_indices(300, 1)
    dh, dm = h[i] - h[j], m[i] - m[j]
    for e, g in zip(eps, got):
        tie = np.abs(dm) <= e
        assert g == int((((dh == 0) & tie) | (~tie & (dh * dm > 0))).sum())


def test_search_quadratic_and_brute_agree_small(bench):
    pytest.importorskip("numba")
    search = bench.run_child("search", 2100, "flat")  # 2.2 x 10^6 pairs: the search path
    quad = bench.run_child("quadratic", 2100, "flat")
    assert (quad["value"], quad["epsilon"]) == (search["value"], search["epsilon"])
    check = bench.brute_check(search)
    assert check["equal"] and check["no_better"]
    text = bench.table([{"n": 2100, "case": "flat", "search": search, "reference": quad},
                        {"n": 2100, "case": "flat", "search": search, "reference": check}])
    assert "value and epsilon equal" in text and "count equal, none better" in text
