"""From the tidy ratings table to what the rest of storyeval uses.

* `to_scores`: the tidy score table read by ``storyeval meta`` (one measure per model x
  criterion x Eval-Prompt, named like HANNA's columns, ``"Beluga-13B RE 1"``; plus the
  ``"{model} AVG {k}"`` mean over criteria).
* `failure_rates`: answers without a usable rating, per model x Eval-Prompt x criterion.
* `self_consistency`: ICC(2,k) over the tries (the tries act as k raters of the stories).
* `judge_systems`: the paper's LLM-as-judge-of-systems table (mean rating per system and
  criterion with a t-interval).
* `llm_catalogue`: catalogue rows (``docs/design.md``) for the LLM measures.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from storyeval.exceptions import InputError, UndefinedStatisticWarning, user_stacklevel

__all__ = [
    "FAILURE_STATUSES",
    "failed_requests",
    "failure_rates",
    "judge_systems",
    "llm_catalogue",
    "measure_name",
    "self_consistency",
    "to_scores",
]

#: Statuses that count as failures (no usable rating).
FAILURE_STATUSES: tuple[str, ...] = ("no_number", "out_of_range", "ambiguous", "error", "missing",
                                     "no_reference")
#: Parse failures the paper replaced by the midpoint (request errors are never imputed).
_PARSE_FAILURES = ("no_number", "out_of_range", "ambiguous")

_REQUIRED = ("story_id", "system", "prompt_id", "model", "eval_prompt", "criterion", "try",
             "rating", "status")


def measure_name(model: str, code: str, eval_prompt: int) -> str:
    """HANNA-style measure identifier: ``"{model} {code} {eval_prompt}"``."""
    return f"{model} {code} {int(eval_prompt)}"


def _check(ratings: pd.DataFrame) -> pd.DataFrame:
    if not isinstance(ratings, pd.DataFrame):
        raise InputError(f"ratings must be a DataFrame, got {type(ratings).__name__}")
    missing = [c for c in _REQUIRED if c not in ratings.columns]
    if missing:
        raise InputError(f"ratings table misses column(s) {missing}; "
                         "it should come from storyeval.llm.rate or `storyeval rate`")
    df = ratings
    if "code" not in df.columns:
        from storyeval.data.criteria import CRITERION_CODES

        unknown = sorted(set(df["criterion"]) - set(CRITERION_CODES))
        if unknown:
            raise InputError(f"ratings: no 'code' column and criteria {unknown} are not HANNA's")
        df = df.assign(code=df["criterion"].map(CRITERION_CODES))
    ok = df["status"] == "ok"
    bad = ok & ~df["rating"].notna()
    if bad.any():
        i = df.index[np.flatnonzero(bad.to_numpy())[0]]
        raise InputError(f"ratings: row {i!r} has status 'ok' but no rating")
    bad = ~ok & df["rating"].notna()
    if bad.any():
        i = df.index[np.flatnonzero(bad.to_numpy())[0]]
        raise InputError(f"ratings: row {i!r} has a rating but status {df['status'][i]!r}")
    dup = df.duplicated(["story_id", "model", "eval_prompt", "criterion", "try"])
    if dup.any():
        i = df.index[np.flatnonzero(dup.to_numpy())[0]]
        raise InputError(f"ratings: row {i!r} repeats (story_id, model, eval_prompt, criterion, try)")
    return df


def to_scores(ratings: pd.DataFrame, *, on_unparsed: str = "nan", include_avg: bool = True,
              scale: tuple[int, int] = (1, 5)) -> pd.DataFrame:
    """Tidy score table: each (model, Eval-Prompt, criterion) becomes a measure, the mean of the
    story's usable tries.

    Parameters
    ----------
    ratings : DataFrame
        The ratings table of `storyeval.llm.rate` (columns `RATING_COLUMNS`).
    on_unparsed : {"nan", "midpoint"}, default "nan"
        ``"nan"``: failed tries are left out of the mean; a story with no usable try gets NaN
        (with ``reason``). ``"midpoint"``: parse failures (no number, out of range, ambiguous)
        count as the scale's midpoint, reproducing the paper's replacement by 3; request errors
        are never imputed.
    include_avg : bool, default True
        Add ``"{model} AVG {k}"``, the mean over the criteria of the per-criterion values (as in
        HANNA's data); NaN when any criterion is NaN for that story.
    scale : (int, int), default (1, 5)
        The rating scale (its midpoint is used by ``on_unparsed="midpoint"``).

    Returns
    -------
    DataFrame
        Columns ``story_id, system, prompt_id, measure, value, n_ok, n_tries, n_imputed,
        reason``; ``(story_id, measure)`` is unique.

    Notes
    -----
    value(story, m, k, c) = mean over tries t with a usable rating of r(story, m, k, c, t).
    HANNA's released LLM columns are the mean over the 3 tries with failures set to 3 [1],
    i.e. ``on_unparsed="midpoint"``.

    References
    ----------
    1. Chhun, C., Suchanek, F. M., & Clavel, C. (2024). Do Language Models Enjoy Their Own
       Stories? Prompting Large Language Models for Automatic Story Evaluation. TACL 12.

    Validated against hand-worked tables (``tests/test_llm_outputs.py``).

    Examples
    --------
    >>> r = pd.DataFrame({"story_id": ["a/0"] * 2, "system": "a", "prompt_id": 0, "model": "M",
    ...                   "eval_prompt": 1, "criterion": "Relevance", "try": [0, 1],
    ...                   "rating": [4.0, np.nan], "status": ["ok", "no_number"]})
    >>> to_scores(r, include_avg=False)[["measure", "value", "n_ok"]].to_dict("records")
    [{'measure': 'M RE 1', 'value': 4.0, 'n_ok': 1}]
    >>> to_scores(r, on_unparsed="midpoint", include_avg=False)["value"].item()
    3.5
    """
    if on_unparsed not in ("nan", "midpoint"):
        raise InputError(f"on_unparsed must be 'nan' or 'midpoint', got {on_unparsed!r}")
    df = _check(ratings)
    value = df["rating"].to_numpy(dtype=float).copy()
    imputed = np.zeros(len(df), dtype=bool)
    if on_unparsed == "midpoint":
        imputed = df["status"].isin(_PARSE_FAILURES).to_numpy()
        value[imputed] = (scale[0] + scale[1]) / 2
    keys = ["story_id", "system", "prompt_id", "model", "eval_prompt", "code"]
    work = df[keys].assign(_v=value, _imp=imputed, _ok=df["status"].eq("ok").to_numpy(),
                           _st=df["status"].astype(str).to_numpy())
    g = work.groupby(keys, sort=False, dropna=False)
    out = g.agg(value=("_v", "mean"), n_ok=("_ok", "sum"), n_tries=("_v", "size"),
                n_imputed=("_imp", "sum")).reset_index()
    out["reason"] = ""
    empty = out["value"].isna().to_numpy()
    if empty.any():
        why = g["_st"].agg(lambda s: ", ".join(sorted(set(s)))).to_numpy()
        out.loc[empty, "reason"] = ["no usable rating in any try (" + w + ")" for w in why[empty]]
    out["measure"] = [measure_name(m, c, k) for m, c, k in
                      zip(out["model"], out["code"], out["eval_prompt"])]
    if include_avg and out["code"].nunique() > 1:
        avg_keys = ["story_id", "system", "prompt_id", "model", "eval_prompt"]
        a = out.groupby(avg_keys, sort=False).agg(
            value=("value", lambda v: v.mean() if v.notna().all() else np.nan),
            n_ok=("n_ok", "sum"), n_tries=("n_tries", "sum"),
            n_imputed=("n_imputed", "sum")).reset_index()
        a["reason"] = np.where(a["value"].isna(), "a criterion has no usable rating", "")
        a["measure"] = [measure_name(m, "AVG", k) for m, k in zip(a["model"], a["eval_prompt"])]
        out = pd.concat([out, a], ignore_index=True)
    cols = ["story_id", "system", "prompt_id", "measure", "value", "n_ok", "n_tries",
            "n_imputed", "reason"]
    out = out[cols].copy()
    for c in ("n_ok", "n_tries", "n_imputed"):
        out[c] = out[c].astype("int64")
    if pd.api.types.is_numeric_dtype(out["prompt_id"]):
        out["prompt_id"] = out["prompt_id"].astype("int64")  # string ids stay strings
    return out.sort_values(["measure", "system", "prompt_id"], kind="stable").reset_index(drop=True)


def failure_rates(ratings: pd.DataFrame) -> pd.DataFrame:
    """Answers without a usable rating, per model x Eval-Prompt x criterion.

    Returns
    -------
    DataFrame
        Columns ``model, eval_prompt, criterion, n, n_ok`` and one count per failure status
        (``n_no_number, n_out_of_range, n_ambiguous, n_error, n_missing, n_no_reference``), ``failure_rate`` =
        1 - n_ok / n.
    """
    df = _check(ratings)
    keys = ["model", "eval_prompt", "criterion"]
    counts = pd.crosstab([df[k] for k in keys], df["status"])
    for s in ("ok",) + FAILURE_STATUSES:
        if s not in counts.columns:
            counts[s] = 0
    out = counts[["ok", *FAILURE_STATUSES]].rename(
        columns={s: f"n_{s}" for s in ("ok",) + FAILURE_STATUSES})
    out.columns.name = None
    out.insert(0, "n", out.sum(axis=1))
    out["failure_rate"] = 1.0 - out["n_ok"] / out["n"]
    return out.reset_index()


#: Columns of `failed_requests`, in order.
FAILED_REQUEST_COLUMNS: tuple[str, ...] = ("story_id", "system", "prompt_id", "model",
                                           "eval_prompt", "criterion", "try", "key", "error")


def failed_requests(ratings: pd.DataFrame) -> pd.DataFrame:
    """The requests that failed (status ``error``), one row each, with the reason.

    Returns
    -------
    DataFrame
        Columns :data:`FAILED_REQUEST_COLUMNS`: the item (story, model, Eval-Prompt, criterion,
        try), its cache key and the ``error`` message (e.g. the server's redacted refusal of a
        story longer than its context, ``HTTP 400 from ...: ...``). Empty (with these columns)
        when nothing failed. Those requests are not cached: a rerun asks them again.
    """
    df = _check(ratings)
    bad = df[df["status"] == "error"]
    cols = {c: bad[c] if c in bad.columns else "" for c in FAILED_REQUEST_COLUMNS}
    return pd.DataFrame(cols, columns=list(FAILED_REQUEST_COLUMNS)).reset_index(drop=True)


def self_consistency(ratings: pd.DataFrame, *, confidence_level: float = 0.95) -> pd.DataFrame:
    """ICC(2,k) of the tries per model x Eval-Prompt x criterion (the paper's self-consistency).

    The k tries act as k raters of the stories; stories with a failed try are left out of their
    group (listwise) and counted in ``n_items_omitted``.

    Returns
    -------
    DataFrame
        ``model, eval_prompt, criterion`` then the columns of
        [`storyeval.agreement.icc.icc2k_many`][] (``icc2k, ci_low, ci_high, ..., reason``).

    Validated through [`storyeval.agreement.icc.icc2k_many`][], itself checked against pingouin.
    """
    from storyeval.agreement.icc import icc2k_many

    df = _check(ratings)
    keys = ["model", "eval_prompt", "criterion"]
    wide = df.pivot_table(index=keys + ["story_id"], columns="try", values="rating",
                          aggfunc="first", dropna=False)
    # every group shares the union of stories; missing cells are NaN (dropped listwise)
    stories = sorted(df["story_id"].unique())
    groups = list(df[keys].drop_duplicates().itertuples(index=False, name=None))
    full = pd.MultiIndex.from_tuples([g + (s,) for g in groups for s in stories],
                                     names=keys + ["story_id"])
    wide = wide.reindex(full)
    tries = sorted(df["try"].unique())
    wide = wide.reindex(columns=tries)
    if len(tries) < 2:
        raise InputError("self_consistency needs at least 2 tries per item")
    y = wide.to_numpy(dtype=float).reshape(len(groups), len(stories), len(tries))
    with warnings.catch_warnings():
        warnings.simplefilter("always", UndefinedStatisticWarning)
        res = icc2k_many(y, confidence_level=confidence_level, nan_policy="omit",
                         groups=[" / ".join(map(str, g)) for g in groups])
    res = res.reset_index(drop=True)
    lab = pd.DataFrame(groups, columns=keys)
    return pd.concat([lab, res], axis=1)


def judge_systems(ratings: pd.DataFrame, *, confidence_level: float = 0.95,
                  on_unparsed: str = "nan", paired: bool = False) -> pd.DataFrame:
    """The LLM-as-judge-of-systems table: mean rating per system and criterion with a t-interval.

    With ``paired=True``: the by-prompt paired differences between every two systems instead
    (`storyeval.llm.paired.judge_systems_paired` on the per-story scores).

    Each story first gets its mean over usable tries (`to_scores`); then for every model,
    Eval-Prompt, system and criterion: ``mean`` over the system's stories, ``sem`` = s / sqrt(n),
    and the interval ``mean +/- t_{(1+level)/2, n-1} sem`` (Student t, n = stories with a
    value).

    Returns
    -------
    DataFrame
        ``model, eval_prompt, system, criterion, mean, sd, n, sem, ci_low, ci_high``, sorted by
        model, Eval-Prompt, criterion and decreasing mean (a ranking of the systems).

    Notes
    -----
    Stories are the sampling units (tries of one story are not independent). With n < 2 the
    interval is undefined: NaN and an [`UndefinedStatisticWarning`][]. The paper ranks the
    generation systems (and its LLM-written stories) this way [1].

    References
    ----------
    1. Chhun, C., Suchanek, F. M., & Clavel, C. (2024). TACL 12, tables of average
       Beluga-13B and Mistral-7B ratings with 95% confidence intervals.

    Validated against ``scipy.stats.t.interval(level, n-1, loc=mean, scale=sem)``.
    """
    if not 0 < confidence_level < 1:
        raise InputError(f"confidence_level must be in (0, 1), got {confidence_level}")
    df = _check(ratings)
    sc = to_scores(df, on_unparsed=on_unparsed, include_avg=False)
    if paired:
        from storyeval.llm.paired import judge_systems_paired

        return judge_systems_paired(sc, confidence_level=confidence_level)
    meta = df[["model", "eval_prompt", "code", "criterion"]].drop_duplicates()
    meta = meta.assign(measure=[measure_name(m, c, k) for m, c, k in
                                zip(meta["model"], meta["code"], meta["eval_prompt"])])
    sc = sc.merge(meta, on="measure", how="left")
    g = sc.groupby(["model", "eval_prompt", "system", "criterion"], sort=False)["value"]
    out = g.agg(mean="mean", sd="std", n="count").reset_index()
    out["sem"] = out["sd"] / np.sqrt(out["n"])
    # Student t quantile from scipy.special: importing scipy.stats costs `storyeval rate`
    # seconds of start-up (its docstring machinery), scipy.special a tenth of that
    from scipy.special import stdtrit

    tq = stdtrit(np.maximum(out["n"].to_numpy(dtype=np.float64) - 1, 1),
                 (1 + confidence_level) / 2)
    half = np.where(out["n"] >= 2, tq * out["sem"], np.nan)
    out["ci_low"] = out["mean"] - half
    out["ci_high"] = out["mean"] + half
    undefined = out["n"] < 2
    if undefined.any():
        warnings.warn(f"t-interval undefined for {int(undefined.sum())} system x criterion cell(s) "
                      "with fewer than 2 rated stories; returned NaN", UndefinedStatisticWarning,
                      stacklevel=user_stacklevel())
    order = {c: i for i, c in enumerate(dict.fromkeys(df["criterion"]))}
    out = out.assign(_c=out["criterion"].map(order)).sort_values(
        ["model", "eval_prompt", "_c", "mean"], ascending=[True, True, True, False],
        kind="stable").drop(columns="_c")
    out["n"] = out["n"].astype("int64")
    return out.reset_index(drop=True)


def llm_catalogue(scores: pd.DataFrame, ratings: pd.DataFrame) -> pd.DataFrame:
    """Catalogue rows (``docs/design.md``) for the LLM measures of a `to_scores` table."""
    df = _check(ratings)
    meta = df[["model", "eval_prompt", "code", "criterion"]].drop_duplicates()
    rows = []
    for m, k in meta[["model", "eval_prompt"]].drop_duplicates().itertuples(index=False):
        sub = meta[(meta["model"] == m) & (meta["eval_prompt"] == k)]
        entries = [(c, crit) for c, crit in zip(sub["code"], sub["criterion"])]
        if len(entries) > 1:
            entries.append(("AVG", "AVG"))
        for code, crit in entries:
            name = measure_name(m, code, k)
            rows.append({"measure": name, "display_name": name, "kind": "llm_rater",
                         "criterion": crit, "annotator": pd.NA, "reference": "", "family": "",
                         "model": m, "eval_prompt": int(k), "rater": f"{m} {int(k)}"})
    cat = pd.DataFrame(rows)
    present = set(scores["measure"]) if "measure" in scores.columns else set()
    return cat[cat["measure"].isin(present)].reset_index(drop=True) if present else cat
