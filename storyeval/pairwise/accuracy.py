"""Meta-evaluation on pairs: a pairwise judge against human preferences, and pointwise measures
turned into pairwise decisions (every pair of stories of one prompt)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from storyeval.exceptions import InputError, UndefinedStatisticWarning, user_stacklevel
from storyeval.pairwise.inference import (
    AGGREGATES,
    ESTIMANDS,
    PAIR_COLUMNS,
    _check_choice,
    _check_credit,
    _net_verdicts,
    keyed_judge_verdicts,
)

__all__ = ["judge_accuracy", "pointwise_pairwise_accuracy", "preference_accuracy",
           "story_index"]

_HUMAN_TIES = ("exclude", "include")


def judge_accuracy(
    judge_verdicts: pd.DataFrame,
    reference: pd.DataFrame,
    *,
    judge: str | None = None,
    dimension: str | None = None,
    tie_credit: float = 0.0,
    aggregate: str = "none",
) -> pd.DataFrame:
    """Accuracy of a pairwise judge against human preferences (k/n), and the order-balanced
    accuracy beside it.

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
    aggregate : {"none", "net"}, default "none"
        ``"net"``: JudgeBench's rule, one verdict per pair (the net verdict over its
        presentation orders; a tie, including an inconsistent pair, is wrong;
        `storyeval.pairwise.inference.scored_verdicts`); ``accuracy`` is then k/n over pairs.

    Returns
    -------
    DataFrame
        One row per (judge, dimension): ``accuracy`` (k/n: credited verdicts over verdicts,
        the estimand of `judge_accuracy_inference`'s interval and test and of
        `compare_judges`), ``estimand`` (what ``accuracy`` is), ``balanced_accuracy`` (the
        mean of the two order accuracies), ``accuracy_preferred_first`` (verdicts where the
        human-preferred story was shown first), ``accuracy_preferred_second``, ``n_pairs``
        (human-decided pairs with at least one judge verdict), ``n_verdicts``,
        ``n_human_ties`` (pairs left out because humans tied), ``n_unmatched`` (judge pairs
        absent from the reference).

    Notes
    -----
    accuracy = k / n, k the credited verdicts (+ ``tie_credit`` for "same"), n the verdicts
    on human-decided pairs. balanced_accuracy = (acc_1 + acc_2) / 2, acc_o = the accuracy of
    the verdicts where the human-preferred story was shown first (o = 1) or second (o = 2):
    a judge that always picks the first story scores 0.5 whatever share of pairs showed the
    preferred story first, as in LitBench (paper 002), which averages the two presentations of
    each pair. When every pair is judged in both orders the two are equal; with one verdict
    per pair and unbalanced orders they differ, and each is a row of its own (one row, one
    estimand). With ``aggregate="net"`` the balanced accuracy is undefined (NaN): a pair's
    net verdict has no presentation order.

    References
    ----------
    1. Fein, D. et al. (2025). LitBench: A Benchmark and Dataset for Reliable Evaluation of
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
    aggregate = _check_choice(aggregate, AGGREGATES, "aggregate")
    if aggregate == "net" and credit != 0:
        raise InputError("aggregate 'net' (JudgeBench's rule) counts a tie as wrong; "
                         "tie_credit must be 0")
    jk = keyed_judge_verdicts(judge_verdicts, reference, judge=judge, dimension=dimension)
    pair_cols = PAIR_COLUMNS
    rows = []
    for (jname, dim), g in jk.groupby(["judge", "dimension"], sort=True):
        unmatched = g["human"].isna()
        human_tie = g["human"] == 0
        n_unmatched_pairs = g.loc[unmatched, pair_cols].drop_duplicates().shape[0]
        n_tie_pairs = g.loc[human_tie, pair_cols].drop_duplicates().shape[0]
        d = g[~unmatched & ~human_tie]
        if aggregate == "net":
            d = _net_verdicts(d.assign(judge=jname))
        score = np.where(d["outcome"] == d["human"], 1.0, np.where(d["outcome"] == 0, credit,
                                                                    0.0))
        # the human-preferred story is 'lo' when human == 1
        preferred_first = (d["first_is_lo"] == (d["human"] == 1)).to_numpy()
        acc1 = float(score[preferred_first].mean()) if preferred_first.any() else np.nan
        acc2 = float(score[~preferred_first].mean()) if (~preferred_first).any() else np.nan
        if aggregate == "net":
            acc1 = acc2 = np.nan
        elif np.isnan(acc1) or np.isnan(acc2):
            warnings.warn(f"judge_accuracy ({jname!r}, {dim!r}): no verdict in one of the two "
                          "orders; the order-balanced accuracy is undefined (NaN)",
                          UndefinedStatisticWarning, stacklevel=user_stacklevel())
        rows.append({"judge": jname, "dimension": dim,
                     "accuracy": float(score.mean()) if len(score) else np.nan,
                     "estimand": ESTIMANDS[aggregate],
                     "balanced_accuracy": (acc1 + acc2) / 2,
                     "accuracy_preferred_first": acc1, "accuracy_preferred_second": acc2,
                     "n_pairs": d[pair_cols].drop_duplicates().shape[0],
                     "n_verdicts": len(d), "n_human_ties": n_tie_pairs,
                     "n_unmatched": n_unmatched_pairs, "tie_credit": credit})
    return pd.DataFrame(rows)


