"""Comparison tests of two dependent correlations (storyeval.compare.dependent, .compare): exact
checks against brute force and hand-worked values, and calibration under the null (slow)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from storyeval.compare.dependent import (
    _rows_pairwise,
    jackknife_diff,
    kendall_rows,
    normal_test,
    shared_kendall_rows,
    untied_counts,
    ustat_diff,
    zou_ci,
)
from storyeval.compare.procedures import (
    _bootstrap,
    _ustat_shared,
    comparison_uniforms,
    resolve_tests,
    system_permutation,
)
from storyeval.compare.williams import williams_test
from storyeval.data import scores_to_dataset
from storyeval.exceptions import InputError, UndefinedStatisticWarning
from storyeval.meta.pipeline import meta_evaluate

COEF = {
    "kendall_b": lambda x, y: stats.kendalltau(x, y).statistic,
    "kendall_c": lambda x, y: stats.kendalltau(x, y, variant="c").statistic,
    "pearson": lambda x, y: stats.pearsonr(x, y).statistic,
    "spearman": lambda x, y: stats.spearmanr(x, y).statistic,
}


def _human(q: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Mean of three 1-5 ratings (13 possible values: realistic ties)."""
    return np.clip(np.rint(3 + q[..., None] + rng.normal(0, 0.8, q.shape + (3,))), 1, 5).mean(-1)


def _null(reps: int, n: int, seed: int):
    rng = np.random.default_rng(seed)
    q, u = rng.normal(size=(reps, n)), rng.normal(size=(reps, n))
    return (_human(q, rng), q + 0.5 * u + rng.normal(size=(reps, n)),
            q + 0.5 * u + rng.normal(size=(reps, n)))


def _within_binomial(p: np.ndarray, alpha: float = 0.05) -> tuple[float, float]:
    """Rejection rate and its 3.5-standard-error tolerance around alpha."""
    reps = np.isfinite(p).sum()
    return float(np.mean(p[np.isfinite(p)] < alpha)), 3.5 * math.sqrt(alpha * (1 - alpha) / reps)


# ------------------------------------------------------------------------------------------------
# exact checks


def test_kendall_rows_counting_path_equals_pairs_with_ties():
    g = np.random.default_rng(0)
    h = g.integers(1, 6, (4, 50)).astype(float)
    a = np.round(g.normal(size=(4, 50)), 1)  # ties in a too
    assert np.array_equal(kendall_rows(h, a), _rows_pairwise(h, a))
    assert np.array_equal(kendall_rows(a, h), _rows_pairwise(a, h))
    full = stats.kendalltau(h[0], a[0])
    assert kendall_rows(h, a)[0].sum() / 2 == pytest.approx(
        full.statistic * math.sqrt(((h[0][:, None] != h[0]).sum() / 2)
                                   * ((a[0][:, None] != a[0]).sum() / 2)))


def _brute_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    x, y = np.broadcast_arrays(x, y)
    return (np.sign(x[..., None, :] - x[..., :, None])
            * np.sign(y[..., None, :] - y[..., :, None])).sum(-1)


def test_kendall_rows_by_levels_equals_brute_force_with_heavy_ties():
    """The one-cumulative-sum counting path (x levels in y's order) on batches, broadcast
    operands and every path choice (x or y with few levels, neither)."""
    g = np.random.default_rng(11)
    for _ in range(200):
        n = int(g.integers(1, 90))
        batch = tuple(int(v) for v in g.integers(1, 4, int(g.integers(0, 3))))
        x = g.integers(0, int(g.integers(1, 14)), (*batch, n)) / 3.0
        y = np.round(g.normal(size=(*batch, n)), int(g.integers(0, 3)))
        if g.random() < 0.3:
            x, y = y, x
        if g.random() < 0.2:
            x = g.normal(size=(*batch, n))  # many levels in both
        if batch and g.random() < 0.3:
            x = x[..., :1, :] if x.ndim > 1 else x
        assert np.array_equal(kendall_rows(x, y), _brute_rows(x, y))


def test_shared_kendall_rows_equal_kendall_rows_per_pair():
    """Every column sorted once for all pairs equals kendall_rows and untied_counts pair by
    pair, including criteria with more levels than the counting path takes."""
    g = np.random.default_rng(12)
    n = 150
    X = np.column_stack([
        _human(g.normal(size=n), g), g.integers(1, 6, n).astype(float),
        g.normal(size=n),  # 150 levels: the general path
        np.round(g.normal(size=(n, 5)), 1), g.integers(0, 3, (n, 3)).astype(float)])
    xcols = np.repeat([0, 1, 2], 10)
    ycols = g.integers(0, X.shape[1], 30)
    rows, untied = shared_kendall_rows(X, xcols, ycols)
    for k in range(30):
        assert np.array_equal(rows[k], kendall_rows(X[:, xcols[k]], X[:, ycols[k]]))
    assert np.array_equal(untied, untied_counts(X.T))


def _assert_same_bits(a: np.ndarray, b: np.ndarray) -> None:
    """Equal float64 arrays bit for bit (assert_array_equal alone takes -0.0 for 0.0)."""
    assert a.dtype == b.dtype == np.float64 and a.shape == b.shape
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a.view(np.int64), b.view(np.int64))


