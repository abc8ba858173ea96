"""benchmarks/bench_acceq.py on tiny sizes: the search, the quadratic reference and the
every-pair count agree, and the table says so."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _bench import load_bench

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_acceq.py"


@pytest.fixture(scope="module")
def bench():
    yield from load_bench("bench_acceq")


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


def test_scale_page_table_is_the_benchmarks_json(bench):
    # docs/generated/scale/acceq.md is what the benchmark renders from its JSON
    import json

    root = BENCH.parents[1]
    result = json.loads((root / "benchmarks" / "bench_acceq.json").read_text(encoding="utf-8"))
    page = root / "docs" / "generated" / "scale" / "acceq.md"
    assert page.read_text(encoding="utf-8") == bench.render(result)
    assert '--8<-- "generated/scale/acceq.md"' in (root / "docs" / "scale.md").read_text(
        encoding="utf-8")
    # the targets on the 2-core machine, and every reference agreed
    for row in result["rows"]:
        s, ref = row["search"], row.get("reference")
        limit = {10_000: (5, 1024), 100_000: (60, 2048)}.get(row["n"])
        if limit:
            assert s["seconds"] < limit[0] and s["peak_mb"] < limit[1]
        if ref and ref["method"] == "quadratic":
            assert (ref["value"], ref["epsilon"]) == (s["value"], s["epsilon"])
        elif ref:
            assert ref["equal"] and ref["no_better"]
