"""benchmarks/bench_system_intervals.py: its jackknife agrees with a brute-force loop over
scipy, and the script runs on a tiny configuration and fills its page markers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _bench import load_bench
from scipy import stats

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_system_intervals.py"


@pytest.fixture(scope="module")
def bench():
    yield from load_bench("bench_system_intervals")


@pytest.mark.parametrize("method", ["pearson", "kendall_b"])
def test_jackknife_matches_loop(bench, method):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 6, 12, 3))  # (R, S, P, [h, a, b])
    coef = stats.pearsonr if method == "pearson" else stats.kendalltau

    def delta(means):
        return coef(means[:, 0], means[:, 1])[0] - coef(means[:, 0], means[:, 2])[0]

    got = bench._jackknife_se(x, method, 12)
    human = bench._jackknife_se(x, method, 12, columns=(0,))
    for r in range(2):
        full = x[r].mean(1)
        th = np.array([delta(np.delete(x[r], p, axis=1).mean(1)) for p in range(12)])
        se = np.sqrt(11 / 12 * ((th - th.mean()) ** 2).sum())
        assert got[r] == pytest.approx(se, rel=1e-9)
        th_h = []
        for p in range(12):
            m = full.copy()
            m[:, 0] = np.delete(x[r, :, :, 0], p, axis=1).mean(1)
            th_h.append(delta(m))
        th_h = np.array(th_h)
        assert human[r] == pytest.approx(np.sqrt(11 / 12 * ((th_h - th_h.mean()) ** 2).sum()),
                                         rel=1e-9)


def test_runs_small_and_fills_the_page(bench, tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "NULL_DGPS", ("base",))
    monkeypatch.setattr(bench, "ALT_DGPS", ("alt-system-bias",))
    monkeypatch.setattr(bench, "NULL_SIZES", (5,))
    monkeypatch.setattr(bench, "ALT_SIZES", (5,))
    page = tmp_path / "page.md"
    page.write_text("a\n<!-- system-intervals:start -->\nold\n<!-- system-intervals:end -->\nb\n",
                    encoding="utf-8")
    assert bench.main(["--reps", "4", "--inner", "3", "--permutations", "39", "--boot", "20",
                       "--methods", "pearson", "--page", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    assert "old" not in text and text.startswith("a\n") and text.endswith("b\n")
    for cand in bench.CANDIDATES:  # the studentised ones only with --studentised-sizes
        assert (f"| `{cand}` |" in text) == (not cand.startswith("stud-")), cand
    assert bench.main(["--reps", "3", "--inner", "3", "--permutations", "39", "--boot", "20",
                       "--methods", "kendall_b", "--sizes", "5", "--studentised-sizes", "5",
                       "--markers", "system-intervals", "--page", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    assert all(f"| `{cand}` |" in text for cand in bench.CANDIDATES)
    assert "--sizes 5 --studentised-sizes 5" in text and "| level 5 | coverage 5 |" in text


def test_default_candidate_is_the_library_interval(bench):
    # hyb-boot0 is storyeval's compatible_interval; its hand-rolled twin (clip at 1e-9) agrees
    rng = np.random.default_rng(1)
    d = rng.normal(0, 0.3, 50)
    c = rng.uniform(0.1, 0.4, 50)
    se = rng.uniform(0.05, 0.3, 50)
    from storyeval.compare.procedures import compatible_interval

    lo, hi = compatible_interval(d, d - c, d + c, se, 0.95)
    lo2, hi2 = bench._compatible(d, d - c, d + c, 1.959963984540054 * se, clip_at_zero=True)
    np.testing.assert_allclose(lo, lo2, atol=2e-9)
    np.testing.assert_allclose(hi, hi2, atol=2e-9)
    assert np.array_equal((lo > 0) | (hi < 0), (d - c > 0) | (d + c < 0))