def _tie_heavy_columns(g: np.random.Generator, n: int) -> np.ndarray:
    """Columns with 1, 2, 13, 64, 65 and 300 levels (fewer when n is smaller), rounded and
    continuous measures, near-ties (one ulp apart) and signed zeros (-0.0 ties with 0.0)."""
    cols = [np.zeros(n), g.integers(0, 2, n).astype(float), _human(g.normal(size=n), g)]
    for k in (64, 65, 300):
        cols.append(g.permutation(np.arange(n) % k).astype(float) / 7.0)
    near = np.round(g.normal(size=n), 1)
    near = np.where(g.random(n) < 0.3, np.nextafter(near, np.inf), near)
    zeros = g.choice([-1.0, 1.0], n) * g.integers(0, 3, n) * (g.random(n) < 0.5)
    cols += [g.normal(size=n), np.round(g.normal(size=n), 1), near, zeros,
             g.integers(0, 4, n) / 3.0 * g.choice([-1.0, 1.0], n)]
    return np.column_stack(cols)


@pytest.mark.parametrize("n", [1, 2, 3, 50, 400])
def test_shared_kendall_rows_engines_agree_exactly(monkeypatch, n):
    """The compiled engine (`storyeval.correlation._kendall_rows_numba`: prefix array, Fenwick
    tree, x and y swapped) gives the NumPy engine's rows and untied counts bit for bit, and
    both equal the O(n^2) definition."""
    g = np.random.default_rng(100 + n)
    X = _tie_heavy_columns(g, n)
    m = X.shape[1]
    xcols, ycols = (a.ravel() for a in np.meshgrid(np.arange(m), np.arange(m), indexing="ij"))
    monkeypatch.setenv("STORYEVAL_KENDALL_ENGINE", "numpy")
    rows, untied = shared_kendall_rows(X, xcols, ycols)
    assert np.array_equal(rows, _rows_pairwise(X[:, xcols].T, X[:, ycols].T))
    assert np.array_equal(untied, (X.T[:, :, None] != X.T[:, None, :]).sum(-1).astype(float))
    pytest.importorskip("numba")
    monkeypatch.delenv("STORYEVAL_KENDALL_ENGINE")
    from storyeval.correlation.kendall_sorted import engine

    assert engine() == "numba"
    fast_rows, fast_untied = shared_kendall_rows(X, xcols, ycols)
    _assert_same_bits(fast_rows, rows)
    _assert_same_bits(fast_untied, untied)


def test_shared_kendall_rows_compiled_on_random_tie_patterns(monkeypatch):
    """Random sizes, level counts and pair lists (repeated pairs, a column with itself): the
    compiled engine equals the NumPy engine exactly."""
    pytest.importorskip("numba")
    g = np.random.default_rng(21)
    for _ in range(40):
        n = int(g.integers(1, 120))
        X = np.column_stack([g.integers(0, int(g.integers(1, 80)), n) / 3.0 for _ in range(4)]
                            + [np.round(g.normal(size=n), int(g.integers(0, 3))),
                               g.normal(size=n)])
        k = int(g.integers(0, 12))
        xcols, ycols = g.integers(0, 6, k), g.integers(0, 6, k)
        monkeypatch.setenv("STORYEVAL_KENDALL_ENGINE", "numpy")
        expected = shared_kendall_rows(X, xcols, ycols)
        monkeypatch.delenv("STORYEVAL_KENDALL_ENGINE")
        got = shared_kendall_rows(X, xcols, ycols)
        for a, b in zip(got, expected):
            _assert_same_bits(a, b)


def test_shared_ustat_equals_ustat_diff_row_by_row():
    """All-pairs tests sharing (criterion, measure) pairs: the same numbers as `ustat_diff` on
    every comparison (orientation -1 negates a measure)."""
    g = np.random.default_rng(13)
    n = 120
    q = g.normal(size=n)
    X = np.column_stack([_human(q, g), _human(q, g)]
                        + [np.round(q + g.normal(size=n), int(d)) for d in g.integers(0, 3, 8)])
    ih = g.integers(0, 2, 40)
    ia, ib = g.integers(2, 10, 40), g.integers(2, 10, 40)
    sa, sb = g.choice([-1.0, 1.0], 40), g.choice([-1.0, 1.0], 40)
    est = _ustat_shared(X, ih, ia, ib, sa, sb)
    want = ustat_diff(X[:, ih].T, X[:, ia].T * sa[:, None], X[:, ib].T * sb[:, None])
    assert np.array_equal(est.delta, want.delta, equal_nan=True)
    # each pair's linearised rows once, then combined: summation order changes the last bits
    np.testing.assert_allclose(est.se, want.se, rtol=1e-12, atol=0)


