"""Bradley-Terry strengths from pairwise verdicts, with ties (Davidson 1970), and bootstrap CIs.

Model
-----
Item ``i`` has a log-strength ``theta_i`` (``pi_i = exp(theta_i)``). For one comparison of ``i``
and ``j``, Davidson's (1970) extension of Bradley-Terry gives

    P(i beats j) = pi_i / D_ij,   P(j beats i) = pi_j / D_ij,   P(tie) = nu sqrt(pi_i pi_j) / D_ij,
    D_ij = pi_i + pi_j + nu sqrt(pi_i pi_j),

with one tie parameter ``nu >= 0`` shared by all pairs. Ties therefore *enter as their own
outcome*: a tie is evidence that the two strengths are close (its probability is largest when
``pi_i = pi_j``), and the maximum likelihood equations say that every item's expected score
equals its observed score when a win counts 1 and a tie 1/2. Without ties (``nu = 0``) the model
is the plain Bradley-Terry model. Davidson's model was chosen over Rao-Kupper's because its
estimating equations keep this "a tie is half a win" reading and it reduces exactly to
Bradley-Terry; ``ties="half"`` (each tie split into half a win for each side, plain BT) and
``ties="drop"`` are available for comparison.

Log-strengths are identified up to a constant; they are reported centred (mean zero), as in the
system rankings of Agents' Room (paper 000).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from storyeval.exceptions import InputError, UndefinedStatisticWarning, user_stacklevel
from storyeval.pairwise.arena import bootstrap_fits, count_battles, fit_counts
from storyeval.pairwise.winmatrix import select_verdicts

__all__ = ["BradleyTerryResult", "bradley_terry", "fit_bradley_terry"]

_TIES = ("davidson", "half", "drop")


@dataclass(frozen=True)
class BradleyTerryResult:
    """Maximum likelihood Bradley-Terry(-Davidson) fit.

    Attributes
    ----------
    items : list of str
    log_strength : ndarray
        Centred log-strengths ``theta`` (mean zero); NaN if the MLE does not exist.
    tie_parameter : float
        Davidson's ``nu`` (0 when ties are not modelled or none occurred).
    log_likelihood : float
    n_comparisons : int
        Number of verdicts used (ties included).
    ties : str
        How ties entered: ``"davidson"``, ``"half"`` or ``"drop"``.
    converged : bool
    reason : str
        Why the strengths are NaN (empty otherwise).
    """

    items: list
    log_strength: np.ndarray
    tie_parameter: float
    log_likelihood: float
    n_comparisons: int
    ties: str
    converged: bool
    reason: str = ""

    def probabilities(self) -> pd.DataFrame:
        """``P(row item beats column item)`` for one comparison under the fitted model."""
        th = self.log_strength
        pi = np.exp(th - np.nanmax(th)) if np.isfinite(th).all() else np.full(th.shape, np.nan)
        nu = self.tie_parameter
        d = pi[:, None] + pi[None, :] + nu * np.sqrt(pi[:, None] * pi[None, :])
        p = pi[:, None] / d
        np.fill_diagonal(p, np.nan)
        return pd.DataFrame(p, index=self.items, columns=self.items)

    def to_frame(self) -> pd.DataFrame:
        """``item, log_strength, strength, rank`` (rank 1 = strongest; an integer column,
        ``<NA>`` when the strengths are NaN)."""
        th = self.log_strength
        order = pd.Series(th).rank(ascending=False, method="min")
        rank = order.astype("Int64").array  # integer ranks; <NA> when the MLE does not exist
        return pd.DataFrame({"item": self.items, "log_strength": th, "strength": np.exp(th),
                             "rank": rank})


def _as_matrix(m, name: str, items: list | None) -> tuple[np.ndarray, list]:
    if isinstance(m, pd.DataFrame):
        if list(m.index) != list(m.columns):
            raise InputError(f"{name}: rows and columns must list the same items in the same "
                             "order")
        labels = list(m.index)
        arr = m.to_numpy(dtype=np.float64)
    else:
        arr = np.asarray(m, dtype=np.float64)
        labels = list(range(arr.shape[0])) if arr.ndim == 2 else []
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise InputError(f"{name} must be a square matrix, got shape {arr.shape}")
    if not np.isfinite(arr).all() or (arr < 0).any():
        raise InputError(f"{name} must hold finite non-negative counts")
    if np.any(np.diag(arr) != 0):
        raise InputError(f"{name}: the diagonal (an item against itself) must be zero")
    return arr, (items if items is not None else labels)


def _fit_arrays(wins, ties, ties_mode, alpha, start=None):
    """(theta centred, nu, loglik, converged, reason) from count matrices (Newton, see
    `storyeval.pairwise.arena`)."""
    return fit_counts(wins, ties, ties_model=ties_mode, regularization=alpha, start=start)


def fit_bradley_terry(
    wins,
    ties=None,
    *,
    ties_model: str = "davidson",
    regularization: float = 0.0,
    items: list | None = None,
) -> BradleyTerryResult:
    """Maximum likelihood Bradley-Terry strengths from a win matrix, ties by Davidson's model.

    Parameters
    ----------
    wins : (k, k) array or DataFrame
        ``wins[i, j]``: number of comparisons won by ``i`` against ``j``.
    ties : (k, k) array or DataFrame, optional
        Symmetric number of ties between ``i`` and ``j`` (each tie counted once in ``[i, j]``
        and once in ``[j, i]``, as `WinMatrix` stores them).
    ties_model : {"davidson", "half", "drop"}, default "davidson"
        How ties enter: Davidson's tie outcome (see the module docstring); ``"half"``: each tie
        is half a win for each side in a plain Bradley-Terry fit; ``"drop"``: ties ignored.
    regularization : float, default 0
        Ridge penalty: the fit maximises ``l(theta) - regularization * sum(theta^2)`` (the
        log-likelihood ``l`` below), i.e. minimises ``-l + regularization * sum(theta^2)``,
        exactly the objective of ``choix.opt_pairwise(..., alpha=regularization)``, so the same
        number gives the same (centred) estimates as choix's ``alpha``. Makes the estimate
        finite when the MLE does not exist. (Earlier versions penalised
        ``regularization / 2 * sum(theta^2)``, i.e. choix's ``alpha = regularization / 2``;
        see CHANGELOG.md.)
    items : list, optional
        Item labels (default: the DataFrame index, or 0..k-1).

    Returns
    -------
    BradleyTerryResult
        NaN strengths with a ``reason`` and an [`UndefinedStatisticWarning`][] when the MLE
        does not exist (the "beat or tied" graph is not strongly connected) and
        ``regularization == 0``.

    Notes
    -----
    Log-likelihood (``N = W + W^T + T``, ``nu = exp(lambda)``):

        l = sum_{i,j} W_ij [theta_i - log D_ij] + 1/2 sum_{i,j} T_ij [lambda + (theta_i +
            theta_j)/2 - log D_ij],   D_ij = e^theta_i + e^theta_j + nu e^{(theta_i+theta_j)/2}

    maximised by Newton's method with backtracking (the negative log-likelihood is convex in
    ``(theta, lambda)``; see `storyeval.pairwise.arena`) with the analytic gradient
    ``dl/dtheta_i = sum_j (W_ij + T_ij/2) - sum_j N_ij (p_ij + q_ij/2)`` (``p_ij = e^theta_i /
    D_ij``, ``q_ij`` the tie probability), ``dl/dlambda = sum_{i<j} (T_ij - N_ij q_ij)``; with
    ``regularization = a > 0`` the objective is ``l - a sum_i theta_i^2`` (gradient
    ``- 2 a theta_i``). The steps stay centred (mean zero): the score equations sum to zero.
    ``log_likelihood`` is the maximised objective (penalty included).

    References
    ----------
    1. Bradley, R. A., Terry, M. E. (1952). Rank analysis of incomplete block designs.
       Biometrika 39.
    2. Davidson, R. R. (1970). On extending the Bradley-Terry model to accommodate ties in
       paired comparison experiments. JASA 65(329).
    3. Ford, L. R. (1957). Solution of a ranking problem from binary comparisons. American
       Mathematical Monthly 64.

    Validated against ``choix.ilsr_pairwise`` and a statsmodels logistic regression without
    intercept (no ties), and against Davidson's estimating equations (ties), in
    tests/test_pairwise_bt.py.

    Examples
    --------
    >>> import numpy as np
    >>> w = np.array([[0, 3, 2], [1, 0, 2], [1, 1, 0]])
    >>> res = fit_bradley_terry(w)
    >>> [round(float(x), 3) for x in res.log_strength]
    [0.63, -0.151, -0.479]
    """
    if ties_model not in _TIES:
        raise InputError(f"ties_model must be one of {_TIES}, got {ties_model!r}")
    if not (np.isscalar(regularization) and np.isfinite(regularization) and regularization >= 0):
        raise InputError(f"regularization must be a finite number >= 0, got {regularization!r}")
    w, labels = _as_matrix(wins, "wins", items)
    if ties is None:
        t = np.zeros_like(w)
    else:
        t, _ = _as_matrix(ties, "ties", items)
        if t.shape != w.shape:
            raise InputError(f"ties has shape {t.shape}, wins {w.shape}")
        if not np.allclose(t, t.T):
            raise InputError("ties must be symmetric (ties[i, j] == ties[j, i])")
    if len(labels) != w.shape[0]:
        raise InputError(f"items has {len(labels)} labels for {w.shape[0]} items")
    theta, nu, ll, conv, reason = _fit_arrays(w, t, ties_model, float(regularization))
    if reason:
        warnings.warn(f"Bradley-Terry: {reason}", UndefinedStatisticWarning, stacklevel=user_stacklevel())
    n = round(float(w.sum() + t.sum() / 2))
    return BradleyTerryResult(list(labels), theta, nu, ll, n, ties_model, conv, reason)


def bradley_terry(
    verdicts: pd.DataFrame,
    *,
    dimension: str | None = None,
    by: str = "system",
    judge: str | None = None,
    ties: str = "davidson",
    regularization: float = 0.0,
    n_resamples: int = 1000,
    confidence_level: float = 0.95,
    random_state: int | np.random.Generator | None = 0,
) -> pd.DataFrame:
    """Bradley-Terry strengths of systems (or stories) on one dimension, with bootstrap CIs.

    Parameters
    ----------
    verdicts : DataFrame
        A verdict table (`storyeval.pairwise.verdicts`).
    dimension, by, judge
        As in [`storyeval.pairwise.winmatrix.win_matrix`][].
    ties, regularization
        As ``ties_model`` / ``regularization`` of [`fit_bradley_terry`][].
    n_resamples : int, default 1000
        Bootstrap resamples of the *prompts* (all verdicts of a drawn prompt enter as many
        times as it is drawn), drawn through count matrices and refitted by a warm-started
        Newton (`storyeval.pairwise.arena`); 0 for no interval.
    confidence_level : float, default 0.95
        Two-sided percentile interval.
    random_state : int or Generator, default 0
        Seed: ``numpy.random.default_rng(random_state).integers(0, n_prompts, (n_resamples,
        n_prompts))`` gives the resampled prompts. The default is the command line's
        (``pairwise strengths --seed 0``), so a notebook and the CLI print the same intervals;
        None draws a fresh seed.

    Returns
    -------
    DataFrame
        One row per item: ``dimension, item, log_strength, log_strength_ci_low,
        log_strength_ci_high, strength, strength_ci_low, strength_ci_high, rank, wins, losses,
        ties, n_comparisons, tie_parameter, ties_model, n_resamples, n_resamples_valid,
        reason``. ``log_strength*`` are on the log scale (centred ``theta``), ``strength*`` on
        the strength scale (``exp(theta)``, geometric mean 1); the strength interval is the
        exponential of the log-strength interval (percentile intervals commute with monotone
        maps). ``rank`` (1 = strongest, ties share the best rank) and the counts are integers.
        Resamples in which the MLE does not exist are left out and counted in
        ``n_resamples_valid``.

    Notes
    -----
    Prompts are the resampling unit because the verdicts of one prompt share its stories and
    its difficulty; resampling verdicts independently would understate the uncertainty.

    Validated as [`fit_bradley_terry`][] (point estimate); the bootstrap is checked for
    reproducibility and coverage of the point estimate in tests/test_pairwise_bt.py.

    Examples
    --------
    >>> import pandas as pd
    >>> v = pd.DataFrame({"prompt_id": [0, 0, 1, 1], "story_a": ["X/0", "Y/0", "X/1", "Y/1"],
    ...                   "story_b": ["Y/0", "X/0", "Y/1", "X/1"], "dimension": "Plot",
    ...                   "verdict": ["A", "B", "B", "same"], "order": "AB"})
    >>> bradley_terry(v, n_resamples=0)[["item", "wins", "losses", "ties"]].values.tolist()
    [['X', 2, 1, 1], ['Y', 1, 2, 1]]
    """
    if ties not in _TIES:
        raise InputError(f"ties must be one of {_TIES}, got {ties!r}")
    if not isinstance(n_resamples, (int, np.integer)) or n_resamples < 0:
        raise InputError(f"n_resamples must be an integer >= 0, got {n_resamples!r}")
    if not 0 < confidence_level < 1:
        raise InputError(f"confidence_level must be in (0, 1), got {confidence_level!r}")
    from storyeval.pairwise.leaderboard import battle_arrays

    v = select_verdicts(verdicts, dimension=dimension, judge=judge)
    items, a, b, outcome, _, prompts = battle_arrays(v, by)
    counts = count_battles(a, b, outcome, len(items), cluster=prompts)
    wins, tie_m = counts.wins, counts.ties
    fit = fit_bradley_terry(wins, tie_m, ties_model=ties, regularization=regularization,
                            items=items)
    k = len(items)
    low = np.full(k, np.nan)
    high = np.full(k, np.nan)
    n_valid = 0
    if n_resamples > 0 and np.isfinite(fit.log_strength).all():
        fits = bootstrap_fits(counts, n_resamples=n_resamples, ties_model=ties,
                              regularization=float(regularization),
                              start=(fit.log_strength, fit.tie_parameter),
                              random_state=random_state)
        thetas = fits.samples
        ok = np.isfinite(thetas).all(axis=1)
        n_valid = int(ok.sum())
        if n_valid:
            a_ = (1 - confidence_level) / 2
            low, high = np.quantile(thetas[ok], [a_, 1 - a_], axis=0)
        if fits.problem():
            warnings.warn(f"Bradley-Terry bootstrap: {fits.problem('prompt ')}",
                          UndefinedStatisticWarning, stacklevel=user_stacklevel())
    fr = fit.to_frame()

    def _count(x: np.ndarray) -> np.ndarray:  # verdict counts are whole numbers
        return np.rint(x).astype(np.int64)

    out = pd.DataFrame({
        "dimension": str(v["dimension"].iloc[0]),
        "item": fr["item"],
        "log_strength": fr["log_strength"],
        "log_strength_ci_low": low,
        "log_strength_ci_high": high,
        "strength": fr["strength"],
        "strength_ci_low": np.exp(low),
        "strength_ci_high": np.exp(high),
        "rank": fr["rank"],
        "wins": _count(wins.sum(axis=1)),
        "losses": _count(wins.sum(axis=0)),
        "ties": _count(tie_m.sum(axis=1)),
    })
    out["n_comparisons"] = out["wins"] + out["losses"] + out["ties"]
    out["tie_parameter"] = fit.tie_parameter
    out["ties_model"] = ties
    out["n_resamples"] = n_resamples
    out["n_resamples_valid"] = n_valid
    out["reason"] = fit.reason
    return out
