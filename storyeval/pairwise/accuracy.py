"""Meta-evaluation on pairs: a pairwise judge against human preferences, and pointwise measures
turned into pairwise decisions (every pair of stories of one prompt)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from storyeval.exceptions import InputError, UndefinedStatisticWarning
from storyeval.pairwise.consistency import _pair_keys
from storyeval.pairwise.verdicts import validate_verdicts

__all__ = ["judge_accuracy", "pointwise_pairwise_accuracy"]

_HUMAN_TIES = ("exclude", "include")


def _check_credit(tie_credit: float, name: str) -> float:
    if not (np.isscalar(tie_credit) and 0 <= float(tie_credit) <= 1):
        raise InputError(f"{name} must be a number in [0, 1], got {tie_credit!r}")
    return float(tie_credit)


def judge_accuracy(
    judge_verdicts: pd.DataFrame,
    reference: pd.DataFrame,
    *,
    judge: str | None = None,
    dimension: str | None = None,
    tie_credit: float = 0.0,
) -> pd.DataFrame:
    """Accuracy of a pairwise judge against human preferences, averaged over both orders.

    Parameters
    ----------
    judge_verdicts : DataFrame
        The judge's verdict table (each pair ideally judged in both orders).
    reference : DataFrame
        Human verdicts on the same pairs (any number per pair: several annotators, or both
        orders); the human preference of a pair is the majority over its reference verdicts
        (wins minus losses; a draw or a majority of "same" makes the pair a human tie).
    judge : str, optional
        Keep only this judge's rows of ``judge_verdicts`` (default: one row per judge).
    dimension : str, optional
        Keep one dimension (default: one row per dimension).
    tie_credit : float, default 0
        Credit for a judge's "same" on a pair humans decided (0: wrong, 0.5: half right).

    Returns
    -------
    DataFrame
        One row per (judge, dimension): ``accuracy`` (mean of the two order accuracies),
        ``accuracy_preferred_first`` (verdicts where the human-preferred story was shown
        first), ``accuracy_preferred_second``, ``n_pairs`` (human-decided pairs with at least
        one judge verdict), ``n_verdicts``, ``n_human_ties`` (pairs left out because humans
        tied), ``n_unmatched`` (judge pairs absent from the reference).

    Notes
    -----
    accuracy = (acc_1 + acc_2) / 2, acc_o = mean over the verdicts shown in order o of
    [verdict names the human-preferred story] (+ ``tie_credit`` for "same"). Averaging the two
    orders removes the effect of position bias on the score, as in LitBench (paper 002), which
    averages the two presentations of each pair.

    References
    ----------
    .. [1] Fein, D. et al. (2025). LitBench: A Benchmark and Dataset for Reliable Evaluation of
       Creative Writing.

    Validated against hand-counted verdicts in tests/test_pairwise.py.

    Examples
    --------
    >>> import pandas as pd
    >>> human = pd.DataFrame({"prompt_id": 0, "story_a": ["X/0"], "story_b": ["Y/0"],
    ...                       "dimension": "Plot", "verdict": ["A"], "order": ["AB"]})
    >>> llm = pd.DataFrame({"prompt_id": 0, "story_a": ["X/0", "X/0"], "story_b": ["Y/0", "Y/0"],
    ...                     "dimension": "Plot", "verdict": ["A", "B"], "order": ["AB", "BA"],
    ...                     "judge": "llm"})
    >>> judge_accuracy(llm, human)[["accuracy", "accuracy_preferred_first"]].values.tolist()
    [[0.5, 1.0]]
    """
    credit = _check_credit(tie_credit, "tie_credit")
    jv = validate_verdicts(judge_verdicts, source="judge_verdicts")
    rv = validate_verdicts(reference, source="reference")
    if judge is not None:
        if judge not in set(jv["judge"]):
            raise InputError(f"judge {judge!r} not in judge_verdicts; available: "
                             f"{sorted(set(jv['judge']))}")
        jv = jv[jv["judge"] == judge]
    if dimension is not None:
        for name, t in (("judge_verdicts", jv), ("reference", rv)):
            if dimension not in set(t["dimension"]):
                raise InputError(f"dimension {dimension!r} not in {name}")
        jv = jv[jv["dimension"] == dimension]
        rv = rv[rv["dimension"] == dimension]
    pair_cols = ["dimension", "prompt_id", "lo", "hi"]
    ref = _pair_keys(rv).groupby(pair_cols, sort=False)["outcome"].sum().rename("human")
    ref = np.sign(ref)
    jk = _pair_keys(jv).join(ref, on=pair_cols)
    rows = []
    for (jname, dim), g in jk.groupby(["judge", "dimension"], sort=True):
        unmatched = g["human"].isna()
        human_tie = g["human"] == 0
        n_unmatched_pairs = g.loc[unmatched, pair_cols].drop_duplicates().shape[0]
        n_tie_pairs = g.loc[human_tie, pair_cols].drop_duplicates().shape[0]
        d = g[~unmatched & ~human_tie]
        score = np.where(d["outcome"] == d["human"], 1.0, np.where(d["outcome"] == 0, credit,
                                                                    0.0))
        # the human-preferred story is 'lo' when human == 1
        preferred_first = (d["first_is_lo"] == (d["human"] == 1)).to_numpy()
        acc1 = float(score[preferred_first].mean()) if preferred_first.any() else np.nan
        acc2 = float(score[~preferred_first].mean()) if (~preferred_first).any() else np.nan
        if np.isnan(acc1) or np.isnan(acc2):
            warnings.warn(f"judge_accuracy ({jname!r}, {dim!r}): no verdict in one of the two "
                          "orders; the order-averaged accuracy is undefined (NaN)",
                          UndefinedStatisticWarning, stacklevel=2)
        rows.append({"judge": jname, "dimension": dim,
                     "accuracy": (acc1 + acc2) / 2,
                     "accuracy_preferred_first": acc1, "accuracy_preferred_second": acc2,
                     "n_pairs": d[pair_cols].drop_duplicates().shape[0],
                     "n_verdicts": len(d), "n_human_ties": n_tie_pairs,
                     "n_unmatched": n_unmatched_pairs, "tie_credit": credit})
    return pd.DataFrame(rows)


def pointwise_pairwise_accuracy(
    wide: pd.DataFrame,
    pairs: Sequence[tuple[str, str]],
    *,
    human_ties: str = "exclude",
    tie_credit: float = 0.5,
) -> pd.DataFrame:
    """Pairwise accuracy of pointwise measures: every pair of stories of the same prompt.

    Parameters
    ----------
    wide : DataFrame
        Index ``(system, prompt_id)``, one float column per measure; every system must have a
        story for every prompt (HANNA: 10 systems x 96 prompts gives 96 x 45 = 4,320 pairs).
    pairs : sequence of (measure, criterion)
        The measure and the human criterion it is compared with.
    human_ties : {"exclude", "include"}, default "exclude"
        ``"exclude"``: pairs the humans rated equal are left out; a measure tie on a decided pair
        earns ``tie_credit``. ``"include"``: every pair counts and a tie is a third outcome that
        must be matched (a measure tie is right exactly when humans tied; Deutsch et al.'s
        acc_eq without tie calibration).
    tie_credit : float, default 0.5
        Credit for a measure tie on a human-decided pair (``human_ties="exclude"`` only).

    Returns
    -------
    DataFrame
        ``measure, criterion, accuracy, n_pairs, n_human_ties, n_measure_ties, human_ties,
        tie_credit``. ``n_pairs`` counts the pairs scored (the denominator of ``accuracy``);
        ``n_measure_ties`` counts the measure ties *among those scored pairs* (with
        ``"exclude"``: the pairs earning ``tie_credit``); ``n_human_ties`` counts the pairs the
        humans tied (left out with ``"exclude"``, scored with ``"include"``), so with
        ``"exclude"`` ``n_pairs + n_human_ties`` is the number of story pairs.

    Notes
    -----
    For stories i, j of one prompt: h = sign(c_i - c_j), m = sign(x_i - x_j).
    ``"exclude"``: accuracy = mean over {h != 0} of [m == h] + tie_credit [m == 0].
    ``"include"``: accuracy = mean over all pairs of [m == h]. A measure where lower is better
    scores below 0.5; nothing is flipped.

    References
    ----------
    .. [1] Deutsch, D., Foster, G., Freitag, M. (2023). Ties Matter: Meta-Evaluating Modern
       Metrics with Pairwise Accuracy and Tie Calibration. EMNLP.

    Validated against a per-pair Python count in tests/test_pairwise.py.

    Examples
    --------
    >>> import pandas as pd
    >>> idx = pd.MultiIndex.from_product([["A", "B", "C"], [0]], names=["system", "prompt_id"])
    >>> wide = pd.DataFrame({"h": [1.0, 2.0, 2.0], "m": [1.0, 3.0, 2.0]}, index=idx)
    >>> res = pointwise_pairwise_accuracy(wide, [("m", "h")])
    >>> float(res.loc[0, "accuracy"]), int(res.loc[0, "n_pairs"])
    (1.0, 2)
    """
    from storyeval.meta.levels import level_data

    if human_ties not in _HUMAN_TIES:
        raise InputError(f"human_ties must be one of {_HUMAN_TIES}, got {human_ties!r}")
    credit = _check_credit(tie_credit, "tie_credit")
    pairs = [tuple(p) for p in pairs]
    if not pairs or any(len(p) != 2 for p in pairs):
        raise InputError("pairs must be a non-empty list of (measure, criterion) tuples")
    cols = list(dict.fromkeys([c for p in pairs for c in p]))
    cube = level_data(wide, cols, level="prompt")  # (prompt, system, measure), InputError on gaps
    n_sys = cube.shape[1]
    if n_sys < 2:
        raise InputError("pairwise accuracy needs at least 2 systems per prompt")
    i, j = np.triu_indices(n_sys, k=1)
    sign = np.sign(cube[:, i, :] - cube[:, j, :]).astype(np.int8)  # (prompt, pair, column)
    xi = [cols.index(p[0]) for p in pairs]
    ci = [cols.index(p[1]) for p in pairs]
    m = sign[:, :, xi].reshape(-1, len(pairs))
    h = sign[:, :, ci].reshape(-1, len(pairs))
    n_all = m.shape[0]
    human_tie = h == 0
    meas_tie = m == 0
    if human_ties == "exclude":
        decided = ~human_tie
        score = (m == h) & decided
        total = score.sum(axis=0) + credit * (meas_tie & decided).sum(axis=0)
        n_pairs = decided.sum(axis=0)
    else:
        decided = np.ones_like(human_tie)
        total = (m == h).sum(axis=0)
        n_pairs = np.full(len(pairs), n_all)
    with np.errstate(invalid="ignore", divide="ignore"):
        acc = total / n_pairs
    if (n_pairs == 0).any():
        warnings.warn("pairwise accuracy undefined (every pair is a human tie) for "
                      f"{[pairs[k] for k in np.flatnonzero(n_pairs == 0)][:3]}",
                      UndefinedStatisticWarning, stacklevel=2)
    return pd.DataFrame({
        "measure": [p[0] for p in pairs], "criterion": [p[1] for p in pairs],
        "accuracy": acc.astype(float), "n_pairs": n_pairs.astype(np.int64),
        "n_human_ties": human_tie.sum(axis=0).astype(np.int64),
        # measure ties among the scored pairs only, like n_pairs and the tie credit
        "n_measure_ties": (meas_tie & decided).sum(axis=0).astype(np.int64),
        "human_ties": human_ties, "tie_credit": credit,
    })