@pytest.mark.parametrize("method", ["kendall_b", "kendall_c", "pearson", "spearman"])
def test_jackknife_equals_brute_force_leave_one_out(method):
    g = np.random.default_rng(1)
    n = 25
    h = g.integers(1, 6, n).astype(float)
    a, b = h + g.normal(size=n), np.round(h + 2 * g.normal(size=n), 1)
    est = jackknife_diff(h, a, b, method)
    f = COEF[method]
    loo = np.array([f(np.delete(h, i), np.delete(a, i)) - f(np.delete(h, i), np.delete(b, i))
                    for i in range(n)])
    assert est.delta == pytest.approx(f(h, a) - f(h, b), abs=1e-12)
    assert est.se == pytest.approx(math.sqrt((n - 1) / n * ((loo - loo.mean()) ** 2).sum()),
                                   rel=1e-10)


def test_jackknife_refers_to_student_t_with_n_minus_1_df():
    # issue 47: the normal reference was 0.067 at 30 stories (bench_jackknife_small_n.py);
    # the jackknife estimate carries df = n - 1 and normal_test uses t(n - 1) for p and CI
    g = np.random.default_rng(3)
    n = 30
    h = g.normal(size=n)
    a, b = 0.3 * h + g.normal(size=n), 0.2 * h + g.normal(size=n)
    est = jackknife_diff(h, a, b, "pearson")
    assert est.df == n - 1
    z, p, low, high = normal_test(est)
    t = float(est.delta / est.se)
    assert float(p) == pytest.approx(2 * stats.t.sf(abs(t), n - 1), rel=1e-12)  # scipy's t
    q = stats.t.ppf(0.975, n - 1)
    assert (float(low), float(high)) == pytest.approx((est.delta - q * est.se,
                                                       est.delta + q * est.se), rel=1e-12)
    for level in (0.9, 0.95, 0.99):  # the interval excludes 0 exactly when p < alpha
        _, p, low, high = normal_test(est, confidence_level=level)
        assert bool(low > 0 or high < 0) == bool(p < 1 - level)
    # the U-statistic estimate keeps the normal reference
    u = ustat_diff(h, a, b)
    assert u.df is None
    assert float(normal_test(u)[1]) == pytest.approx(
        2 * stats.norm.sf(abs(float(u.delta / u.se))), rel=1e-12)


def test_jackknife_small_n_benchmark_backs_which_test():
    # every cell of benchmarks/bench_jackknife_small_n.json, failing ones included, is in
    # the section of docs/which-test.md
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    rows = json.loads((root / "benchmarks" / "bench_jackknife_small_n.json").read_text())["rows"]
    page = (root / "docs" / "which-test.md").read_text(encoding="utf-8")
    section = page.split("## Overall-level jackknife with few stories")[1].split("\n## ")[0]
    assert len(rows) == 18
    for r in rows:
        cells = [f"{r['normal 0.01']:.4f}", f"{r['t 0.01']:.4f}", f"{r['normal 0.05']:.3f}",
                 f"{r['t 0.05']:.3f}"]
        assert any(all(c in line for c in cells) and f"| {r['n']} |" in line
                   for line in section.splitlines()), r


def test_ustat_variance_against_brute_force_jackknife():
    # Without ties, tau-b is a U-statistic and Sen's variance is exactly the brute-force
    # jackknife variance times (n - 2)^2 / (n - 1)^2.
    g = np.random.default_rng(2)
    n = 20
    h = g.normal(size=n)
    a, b = h + g.normal(size=n), h + 2 * g.normal(size=n)
    loo = np.array([COEF["kendall_b"](np.delete(h, i), np.delete(a, i))
                    - COEF["kendall_b"](np.delete(h, i), np.delete(b, i)) for i in range(n)])
    jack_var = (n - 1) / n * ((loo - loo.mean()) ** 2).sum()
    est = ustat_diff(h, a, b)
    assert est.delta == pytest.approx(COEF["kendall_b"](h, a) - COEF["kendall_b"](h, b))
    assert est.se**2 == pytest.approx(jack_var * (n - 2) ** 2 / (n - 1) ** 2, rel=1e-10)
    # with ties in h (tau-b is then a ratio of U-statistics): the linearised variance stays
    # within a few percent of the brute-force jackknife
    h = g.integers(1, 6, n).astype(float)
    a, b = h + g.normal(size=n), h + 2 * g.normal(size=n)
    loo = np.array([COEF["kendall_b"](np.delete(h, i), np.delete(a, i))
                    - COEF["kendall_b"](np.delete(h, i), np.delete(b, i)) for i in range(n)])
    jack_var = (n - 1) / n * ((loo - loo.mean()) ** 2).sum()
    assert ustat_diff(h, a, b).se ** 2 == pytest.approx(jack_var * (n - 2) ** 2 / (n - 1) ** 2,
                                                        rel=0.1)


