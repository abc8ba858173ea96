"""A measure against the system-identity sentinel at the prompt level, with an interval and a
test that account for the sentinel being estimated from the same prompts.

The prompt level correlates the systems within each prompt and averages over prompts. The
system-identity sentinel of a story (`storyeval.bias.sentinels`) is the mean human score of
its system on the *other* prompts, so every prompt's sentinel values depend on every other
prompt's human scores: the per-prompt differences ``d_p = r_p(h, m) - r_p(h, s)`` are not
independent, and a paired t-test over prompts (`storyeval.compare.compare_prompt_level`)
treats the sentinel's ranking of the systems as fixed. `compare_with_system_sentinel` adds the
sentinel's own estimation variance, from a bootstrap of the prompts the sentinel is estimated
from (the evaluated prompts held fixed), to the paired t's variance.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from storyeval.bias.sentinels import _tie_faithful
from storyeval.exceptions import InputError

__all__ = ["SENTINEL_BOOTSTRAP_TEST", "compare_with_system_sentinel"]

#: The test of `compare_with_system_sentinel`.
SENTINEL_BOOTSTRAP_TEST = ("t over prompts, variance var(d)/P + bootstrap variance of the "
                           "sentinel (re-estimated from resampled prompts), df = prompts - 1")


def _signs(x: np.ndarray) -> np.ndarray:
    """sign(x_i - x_j) over the pairs i < j of the last axis."""
    i, j = np.triu_indices(x.shape[-1], k=1)
    return np.sign(x[..., i] - x[..., j])


def _kendall_b(x: np.ndarray, y: np.ndarray, sx: np.ndarray | None = None) -> np.ndarray:
    """Kendall's tau-b along the last axis of ``x`` and ``y`` (broadcast), NaN when either
    is constant; ``sx``: `_signs` of ``x`` when already computed."""
    dx = _signs(x) if sx is None else sx
    dy = _signs(y)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (dx * dy).sum(axis=-1) / np.sqrt((dx * dx).sum(axis=-1) * (dy * dy).sum(axis=-1))


def _matrix(wide: pd.DataFrame, column: str) -> np.ndarray:
    """(prompts, systems) of one column; every system scored once on every prompt."""
    if column not in wide.columns:
        raise InputError(f"no column {column!r} in the scores")
    table = wide[column].unstack("system")
    if len(table) * table.shape[1] != len(wide):
        raise InputError("compare_with_system_sentinel needs one story per system and prompt")
    values = table.to_numpy(dtype=np.float64)
    if np.isnan(values).any():
        raise InputError(f"{column!r}: every system must be scored on every prompt (a value "
                         "is missing)")
    return values


def _boot_sentinels(h: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Sentinel of every original prompt q in each resample: the mean of ``h`` over the
    resampled prompts other than the copies of q; shape (B, P, S)."""
    n_prompts = h.shape[0]
    total = counts @ h                                                  # (B, S)
    with np.errstate(invalid="ignore", divide="ignore"):
        s = ((total[:, None, :] - counts[:, :, None] * h[None])
             / (n_prompts - counts)[:, :, None])
    return _tie_faithful(np.where(np.isfinite(s), s, 0.0))


def _one(h: np.ndarray, m: np.ndarray, confidence_level: float, n_boot: int,
         rng: np.random.Generator) -> dict:
    n_prompts = h.shape[0]
    if n_prompts < 3:
        raise InputError("the system sentinel needs at least 3 prompts")
    sh = _signs(h)                                                      # (P, pairs)
    tau_m = _kendall_b(h, m, sx=sh)                                     # (P,)
    full = _tie_faithful((h.sum(axis=0)[None, :] - h) / (n_prompts - 1))
    d = tau_m - _kendall_b(h, full)
    defined = np.isfinite(d)
    m_ok = int(defined.sum())
    delta = float(d[defined].mean()) if m_ok else np.nan
    row = {"measure_corr": float(tau_m[defined].mean()) if m_ok else np.nan,
           "sentinel_corr": float((tau_m - d)[defined].mean()) if m_ok else np.nan,
           "delta": delta, "n_prompts": m_ok, "reason": ""}
    counts = rng.multinomial(n_prompts, np.full(n_prompts, 1 / n_prompts),
                             size=n_boot).astype(np.float64)
    replicates = np.empty(n_boot)
    for start in range(0, n_boot, 100):  # (100, P, pairs of systems) signs at a time
        c = counts[start:start + 100]
        d_b = tau_m[None, :] - _kendall_b(h[None], _boot_sentinels(h, c), sx=sh[None])
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a prompt with no correlation
            replicates[start:start + 100] = np.nanmean(np.where(defined, d_b, np.nan), axis=1)
    ok = np.isfinite(replicates)
    var_sentinel = float(np.var(replicates[ok], ddof=1)) if ok.sum() >= 2 else np.nan
    var_prompts = float(np.var(d[defined], ddof=1) / m_ok) if m_ok >= 2 else np.nan
    se = float(np.sqrt(var_prompts + var_sentinel))
    if not (m_ok >= 2 and se > 0):
        row.update(se=np.nan, t=np.nan, df=max(m_ok - 1, 0), p=np.nan, ci_low=np.nan,
                   ci_high=np.nan, reason="fewer than 2 prompts with both correlations "
                   "defined, or no variation over resamples")
        return row
    df = m_ok - 1
    t = delta / se
    q = stats.t.ppf(0.5 + confidence_level / 2, df)
    row.update(se=se, t=t, df=df, p=float(min(2 * stats.t.sf(abs(t), df), 1.0)),
               ci_low=delta - q * se, ci_high=delta + q * se)
    return row


