"""The engines of `system_permutation` (``permutation-random``): the compiled Kendall kernel
(`storyeval.correlation._permutation_numba`) against the NumPy engine, bit for bit, and the
blocked mask draw, prompt sums and swapped means against the one-shot formulas they replace."""

from __future__ import annotations

import importlib.util

import numpy as np
import pandas as pd
import pytest

import storyeval.compare.procedures as procedures
from storyeval.compare.procedures import (
    _numpy_deltas,
    _prompt_masks,
    _prompt_sums,
    _swapped_means,
    system_permutation,
)
from storyeval.correlation.ties import tie_values

HAS_NUMBA = importlib.util.find_spec("numba") is not None
needs_numba = pytest.mark.skipif(not HAS_NUMBA,
                                 reason="numba (the 'fast' extra) is not installed")
OUTPUTS = ("t", "p", "ci_low", "ci_high", "test_reason")


def assert_same_bits(actual, expected, err_msg: str = "") -> None:
    """Equal arrays, floats bit for bit (-0.0 is not 0.0; any NaN equals any NaN)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    np.testing.assert_array_equal(actual, expected, err_msg=err_msg)
    if actual.dtype.kind == "f":
        nan = np.isnan(actual)
        np.testing.assert_array_equal(np.signbit(actual)[~nan], np.signbit(expected)[~nan],
                                      err_msg=err_msg)


def _tie_prone(g: np.random.Generator, shape) -> np.ndarray:
    """Values with exact ties, ties up to the last bit (1 and 2 ulps apart), signed zeros and
    values of both signs."""
    base = g.choice(np.array([-1.0, -2 / 3, -0.5, -0.0, 0.0, 1 / 3, 0.5, 2 / 3, 1.0, 1.5]),
                    size=shape)
    ulps = g.choice(np.array([0, 0, 0, 1, 2, -1]), size=shape)
    out = base.copy()
    for k in (1, 2):  # k steps towards +inf (or -inf): values k ulps apart
        up, down = ulps >= k, ulps <= -k
        out[up] = np.nextafter(out[up], np.inf)
        out[down] = np.nextafter(out[down], -np.inf)
    return out


def _kernel_inputs(g: np.random.Generator, S: int, K: int, N: int, R: int):
    """Inputs of the kernels: half the columns have zero means, unit scale and no shift (the
    swapped means are then the tie-prone values themselves, up to sign), the others generic."""
    swapped = _tie_prone(g, (N + 1, S, K))
    mean = np.where(np.arange(K) % 2 == 0, 0.0, g.normal(size=(S, K)))
    scale = np.where(np.arange(K) % 2 == 0, 1.0, g.uniform(0.5, 3.0, K))
    shift = np.where(np.arange(K) % 2 == 0, 0.0, g.normal(size=K))
    observed = _tie_prone(g, (S, K))
    h = _tie_prone(g, (S, R))
    h[:, 0] = 0.5  # a constant criterion: every coefficient undefined
    ia = g.integers(0, K, R)
    ib = g.integers(0, K, R)
    sa = g.choice(np.array([-1.0, 1.0]), R)
    sb = g.choice(np.array([-1.0, 1.0]), R)
    return swapped, mean, observed, scale, shift, h, ia, ib, sa, sb


@needs_numba
@pytest.mark.parametrize("method", ["kendall_b", "kendall_c"])
@pytest.mark.parametrize("rtol", [0.0, 1e-12, 1e-15])
@pytest.mark.parametrize("S", [3, 6, 12])
def test_compiled_kernel_equals_numpy_engine(method, rtol, S):
    from storyeval.correlation._permutation_numba import kendall_deltas

    g = np.random.default_rng([S, int(rtol == 0), len(method)])
    swapped, mean, observed, scale, shift, h, ia, ib, sa, sb = _kernel_inputs(g, S, 6, 60, 40)
    H = tie_values(h, "system", axis=0, rtol=rtol)  # as system_permutation passes it
    compiled, undone = kendall_deltas(swapped, mean, observed, scale, shift, H, ia, ib, sa, sb,
                                      rtol, method)
    reference = _numpy_deltas(np.arange(len(ia)), swapped, mean, observed, scale, shift, H, ia,
                              ib, sa, sb, rtol, method)
    assert not undone.any()
    assert_same_bits(compiled, reference)
    assert np.isnan(compiled[:, 0]).all() and np.isfinite(compiled[:, 1:]).any()
    if rtol == 1e-12:  # the near ties are there: snapping changes some coefficients
        raw = _numpy_deltas(np.arange(len(ia)), swapped, mean, observed, scale, shift, H, ia,
                            ib, sa, sb, 0.0, method)
        assert not np.array_equal(raw, reference, equal_nan=True)


@needs_numba
def test_compiled_kernel_leaves_overflowing_rows_to_numpy():
    from storyeval.correlation._permutation_numba import kendall_deltas

    g = np.random.default_rng(5)
    swapped, mean, observed, scale, shift, h, ia, ib, sa, sb = _kernel_inputs(g, 5, 4, 20, 6)
    scale[3] = 1e308  # (a_s + move) * scale overflows for the rows that use column 3
    ia[:3], ib[:3] = 3, 0
    ia[3:], ib[3:] = 1, 2
    h[:, 1] = np.inf
    deltas, undone = kendall_deltas(swapped, mean, observed, scale, shift, h, ia, ib, sa, sb,
                                    1e-12, "kendall_b")
    assert undone.tolist() == [True, True, True, False, False, False]
    reference = _numpy_deltas(np.arange(3, 6), swapped, mean, observed, scale, shift, h, ia,
                              ib, sa, sb, 1e-12, "kendall_b")
    assert_same_bits(deltas[:, 3:], reference)


@needs_numba
@pytest.mark.parametrize("method", ["kendall_b", "kendall_c"])
@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize("N", [19, 60, 199])
def test_fused_midp_kernel_equals_the_numpy_summary(method, alternative, N):
    """`kendall_midp` (the default test's kernel: rows grouped by measures and orientations,
    each row's mid-p counts and interval half-width computed in place) equals the NumPy
    summary of the deltas, bit for bit, with rows sharing their swapped values across
    criteria, constant criteria and rows left to the NumPy engine."""
    from storyeval.compare.procedures import _midp_counts, _midp_spread
    from storyeval.correlation._permutation_numba import kendall_deltas, kendall_midp

    g = np.random.default_rng([N, len(method), len(alternative)])
    swapped, mean, observed, scale, shift, h, ia, ib, sa, sb = _kernel_inputs(g, 6, 5, N, 36)
    # four criteria per (a, b, orientation), as the rows of a run with four criteria
    pairs = g.integers(0, 5, (9, 2))
    ia, ib = np.repeat(pairs[:, 0], 4), np.repeat(pairs[:, 1], 4)
    sa, sb = np.repeat(sa[:9], 4), np.repeat(sb[:9], 4)
    order = g.permutation(36)  # rows of a group need not be adjacent
    ia, ib, sa, sb, h = ia[order], ib[order], sa[order], sb[order], h[:, order]
    ia[:2], ib[:2], h[:, :2] = 0, 1, 0.5  # constant criteria: undefined coefficients
    scale[4] = 1e308  # the rows of column 4 overflow: left undone by both kernels
    H = tie_values(h, "system", axis=0, rtol=1e-12)
    alpha = 0.05 if N > 19 else 0.2
    deltas, undone = kendall_deltas(swapped, mean, observed, scale, shift, H, ia, ib, sa, sb,
                                    1e-12, method)
    obs, more, tied, defined, spread, flag = kendall_midp(swapped, mean, observed, scale, shift, H, ia,
                                                 ib, sa, sb, 1e-12, method, alternative, alpha,
                                                 procedures._TOL)
    np.testing.assert_array_equal(flag, undone)
    done = ~flag
    assert done.sum() >= 12 and flag.any()
    ref_more, ref_tied, ref_defined = _midp_counts(deltas[0], deltas[1:], alternative)
    ref_spread = _midp_spread(deltas[0], deltas[1:], alpha, alternative)
    assert_same_bits(obs[done], deltas[0][done])
    assert_same_bits(more[done], ref_more[done])
    assert_same_bits(tied[done], ref_tied[done])
    assert_same_bits(defined[done], ref_defined[done])
    assert_same_bits(spread[done], ref_spread[done])
    assert np.isfinite(spread[done]).any() and np.isnan(spread[done]).any()


def _story_frame(g: np.random.Generator, S: int, P: int, constant: bool = False):
    """A (system, prompt_id) frame whose system means tie exactly (Likert averages, rounded
    metrics), tie up to the last bits (sums of thirds in different orders), include zeros and
    a constant metric."""
    idx = pd.MultiIndex.from_product([[f"s{k}" for k in range(S)], range(P)],
                                     names=["system", "prompt_id"])
    n = S * P
    quality = np.repeat(g.normal(0, 0.5, S), P) + g.normal(size=n)
    cols = {
        "h1": np.clip(np.rint(3 + quality + g.normal(size=n)), 1, 5),
        "h2": np.clip(np.rint(3 + quality[:, None] + g.normal(size=(n, 3))), 1, 5).mean(axis=1),
        "m_round": np.round(quality + g.normal(size=n), 0),
        "m_third": np.rint(3 * (quality + g.normal(size=n))) / 3,
        "m_zero": np.where(g.random(n) < 0.5, 0.0, np.round(quality, 1)),
        "m_cont": quality + g.normal(size=n),
        "m_small": 1e-3 * np.rint(quality + 2 * g.normal(size=n)),
    }
    if constant:
        cols["m_const"] = np.full(n, 0.25)
    return pd.DataFrame(cols, index=idx)


def _all_rows(wide: pd.DataFrame):
    crit = [c for c in wide.columns if c.startswith("h")]
    metrics = [c for c in wide.columns if c.startswith("m")]
    rows = [(h, a, b) for h in crit for i, a in enumerate(metrics) for b in metrics[i + 1:]]
    return {"criterion": np.array([r[0] for r in rows], dtype=object),
            "measure_a": np.array([r[1] for r in rows], dtype=object),
            "measure_b": np.array([r[2] for r in rows], dtype=object)}


def _both_engines(monkeypatch, *args, **kwargs):
    """`system_permutation` on the NumPy engine, then on the compiled kernel (checked)."""
    import storyeval.correlation._permutation_numba as compiled

    monkeypatch.setenv("STORYEVAL_KENDALL_ENGINE", "numpy")
    numpy_result = system_permutation(*args, **kwargs)
    monkeypatch.delenv("STORYEVAL_KENDALL_ENGINE")
    calls = []
    for name in ("kendall_deltas", "kendall_midp"):
        kernel = getattr(compiled, name)
        monkeypatch.setattr(compiled, name,
                            lambda *a, kernel=kernel: calls.append(1) or kernel(*a))
    compiled_result = system_permutation(*args, **kwargs)
    assert calls, "the compiled kernel did not run"
    return numpy_result, compiled_result


@needs_numba
@pytest.mark.parametrize("method", ["kendall_b", "kendall_c"])
def test_compiled_kernel_runs_where_it_pays(monkeypatch, method):
    import storyeval.correlation.kendall_sorted as ks
    from storyeval.compare.procedures import _compiled_permutation

    def load(seconds):
        monkeypatch.setattr(ks, "numba_load_seconds", lambda module: seconds)

    load(0.0)  # loaded in this process: whenever it saves anything
    assert _compiled_permutation(3, 200, 5, method)
    load(ks.NUMBA_WARM_SECONDS)  # a warm cache: not for a few ms of NumPy
    assert not _compiled_permutation(30, 1001, 5, method)
    assert _compiled_permutation(10000, 2001, 10, method)
    if method == "kendall_b":  # 36 measures' 630 pairs, 10 systems: NumPy beats loading numba
        assert not _compiled_permutation(630, 2001, 10, method)
    load(ks.NUMBA_COLD_SECONDS)  # a first run compiles: only for long work
    assert not _compiled_permutation(2610, 2001, 10, method)
    assert _compiled_permutation(50000, 2001, 10, method)
    monkeypatch.setenv("STORYEVAL_KENDALL_ENGINE", "numpy")
    load(0.0)
    assert not _compiled_permutation(50000, 2001, 10, method)


def test_numba_load_seconds_looks_for_the_cache(monkeypatch, tmp_path):
    import sys

    from storyeval.correlation import kendall_sorted as ks

    module = "storyeval.correlation._permutation_numba"
    monkeypatch.delitem(sys.modules, module, raising=False)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    assert ks.numba_load_seconds(module) == ks.NUMBA_COLD_SECONDS  # nothing cached: compiles
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "_permutation_numba.kendall_deltas-1.py311.nbi").write_bytes(b"")
    assert ks.numba_load_seconds(module) == ks.NUMBA_WARM_SECONDS
    monkeypatch.setitem(sys.modules, module, object())
    assert ks.numba_load_seconds(module) == 0.0


@needs_numba
@pytest.mark.parametrize("method", ["kendall_b", "kendall_c"])
@pytest.mark.parametrize("tie_rtol", [0.0, 1e-12])
def test_system_permutation_engines_agree_bit_for_bit(monkeypatch, method, tie_rtol):
    g = np.random.default_rng([7, len(method), int(tie_rtol == 0)])
    wide = _story_frame(g, S=7, P=25, constant=True)
    comp = _all_rows(wide)
    size = len(comp["criterion"])
    sa = g.choice(np.array([-1.0, 1.0]), size)
    sb = g.choice(np.array([-1.0, 1.0]), size)
    for alternative, ties in (("two-sided", "random"), ("less", "random"),
                              ("two-sided", "mid"), ("greater", "mid")):
        numpy_result, compiled = _both_engines(
            monkeypatch, wide, comp, sa, sb, method, alternative, n_permutations=199,
            random_state=3, tie_rtol=tie_rtol, ties=ties, n_resamples=50)
        for key in OUTPUTS:
            assert_same_bits(compiled[key], numpy_result[key], err_msg=f"{key} {ties}")
    # the data do what they are for: undefined rows (constant metric) and exact ties
    assert (numpy_result["test_reason"] != "").any()
    assert np.isfinite(numpy_result["p"]).sum() > size // 2


@needs_numba
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning",
                            "ignore:invalid value encountered:RuntimeWarning")
def test_system_permutation_engines_agree_on_overflowing_scores(monkeypatch):
    """Scores near the largest float: the z-scoring overflows, the compiled kernel leaves the
    rows to the NumPy engine."""
    g = np.random.default_rng(11)
    wide = _story_frame(g, S=5, P=12)
    wide["m_huge"] = np.where(g.random(len(wide)) < 0.5, 1.5e308, -1.5e308)
    comp = _all_rows(wide)
    ones = np.ones(len(comp["criterion"]))
    numpy_result, compiled = _both_engines(monkeypatch, wide, comp, ones, -ones, "kendall_b",
                                           n_permutations=99)
    for key in OUTPUTS:
        assert_same_bits(compiled[key], numpy_result[key], err_msg=key)


@pytest.mark.parametrize("P, N, block_bytes", [(37, 50, 8 * 37 * 4), (37, 50, 1), (96, 1000, 2**25),
                                               (1000, 3, 8 * 1000 * 2)])
def test_blocked_masks_are_the_one_shot_draw(P, N, block_bytes):
    old_rng = np.random.default_rng(42)
    # the masks as system_permutation drew them before: one (N, P) draw
    old = np.vstack([np.zeros((1, P)), (old_rng.random((N, P)) < 0.5)])
    # each block is used before the next is drawn (they share one buffer)
    blocks = [(start, masks.copy())
              for start, masks in _prompt_masks(np.random.default_rng(42), N, P, block_bytes)]
    starts = [start for start, _ in blocks]
    assert starts == sorted(starts) and starts[0] == 0
    new = np.vstack([masks for _, masks in blocks])
    assert new.dtype == old.dtype
    assert_same_bits(new, old)


def test_swapped_means_are_the_one_shot_product(monkeypatch):
    g = np.random.default_rng(3)
    P, S, K, N = 120, 6, 9, 300
    sums = g.normal(size=(P, S, K))
    count = g.integers(50, 120, S).astype(np.float64)
    rng = np.random.default_rng(8)
    masks = np.vstack([np.zeros((1, P)), (rng.random((N, P)) < 0.5)])
    old = (masks @ sums.reshape(P, -1)).reshape(len(masks), S, -1) / count[None, :, None]
    assert_same_bits(_swapped_means(sums, count, N, 8), old)
    # above the size of a whole mask matrix: blocks of permutations, the same products up to
    # BLAS's order of summation (which depends on the shape)
    monkeypatch.setattr(procedures, "_MASK_BYTES", 8 * P * 10)
    monkeypatch.setattr(procedures, "_MASK_BLOCK_BYTES", 8 * P * 7)
    np.testing.assert_allclose(_swapped_means(sums, count, N, 8), old, rtol=0, atol=1e-12)


def _old_prompt_sums(wide: pd.DataFrame, columns: list[str]):
    """`_prompt_sums` as it was (np.add.at over labels sorted as strings)."""
    index = wide.index
    _, s_idx = np.unique(index.get_level_values(0).astype(str), return_inverse=True)
    _, p_idx = np.unique(index.get_level_values(1).astype(str), return_inverse=True)
    s_idx, p_idx = s_idx.ravel(), p_idx.ravel()
    X = wide[columns].to_numpy(dtype=np.float64)
    sums = np.zeros((int(p_idx.max()) + 1, int(s_idx.max()) + 1, X.shape[1]))
    np.add.at(sums, (p_idx, s_idx), X)
    return sums, np.bincount(s_idx).astype(np.float64)


def test_prompt_sums_equal_the_add_at_sums():
    g = np.random.default_rng(4)
    # prompt ids whose string order is not their numeric order, shuffled rows, an unused level
    # once a system is dropped, a missing (system, prompt) story
    wide = _story_frame(g, S=5, P=14).rename(index=lambda p: p * 7 if isinstance(p, int) else p,
                                             level="prompt_id")
    wide = wide.sample(frac=1.0, random_state=1).drop(index="s2", level="system").iloc[1:]
    assert "s2" in wide.index.levels[0]
    cols = list(wide.columns)
    sums, count = _prompt_sums(wide.index, wide[cols].to_numpy())
    old_sums, old_count = _old_prompt_sums(wide, cols)
    assert_same_bits(sums, old_sums)
    assert_same_bits(count, old_count)
    flat = wide.reset_index().set_index(["system", "prompt_id"])  # a fresh index, no codes reused
    assert_same_bits(_prompt_sums(flat.index, flat[cols].to_numpy())[0], old_sums)
    assert (wide["m_zero"] == 0).any()
    signed = wide.assign(m_zero=-wide["m_zero"])  # -0.0 scores: their sums are 0.0 + -0.0
    assert np.signbit(signed["m_zero"]).any()
    assert_same_bits(_prompt_sums(signed.index, signed[cols].to_numpy())[0],
                     _old_prompt_sums(signed, cols)[0])


def test_prompt_sums_add_the_stories_of_a_cell_in_order():
    g = np.random.default_rng(6)
    wide = _story_frame(g, S=4, P=9)
    # stories repeated within (system, prompt) cells: sums of several values, in story order
    repeated = pd.concat([wide, wide.sample(20, random_state=2) * 1.1,
                          wide.sample(15, random_state=3) / 3])
    cols = list(repeated.columns)
    sums, count = _prompt_sums(repeated.index, repeated[cols].to_numpy())
    old_sums, old_count = _old_prompt_sums(repeated, cols)
    assert_same_bits(sums, old_sums)
    assert_same_bits(count, old_count)


@pytest.mark.parametrize("rounded", [False, True])
def test_tau_b_pair_signs_equal_the_reference_engine(rounded):
    """`_kendall_b_deltas` (pair signs shared over criteria) gives `_numpy_deltas`'s numbers bit
    for bit on every row it does not hand back (near ties go to the reference engine)."""
    from storyeval.compare.procedures import _kendall_b_deltas

    g = np.random.default_rng(7 + rounded)
    for _ in range(10):
        S, K, rows = int(g.integers(3, 9)), 6, 12
        swapped = g.normal(size=(41, S, K))
        swapped[0] = 0.0
        if rounded:  # exact ties between swapped means
            swapped = np.round(swapped * 2) / 2
        mean = g.normal(size=(S, K))
        observed = mean * 1.3 + 0.2
        scale, shift = np.abs(g.normal(size=K)) + 0.5, g.normal(size=K)
        ih = g.integers(0, 3, size=rows)
        ia = g.integers(3, 6, size=rows)
        ib = (ia - 2) % 3 + 3
        sa, sb = g.choice([-1.0, 1.0], rows), g.choice([-1.0, 1.0], rows)
        H = tie_values(np.round(g.normal(size=(S, 3)) * 2)[:, ih] / 2, "system", axis=0,
                       rtol=1e-12)
        fast, handed_back = _kendall_b_deltas(swapped, mean, observed, scale, shift, H, ih, ia,
                                              ib, sa, sb, 1e-12)
        ref = _numpy_deltas(np.arange(rows), swapped, mean, observed, scale, shift, H, ia, ib,
                            sa, sb, 1e-12, "kendall_b")
        keep = ~np.isin(np.arange(rows), handed_back)
        assert_same_bits(fast[:, keep], ref[:, keep])


@pytest.mark.parametrize("magnitude", [1.0, 1e39, 1e-41, 1e-300])
def test_tau_b_float32_signs_keep_every_sign_and_tie(magnitude):
    """The pair signs are taken from float32 differences with a float32 tie bound: values 1 or
    2 ulps apart (below float32's resolution), exact ties, signed zeros, and magnitudes beyond
    float32's range (1e39 overflows, 1e-41 is subnormal there, 1e-300 is zero there) still
    give `_numpy_deltas`' numbers bit for bit on every row not handed back."""
    from storyeval.compare.procedures import _kendall_b_deltas

    g = np.random.default_rng(11)
    for _ in range(6):
        S, K, rows, N = int(g.integers(3, 9)), 6, 14, 33
        swapped = _tie_prone(g, (N + 1, S, K)) * magnitude
        swapped[0] = 0.0
        mean = np.zeros((S, K))
        observed = _tie_prone(g, (S, K)) * magnitude
        scale, shift = np.ones(K), np.zeros(K)
        ih = g.integers(0, 3, size=rows)
        ia = g.integers(0, K, size=rows)
        ib = (ia + 1 + g.integers(0, K - 1, size=rows)) % K
        sa, sb = g.choice([-1.0, 1.0], rows), g.choice([-1.0, 1.0], rows)
        H = tie_values(_tie_prone(g, (S, 3))[:, ih], "system", axis=0, rtol=1e-12)
        for rtol in (0.0, 1e-12):
            with np.errstate(over="ignore", invalid="ignore"):
                fast, handed_back = _kendall_b_deltas(swapped, mean, observed, scale, shift, H,
                                                      ih, ia, ib, sa, sb, rtol)
                ref = _numpy_deltas(np.arange(rows), swapped, mean, observed, scale, shift, H,
                                    ia, ib, sa, sb, rtol, "kendall_b")
            keep = ~np.isin(np.arange(rows), handed_back)
            if rtol == 0.0:  # ties are exact: values 1-2 ulps apart are untied, none handed back
                assert keep.all()
            assert_same_bits(fast[:, keep], ref[:, keep], err_msg=f"rtol={rtol}")


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_tau_b_block_summary_equals_the_matrix_summary(alternative):
    """`_kendall_b_midp` (each block of rows summarised as it comes, no matrix) gives the
    mid-p counts and half-widths of `_midp_counts` / `_midp_spread` on the whole matrix, and
    hands back the same rows, with blocks of one group and of many."""
    from storyeval.compare.procedures import (
        _kendall_b_deltas,
        _kendall_b_midp,
        _midp_counts,
        _midp_spread,
    )

    g = np.random.default_rng(5)
    S, K, rows, N = 7, 9, 60, 199
    swapped = np.round(g.normal(size=(N + 1, S, K)) * 3) / 3  # ties among swapped means
    swapped[0] = 0.0
    mean = g.normal(size=(S, K))
    observed = mean * 0.9
    scale, shift = np.abs(g.normal(size=K)) + 0.5, g.normal(size=K)
    ih = g.integers(0, 4, size=rows)
    ia = g.integers(0, K, size=rows)
    ib = (ia + 1 + g.integers(0, K - 1, size=rows)) % K
    sa, sb = g.choice([-1.0, 1.0], rows), g.choice([-1.0, 1.0], rows)
    H = tie_values(np.round(g.normal(size=(S, 4)))[:, ih], "system", axis=0, rtol=1e-12)
    args = (swapped, mean, observed, scale, shift, H, ih, ia, ib, sa, sb, 1e-12)
    deltas, back = _kendall_b_deltas(*args)
    expected = (deltas[0], *_midp_counts(deltas[0], deltas[1:], alternative),
                _midp_spread(deltas[0], deltas[1:], 0.05, alternative))
    import storyeval.compare._taub_blocks as taub_blocks

    for block_bytes in (1, 2**22):  # one swap of one group at a time; every group at once
        old = taub_blocks.SIGN_BLOCK_BYTES
        taub_blocks.SIGN_BLOCK_BYTES = block_bytes
        try:
            *got, got_back = _kendall_b_midp(*args, alternative, 0.05)
        finally:
            taub_blocks.SIGN_BLOCK_BYTES = old
        np.testing.assert_array_equal(got_back, back)
        for a, e in zip(got, expected):
            assert_same_bits(a, e, err_msg=f"block bytes {block_bytes}")


def test_pearson_swaps_need_only_the_rows_combinations():
    """`_pearson_deltas` with many criteria and measures (300 x 900, one row each): memory of
    the rows' (criterion, measure) combinations only (every combination would take 430 MB),
    and each row's differences those of the swapped vectors' Pearson correlations."""
    import tracemalloc

    from storyeval.compare.procedures import _pearson_deltas

    g = np.random.default_rng(3)
    S, K, C, N = 5, 900, 300, 200
    swapped = g.normal(size=(N + 1, S, K))
    swapped[0] = 0.0
    mean = g.normal(size=(S, K))
    ih = np.arange(C)
    ia, ib = 3 * np.arange(C), 3 * np.arange(C) + 1
    sa, sb = g.choice([-1.0, 1.0], C), g.choice([-1.0, 1.0], C)
    H = g.normal(size=(S, C))
    tracemalloc.start()
    try:
        deltas = _pearson_deltas(swapped, mean, H, ih, ia, ib, sa, sb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100 * 2**20, f"{peak / 2**20:.0f} MB"
    W = swapped - swapped.mean(axis=1, keepdims=True)
    M = mean - mean.mean(axis=0, keepdims=True)
    for r in (0, 17, 299):
        a_star = sa[r] * M[:, ia[r]] + sb[r] * W[:, :, ib[r]] - sa[r] * W[:, :, ia[r]]
        b_star = sb[r] * M[:, ib[r]] - sb[r] * W[:, :, ib[r]] + sa[r] * W[:, :, ia[r]]
        expected = [np.corrcoef(H[:, r], a_star[n])[0, 1] - np.corrcoef(H[:, r], b_star[n])[0, 1]
                    for n in range(N + 1)]
        np.testing.assert_allclose(deltas[:, r], expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("layout", ["every criterion per pair", "a criterion per row"])
def test_tau_b_sign_sums_by_product_or_row_by_row(layout):
    """The two ways of summing the pair signs with the criteria's (one matrix product with the
    block's criteria when the rows fill most of its cells, as in a study whose pairs of
    measures are compared on every criterion; row by row when every row has a criterion of its
    own) give `_numpy_deltas`' numbers bit for bit."""
    from storyeval.compare.procedures import _kendall_b_deltas

    g = np.random.default_rng(21)
    S, K, N, C = 7, 6, 120, 5
    swapped = np.round(g.normal(size=(N + 1, S, K)) * 3) / 3
    swapped[0] = 0.0
    mean = g.normal(size=(S, K))
    observed = mean * 1.1
    scale, shift = np.abs(g.normal(size=K)) + 0.5, g.normal(size=K)
    pairs = [(a, b) for a in range(K) for b in range(K) if a < b]
    if layout == "every criterion per pair":
        ih = np.repeat(np.arange(C), len(pairs))
        ia = np.tile([a for a, _ in pairs], C)
        ib = np.tile([b for _, b in pairs], C)
        crit = np.round(g.normal(size=(S, C)) * 2) / 2
    else:
        ih = np.arange(len(pairs))
        ia, ib = np.array([a for a, _ in pairs]), np.array([b for _, b in pairs])
        crit = np.round(g.normal(size=(S, len(pairs))) * 2) / 2
    rows = len(ih)
    sa, sb = g.choice([-1.0, 1.0], rows), g.choice([-1.0, 1.0], rows)
    if layout == "every criterion per pair":  # one orientation per pair: a group per pair
        sa, sb = np.tile(sa[:len(pairs)], C), np.tile(sb[:len(pairs)], C)
    H = tie_values(crit[:, ih], "system", axis=0, rtol=1e-12)
    fast, back = _kendall_b_deltas(swapped, mean, observed, scale, shift, H, ih, ia, ib, sa, sb,
                                   1e-12)
    ref = _numpy_deltas(np.arange(rows), swapped, mean, observed, scale, shift, H, ia, ib, sa,
                        sb, 1e-12, "kendall_b")
    keep = ~np.isin(np.arange(rows), back)
    assert keep.sum() > rows // 2
    assert_same_bits(fast[:, keep], ref[:, keep])


def test_tau_b_blocks_hand_back_every_row_beyond_exact_float32_sums(monkeypatch):
    """Beyond `EXACT_PAIRS` pairs of systems (where float32 sums of signs could round) the
    NumPy engine computes nothing and hands every row back to the float64 reference engine:
    the deltas and the mid-p summary are then `_numpy_deltas`' own."""
    import storyeval.compare._taub_blocks as taub_blocks
    from storyeval.compare.procedures import (
        _kendall_b_deltas,
        _kendall_b_midp,
    )

    g = np.random.default_rng(21)
    S, K, rows, N = 6, 5, 8, 29
    swapped = np.round(g.normal(size=(N + 1, S, K)) * 3) / 3
    swapped[0] = 0.0
    mean = g.normal(size=(S, K))
    observed = mean * 1.1
    scale, shift = np.ones(K), np.zeros(K)
    ih = g.integers(0, 2, size=rows)
    ia = g.integers(0, K, size=rows)
    ib = (ia + 1 + g.integers(0, K - 1, size=rows)) % K
    sa, sb = g.choice([-1.0, 1.0], rows), g.choice([-1.0, 1.0], rows)
    H = tie_values(np.round(g.normal(size=(S, 2)))[:, ih], "system", axis=0, rtol=1e-12)
    args = (swapped, mean, observed, scale, shift, H, ih, ia, ib, sa, sb, 1e-12)
    monkeypatch.setattr(taub_blocks, "EXACT_PAIRS", S * (S - 1) // 2 - 1)
    _, back = _kendall_b_deltas(*args)
    np.testing.assert_array_equal(back, np.arange(rows))
    *_, midp_back = _kendall_b_midp(*args, "two-sided", 0.05)
    np.testing.assert_array_equal(midp_back, np.arange(rows))
    # and through the test itself (the NumPy engine, default mid-p): the same numbers, bit
    # for bit, as with the limit out of the way
    monkeypatch.setenv("STORYEVAL_KENDALL_ENGINE", "numpy")
    wide = _story_frame(g, S=6, P=15)
    comp = _all_rows(wide)
    ones = np.ones(len(comp["criterion"]))
    kwargs = dict(n_permutations=99, random_state=2, ties="mid", n_resamples=30)
    limited = system_permutation(wide, comp, ones, -ones, "kendall_b", **kwargs)
    monkeypatch.setattr(taub_blocks, "EXACT_PAIRS", 2**24)
    blocked = system_permutation(wide, comp, ones, -ones, "kendall_b", **kwargs)
    for key in OUTPUTS:
        assert_same_bits(limited[key], blocked[key], err_msg=key)
    assert np.isfinite(blocked["p"]).any()