def test_zou_interval_hand_worked():
    # r12 = .5, r13 = .3, r23 = .4, n = 50, 95%: worked step by step from Zou (2007)
    half = 1.959963985 / math.sqrt(47)                              # 0.285890
    l1, u1 = math.tanh(math.atanh(0.5) - half), math.tanh(math.atanh(0.5) + half)
    l2, u2 = math.tanh(math.atanh(0.3) - half), math.tanh(math.atanh(0.3) + half)
    # atanh(.5) = 0.549306, atanh(.3) = 0.309520; +- 0.285890, back-transformed:
    assert (round(l1, 4), round(u1, 4)) == (0.2575, 0.6833)
    assert (round(l2, 4), round(u2, 4)) == (0.0236, 0.5338)
    # corr(r12, r13) = ((.4 - .075)(1 - .25 - .09 - .16) + .064) / (.75 * .91) = .2265 / .6825
    c = ((0.4 - 0.5 * 0.3 / 2) * (1 - 0.25 - 0.09 - 0.16) + 0.4**3) / ((1 - 0.25) * (1 - 0.09))
    assert round(c, 4) == 0.3319
    low = 0.2 - math.sqrt((0.5 - l1) ** 2 + (u2 - 0.3) ** 2 - 2 * c * (0.5 - l1) * (u2 - 0.3))
    high = 0.2 + math.sqrt((u1 - 0.5) ** 2 + (0.3 - l2) ** 2 - 2 * c * (u1 - 0.5) * (0.3 - l2))
    assert (round(low, 4), round(high, 4)) == (-0.0754, 0.4763)
    got = zou_ci(0.5, 0.3, 0.4, 50)
    assert (float(got[0]), float(got[1])) == pytest.approx((low, high), abs=1e-9)
    # equal correlations: symmetric around 0; n <= 3: undefined
    lo, hi = zou_ci(0.4, 0.4, 0.5, 100)
    assert float(lo) == pytest.approx(-float(hi))
    assert np.isnan(zou_ci(0.4, 0.3, 0.5, 3)[0])


def test_resolve_tests_defaults_and_errors():
    assert resolve_tests("auto", ["overall", "system"], "kendall_b") == {
        "overall": "ustat", "system": "permutation-midp"}
    assert resolve_tests("auto", ["overall"], "pearson") == {"overall": "jackknife"}
    # a dataset's default_test (HANNA's loader declares "paper") replaces the calibrated one
    assert resolve_tests("auto", ["overall", "system"], "kendall_b", "paper") == {
        "overall": "paper", "system": "paper"}
    assert resolve_tests({"system": "bootstrap"}, ["overall", "system"], "spearman") == {
        "overall": "jackknife", "system": "bootstrap"}
    with pytest.raises(InputError, match="tau-b"):
        resolve_tests("ustat", ["overall"], "pearson")
    with pytest.raises(InputError, match="system level only"):
        resolve_tests("permutation-random", ["overall"], "kendall_b")
    with pytest.raises(InputError, match="unknown test"):
        resolve_tests("wilcoxon", ["overall"], "kendall_b")
    with pytest.raises(InputError, match="unknown test 'nope'"):
        resolve_tests("auto", ["overall"], "kendall_b", "nope")


def test_auto_is_the_paper_convention_only_where_the_dataset_says_so():
    from storyeval.data import load_hanna

    hanna = load_hanna()
    assert hanna.default_test == "paper"
    renamed = replace(hanna, name="my-copy")  # the name does not matter, the declaration does
    res = meta_evaluate(renamed, measures="BLEU,chrF", levels="system", reference="all")
    assert set(res.comparisons["test"]) == {"paper"}
    res = meta_evaluate(replace(hanna, default_test=None), measures="BLEU,chrF",
                        levels="system", reference="all")
    assert set(res.comparisons["test"]) == {"permutation-midp"}


# ------------------------------------------------------------------------------------------------
# the pipeline


def test_paper_setting_reproduces_default_hanna_numbers():
    default = meta_evaluate(measures="BLEU,Beluga-13B 1,ChatGPT 1")
    paper = meta_evaluate(measures="BLEU,Beluga-13B 1,ChatGPT 1", test="paper")
    cols = ["t", "p", "p_adjusted", "swapped"]
    pd.testing.assert_frame_equal(default.comparisons[cols], paper.comparisons[cols])
    assert set(paper.comparisons["test"]) == {"paper"}
    assert set(paper.comparisons["sided"]) == {"one-sided"}
    assert paper.comparisons[["delta", "ci_low", "ci_high"]].notna().all().all()
    assert (paper.comparisons["ci_low"] <= paper.comparisons["delta"]).all()


def _user_dataset(seed: int = 0, systems: int = 6, prompts: int = 30):
    g = np.random.default_rng(seed)
    rows = []
    for s in range(systems):
        for p in range(prompts):
            q = 0.4 * s / systems + g.normal()
            rows.append({"system": f"S{s}", "prompt_id": p, "quality": _human(np.array(q), g),
                         "good": q + g.normal(), "weak": q + 3 * g.normal(),
                         "inverse": -q + g.normal()})
    table = pd.DataFrame(rows)
    long = table.melt(id_vars=["system", "prompt_id"], var_name="measure", value_name="value")
    return scores_to_dataset(long, criteria=["quality"], name="mine")