def compare_with_system_sentinel(wide: pd.DataFrame, criterion: str | Sequence[str],
                                 measure: str | Sequence[str], *,
                                 confidence_level: float = 0.95, n_boot: int = 500,
                                 seed: int | None = 0) -> pd.DataFrame:
    """Prompt-level Kendall tau-b of a measure less that of the system-identity sentinel.

    Parameters
    ----------
    wide : DataFrame
        Index ``(system, prompt_id)`` with one story per system and prompt, every system
        scored on every prompt; the criterion and measure columns (``Dataset.wide()``).
    criterion, measure : str or sequence of str
        One comparison, or several (equal-length sequences; a string is repeated). The
        sentinel is built from ``criterion`` (`storyeval.bias.sentinel_scores`, kind
        ``system``).
    confidence_level : float, default 0.95
    n_boot : int, default 500
        Bootstrap resamples of the prompts the sentinel is estimated from.
    seed : int or None, default 0
        Seed of the resampling (one generator for all comparisons, in order).

    Returns
    -------
    DataFrame
        One row per comparison: ``criterion, measure, measure_corr, sentinel_corr`` (the two
        prompt-level correlations: mean over prompts of the within-prompt tau-b), ``delta``
        (their difference), ``se, t, df, p, ci_low, ci_high`` (two-sided), ``n_prompts``,
        ``test``, ``reason``, ``n_boot``, ``seed``.

    Notes
    -----
    With ``H`` (prompts x systems) the criterion, ``s_p = (sum_q H_q - H_p) / (P - 1)`` the
    sentinel of prompt p and ``d_p = tau_b(H_p, M_p) - tau_b(H_p, s_p)``, the estimate is
    ``delta = mean_p d_p`` over the prompts where both are defined. A resample draws P
    prompts with replacement (multiplicities ``c_q``) to estimate the sentinel from: the
    sentinel of every evaluated prompt p becomes ``s_p* = (sum_q c_q H_q - c_p H_p) / (P -
    c_p)`` (the drawn prompts other than p), and ``delta* = mean_p [tau_b(H_p, M_p) -
    tau_b(H_p, s_p*)]`` over the same prompts as ``delta``.
    ``se^2 = var(d) / P + var(delta*)``: the paired t's variance (prompts as a sample, the
    sentinel fixed) plus the variance of the sentinel's estimation error; the covariance
    between the two is left out. ``t = delta / se`` on P - 1 degrees of freedom, interval
    ``delta +- t_{(1 + cl)/2, P - 1} se``. Sentinel values are rounded to 12 significant
    digits as in `sentinel_scores` (ties in exact arithmetic stay ties).

    Why not the alternatives: the paired t over prompts
    (`storyeval.compare.compare_prompt_level`) treats the sentinel's ranking of the systems as
    fixed, and its 95% interval covered 0.92-0.94 in ``benchmarks/bench_bias.py``;
    resampling the evaluated prompts as well (a bootstrap of the whole procedure) gave
    standard errors 6-15% too large (coverage 0.96-0.98); a leave-one-prompt-out jackknife of
    the whole procedure over-covered (0.97-0.99: the sentinel's ranking changes in jumps,
    where the jackknife is not consistent). Measured coverage of this interval:
    ``benchmarks/bench_bias.py`` (docs/bias.md).

    Validated: ``measure_corr`` and ``sentinel_corr`` equal the prompt-level Kendall tau-b of
    ``storyeval meta --sentinels`` on HANNA; the tau-b against ``scipy.stats.kendalltau``; the
    standard error against an explicit recomputation of every resample's sentinels with
    ``numpy`` means and scipy's tau-b (tests/test_bias_sentinel_compare.py).
    """
    if not 0.0 < confidence_level < 1.0:
        raise InputError(f"confidence_level must lie in (0, 1), not {confidence_level!r}")
    crit = [criterion] if isinstance(criterion, str) else list(criterion)
    meas = [measure] if isinstance(measure, str) else list(measure)
    size = max(len(crit), len(meas))
    crit, meas = ([v[0]] * size if len(v) == 1 else v for v in (crit, meas))
    if len(crit) != len(meas):
        raise InputError("criterion and measure must have the same length")
    if n_boot < 2:
        raise InputError(f"n_boot must be at least 2, not {n_boot!r}")
    rng = np.random.default_rng(seed)
    rows = []
    for c, m in zip(crit, meas):
        row = _one(_matrix(wide, c), _matrix(wide, m), confidence_level, n_boot, rng)
        rows.append({"criterion": c, "measure": m, **row, "test": SENTINEL_BOOTSTRAP_TEST,
                     "n_boot": n_boot, "seed": seed})
    first = ["criterion", "measure", "measure_corr", "sentinel_corr", "delta", "ci_low",
             "ci_high", "se", "t", "df", "p", "n_prompts", "test", "reason", "n_boot", "seed"]
    return pd.DataFrame(rows)[first]
