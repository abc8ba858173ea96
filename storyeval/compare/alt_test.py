"""The alternative-annotator test (alt-test): may a judge replace the human annotators?

Calderon, Reichart and Dror (2025) leave one annotator out at a time and ask, item by item, who
aligns better with the remaining annotators: the judge or the left-out annotator. A one-sided
paired t-test with a cost-benefit margin ``epsilon`` per annotator, Benjamini-Yekutieli over the
annotators, and the share of annotators the judge "beats" (the winning rate) give the verdict;
the advantage probability summarises how often the judge is at least as good as an annotator.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from storyeval.compare.multitest import adjust_pvalues
from storyeval.exceptions import InputError, StoryevalWarning, user_stacklevel

__all__ = ["ALT_TEST_COLUMNS", "SCORINGS", "AltTestResult", "SkippedAnnotatorWarning",
           "alt_test", "by_rejections", "paired_differences", "winning_rates"]

#: The built-in alignment scores (the paper's): negative RMSE for numeric ratings, accuracy
#: (share of equal labels) for categorical ones.
SCORINGS: tuple[str, ...] = ("neg_rmse", "accuracy")

#: Columns of `AltTestResult.annotators`.
ALT_TEST_COLUMNS: tuple[str, ...] = (
    "annotator", "n_items", "judge_advantage", "annotator_advantage", "mean_difference",
    "statistic", "df", "pvalue", "pvalue_by", "rejected",
)

Scoring = str | Callable[[Any, np.ndarray], float]


class SkippedAnnotatorWarning(StoryevalWarning):
    """An annotator rated too few items to be tested and was left out of the winning rate."""


@dataclass(frozen=True)
class AltTestResult:
    """Result of [`alt_test`][storyeval.compare.alt_test.alt_test].

    Unpacks as ``(winning_rate, advantage_probability)``, the reference implementation's pair.

    Attributes
    ----------
    winning_rate : float
        Share of the tested annotators whose null hypothesis (the judge is worse than the
        annotator by at least ``epsilon``) is rejected after Benjamini-Yekutieli at ``q``.
    advantage_probability : float
        Mean over tested annotators of the share of items where the judge aligns with the
        others at least as well as the annotator does.
    passed : bool
        ``winning_rate >= 0.5``.
    epsilon, q : float
        The margin and the false discovery rate of the test.
    scoring : str
        The alignment score (``"neg_rmse"``, ``"accuracy"`` or the callable's name).
    annotators : DataFrame
        One row per tested annotator, columns `ALT_TEST_COLUMNS`: items compared, the two
        advantage shares, the mean of the paired differences, the t statistic and its degrees
        of freedom, the one-sided p-value, the BY-adjusted p-value and whether it is rejected.
    n_items : int
        Items kept (annotated by at least ``min_annotators_per_item`` and rated by the judge).
    skipped : tuple of str
        Annotators left out because they rated fewer than ``min_items_per_annotator`` items.
    differences : dict of str to ndarray
        Per tested annotator, the paired differences ``d_i = W^h_i - W^f_i`` of its items (for
        resampling the test, e.g. the items needed to pass it).
    """

    winning_rate: float
    advantage_probability: float
    passed: bool
    epsilon: float
    q: float
    scoring: str
    annotators: pd.DataFrame = field(repr=False)
    n_items: int
    skipped: tuple[str, ...] = ()
    differences: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def __iter__(self) -> Iterator[float]:
        yield self.winning_rate
        yield self.advantage_probability

    def to_frame(self) -> pd.DataFrame:
        """The per-annotator table with the summary (winning rate, advantage probability,
        epsilon, q, scoring, passed) repeated on every row."""
        out = self.annotators.copy()
        for name in ("winning_rate", "advantage_probability", "passed", "epsilon", "q",
                     "scoring"):
            out[name] = getattr(self, name)
        return out


def by_rejections(pvalues: Any, q: float) -> np.ndarray:
    """Which hypotheses the Benjamini-Yekutieli step-up procedure rejects at level ``q``.

    Parameters
    ----------
    pvalues : array_like of float, shape (m,)
        p-values; NaN is never rejected but counts in ``m`` (as in the alt-test's reference).
    q : float
        False discovery rate, in (0, 1).

    Returns
    -------
    ndarray of bool, shape (m,)

    Notes
    -----
    With ``p_(1) <= ... <= p_(m)`` and ``c(m) = sum_{k=1}^m 1/k``, let ``i*`` be the largest
    ``i`` with ``p_(i) <= i q / (m c(m))``; the hypotheses of ``p_(1), ..., p_(i*)`` are
    rejected (Benjamini and Yekutieli 2001, Theorem 1.3).

    Examples
    --------
    >>> by_rejections([0.001, 0.2, 0.01], 0.05).tolist()
    [True, False, True]
    """
    p = np.asarray(pvalues, dtype=float)
    m = p.size
    out = np.zeros(m, dtype=bool)
    if m == 0:
        return out
    order = np.argsort(p, kind="stable")
    thresholds = np.arange(1, m + 1) / m * (q / np.sum(1.0 / np.arange(1, m + 1)))
    passing = np.flatnonzero(p[order] <= thresholds)
    if passing.size:
        out[order[: passing[-1] + 1]] = True
    return out


def _check_options(epsilon: float, q: float, min_annotators_per_item: int,
                   min_items_per_annotator: int, nan_policy: str) -> None:
    if not np.isfinite(epsilon):
        raise InputError(f"alt_test: epsilon must be a finite number, got {epsilon!r}")
    if not 0 < q < 1:
        raise InputError(f"alt_test: q must lie in (0, 1), got {q!r}")
    if int(min_annotators_per_item) < 2:
        raise InputError("alt_test: min_annotators_per_item must be at least 2 (one left out, "
                         f"one to align with), got {min_annotators_per_item!r}")
    if int(min_items_per_annotator) < 2:
        raise InputError("alt_test: min_items_per_annotator must be at least 2, got "
                         f"{min_items_per_annotator!r}")
    if nan_policy not in ("raise", "omit"):
        raise InputError(f"alt_test: nan_policy must be 'raise' or 'omit', got {nan_policy!r}")


def _inputs(judge: Any, annotators: Any) -> tuple[pd.Series, pd.DataFrame]:
    if isinstance(annotators, pd.DataFrame):
        table = annotators
    elif isinstance(annotators, dict):
        table = pd.DataFrame({k: pd.Series(v, dtype=object) for k, v in annotators.items()})
    else:
        table = pd.DataFrame(np.asarray(annotators, dtype=object))
    if table.shape[1] < 2:
        raise InputError(f"alt_test: annotators has {table.shape[1]} annotator column(s); the "
                         "test leaves one out and needs at least two (three or more advised)")
    if not table.columns.is_unique:
        raise InputError("alt_test: annotators has duplicate annotator names: "
                         f"{sorted(map(str, table.columns[table.columns.duplicated()]))}")
    if not table.index.is_unique:
        raise InputError("alt_test: annotators has duplicate item ids: "
                         f"{list(table.index[table.index.duplicated()][:3])}")
    if isinstance(judge, pd.Series | dict):
        series = pd.Series(judge, dtype=object) if isinstance(judge, dict) else judge
        if not series.index.is_unique:
            raise InputError("alt_test: judge has duplicate item ids")
        series = series.reindex(table.index)
    else:
        values = np.asarray(judge, dtype=object)
        if values.ndim != 1 or values.size != len(table):
            raise InputError(f"alt_test: judge must be one rating per item ({len(table)} items "
                             f"of annotators), got shape {values.shape}")
        series = pd.Series(values, index=table.index)
    return series, table


def _first_missing(mask: np.ndarray, index: pd.Index, what: str) -> str:
    row = int(np.flatnonzero(mask)[0])
    return f"{what} has {int(mask.sum())} missing rating(s), the first at item {index[row]!r}"


def _codes(judge: pd.Series, table: pd.DataFrame, scoring: Scoring,
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Numeric arrays (judge, annotators) and their missing masks. Accuracy compares labels,
    so labels become integer codes shared by the judge and the annotators."""
    human_missing = table.isna().to_numpy()
    judge_missing = judge.isna().to_numpy()
    if scoring == "accuracy":
        stacked = pd.concat([judge, *(table[c] for c in table.columns)], ignore_index=True)
        codes, _ = pd.factorize(stacked, use_na_sentinel=True)
        codes = codes.astype(float)
        codes[codes < 0] = np.nan
        n = len(judge)
        return (codes[:n], codes[n:].reshape(table.shape[1], n).T, judge_missing,
                human_missing)
    if callable(scoring):
        return (judge.to_numpy(dtype=object), table.to_numpy(dtype=object), judge_missing,
                human_missing)
    try:
        f = pd.to_numeric(judge, errors="raise").to_numpy(dtype=float)
        h = table.apply(pd.to_numeric, errors="raise").to_numpy(dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"alt_test: scoring='neg_rmse' needs numeric ratings ({exc}); use "
                         "scoring='accuracy' for labels") from None
    for name, values, missing in (("judge", f, judge_missing), ("annotators", h, human_missing)):
        bad = ~np.isfinite(values) & ~missing
        if bad.any():
            row = int(np.argwhere(bad.reshape(len(values), -1))[0][0])
            value = values.reshape(len(values), -1)[row][bad.reshape(len(values), -1)[row]][0]
            raise InputError(f"alt_test: {name} has a non-finite rating ({value!r}) at item "
                             f"{table.index[row]!r}")
    return f, h, judge_missing, human_missing


def _builtin_scores(x: np.ndarray, h: np.ndarray, rest: np.ndarray, scoring: str) -> np.ndarray:
    """Alignment of ``x`` (one value per item) with the annotators ``h`` selected by ``rest``."""
    count = rest.sum(axis=1)
    if scoring == "accuracy":
        return np.where(rest, h == x[:, None], False).sum(axis=1) / count
    sq = np.where(rest, (x[:, None] - np.where(rest, h, 0.0)) ** 2, 0.0)
    return -np.sqrt(sq.sum(axis=1) / count)


def _callable_scores(x: np.ndarray, h: np.ndarray, rest: np.ndarray,
                     scoring: Callable[[Any, np.ndarray], float]) -> np.ndarray:
    return np.array([float(scoring(x[i], h[i, rest[i]])) for i in range(len(x))])


def alt_test(
    judge: Any,
    annotators: Any,
    *,
    scoring: Scoring = "neg_rmse",
    epsilon: float = 0.2,
    q: float = 0.05,
    min_annotators_per_item: int = 2,
    min_items_per_annotator: int = 30,
    nan_policy: str = "raise",
) -> AltTestResult:
    """The alternative-annotator test: does the judge represent the annotators at least as well
    as each of them does, up to a margin ``epsilon``?

    Parameters
    ----------
    judge : Series, dict or array_like, shape (n_items,)
        The judge's rating of each item (a Series or dict keyed by the item ids of
        ``annotators``, or values in the row order of ``annotators``).
    annotators : DataFrame, shape (n_items, n_annotators), or dict of dict
        One column per human annotator, one row per item (the reference's dict of annotator ->
        {item: rating} is accepted too). Missing entries mean "not annotated" under
        ``nan_policy="omit"``.
    scoring : {"neg_rmse", "accuracy"} or callable, default "neg_rmse"
        Alignment of one rating with the other annotators' ratings of the item: negative root
        mean squared difference (numeric ratings) or the share of equal labels (categorical);
        a callable ``f(rating, others: ndarray) -> float`` (higher is better) for anything else.
    epsilon : float, default 0.2
        Cost-benefit margin on the probability scale: the judge wins against an annotator when
        its advantage is shown to exceed the annotator's minus ``epsilon`` (the paper advises
        0.2 for experts, 0.15 for skilled annotators, 0.1 for crowd workers).
    q : float, default 0.05
        False discovery rate of the Benjamini-Yekutieli procedure over annotators.
    min_annotators_per_item : int, default 2
        Items annotated by fewer humans are dropped.
    min_items_per_annotator : int, default 30
        Annotators with fewer compared items are skipped (with a `SkippedAnnotatorWarning`) and
        do not count in the winning rate.
    nan_policy : {"raise", "omit"}, default "raise"
        ``"raise"``: a missing rating is an error. ``"omit"``: a missing annotator rating means
        "not annotated" and items the judge did not rate are dropped (the reference's sparse
        design).

    Returns
    -------
    AltTestResult

    Raises
    ------
    InputError
        Fewer than two annotators, a missing rating under ``nan_policy="raise"``, a non-finite
        numeric rating, no annotator with enough items, or an invalid option.

    Notes
    -----
    For annotator ``j`` and item ``i`` rated by ``j`` and by others ``H_{-j}(i)``, with
    alignment score ``S``: ``W^f_i = 1[S(f_i, H_{-j}(i)) >= S(h_ij, H_{-j}(i))]`` and
    ``W^h_i = 1[S(h_ij, H_{-j}(i)) >= S(f_i, H_{-j}(i))]``. With ``d_i = W^h_i - W^f_i``, the
    one-sample t-test of ``H0: E[d] >= epsilon`` against ``H1: E[d] < epsilon`` (``t = (mean(d)
    - epsilon) / (sd(d) / sqrt(n))``, ``n - 1`` degrees of freedom, lower tail) gives ``p_j``.
    The Benjamini-Yekutieli step-up procedure at ``q`` rejects a set of annotators
    (`by_rejections`); the winning rate is its share of the tested annotators and the judge
    passes when it is at least 0.5. The advantage probability is the mean over annotators of
    ``mean_i W^f_i``. A constant ``d`` gives ``p`` 0 or 1 (NaN when its mean equals
    ``epsilon``), as in the reference.

    References
    ----------
    1. Calderon, N., Reichart, R. and Dror, R. (2025). The Alternative Annotator Test for
       LLM-as-a-Judge: How to Statistically Justify Replacing Human Annotators with LLMs.
       Proceedings of ACL 2025, 16051-16081.
    2. Benjamini, Y. and Yekutieli, D. (2001). The control of the false discovery rate in
       multiple testing under dependency. Annals of Statistics, 29(4), 1165-1188.

    Validated against the authors' reference implementation (GitHub nitaytech/AltTest, function
    ``alt_test``) on its ten datasets x six LLMs and on HANNA's three annotators, to 1e-12.

    Examples
    --------
    >>> import pandas as pd
    >>> humans = pd.DataFrame({"a": [1, 2, 3, 4] * 10, "b": [1, 3, 4, 4] * 10,
    ...                        "c": [2, 2, 3, 5] * 10})
    >>> judge = pd.Series([1.5, 2.5, 3.5, 4.5] * 10)
    >>> res = alt_test(judge, humans, epsilon=0.2)
    >>> round(res.advantage_probability, 3), res.winning_rate, res.passed
    (1.0, 1.0, True)
    """
    _check_options(epsilon, q, min_annotators_per_item, min_items_per_annotator, nan_policy)
    series, table = _inputs(judge, annotators)
    if isinstance(scoring, str) and scoring not in SCORINGS:
        raise InputError(f"alt_test: scoring={scoring!r} is not one of {SCORINGS} or a callable")
    f, h, judge_missing, human_missing = _codes(series, table, scoring)
    if nan_policy == "raise":
        if judge_missing.any():
            raise InputError("alt_test: " + _first_missing(judge_missing, table.index, "judge")
                             + " (nan_policy='omit' drops such items)")
        if human_missing.any():
            rows_missing = np.asarray(human_missing.any(axis=1))
            raise InputError("alt_test: " + _first_missing(rows_missing, table.index, "annotators")
                             + " (nan_policy='omit' reads them as not annotated)")
    present = ~human_missing
    keep = (present.sum(axis=1) >= int(min_annotators_per_item)) & ~judge_missing
    f, h, present = f[keep], h[keep], present[keep]
    names = [str(c) for c in table.columns]
    score: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
    if callable(scoring):
        def score(x, hh, rest):
            return _callable_scores(x, hh, rest, scoring)
        scoring_name = getattr(scoring, "__name__", "custom")
    else:
        def score(x, hh, rest):
            return _builtin_scores(x, hh, rest, scoring)
        scoring_name = scoring

    rows, skipped, differences = [], [], {}
    for j, name in enumerate(names):
        items = present[:, j]
        if items.sum() < int(min_items_per_annotator):
            skipped.append(name)
            continue
        rest = present[items].copy()
        rest[:, j] = False
        hh = h[items]
        judge_score = score(f[items], hh, rest)
        human_score = score(hh[:, j], hh, rest)
        judge_wins = (judge_score >= human_score).astype(float)
        human_wins = (human_score >= judge_score).astype(float)
        diff = human_wins - judge_wins
        differences[name] = diff
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # constant d: p 0, 1 or NaN
            test = stats.ttest_1samp(diff, epsilon, alternative="less")
        rows.append({"annotator": name, "n_items": int(items.sum()),
                     "judge_advantage": float(judge_wins.mean()),
                     "annotator_advantage": float(human_wins.mean()),
                     "mean_difference": float(diff.mean()), "statistic": float(test.statistic),
                     "df": int(items.sum()) - 1, "pvalue": float(test.pvalue)})
    if skipped:
        warnings.warn(f"alt_test: annotator(s) {', '.join(skipped)} rated fewer than "
                      f"{min_items_per_annotator} compared items and are not tested",
                      SkippedAnnotatorWarning, stacklevel=user_stacklevel())
    if not rows:
        raise InputError(f"alt_test: no annotator has {min_items_per_annotator} or more items "
                         "rated by the judge and another annotator")
    frame = pd.DataFrame(rows)
    p = frame["pvalue"].to_numpy()
    frame["pvalue_by"] = adjust_pvalues(np.where(np.isnan(p), 1.0, p), method="by")
    frame.loc[np.isnan(p), "pvalue_by"] = np.nan
    frame["rejected"] = by_rejections(p, q)
    winning = float(frame["rejected"].mean())
    return AltTestResult(
        winning_rate=winning, advantage_probability=float(frame["judge_advantage"].mean()),
        passed=bool(winning >= 0.5), epsilon=float(epsilon), q=float(q), scoring=scoring_name,
        annotators=frame[list(ALT_TEST_COLUMNS)], n_items=int(keep.sum()),
        skipped=tuple(skipped), differences=differences)


def paired_differences(judge: Any, humans: Any, *, scoring: str = "neg_rmse") -> np.ndarray:
    """The alt-test's paired differences ``d = W^h - W^f`` of complete data, many datasets at
    once.

    Parameters
    ----------
    judge : array_like, shape (..., n_items)
    humans : array_like, shape (..., n_items, n_annotators)
        Every annotator rates every item (no missing value); numeric for ``"neg_rmse"``,
        integer codes for ``"accuracy"``.
    scoring : {"neg_rmse", "accuracy"}

    Returns
    -------
    ndarray, shape (..., n_annotators, n_items)
        Row j: the differences of annotator j left out (values -1, 0, 1), as
        ``alt_test(...).differences[j]``.

    Examples
    --------
    >>> paired_differences([2.0, 4.5], [[2, 3, 2], [5, 5, 3]]).tolist()
    [[0.0, -1.0], [-1.0, -1.0], [0.0, -1.0]]
    """
    f = np.asarray(judge, dtype=float)
    h = np.asarray(humans, dtype=float)
    if h.ndim < 2 or f.shape != h.shape[:-1] or h.shape[-1] < 2:
        raise InputError(f"paired_differences: judge shape {f.shape} and humans shape {h.shape} "
                         "do not match (humans: ..., items, annotators >= 2)")
    if scoring not in SCORINGS:
        raise InputError(f"paired_differences: scoring={scoring!r} is not one of {SCORINGS}")
    k = h.shape[-1]
    flat_f, flat_h = f.reshape(-1), h.reshape(-1, k)
    out = np.empty((flat_f.size, k))
    for j in range(k):
        rest = np.ones((flat_f.size, k), dtype=bool)
        rest[:, j] = False
        judge_score = _builtin_scores(flat_f, flat_h, rest, scoring)
        human_score = _builtin_scores(flat_h[:, j], flat_h, rest, scoring)
        out[:, j] = (human_score >= judge_score).astype(float) - (judge_score >= human_score)
    return np.moveaxis(out.reshape(*f.shape, k), -1, -2)


def winning_rates(differences: Any, *, epsilon: float, q: float = 0.05) -> np.ndarray:
    """Winning rates of many alt-tests at once from their paired differences.

    Parameters
    ----------
    differences : array_like, shape (..., n_annotators, n_items)
        As `paired_differences` returns (every annotator with the same items).
    epsilon, q : float
        As in `alt_test`.

    Returns
    -------
    ndarray, shape (...)
        The share of annotators rejected by Benjamini-Yekutieli at ``q``; equal to
        ``alt_test(...).winning_rate`` on the same data (the one-sample t-test computed in
        closed form: ``t = (mean(d) - epsilon) / (sd(d) / sqrt(n))``, lower tail of
        ``t_{n-1}``).

    Examples
    --------
    >>> d = [[-1.0, 0.0, -1.0] * 20, [0.0, 1.0, 0.0] * 20]
    >>> winning_rates(d, epsilon=0.2).tolist()
    0.5
    """
    d = np.asarray(differences, dtype=float)
    n, k = d.shape[-1], d.shape[-2]
    mean = d.mean(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (mean - epsilon) / (d.std(axis=-1, ddof=1) / np.sqrt(n))
    p = np.sort(stats.t.cdf(t, n - 1), axis=-1)  # NaN (0/0) sorts last, never rejected
    thresholds = np.arange(1, k + 1) / k * (q / np.sum(1.0 / np.arange(1, k + 1)))
    passing = p <= thresholds
    rejected = np.where(passing.any(axis=-1), k - np.argmax(passing[..., ::-1], axis=-1), 0)
    return rejected / k