def test_user_data_gets_calibrated_two_sided_tests_with_effect_sizes():
    res = meta_evaluate(_user_dataset(), reference="all")
    will = res.comparisons
    assert dict(zip(will["level"], will["test"])) == {"overall": "ustat",
                                                      "system": "permutation-midp"}
    assert set(will["sided"]) == {"two-sided"} and not will["swapped"].any()
    assert will[["p", "delta", "ci_low", "ci_high"]].notna().all().all()
    # user data: raw orientation (no sign chosen after seeing the data), family per criterion
    row = will[(will["level"] == "overall") & (will["measure_a"] == "good")
               & (will["measure_b"] == "inverse")].iloc[0]
    assert row["delta"] == pytest.approx(row["r_a"] - row["r_b"])
    assert res.settings["comparisons"]["test"] == {"overall": "ustat",
                                                "system": "permutation-midp"}
    assert res.settings["comparisons"]["sign_convention"] == "raw"
    assert res.settings["comparisons"]["family"] == "criterion"
    assert set(will["family"].str.split(" [|]").str[0]) == {"bh over measure pairs"}


@pytest.mark.parametrize("test", ["williams", "jackknife", "bootstrap", "permutation"])
def test_every_named_test_runs_on_user_data(test):
    res = meta_evaluate(_user_dataset(1), reference="all", test=test, n_resamples=200,
                        n_permutations=200)
    will = res.comparisons
    assert set(will["test"]) == {test}
    assert will["p"].between(0, 1).all()
    assert will[["ci_low", "ci_high"]].notna().all().all()


def test_direction_larger_only_for_williams_tests():
    with pytest.raises(InputError, match="fixed direction"):
        meta_evaluate(_user_dataset(), test="ustat", direction="larger", levels="overall")


# ------------------------------------------------------------------------------------------------
# calibration under the null (>= 2,000 replications each; vectorised)


@pytest.mark.slow
def test_ustat_holds_its_level():
    h, a, b = _null(3000, 60, seed=10)
    p = normal_test(ustat_diff(h, a, b))[1]
    rate, tol = _within_binomial(p)
    assert abs(rate - 0.05) < tol, rate


@pytest.mark.slow
@pytest.mark.parametrize("method", ["kendall_b", "pearson", "spearman"])
def test_jackknife_holds_its_level(method):
    h, a, b = _null(2000, 60, seed=11)
    p = normal_test(jackknife_diff(h, a, b, method))[1]
    rate, tol = _within_binomial(p)
    assert abs(rate - 0.05) < tol, rate


@pytest.mark.slow
def test_williams_two_sided_fixed_holds_its_level_for_pearson():
    g = np.random.default_rng(12)
    cov = np.array([[1, 0.5, 0.5], [0.5, 1, 0.6], [0.5, 0.6, 1]])
    x = g.multivariate_normal(np.zeros(3), cov, size=(4000, 30))
    xc = x - x.mean(1, keepdims=True)
    c = np.einsum("rni,rnj->rij", xc, xc)
    d = np.sqrt(np.einsum("rii->ri", c))
    r = c / d[:, :, None] / d[:, None, :]
    p = williams_test(r[:, 0, 1], r[:, 0, 2], r[:, 1, 2], 30, alternative="two-sided",
                      direction="fixed").pvalue
    rate, tol = _within_binomial(p)
    assert abs(rate - 0.05) < tol, rate
    # the paper's convention (direction chosen after seeing the data, one-sided) doubles it
    paper = williams_test(r[:, 0, 1], r[:, 0, 2], r[:, 1, 2], 30).pvalue
    assert np.mean(paper < 0.05) == pytest.approx(2 * rate, abs=0.01)


def _replicate_frame(h, a, b, systems: int):
    """Replications as column triples of one (system, prompt) table: rows r of the comparison
    table are independent data sets."""
    reps, n = h.shape
    prompts = n // systems
    idx = pd.MultiIndex.from_product([[f"S{s}" for s in range(systems)], range(prompts)],
                                     names=["system", "prompt_id"])
    cols = {}
    for r in range(reps):
        cols[f"h{r}"], cols[f"a{r}"], cols[f"b{r}"] = h[r], a[r], b[r]
    wide = pd.DataFrame(cols, index=idx)
    comp = {"criterion": np.array([f"h{r}" for r in range(reps)], dtype=object),
            "measure_a": np.array([f"a{r}" for r in range(reps)], dtype=object),
            "measure_b": np.array([f"b{r}" for r in range(reps)], dtype=object)}
    return wide, comp


@pytest.mark.slow
def test_system_permutation_with_random_ties_holds_its_level_with_5_systems():
    # 5 systems x 20 prompts; system effects drawn per replication
    g = np.random.default_rng(13)
    reps, S, P = 2000, 5, 20
    q = g.normal(0, 0.3, (reps, S, 1)) + g.normal(size=(reps, S, P))
    u = g.normal(size=q.shape)
    h = _human(q, g)
    a, b = q + 0.5 * u + g.normal(size=q.shape), q + 0.5 * u + g.normal(size=q.shape)
    wide, comp = _replicate_frame(h.reshape(reps, -1), a.reshape(reps, -1), b.reshape(reps, -1),
                                  S)
    ones = np.ones(reps)
    res = system_permutation(wide, comp, ones, ones, "kendall_b", n_permutations=199,
                             random_state=0)
    rate, tol = _within_binomial(res["p"])
    assert abs(rate - 0.05) < tol, rate