def _check_human_ties(human_ties: str) -> str:
    if human_ties not in _HUMAN_TIES:
        raise InputError(f"human_ties must be one of {_HUMAN_TIES}, got {human_ties!r}")
    return human_ties


def _signs(diff: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """sign(diff) as int8 (0 where diff is NaN) and the mask of non-NaN entries."""
    valid = ~np.isnan(diff)
    return np.sign(np.where(valid, diff, 0.0)).astype(np.int8), valid


def _accuracy_frame(
    pairs: Sequence[tuple[str, str]],
    m: np.ndarray,
    h: np.ndarray,
    applicable: np.ndarray,
    valid: np.ndarray,
    human_ties: str,
    credit: float,
    inference: dict | None = None,
    clusters: np.ndarray | None = None,
) -> pd.DataFrame:
    """Accuracy of measure signs ``m`` against human signs ``h`` (story pairs x (measure,
    criterion) pairs): ``applicable`` marks the story pairs each column is about, ``valid``
    those among them where both stories have both scores. With ``inference`` (the options of
    `accuracy_columns`), interval and test columns are appended, the story pairs grouped by
    ``clusters``."""
    human_tie = valid & (h == 0)
    decided = valid & ~human_tie if human_ties == "exclude" else valid
    meas_tie = (m == 0) & decided
    total = ((m == h) & decided).sum(axis=0)
    if human_ties == "exclude":
        total = total + credit * meas_tie.sum(axis=0)
    n_pairs = decided.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        acc = total / n_pairs
    if (n_pairs == 0).any():
        warnings.warn("pairwise accuracy undefined (no human-decided pair with scores) for "
                      f"{[tuple(pairs[k]) for k in np.flatnonzero(n_pairs == 0)][:3]}",
                      UndefinedStatisticWarning, stacklevel=user_stacklevel())
    frame = pd.DataFrame({
        "measure": [p[0] for p in pairs], "criterion": [p[1] for p in pairs],
        "accuracy": acc.astype(float), "n_pairs": n_pairs.astype(np.int64),
        "n_human_ties": human_tie.sum(axis=0).astype(np.int64),
        # measure ties among the scored pairs only, like n_pairs and the tie credit
        "n_measure_ties": meas_tie.sum(axis=0).astype(np.int64),
        "n_missing": (applicable & ~valid).sum(axis=0).astype(np.int64),
        "human_ties": human_ties, "tie_credit": credit,
    })
    if inference is None:
        return frame
    from storyeval.pairwise.inference import accuracy_columns

    score = (m == h).astype(np.float64)
    if human_ties == "exclude":
        score = score + credit * (m == 0)
    chance = _chance_columns(m, h, decided, human_ties, credit)
    extra = accuracy_columns(score, decided, clusters=clusters, chance=chance, **inference)
    return pd.concat([frame, extra.drop(columns="chance").assign(chance=chance)], axis=1)


def _chance_columns(m: np.ndarray, h: np.ndarray, decided: np.ndarray, human_ties: str,
                    credit: float) -> np.ndarray:
    """Tie-aware chance level per column: a measure answering at random with its own shares
    of "first better" / "second better" / "tie" on the scored pairs (`chance_level`)."""
    n = np.maximum(decided.sum(axis=0), 1)
    share = np.stack([((m == v) & decided).sum(axis=0) / n for v in (1, -1, 0)])
    if human_ties == "exclude":
        return (1 - share[2]) / 2 + credit * share[2]
    human = np.stack([((h == v) & decided).sum(axis=0) / n for v in (1, -1, 0)])
    return (share * human).sum(axis=0)


def _inference_options(interval: str, confidence_level: float, n_resamples: int,
                       random_state) -> dict | None:
    """The options passed to `accuracy_columns`, or None for ``interval="none"``."""
    if interval == "none":
        return None
    from storyeval.resample.clusters import rng_from

    return {"method": interval, "confidence_level": confidence_level,
            "n_resamples": n_resamples, "random_state": rng_from(random_state)}


def pointwise_pairwise_accuracy(
    wide: pd.DataFrame,
    pairs: Sequence[tuple[str, str]],
    *,
    human_ties: str = "exclude",
    tie_credit: float = 0.5,
    interval: str = "none",
    confidence_level: float = 0.95,
    n_resamples: int = 2000,
    random_state: int | np.random.Generator | None = 0,
) -> pd.DataFrame:
    """Pairwise accuracy of pointwise measures: every pair of stories of the same prompt.

    Parameters
    ----------
    wide : DataFrame
        Index ``(system, prompt_id)`` (prompt ids of any type), one float column per measure
        (HANNA: 10 systems x 96 prompts gives 96 x 45 = 4,320 pairs). The pairs of a prompt
        are the pairs of its stories; a system without a story for a prompt has no pair there.
    pairs : sequence of (measure, criterion)
        The measure and the human criterion (any column of ``wide``) it is compared with.
    human_ties : {"exclude", "include"}, default "exclude"
        ``"exclude"``: pairs the humans rated equal are left out; a measure tie on a decided pair
        earns ``tie_credit``. ``"include"``: every pair counts and a tie is a third outcome that
        must be matched (a measure tie is right exactly when humans tied; Deutsch et al.'s
        acc_eq without tie calibration).
    tie_credit : float, default 0.5
        Credit for a measure tie on a human-decided pair (``human_ties="exclude"`` only).
    interval : {"none", "auto", "cluster-bootstrap", "cluster-t", "wilson", "exact"}, default "none"
        Add an interval and a test against the tie-aware chance level (see
        `storyeval.pairwise.inference.accuracy_columns`). The pairs of one prompt share its
        stories, so ``"auto"`` clusters by prompt: the cluster-robust t below 30 prompts, the
        cluster bootstrap from 30 on.
    confidence_level, n_resamples, random_state
        Of the interval (two-sided) and the bootstrap.

    Returns
    -------
    DataFrame
        ``measure, criterion, accuracy, n_pairs, n_human_ties, n_measure_ties, n_missing,
        human_ties, tie_credit`` (and with ``interval``: ``ci_low, ci_high, pvalue,
        alternative, method, n_clusters, confidence_level, n_resamples, chance``). ``n_pairs``
        counts the pairs scored (the denominator of
        ``accuracy``); ``n_measure_ties`` counts the measure ties *among those scored pairs*
        (with ``"exclude"``: the pairs earning ``tie_credit``); ``n_human_ties`` counts the
        pairs the humans tied (left out with ``"exclude"``, scored with ``"include"``);
        ``n_missing`` counts the pairs left out because a story has no score of the measure or
        criterion (NaN). With ``"exclude"``, ``n_pairs + n_human_ties + n_missing`` is the
        number of story pairs.

    Notes
    -----
    For stories i, j of one prompt: h = sign(c_i - c_j), m = sign(x_i - x_j).
    ``"exclude"``: accuracy = mean over {h != 0} of [m == h] + tie_credit [m == 0].
    ``"include"``: accuracy = mean over all pairs of [m == h]. A measure where lower is better
    scores below 0.5; nothing is flipped. A pair where x or c is missing (NaN) for either story
    is left out of that (measure, criterion) only.

    References
    ----------
    1. Deutsch, D., Foster, G., Freitag, M. (2023). Ties Matter: Meta-Evaluating Modern
       Metrics with Pairwise Accuracy and Tie Calibration. EMNLP.

    Validated against a per-pair Python count in tests/test_pairwise.py and
    tests/test_pairwise_data.py.

    Examples
    --------
    >>> import pandas as pd
    >>> idx = pd.MultiIndex.from_product([["A", "B", "C"], [0]], names=["system", "prompt_id"])
    >>> wide = pd.DataFrame({"h": [1.0, 2.0, 2.0], "m": [1.0, 3.0, 2.0]}, index=idx)
    >>> res = pointwise_pairwise_accuracy(wide, [("m", "h")])
    >>> float(res.loc[0, "accuracy"]), int(res.loc[0, "n_pairs"])
    (1.0, 2)
    """
    from storyeval.correlation.levels import level_data

    human_ties = _check_human_ties(human_ties)
    credit = _check_credit(tie_credit, "tie_credit")
    pairs = _check_pairs(pairs)
    cols = list(dict.fromkeys([c for p in pairs for c in p]))
    # (prompt, system, column) arrays, NaN where a (system, prompt) story is absent
    cube = level_data(wide, cols, level="prompt", nan_policy="propagate")
    present = level_data(pd.DataFrame({"story": 1.0}, index=wide.index), level="prompt",
                         nan_policy="propagate")[:, :, 0] == 1
    if cube.shape[1] < 2:
        raise InputError("pairwise accuracy needs at least 2 systems per prompt")
    i, j = np.triu_indices(cube.shape[1], k=1)
    sign, known = _signs((cube[:, i, :] - cube[:, j, :]).reshape(-1, len(cols)))
    exists = (present[:, i] & present[:, j]).reshape(-1, 1)  # story pairs that exist
    xi = [cols.index(p[0]) for p in pairs]
    ci = [cols.index(p[1]) for p in pairs]
    applicable = np.broadcast_to(exists, (len(exists), len(pairs)))
    valid = applicable & known[:, xi] & known[:, ci]
    n_system_pairs = len(i)
    clusters = np.repeat(np.arange(cube.shape[0]), n_system_pairs)  # prompt-major rows
    return _accuracy_frame(pairs, sign[:, xi], sign[:, ci], applicable, valid, human_ties,
                           credit, _inference_options(interval, confidence_level,
                                                      n_resamples, random_state), clusters)



def _check_pairs(pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    pairs = [tuple(p) for p in pairs]
    if not pairs or any(len(p) != 2 for p in pairs):
        raise InputError("pairs must be a non-empty list of (measure, criterion) tuples")
    return pairs


def story_index(wide: pd.DataFrame) -> pd.Index:
    """The story ids of the rows of ``wide``, in row order: ``"{system}/{prompt_id}"`` for an
    index ``(system, prompt_id)``, the index itself for a flat index of story ids (a
    preference-only dataset, see `preference_scores`)."""
    idx = wide.index
    if not isinstance(idx, pd.MultiIndex):
        ids = pd.Index(idx.astype(str))
    elif idx.nlevels != 2:
        raise InputError("wide must be indexed by (system, prompt_id) or by story id")
    else:
        ids = (idx.get_level_values(0).astype(str) + "/" + idx.get_level_values(1).astype(str))
    if ids.has_duplicates:
        raise InputError(f"story id {ids[ids.duplicated()][0]!r} names several rows of wide")
    return pd.Index(ids)


def _check_measures(wide: pd.DataFrame, cols: Sequence[str]) -> None:
    unknown = [c for c in cols if c not in wide.columns]
    if unknown:
        raise InputError(f"measure(s) {unknown} not in the scores; measures are "
                         f"{[str(c) for c in wide.columns][:20]}")


def _preference_pairs(measures: str | Sequence[str | tuple[str, str]],
                      criteria: Sequence[str]) -> list[tuple[str, str]]:
    """(measure, criterion) pairs: a measure name pairs with every criterion of the
    preferences; a (measure, criterion) tuple must name one of them."""
    items = [measures] if isinstance(measures, str) else list(measures)
    if not items:
        raise InputError("measures is empty: give at least one measure")
    pairs = [p for item in items for p in
             ([(item, c) for c in criteria] if isinstance(item, str) else [tuple(item)])]
    pairs = _check_pairs(pairs)
    unknown = [c for _, c in pairs if c not in set(criteria)]
    if unknown:
        raise InputError(f"criterion {unknown[0]!r} has no preferences; the preferences are "
                         f"about {list(criteria)}")
    return pairs


def _majority(prefs: pd.DataFrame, stories: pd.Index
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """Per (criterion, unordered story pair): criterion code, row positions (lo < hi) of
    the two stories, the human sign from lo's side (majority of wins minus losses), and the
    pair's prompt (None without a ``prompt_id`` column)."""
    a = stories.get_indexer(prefs["story_a"])
    b = stories.get_indexer(prefs["story_b"])
    outcome = prefs["winner"].map({"a": 1, "b": -1, "tie": 0}).to_numpy(dtype=np.int64)
    codes, _ = pd.factorize(prefs["criterion"])
    votes = pd.DataFrame({"c": codes, "lo": np.minimum(a, b), "hi": np.maximum(a, b),
                          "o": np.where(a < b, outcome, -outcome)})
    groups = votes.groupby(["c", "lo", "hi"], sort=True)
    net = groups["o"].sum()
    keys = net.index
    prompt = None
    if "prompt_id" in prefs.columns:  # the cluster of each pair: its (first-listed) prompt
        prompt = (groups.ngroup().to_frame("g").assign(p=prefs["prompt_id"].to_numpy())
                  .groupby("g", sort=True)["p"].first().to_numpy())
    return (keys.get_level_values("c").to_numpy(), keys.get_level_values("lo").to_numpy(),
            keys.get_level_values("hi").to_numpy(), np.sign(net.to_numpy()).astype(np.int8),
            prompt)


def preference_accuracy(
    wide: pd.DataFrame,
    preferences: pd.DataFrame,
    measures: str | Sequence[str | tuple[str, str]],
    *,
    human_ties: str = "exclude",
    tie_credit: float = 0.5,
    source: str = "preferences",
    fmt: str | None = None,
    interval: str = "none",
    confidence_level: float = 0.95,
    n_resamples: int = 2000,
    random_state: int | np.random.Generator | None = 0,
) -> pd.DataFrame:
    """Pairwise accuracy of pointwise measures against explicit human preferences.

    Parameters
    ----------
    wide : DataFrame
        Index ``(system, prompt_id)``, one float column per measure (``Dataset.wide()``); or,
        for a preference-only dataset, a flat index of story ids
        (`storyeval.pairwise.preferences.preference_scores`).
    preferences : DataFrame
        A preference table (`storyeval.pairwise.preferences`): ``story_a, story_b,
        winner`` (``a``, ``b``, ``tie`` or the preferred story's id), optional ``criterion``
        (without it: one overall criterion, ``"preference"``) and ``annotator``. Its stories
        must be rows of ``wide``; a pair may cross prompts.
    measures : str or sequence of str or of (measure, criterion)
        Measures (each compared with every criterion of the preferences), or explicit
        (measure, criterion) pairs.
    human_ties : {"exclude", "include"}, default "exclude"
        As in [`pointwise_pairwise_accuracy`][]: human-tied pairs left out (a measure tie on
        a decided pair earns ``tie_credit``), or scored as a third outcome.
    tie_credit : float, default 0.5
        Credit for a measure tie on a human-decided pair (``human_ties="exclude"`` only).
    source, fmt : str
        The file the preferences come from and its format, for error messages.
    interval : {"none", "auto", "cluster-bootstrap", "cluster-t", "wilson", "exact"}, default "none"
        Add an interval and a test against the tie-aware chance level. Clusters: the
        ``prompt_id`` of the preferences when given (``"auto"``, when a prompt holds several
        pairs: the cluster-robust t below 30 prompts, the cluster bootstrap from 30 on), else the pairs are independent (``"auto"``: Wilson with
        the exact binomial test).
    confidence_level, n_resamples, random_state
        Of the interval (two-sided) and the bootstrap.

    Returns
    -------
    DataFrame
        ``measure, criterion, accuracy, n_pairs, n_human_ties, n_measure_ties, n_missing,
        human_ties, tie_credit``, counted over the unordered story pairs of each criterion in
        the preferences: ``n_pairs`` the pairs scored (the denominator of ``accuracy``),
        ``n_measure_ties`` the measure ties among them, ``n_human_ties`` the pairs whose
        majority is a tie (left out with ``"exclude"``), ``n_missing`` the pairs left out
        because a story has no score of the measure (NaN). With ``"exclude"``, ``n_pairs +
        n_human_ties + n_missing`` is the number of pairs of the criterion.

    Notes
    -----
    For a pair (i, j) of criterion c with preferences k = 1..K (e_k = +1: i preferred, -1: j
    preferred, 0: tie, whichever story was listed first), h = sign(sum_k e_k) (majority; a
    draw is a human tie) and m = sign(x_i - x_j): the measure prefers the story it scores
    higher. Accuracy as in [`pointwise_pairwise_accuracy`][]; nothing is flipped (a
    lower-is-better measure scores below 0.5). Vectorised: both stories' scores are looked
    up by row position.

    Raises
    ------
    InputError
        An invalid preference table (naming ``source``, column and line, see
        `validate_preferences`), an unknown measure, a
        (measure, criterion) pair whose criterion has no preferences.

    Validated against a per-preference Python count in tests/test_pairwise_data.py.

    Examples
    --------
    >>> import pandas as pd
    >>> idx = pd.MultiIndex.from_product([["A", "B"], ["p1", "p2"]],
    ...                                  names=["system", "prompt_id"])
    >>> wide = pd.DataFrame({"m": [1.0, 2.0, 3.0, 0.0]}, index=idx)
    >>> prefs = pd.DataFrame({"story_a": ["A/p1", "A/p2", "A/p1"],
    ...                       "story_b": ["B/p1", "B/p2", "A/p2"],
    ...                       "winner": ["b", "A/p2", "tie"]})
    >>> res = preference_accuracy(wide, prefs, ["m"])
    >>> res[["criterion", "accuracy", "n_pairs", "n_human_ties"]].values.tolist()
    [['preference', 1.0, 2, 1]]
    """
    from storyeval.correlation.levels import level_data
    from storyeval.pairwise.preferences import validate_preferences

    human_ties = _check_human_ties(human_ties)
    credit = _check_credit(tie_credit, "tie_credit")
    stories = story_index(wide)
    prefs = validate_preferences(preferences, source=source, fmt=fmt, story_ids=stories)
    criteria = list(dict.fromkeys(prefs["criterion"]))
    pairs = _preference_pairs(measures, criteria)
    cols = list(dict.fromkeys(p[0] for p in pairs))
    if isinstance(wide.index, pd.MultiIndex):
        values = level_data(wide, cols, level="overall", nan_policy="propagate").to_numpy()
    else:  # preference-only data: one row per story id
        _check_measures(wide, cols)
        values = wide.loc[:, cols].to_numpy(dtype=np.float64)
    code, lo, hi, human, prompt = _majority(prefs, stories)
    options = _inference_options(interval, confidence_level, n_resamples, random_state)
    frames = []
    for k, crit in enumerate(criteria):  # one block of story pairs per criterion
        which = [n for n, p in enumerate(pairs) if p[1] == crit]
        if not which:
            continue
        rows = code == k
        xi = [cols.index(pairs[n][0]) for n in which]
        sign, known = _signs(values[lo[rows]][:, xi] - values[hi[rows]][:, xi])
        h = np.broadcast_to(human[rows, None], sign.shape)
        frames.append(_accuracy_frame([pairs[n] for n in which], sign, h,
                                      np.ones_like(known), known, human_ties, credit,
                                      options, None if prompt is None else prompt[rows])
                      .set_index(pd.Index(which)))
    return pd.concat(frames).sort_index().reset_index(drop=True)

