"""Membership-inference evaluation: ROC AUC, TPR at low FPR, calibrated contamination rates."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from storyeval.exceptions import InputError, UndefinedStatisticWarning, user_stacklevel

__all__ = [
    "ContaminationRate",
    "MembershipEvaluation",
    "calibrate_threshold",
    "contamination_rate",
    "evaluate_membership",
    "roc_auc",
    "tpr_at_fpr",
]

_EPS = 1e-9
DEFAULT_FPRS: tuple[float, ...] = (0.001, 0.01, 0.05)
FPR_COMPARISONS: tuple[str, ...] = ("<", "<=")


def _check_comparison(comparison: str) -> str:
    if comparison not in FPR_COMPARISONS:
        raise InputError(f"comparison must be '<' or '<=', got {comparison!r}")
    return comparison


def _allowed_false_positives(fpr: float, n0: int, comparison: str) -> int:
    """Largest number ``j`` of false positives with ``j / n0 < fpr`` (or ``<=``); -1: none."""
    if comparison == "<":
        return math.ceil(fpr * n0 - _EPS) - 1
    return math.floor(fpr * n0 + _EPS)


def _as_scores(scores, name: str) -> np.ndarray:
    arr = np.asarray(scores, dtype=float)
    if arr.ndim != 1:
        raise InputError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if np.isnan(arr).any():
        bad = int(np.flatnonzero(np.isnan(arr))[0])
        raise InputError(f"{name} contains NaN (first at position {bad}); drop unscored "
                         f"texts first and report how many")
    return arr


def _as_labels(labels, n: int) -> np.ndarray:
    arr = np.asarray(labels)
    if arr.shape != (n,):
        raise InputError(f"is_member must have shape ({n},) like scores, got {arr.shape}")
    if arr.dtype == bool:
        return arr
    vals = set(pd.unique(arr).tolist())
    if not vals <= {0, 1}:
        raise InputError(f"is_member must hold only 0/1 or booleans, got {sorted(map(str, vals))}")
    return arr.astype(int) == 1


def _auc_matrix(pos: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """AUC for each row of ``pos`` (r, n1) against the same row of ``neg`` (r, n0)."""
    n1, n0 = pos.shape[1], neg.shape[1]
    ranks = rankdata(np.concatenate([pos, neg], axis=1), axis=1)  # average ranks for ties
    u = ranks[:, :n1].sum(axis=1) - n1 * (n1 + 1) / 2.0
    return u / (n1 * n0)


def _tpr_matrix(pos: np.ndarray, neg: np.ndarray, fpr: float,
                comparison: str = "<") -> np.ndarray:
    """Largest TPR with empirical FPR < fpr (or <=), for each row (rule: score > tau);
    NaN when no threshold qualifies (``fpr = 0`` with ``"<"``)."""
    n0 = neg.shape[1]
    j = _allowed_false_positives(fpr, n0, comparison)  # false positives allowed
    if j < 0:
        return np.full(pos.shape[0], np.nan)
    if j >= n0:
        return np.ones(pos.shape[0])
    # tau = the (j+1)-th largest non-member score: exactly j non-members lie strictly above
    # it when there are no ties, at most j otherwise.
    tau = -np.partition(-neg, j, axis=1)[:, j]
    return (pos > tau[:, None]).mean(axis=1)


def roc_auc(scores, is_member) -> float:
    """Area under the ROC curve of ``scores`` for separating members from non-members.

    Parameters
    ----------
    scores : array-like of float, shape (n,)
        Higher means "more likely a member".
    is_member : array-like of bool or {0, 1}, shape (n,)

    Returns
    -------
    float
        ``P(S_member > S_non-member) + 0.5 P(tie)``; NaN with a warning if a class is empty.

    Notes
    -----
    Mann-Whitney form: ``AUC = (R_1 - n_1 (n_1 + 1) / 2) / (n_1 n_0)`` with ``R_1`` the sum
    of the members' mid-ranks among all scores.

    Examples
    --------
    >>> roc_auc([0.9, 0.8, 0.3, 0.1], [1, 0, 1, 0])
    0.75

    Validated against ``sklearn.metrics.roc_auc_score``.
    """
    s = _as_scores(scores, "scores")
    y = _as_labels(is_member, s.shape[0])
    if y.all() or not y.any():
        warnings.warn("ROC AUC is undefined: only one class present", UndefinedStatisticWarning,
                      stacklevel=user_stacklevel())
        return math.nan
    return float(_auc_matrix(s[y][None, :], s[~y][None, :])[0])


def tpr_at_fpr(scores, is_member, *, fpr: float = 0.01, comparison: str = "<") -> float:
    """True-positive rate at the best threshold whose false-positive rate is below ``fpr``.

    Parameters
    ----------
    scores : array-like of float, shape (n,)
    is_member : array-like of bool or {0, 1}, shape (n,)
    fpr : float, default 0.01
        Target false-positive rate in [0, 1].
    comparison : {"<", "<="}, default "<"
        ``"<"``: thresholds whose empirical FPR is strictly below ``fpr``, as the evaluation
        code of Shi et al. (2024) (``tpr[np.where(fpr < target)[0][-1]]`` on
        ``sklearn.metrics.roc_curve``); ``"<="``: FPR at most ``fpr`` (as the Min-K%++
        code, and storyeval before this option).

    Returns
    -------
    float
        ``max {TPR(tau) : FPR(tau) < fpr}`` (or ``<=``) over thresholds ``tau`` (flag a text
        as a member when its score exceeds ``tau``), the usual low-FPR figure of
        membership-inference work. NaN with an [`UndefinedStatisticWarning`][] when no
        threshold qualifies (``fpr=0`` with ``"<"``).

    Notes
    -----
    With ``n_0`` non-members, ``"<"`` allows ``ceil(fpr n_0) - 1`` false positives and
    ``"<="`` allows ``floor(fpr n_0)``; they differ when ``fpr n_0`` is a whole number
    (e.g. 5% of 100 non-members: 4 against 5). The FPR resolution is ``1 / n_0``: at
    ``fpr=0.001`` and at most 1,000 non-members no false positive is allowed at all.

    Examples
    --------
    >>> tpr_at_fpr([0.9, 0.8, 0.3, 0.1], [1, 0, 1, 0], fpr=0.5)
    0.5
    >>> tpr_at_fpr([0.9, 0.8, 0.3, 0.1], [1, 0, 1, 0], fpr=0.5, comparison="<=")
    1.0

    Validated against ``sklearn.metrics.roc_curve`` (largest ``tpr`` among points with
    ``fpr < target``, or ``<=``).
    """
    s = _as_scores(scores, "scores")
    y = _as_labels(is_member, s.shape[0])
    if not 0.0 <= fpr <= 1.0:
        raise InputError(f"fpr must be in [0, 1], got {fpr}")
    _check_comparison(comparison)
    if y.all() or not y.any():
        warnings.warn("TPR at FPR is undefined: only one class present",
                      UndefinedStatisticWarning, stacklevel=user_stacklevel())
        return math.nan
    if _allowed_false_positives(fpr, int((~y).sum()), comparison) < 0:
        warnings.warn(f"TPR at FPR {comparison} {fpr:g} is undefined: no threshold has a "
                      f"false-positive rate {comparison} {fpr:g}", UndefinedStatisticWarning,
                      stacklevel=user_stacklevel())
        return math.nan
    return float(_tpr_matrix(s[y][None, :], s[~y][None, :], fpr, comparison)[0])


@dataclass(frozen=True)
class MembershipEvaluation:
    """ROC AUC and TPR at low FPR of one score, with stratified bootstrap percentile CIs.

    Attributes
    ----------
    score_name : str
    auc : float
    auc_ci : (float, float)
    tpr : dict
        ``{fpr: TPR}``.
    tpr_ci : dict
        ``{fpr: (low, high)}``.
    n_members, n_nonmembers : int
    confidence_level : float
    n_resamples : int
    random_state : int or None
    notes : list of str
    fpr_comparison : str
        ``"<"`` or ``"<="``: how the empirical FPR was compared with each target.
    """

    score_name: str
    auc: float
    auc_ci: tuple[float, float]
    tpr: dict[float, float]
    tpr_ci: dict[float, tuple[float, float]]
    n_members: int
    n_nonmembers: int
    confidence_level: float
    n_resamples: int
    random_state: int | None = None
    notes: list[str] = field(default_factory=list)
    fpr_comparison: str = "<"

    def to_frame(self) -> pd.DataFrame:
        """One row per statistic: ``score``, ``statistic``, ``value``, ``ci_low``, ``ci_high``."""
        rows = [{"score": self.score_name, "statistic": "roc_auc", "value": self.auc,
                 "ci_low": self.auc_ci[0], "ci_high": self.auc_ci[1]}]
        for f, v in self.tpr.items():
            rows.append({"score": self.score_name, "statistic": f"tpr@{f:g}fpr", "value": v,
                         "fpr_comparison": self.fpr_comparison,
                         "ci_low": self.tpr_ci[f][0], "ci_high": self.tpr_ci[f][1]})
        out = pd.DataFrame(rows)
        out["n_members"] = self.n_members
        out["n_nonmembers"] = self.n_nonmembers
        out["confidence_level"] = self.confidence_level
        out["n_resamples"] = self.n_resamples
        return out


def _percentile_ci(values: np.ndarray, confidence_level: float) -> tuple[float, float]:
    alpha = (1.0 - confidence_level) / 2.0
    lo, hi = np.quantile(values, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def _check_level(confidence_level: float) -> None:
    if not 0.0 < confidence_level < 1.0:
        raise InputError(f"confidence_level must be in (0, 1), got {confidence_level}")


def evaluate_membership(
    scores,
    is_member,
    *,
    score_name: str = "score",
    fprs: Sequence[float] = DEFAULT_FPRS,
    confidence_level: float = 0.95,
    n_resamples: int = 1000,
    random_state: int | None = 0,
    fpr_comparison: str = "<",
) -> MembershipEvaluation:
    """ROC AUC and TPR at each FPR in ``fprs`` with stratified bootstrap CIs.

    Parameters
    ----------
    scores : array-like of float, shape (n,)
        Membership scores (higher: more likely a member). NaN is refused: drop unscored texts
        first and report their number.
    is_member : array-like of bool or {0, 1}, shape (n,)
    score_name : str, default "score"
        Label used in tables.
    fprs : sequence of float, default (0.001, 0.01, 0.05)
        Target false-positive rates.
    confidence_level : float, default 0.95
    n_resamples : int, default 1000
        Bootstrap resamples; members and non-members are resampled separately (stratified),
        so every resample has both classes.
    random_state : int or None, default 0
        Seed of ``numpy.random.default_rng``.
    fpr_comparison : {"<", "<="}, default "<"
        Empirical FPR strictly below each target (Shi et al.'s evaluation) or at most it;
        see [`tpr_at_fpr`][]. Recorded in the result.

    Returns
    -------
    MembershipEvaluation

    Notes
    -----
    Percentile bootstrap intervals. TPR at FPR as in `tpr_at_fpr`; a note is added when the
    FPR resolution ``1/n_0`` allows no false positive at a target (or no threshold at all).

    Examples
    --------
    >>> res = evaluate_membership([3, 2, 1, 0], [1, 1, 0, 0], n_resamples=200)
    >>> res.auc
    1.0

    Validated against ``sklearn.metrics.roc_auc_score`` / ``roc_curve`` for the point
    estimates; the bootstrap is seeded and reproducible.
    """
    s = _as_scores(scores, "scores")
    y = _as_labels(is_member, s.shape[0])
    _check_level(confidence_level)
    if n_resamples < 1:
        raise InputError(f"n_resamples must be >= 1, got {n_resamples}")
    _check_comparison(fpr_comparison)
    fprs = tuple(float(f) for f in fprs)
    for f in fprs:
        if not 0.0 <= f <= 1.0:
            raise InputError(f"fprs must lie in [0, 1], got {f}")
    pos, neg = s[y], s[~y]
    if pos.size == 0 or neg.size == 0:
        raise InputError(f"evaluate_membership needs members and non-members, got "
                         f"{pos.size} member(s) and {neg.size} non-member(s)")
    rng = np.random.default_rng(random_state)
    pos_b = pos[rng.integers(0, pos.size, size=(n_resamples, pos.size))]
    neg_b = neg[rng.integers(0, neg.size, size=(n_resamples, neg.size))]
    auc = float(_auc_matrix(pos[None, :], neg[None, :])[0])
    auc_ci = _percentile_ci(_auc_matrix(pos_b, neg_b), confidence_level)
    tpr, tpr_ci, notes = {}, {}, []
    for f in fprs:
        tpr[f] = float(_tpr_matrix(pos[None, :], neg[None, :], f, fpr_comparison)[0])
        tpr_ci[f] = _percentile_ci(_tpr_matrix(pos_b, neg_b, f, fpr_comparison),
                                   confidence_level)
        j = _allowed_false_positives(f, neg.size, fpr_comparison)
        if j < 0:
            notes.append(f"TPR at FPR {fpr_comparison} {f:g} is undefined: no threshold has "
                         f"a false-positive rate {fpr_comparison} {f:g}")
        elif j == 0:
            notes.append(f"FPR {fpr_comparison} {f:g} with {neg.size} non-members (resolution "
                         f"1/{neg.size}): no false positive allowed")
    return MembershipEvaluation(score_name=score_name, auc=auc, auc_ci=auc_ci, tpr=tpr,
                                tpr_ci=tpr_ci, n_members=int(pos.size),
                                n_nonmembers=int(neg.size), confidence_level=confidence_level,
                                n_resamples=n_resamples, random_state=random_state, notes=notes,
                                fpr_comparison=fpr_comparison)


def calibrate_threshold(nonmember_scores, *, fpr: float = 0.05) -> float:
    """Threshold whose false-positive rate on known non-members is at most ``fpr``.

    Parameters
    ----------
    nonmember_scores : array-like of float, shape (n0,)
        Scores of texts known not to be in the training data (e.g. written after the
        model's training cut-off).
    fpr : float, default 0.05

    Returns
    -------
    float
        ``tau``, the ``(floor(fpr n0) + 1)``-th largest non-member score; a text is flagged
        when its score is strictly greater than ``tau``, so at most ``floor(fpr n0)``
        calibration texts are flagged.

    Examples
    --------
    >>> calibrate_threshold([0.0, 1.0, 2.0, 3.0, 4.0], fpr=0.2)
    3.0

    Validated by counting flagged calibration texts in the tests.
    """
    neg = _as_scores(nonmember_scores, "nonmember_scores")
    if neg.size == 0:
        raise InputError("nonmember_scores is empty")
    if not 0.0 <= fpr < 1.0:
        raise InputError(f"fpr must be in [0, 1), got {fpr}")
    j = math.floor(fpr * neg.size + _EPS)
    return float(np.sort(neg)[::-1][j])


@dataclass(frozen=True)
class ContaminationRate:
    """Share of texts flagged as seen in training, with its calibration.

    ``rate`` is the share of target texts scoring above ``threshold``; ``calibration_fpr`` is
    the share of calibration non-members above it (at most ``target_fpr``). The CI resamples
    calibration and target texts together, so it includes the threshold's uncertainty.
    """

    score_name: str
    rate: float
    ci: tuple[float, float]
    threshold: float
    target_fpr: float
    calibration_fpr: float
    n_texts: int
    n_flagged: int
    n_calibration: int
    confidence_level: float
    n_resamples: int
    random_state: int | None

    def to_frame(self) -> pd.DataFrame:
        """A one-row table of all fields."""
        row = dict(self.__dict__)
        row["ci_low"], row["ci_high"] = row.pop("ci")
        return pd.DataFrame([row])


def contamination_rate(
    scores,
    nonmember_scores,
    *,
    fpr: float = 0.05,
    score_name: str = "score",
    confidence_level: float = 0.95,
    n_resamples: int = 1000,
    random_state: int | None = 0,
) -> ContaminationRate:
    """Share of unlabelled texts flagged as members, threshold calibrated on non-members.

    Parameters
    ----------
    scores : array-like of float, shape (n,)
        Scores of the texts whose contamination is in question.
    nonmember_scores : array-like of float, shape (n0,)
        Scores of known non-members under the same model and settings.
    fpr : float, default 0.05
        False-positive rate at which the threshold is calibrated (`calibrate_threshold`).
    score_name : str
    confidence_level : float, default 0.95
    n_resamples : int, default 1000
    random_state : int or None, default 0

    Returns
    -------
    ContaminationRate

    Notes
    -----
    ``rate = #{i : s_i > tau} / n``. Under no contamination, the expected rate is about
    ``fpr`` (the calibration FPR), not 0: compare the rate with ``calibration_fpr``.
    The percentile bootstrap resamples both sets, recomputing ``tau`` each time.

    Examples
    --------
    >>> res = contamination_rate([5.0, 0.5, 6.0, 0.2], [0.0, 1.0, 2.0, 3.0, 4.0], fpr=0.2)
    >>> res.rate
    0.5

    Validated by direct counting in the tests.
    """
    s = _as_scores(scores, "scores")
    neg = _as_scores(nonmember_scores, "nonmember_scores")
    if s.size == 0:
        raise InputError("scores is empty")
    _check_level(confidence_level)
    if n_resamples < 1:
        raise InputError(f"n_resamples must be >= 1, got {n_resamples}")
    tau = calibrate_threshold(neg, fpr=fpr)
    rng = np.random.default_rng(random_state)
    s_b = s[rng.integers(0, s.size, size=(n_resamples, s.size))]
    neg_b = neg[rng.integers(0, neg.size, size=(n_resamples, neg.size))]
    j = math.floor(fpr * neg.size + _EPS)
    tau_b = -np.partition(-neg_b, j, axis=1)[:, j]
    rates_b = (s_b > tau_b[:, None]).mean(axis=1)
    flagged = int((s > tau).sum())
    return ContaminationRate(score_name=score_name, rate=flagged / s.size,
                             ci=_percentile_ci(rates_b, confidence_level), threshold=tau,
                             target_fpr=fpr, calibration_fpr=float((neg > tau).mean()),
                             n_texts=int(s.size), n_flagged=flagged, n_calibration=int(neg.size),
                             confidence_level=confidence_level, n_resamples=n_resamples,
                             random_state=random_state)