@pytest.mark.slow
def test_bootstrap_test_holds_its_level():
    h, a, b = _null(2000, 200, seed=14)
    wide, comp = _replicate_frame(h, a, b, systems=2)  # 100 prompts (pairs of stories) resampled
    ones = np.ones(len(comp["criterion"]))
    res = _bootstrap(wide, comp, ones, ones, "overall", "pearson", 200, "prompts", 0, 0.95,
                     "two-sided")
    rate, tol = _within_binomial(res["p"])
    assert abs(rate - 0.05) < tol, rate


@pytest.mark.slow
def test_permutation_test_holds_its_level():
    # the engine vectorises over compared measures, not over data sets: one call per
    # replication (about 5 ms each). With 199 permutations the attainable level is 9/200.
    from storyeval.resample.permutation import paired_permutation_test

    h, a, b = _null(2000, 20, seed=15)
    idx = pd.MultiIndex.from_product([["S0", "S1"], range(10)],
                                     names=["system", "prompt_id"])
    p = np.array([paired_permutation_test(
        pd.DataFrame({"h": h[r], "a": a[r], "b": b[r]}, index=idx), "h", "a", ["b"],
        method="pearson", unit="story", n_permutations=199, alternative="two-sided",
        random_state=r)["pvalue"].iloc[0] for r in range(len(h))])
    rate, tol = _within_binomial(p)
    assert abs(rate - 0.05) < tol, rate


