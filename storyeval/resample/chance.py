"""Chance baselines: the distribution of a correlation between a human criterion and a *random*
measure, to read measured coefficients against (is 0.05 overall Kendall noise? is 0.6 with 10
systems?)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from storyeval.correlation.resampled import _chunks, _prompt_mean, direct
from storyeval.correlation.ties import TIE_RTOL
from storyeval.exceptions import InputError, UndefinedStatisticWarning, user_stacklevel
from storyeval.resample._common import check_confidence, check_method, check_positive_int
from storyeval.resample._data import check_level

__all__ = ["chance_baseline", "chance_distribution"]


# Up to this many distinct criterion values, C - D is counted by level (O(n G) per draw);
# beyond, by sorting (O(n log n) per draw, `storyeval.correlation.kendall_sorted`).
_MAX_LEVELS = 64


def _kendall_s(z: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """C - D between z (n,) and a random untied measure whose order is ``perm`` (D, n).

    Reading z in the random measure's order, ``C - D = sum_j (#earlier smaller - #earlier
    larger)``; earlier counts per distinct z value come from a cumulative one-hot count. A
    criterion with more than ``_MAX_LEVELS`` distinct values is counted by sorting instead.
    """
    _, codes = np.unique(z, return_inverse=True)
    G = int(codes.max()) + 1
    D, n = perm.shape
    if G > _MAX_LEVELS:
        return _kendall_s_sorted(z, perm)
    out = np.empty(D)
    for sl in _chunks(D, n * G * 8 * 3):
        seq = codes[perm[sl]]  # (d, n)
        onehot = np.zeros((seq.shape[0], n, G))
        np.put_along_axis(onehot, seq[..., None], 1.0, axis=2)
        earlier = np.cumsum(onehot, axis=1) - onehot  # counts strictly before position j
        below = np.cumsum(earlier, axis=2) - earlier  # earlier with a smaller code
        less = np.take_along_axis(below, seq[..., None], axis=2)[..., 0]
        equal = np.take_along_axis(earlier, seq[..., None], axis=2)[..., 0]
        greater = np.arange(n)[None, :] - less - equal
        out[sl] = (less - greater).sum(axis=1)
    return out


def _kendall_s_sorted(z: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """`_kendall_s` by O(n log n) counting per draw: the random measure is the position of each
    observation in ``perm``."""
    from storyeval.correlation.kendall_sorted import sorted_counts

    D, n = perm.shape
    out = np.empty(D)
    for sl in _chunks(D, n * 8 * 12):
        position = np.empty(perm[sl].shape)
        np.put_along_axis(position, perm[sl], np.arange(n, dtype=np.float64)[None, :], axis=1)
        zz = np.broadcast_to(z, position.shape)[..., None]
        out[sl] = sorted_counts(position[..., None], np.ascontiguousarray(zz))[0][:, 0, 0]
    return out


def _vector_chance(z: np.ndarray, method: str, n_draws: int, rng: np.random.Generator):
    n = z.size
    if method == "pearson":
        R = rng.standard_normal((n_draws, n))
        Rc = R - R.mean(axis=1, keepdims=True)
        zc = z - z.mean()
        den = np.sqrt((Rc**2).sum(axis=1) * (zc**2).sum())
        return np.clip((Rc @ zc) / den, -1, 1)
    U = rng.random((n_draws, n))
    if method == "spearman":
        from scipy.stats import rankdata

        ranks = np.argsort(np.argsort(U, axis=1), axis=1) + 1.0
        rz = rankdata(z)
        rc = ranks - ranks.mean(axis=1, keepdims=True)
        zc = rz - rz.mean()
        return np.clip((rc @ zc) / np.sqrt((rc**2).sum(axis=1) * (zc**2).sum()), -1, 1)
    S = _kendall_s(z, np.argsort(U, axis=1))
    _, counts = np.unique(z, return_counts=True)
    n0 = n * (n - 1) / 2
    if method == "kendall_b":
        tz = (counts * (counts - 1) / 2).sum()
        return S / np.sqrt(n0 * (n0 - tz))
    m = min(n, len(counts))
    return 2 * S / (n**2 * (m - 1) / m)


def chance_distribution(
    structure,
    *,
    method: str = "kendall_b",
    n_draws: int = 1000,
    random_state: int | np.random.Generator | None = 0,
) -> np.ndarray:
    """Correlations between a criterion and independent random measures.

    Parameters
    ----------
    structure : int, 1-D or 2-D array
        ``int n``: a criterion with ``n`` distinct values (no ties); 1-D array: the criterion's
        values at the level (e.g. the 960 story scores, or the 10 system means), ties kept;
        2-D array ``(prompts, systems)``: the prompt level (one coefficient per prompt over
        systems, averaged over the prompts where it is defined).
    method : {"kendall_b", "kendall_c", "pearson", "spearman"}, default "kendall_b"
    n_draws : int, default 1000
    random_state : int, Generator or None, default 0
        Seed of the resampling (0, as the command line; None draws a fresh seed: not
        reproducible).

    Returns
    -------
    ndarray, shape (n_draws,)
        One coefficient per random measure.

    Notes
    -----
    The random measure gives every observation an independent continuous score: uniform for
    the rank coefficients (so its order is a uniformly random permutation; the distribution
    does not depend on the score distribution), standard normal for Pearson. A measure that
    scores *stories* at random also ranks *systems* uniformly at random (its system means are
    exchangeable), so the system-level baseline is this distribution with ``structure`` the
    criterion's system means. The distribution is centred on 0; its spread is what a
    coefficient must exceed to be distinguishable from noise.

    Validated against the exact null distribution of Kendall's tau (all permutations of small
    n) and against scipy's coefficients on the same random draws in tests/test_chance.py.

    Examples
    --------
    >>> import numpy as np
    >>> d = chance_distribution(10, n_draws=2000, random_state=0)
    >>> bool(0.4 < np.quantile(np.abs(d), 0.95) < 0.6)
    True
    """
    method = check_method(method)
    n_draws = check_positive_int(n_draws, "n_draws")
    rng = np.random.default_rng(random_state)
    if isinstance(structure, (int, np.integer)) and not isinstance(structure, bool):
        if structure < 2:
            raise InputError(f"structure: need at least 2 observations, got {structure}")
        z = np.arange(int(structure), dtype=np.float64)
    else:
        z = np.asarray(structure, dtype=np.float64)
    if z.ndim not in (1, 2) or z.size == 0:
        raise InputError("structure must be an int, a 1-D array (criterion values) or a 2-D "
                         f"array (prompts x systems); got shape {z.shape}")
    if not np.isfinite(z).all():
        raise InputError("structure has missing or infinite values")
    if z.ndim == 1:
        if len(np.unique(z)) < 2:
            warnings.warn("chance_distribution: the criterion is constant, every coefficient is "
                          "undefined (NaN)", UndefinedStatisticWarning, stacklevel=user_stacklevel())
            return np.full(n_draws, np.nan)
        return _vector_chance(z, method, n_draws, rng)
    P, S = z.shape
    if S < 2:
        raise InputError("prompt-level structure needs at least 2 systems (columns)")
    out = np.empty(n_draws)
    constant = np.ptp(z, axis=1) == 0
    if constant.all():
        warnings.warn("chance_distribution: the criterion is constant within every prompt, the "
                      "prompt-level coefficient is undefined (NaN)", UndefinedStatisticWarning,
                      stacklevel=user_stacklevel())
        return np.full(n_draws, np.nan)
    for sl in _chunks(n_draws, P * S * S * 2 * 8 * 4):
        d = sl.stop - sl.start
        R = rng.standard_normal((d, P, S)) if method == "pearson" else rng.random((d, P, S))
        V = np.stack([np.broadcast_to(z, (d, P, S)), R], axis=-1)  # (d, P, S, 2)
        r = direct(V, np.ones(S), np.array([1]), np.array([0]), method)  # (d, P, 1)
        out[sl] = _prompt_mean(r, np.ones((d, P)))[:, 0]
    return out


def chance_baseline(
    wide: pd.DataFrame,
    criteria: Sequence[str] | str,
    *,
    level: str = "overall",
    method: str = "kendall_b",
    n_draws: int = 1000,
    confidence_level: float = 0.95,
    random_state: int | np.random.Generator | None = 0,
    tie_rtol: float = TIE_RTOL,
) -> pd.DataFrame:
    """Chance baseline of each criterion at a level: the spread of its correlation with random
    measures, to print next to measured coefficients.

    Parameters
    ----------
    wide : DataFrame
        Index ``(system, prompt_id)``, criteria as columns (HANNA: 10 systems, the paper's
        setting, ``load_hanna(include_human_stories=False).wide()``).
    criteria : str or sequence of str
    level : {"overall", "system", "prompt"}, default "overall"
    method : {"kendall_b", "kendall_c", "pearson", "spearman"}, default "kendall_b"
    n_draws : int, default 1000
    confidence_level : float, default 0.95
        Central interval ``[low, high]`` of the chance distribution, and ``abs_high``: the
        ``confidence_level`` quantile of ``|r|`` (a measured ``|r|`` below it is within chance).
    random_state : int, Generator or None, default 0
        Seed of the resampling (0, as the command line; None draws a fresh seed: not
        reproducible).
        One generator for all criteria, in the order given.
    tie_rtol : float, default 1e-12
        The tie rule of the criterion's system means (`storyeval.correlation.ties`), as in the
        measured correlations.

    Returns
    -------
    DataFrame
        ``criterion, level, coefficient, n, mean, sd, low, high, abs_high, confidence_level,
        n_draws``; ``n`` is the number of stories / systems correlated (systems per prompt at
        the prompt level).

    Validated as [`chance_distribution`][] (tests/test_chance.py).

    Examples
    --------
    >>> from storyeval.data import load_hanna
    >>> wide = load_hanna(include_human_stories=False).wide()
    >>> sys_ = chance_baseline(wide, "Relevance", level="system", n_draws=2000, random_state=0)
    >>> bool(0.4 < sys_.loc[0, "abs_high"] < 0.6)  # 10 systems: |tau| < ~0.5 is chance
    True
    """
    from storyeval.correlation.levels import level_data

    level = check_level(level)
    method = check_method(method)
    cl = check_confidence(confidence_level)
    criteria = [criteria] if isinstance(criteria, str) else list(criteria)
    if not criteria:
        raise InputError("criteria is empty")
    rng = np.random.default_rng(random_state)
    data = level_data(wide, criteria, level=level, tie_rtol=tie_rtol)
    rows = []
    a = (1 - cl) / 2
    for k, crit in enumerate(criteria):
        if level == "prompt":
            z = data[:, :, k]
            n = z.shape[1]
        else:
            z = data[crit].to_numpy(dtype=np.float64)
            n = z.size
        d = chance_distribution(z, method=method, n_draws=n_draws, random_state=rng)
        ok = np.isfinite(d)
        if ok.any():
            low, high = np.quantile(d[ok], [a, 1 - a])
            abs_high = np.quantile(np.abs(d[ok]), cl)
            mean, sd = d[ok].mean(), d[ok].std(ddof=1)
        else:
            low = high = abs_high = mean = sd = np.nan
        rows.append({"criterion": crit, "level": level, "coefficient": method, "n": n,
                     "mean": mean, "sd": sd, "low": low, "high": high, "abs_high": abs_high,
                     "confidence_level": cl, "n_draws": n_draws})
    return pd.DataFrame(rows)