def test_cli_test_option_and_effect_size_tables(capsys):
    from storyeval.cli import main

    assert main(["meta", "--metrics", "BLEU,Beluga-13B 1", "--criteria", "RE,CH",
                 "--test", "overall=ustat,system=permutation-random", "--format", "md",
                 "--test-permutations", "199", "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    assert "BH-adjusted U-statistic z-test p (two-sided, 2 P(Z > |z|)" in out
    assert "paired permutation (random tie-breaking) p" in out
    assert "difference of correlations with the human criterion" in out
    assert "overall level: test 'ustat'" in out
    # the paper's convention says what its level is measured to be
    assert main(["meta", "--metrics", "BLEU,Beluga-13B 1", "--criteria", "RE,CH",
                 "--levels", "overall"]) == 0
    assert "measured type-I error" in capsys.readouterr().out
    assert main(["meta", "--metrics", "BLEU", "--test", "overall"]) == 2


@pytest.mark.parametrize("test", ["ustat", "jackknife", "bootstrap", "permutation",
                                  "williams"])
def test_declared_lower_is_better_orients_every_test(test):
    """A direction declared in advance is the way to orient: the declared measure's scores are
    negated, which equals the raw run on negated data for every test and interval."""
    data = _user_dataset()
    levels = "overall" if test in ("ustat", "jackknife") else ("overall", "system")
    kw = {"reference": "all", "test": test, "n_resamples": 200, "n_permutations": 200,
          "levels": levels}
    declared = meta_evaluate(data, lower_is_better="inverse", **kw).comparisons
    flipped = data.table.copy()
    flipped["inverse"] = -flipped["inverse"]
    negated = meta_evaluate(type(data)(flipped, data.catalogue, name="mine"), **kw).comparisons
    cols = ["t", "p", "delta", "ci_low", "ci_high"]
    np.testing.assert_allclose(declared[cols].to_numpy(float), negated[cols].to_numpy(float),
                               rtol=1e-9, atol=1e-12)
    row = declared[declared["measure_b"] == "inverse"].iloc[0]
    assert row["delta"] == pytest.approx(row["r_a"] + row["r_b"])


def test_lower_is_better_needs_the_raw_convention():
    with pytest.raises(InputError, match="raw"):
        meta_evaluate(_user_dataset(), lower_is_better="inverse", sign_convention="paper")


def test_paper_convention_and_family_stay_on_hanna():
    res = meta_evaluate(measures="BLEU,Beluga-13B 1", levels="overall")
    assert res.settings["comparisons"]["sign_convention"] == "paper"
    assert res.settings["comparisons"]["family"] == "paper"


def _extra_measures(data, k: int, seed: int = 5):
    g = np.random.default_rng(seed)
    table = data.table.copy()
    for j in range(k):
        table[f"extra{j}"] = table["quality"] + 2 * g.normal(size=len(table))
    from storyeval.data.catalogue import infer_catalogue

    return type(data)(table, infer_catalogue(table.columns, criteria=["quality"]), name="mine")


@pytest.mark.parametrize("test", [{"overall": "ustat", "system": "permutation-random"},
                                  {"overall": "ustat", "system": "permutation-midp"},
                                  "bootstrap", "jackknife", "permutation"])
def test_p_value_bit_identical_when_ten_measures_join(test):
    data = _user_dataset(3)
    kw = {"reference": "all", "test": test, "n_resamples": 200, "n_permutations": 200,
          "levels": "overall" if test == "jackknife" else ("overall", "system")}
    small = meta_evaluate(data, **kw).comparisons
    large = meta_evaluate(_extra_measures(data, 10), **kw).comparisons
    key = ["level", "criterion", "measure_a", "measure_b"]
    both = small.merge(large, on=key, suffixes=("", "_large"))
    assert len(both) == len(small) > 0
    for col in ("p", "t", "delta", "ci_low", "ci_high"):
        assert np.array_equal(both[col].to_numpy(float), both[f"{col}_large"].to_numpy(float),
                              equal_nan=True), col


def test_comparison_uniforms_depend_on_names_and_seed_only():
    comp = {"criterion": np.array(["q", "q", "q"], dtype=object),
            "measure_a": np.array(["a", "a", "b"], dtype=object),
            "measure_b": np.array(["b", "c", "c"], dtype=object)}
    u = comparison_uniforms(comp, "system", 0)
    sub = {k: v[1:] for k, v in comp.items()}
    assert np.array_equal(comparison_uniforms(sub, "system", 0), u[1:])
    assert not np.array_equal(comparison_uniforms(comp, "system", 1), u)
    assert ((u > 0) & (u < 1)).all() and len(set(u)) == 3
    # roughly uniform over many names
    many = {"criterion": np.array(["q"] * 4000, dtype=object),
            "measure_a": np.array([f"m{i}" for i in range(4000)], dtype=object),
            "measure_b": np.array(["x"] * 4000, dtype=object)}
    v = comparison_uniforms(many, "system", 7)
    assert abs(v.mean() - 0.5) < 0.02 and abs((v < 0.1).mean() - 0.1) < 0.02


def _two_system_dataset():
    g = np.random.default_rng(2)
    rows = [{"system": s, "prompt_id": p, "quality": g.normal(), "m1": g.normal(),
             "m2": g.normal(), "m3": g.normal()} for s in ("A", "B") for p in range(20)]
    long = pd.DataFrame(rows).melt(id_vars=["system", "prompt_id"], var_name="measure",
                                   value_name="value")
    return scores_to_dataset(long, criteria=["quality"], name="two")


def test_fewer_than_three_systems_skips_the_level_with_one_line(capsys):
    # the correlations of 2 system means are undefined (always -1 or 1): the system level is
    # skipped with one warning line, not printed as empty tables
    with pytest.warns(UndefinedStatisticWarning, match="system level skipped: the data hold "
                                                       "2 systems") as caught:
        res = meta_evaluate(_two_system_dataset(), reference="all", n_permutations=100)
    assert len(caught) == 1
    assert set(res.correlations["level"]) == {"overall"}
    assert set(res.comparisons["level"]) == {"overall"}
    assert res.comparisons["p"].notna().all()
    assert "needs at least 3" in res.settings["skipped_levels"]["system"]
    from storyeval.report.meta_report import render

    text = render(res)
    assert "system level skipped: the data hold 2 systems" in text
    assert "system level (means" not in text
    with pytest.raises(InputError, match="use the overall level"):
        meta_evaluate(_two_system_dataset(), levels="system")


def test_permutation_interval_agrees_with_its_test_without_ties():
    """The system-level interval inverts the permutation test: without ties (continuous system
    means, Pearson) p < 0.05 exactly when the 95% interval excludes 0."""
    g = np.random.default_rng(21)
    reps, S, P = 300, 8, 12
    q = g.normal(0, 0.3, (reps, S, 1)) + g.normal(size=(reps, S, P))
    h = q + g.normal(size=q.shape)
    a = q + g.normal(size=q.shape)
    b = 0.4 * q + g.normal(size=q.shape)  # often significantly worse
    wide, comp = _replicate_frame(h.reshape(reps, -1), a.reshape(reps, -1), b.reshape(reps, -1),
                                  S)
    ones = np.ones(reps)
    res = system_permutation(wide, comp, ones, ones, "pearson", n_permutations=199,
                             random_state=0)
    significant = res["p"] < 0.05
    excludes = (res["ci_low"] > 0) | (res["ci_high"] < 0)
    assert 0 < significant.sum() < reps
    assert np.array_equal(significant, excludes)
    assert np.all(res["ci_low"] <= res["t"]) and np.all(res["t"] <= res["ci_high"])


def test_default_system_interval_is_the_test_compatible_interval():
    res = meta_evaluate(_user_dataset(), reference="all", levels="system", n_permutations=200)
    will = res.comparisons
    assert will["ci_method"].str.startswith("test-compatible interval (fixed systems)").all()
    assert ((will["ci_low"] <= will["delta"]) & (will["delta"] <= will["ci_high"])).all()


@pytest.mark.parametrize("method", ["kendall_b", "kendall_c", "pearson", "spearman"])
def test_shared_jackknife_equals_jackknife_diff_row_by_row(method):
    from storyeval.compare.procedures import _jackknife_shared

    g = np.random.default_rng(17)
    n = 60
    q = g.normal(size=n)
    X = np.column_stack([_human(q, g), _human(q, g)]
                        + [np.round(q + g.normal(size=n), int(d)) for d in g.integers(0, 3, 6)])
    ih = g.integers(0, 2, 30)
    ia, ib = g.integers(2, 8, 30), g.integers(2, 8, 30)
    sa, sb = g.choice([-1.0, 1.0], 30), g.choice([-1.0, 1.0], 30)
    est = _jackknife_shared(X, ih, ia, ib, sa, sb, method)
    want = jackknife_diff(X[:, ih].T, X[:, ia].T * sa[:, None], X[:, ib].T * sb[:, None],
                          method)
    np.testing.assert_allclose(est.delta, want.delta, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(est.se, want.se, rtol=1e-12, atol=1e-15)


def test_gram_norms_equal_the_direct_reduction():
    from storyeval.compare.dependent_batch import gram_estimates

    g = np.random.default_rng(4)
    rows = g.normal(size=(12, 300))
    rows[5] = rows[4] * (1 + 1e-9)  # nearly identical measures: summed directly
    criterion = np.repeat([0, 1], 6)
    ka = np.array([0, 1, 4, 6, 7, 2])
    kb = np.array([3, 2, 5, 11, 9, 5])
    sa, sb = g.choice([-1.0, 1.0], 6), g.choice([-1.0, 1.0], 6)
    sb[2] = sa[2]
    theta = g.normal(size=12)
    direct = gram_estimates(theta, rows, criterion, ka, kb, sa, sb, 0.5)
    gram = gram_estimates(theta, rows, criterion, ka, kb, sa, sb, 0.5, gram=True)
    want = np.sqrt(0.5 * ((sa[:, None] * rows[ka] - sb[:, None] * rows[kb]) ** 2).sum(-1))
    np.testing.assert_allclose(direct.se, want, rtol=1e-13)
    np.testing.assert_allclose(gram.se, want, rtol=1e-6)
    assert gram.se[2] == pytest.approx(want[2], rel=1e-6)


def test_added_permutation_p_values_follow_the_declared_orientation():
    from storyeval.meta.resampling import add_permutation_pvalues

    data = _user_dataset(2)
    kw = {"reference": "all", "levels": "overall", "n_permutations": 100}
    declared = add_permutation_pvalues(meta_evaluate(data, lower_is_better="inverse", **kw),
                                       n_permutations=99, random_state=0).comparisons
    flipped = data.table.copy()
    flipped["inverse"] = -flipped["inverse"]
    negated = add_permutation_pvalues(
        meta_evaluate(type(data)(flipped, data.catalogue, name="mine"), **kw),
        n_permutations=99, random_state=0).comparisons
    np.testing.assert_allclose(declared["perm_p"], negated["perm_p"], atol=1e-12)
    np.testing.assert_allclose(declared["perm_delta"], negated["perm_delta"], atol=1e-12)


def test_centred_integer_gram_is_exact_also_when_split_into_digits():
    """Every entry equals the centred inner product computed in Python integers, rounded once,
    for small values (one BLAS product), values whose sums pass 2^53 (chunks of items) and
    values whose products do (digits)."""
    from storyeval.compare.dependent_batch import centred_integer_gram

    g = np.random.default_rng(21)
    for top, n in ((50, 300), (2**21, 3000), (2**40, 300)):
        V = g.integers(-top, top, size=(5, n)).astype(np.float64)
        got = centred_integer_gram(V)
        ints = [[int(x) for x in row] for row in V]
        n = V.shape[1]
        for u in range(5):
            for v in range(5):
                exact = (n * sum(a * b for a, b in zip(ints[u], ints[v]))
                         - sum(ints[u]) * sum(ints[v]))
                assert got[u, v] == float(exact) / n


def test_integer_ustat_is_the_same_whatever_other_measures_are_compared():
    """A comparison's standard error depends on its own two measures only: bit-identical when
    more measures join the run; nearly equal measures (summed directly) included."""
    g = np.random.default_rng(22)
    n = 200
    q = g.normal(size=n)
    metrics = [np.round(q + g.normal(size=n), int(d)) for d in g.integers(0, 3, 6)]
    metrics.append(q + g.normal(size=n))
    near = metrics[-1].copy()  # two neighbours swapped: the quadratic form would cancel
    i, j = np.argsort(near)[[100, 101]]
    near[[i, j]] = near[[j, i]]
    X = np.column_stack([_human(q, g), _human(q, g), *metrics, near])

    def run(measures):
        ia, ib = np.triu_indices(len(measures), 1)
        ia, ib = np.array(measures)[ia], np.array(measures)[ib]
        ih = np.repeat([0, 1], len(ia))
        ia, ib = np.tile(ia, 2), np.tile(ib, 2)
        signs = np.where(ia % 3 == 0, -1.0, 1.0), np.ones(len(ia))
        est = _ustat_shared(X, ih, ia, ib, *signs)
        want = ustat_diff(X[:, ih].T, X[:, ia].T * signs[0][:, None], X[:, ib].T)
        np.testing.assert_allclose(est.se, want.se, rtol=1e-12, atol=0)
        return {(h, a, b): se for h, a, b, se in zip(ih, ia, ib, est.se)}

    from storyeval.compare import dependent_batch

    direct = dependent_batch._direct_norms
    summed = []

    def spy(*args):
        summed.append(len(args[4]))
        return direct(*args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dependent_batch, "_direct_norms", spy)
        few, many = run([2, 8, 9]), run(list(range(2, 10)))
    assert summed and min(summed) > 0  # the near pair went through the direct sum
    assert few and all(many[key] == se for key, se in few.items())
