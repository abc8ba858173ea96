"""LitBench's curation of preference pairs from upvoted stories (paper 002, section 3), each
filter a named option, with a report of what each one removed.

Input: one row per story (``story_id``, ``prompt_id``, ``story``, ``upvotes``,
``timestamp``: Unix seconds or ISO 8601 dates; optional ``prompt``, ``n_tokens``). Steps, in order:

1. ``min_upvotes``: drop stories with fewer upvotes (LitBench: 10).
2. ``max_tokens``: drop stories longer than this many tokens (2048). Tokens are the
   ``n_tokens`` column when given, else the count of a regular expression (words and single
   punctuation marks, stated in the report): pass a tokenizer's counts for the paper's rule.
3. ``min_words``: drop stories with fewer whitespace-separated words (50).
4. Pairs: every two stories of one prompt; the *chosen* story is the one with more upvotes.
5. ``min_upvote_gap``: drop pairs whose upvote difference is below this share of the
   chosen story's upvotes, (u_c - u_r) / u_c < gap (0.25; equal upvotes never pass a
   positive gap).
6. ``later_winner``: keep only pairs whose chosen story was posted later (strictly), so an
   earlier story's longer exposure cannot explain its upvotes.
7. ``length_debias``: the length differences d = words(chosen) - words(rejected) go into a
   histogram of ``bins`` buckets (100) symmetric about 0 over [-max|d|, max|d|]; in each pair
   of mirrored buckets the larger side is pruned at random (``seed``) to the size of the
   smaller one. Pairs with d = 0 are kept. Afterwards exactly half the pairs with d != 0 have
   the longer story chosen, and the histogram is symmetric.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from storyeval.data.io import numeric_column, row_label, string_column
from storyeval.exceptions import InputError

__all__ = ["CURATION_COLUMNS", "CurationResult", "curate_pairs", "validate_curation_stories"]

#: Required columns of the stories table.
CURATION_COLUMNS = ("story_id", "prompt_id", "story", "upvotes", "timestamp")
_TOKEN = re.compile(r"\w+|[^\w\s]")


@dataclass
class CurationResult:
    """Kept pairs and the report of each step.

    Attributes
    ----------
    pairs : DataFrame
        One row per kept pair: ``id, prompt_id, prompt, story_a`` (chosen), ``story_b``
        (rejected), ``winner`` (``"a"``), ``chosen_story, rejected_story, chosen_upvotes,
        rejected_upvotes, chosen_timestamp, rejected_timestamp, chosen_words,
        rejected_words``: a preference file and a best-of-N file at once.
    report : DataFrame
        One row per step: ``step, setting, unit`` (stories or pairs), ``before, removed,
        after`` and ``chosen_longer`` (share of pairs with d != 0 whose chosen story has more
        words, after the step; pair steps only).
    seed : int
    """

    pairs: pd.DataFrame
    report: pd.DataFrame
    seed: int
    settings: dict = field(default_factory=dict)


def validate_curation_stories(frame: pd.DataFrame, *, source: str = "stories",
                              fmt: str | None = None) -> pd.DataFrame:
    """A clean stories table for `curate_pairs` (errors name the file, column and row)."""
    if len(frame) == 0:
        raise InputError(f"{source}: no rows")
    missing = [c for c in CURATION_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(f"{source}: missing column(s) {missing}; the stories table has "
                         f"{list(CURATION_COLUMNS)} (optional prompt, n_tokens); found "
                         f"{[str(c) for c in frame.columns]}")
    out = pd.DataFrame({c: string_column(frame[c], c, source, fmt).to_numpy()
                        for c in ("story_id", "prompt_id", "story")})
    out["prompt"] = (string_column(frame["prompt"], "prompt", source, fmt).to_numpy()
                     if "prompt" in frame.columns else out["prompt_id"])
    out["upvotes"] = numeric_column(frame["upvotes"], "upvotes", source, fmt).to_numpy()
    bad = np.flatnonzero(np.isnan(out["upvotes"].to_numpy()))
    if len(bad):
        raise InputError(f"{row_label(source, int(bad[0]), fmt)}: column 'upvotes' is empty")
    out["timestamp"] = _timestamps(frame["timestamp"], source, fmt)
    if "n_tokens" in frame.columns:
        out["n_tokens"] = numeric_column(frame["n_tokens"], "n_tokens", source, fmt).to_numpy()
    dup = out["story_id"].duplicated()
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        raise InputError(f"{row_label(source, i, fmt)}: story_id {out['story_id'].iloc[i]!r} "
                         "is given twice")
    return out


def _timestamps(col: pd.Series, source: str, fmt: str | None) -> np.ndarray:
    """Posting times as float seconds: numbers as given (e.g. Unix time), else dates."""
    num = pd.to_numeric(col, errors="coerce")
    if num.notna().all():
        return num.to_numpy(dtype=np.float64)
    dates = pd.to_datetime(col, errors="coerce", utc=True, format="ISO8601")
    bad = np.flatnonzero(dates.isna().to_numpy())
    if len(bad):
        i = int(bad[0])
        raise InputError(f"{row_label(source, i, fmt)}: column 'timestamp' has "
                         f"{col.iloc[i]!r}: give a number (e.g. Unix seconds) or an ISO 8601 "
                         "date")
    return (dates - pd.Timestamp(0, tz="UTC")).dt.total_seconds().to_numpy()


def _word_counts(texts: pd.Series) -> np.ndarray:
    return texts.str.split().str.len().fillna(0).to_numpy(dtype=np.int64)


def _make_pairs(stories: pd.DataFrame) -> pd.DataFrame:
    """Every two stories of one prompt, the one with more upvotes as chosen (ties: the
    first listed, then removed by any positive upvote gap)."""
    s = stories.reset_index(drop=True)
    m = s.reset_index().merge(s.reset_index(), on="prompt_id", suffixes=("_x", "_y"))
    m = m[m["index_x"] < m["index_y"]]
    first = m["upvotes_x"].to_numpy() >= m["upvotes_y"].to_numpy()
    ci = np.where(first, m["index_x"], m["index_y"])
    ri = np.where(first, m["index_y"], m["index_x"])
    c, r = s.iloc[ci].reset_index(drop=True), s.iloc[ri].reset_index(drop=True)
    return pd.DataFrame({
        "prompt_id": c["prompt_id"], "prompt": c["prompt"], "story_a": c["story_id"],
        "story_b": r["story_id"], "winner": "a", "chosen_story": c["story"],
        "rejected_story": r["story"], "chosen_upvotes": c["upvotes"],
        "rejected_upvotes": r["upvotes"], "chosen_timestamp": c["timestamp"],
        "rejected_timestamp": r["timestamp"], "chosen_words": c["words"],
        "rejected_words": r["words"]})


def _longer_share(pairs: pd.DataFrame) -> float:
    d = pairs["chosen_words"].to_numpy() - pairs["rejected_words"].to_numpy()
    nz = d != 0
    return float((d[nz] > 0).mean()) if nz.any() else math.nan


def length_debias(pairs: pd.DataFrame, *, bins: int = 100, seed: int = 0) -> pd.DataFrame:
    """Prune ``pairs`` to a symmetric histogram of length differences (step 7 of the module
    docstring); pairs keep their order."""
    if bins < 2 or bins % 2:
        raise InputError(f"bins: an even number >= 2 (buckets mirror about 0), got {bins}")
    d = (pairs["chosen_words"].to_numpy() - pairs["rejected_words"].to_numpy()).astype(float)
    nz = np.flatnonzero(d != 0)
    if not len(nz):
        return pairs
    top = np.abs(d[nz]).max()
    half = bins // 2
    # bucket k of |d| in (k top / half, (k + 1) top / half]; the side is the sign
    k = np.minimum(np.ceil(np.abs(d[nz]) / top * half).astype(np.int64) - 1, half - 1)
    side = d[nz] > 0
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(nz))  # a random rank within each bucket and side
    cell = (k * 2 + side)[order]      # bucket and side of each pair, in random order
    rank = pd.Series(cell).groupby(cell).cumcount().to_numpy()
    counts = np.bincount(cell, minlength=2 * half).reshape(half, 2)
    limit = counts.min(axis=1)[cell // 2]  # the smaller side's count of its bucket
    kept = np.ones(len(pairs), dtype=bool)
    kept[nz[order]] = rank < limit
    return pairs[kept]


def curate_pairs(
    stories: pd.DataFrame,
    *,
    min_upvotes: float | None = 10,
    max_tokens: int | None = 2048,
    min_words: int | None = 50,
    min_upvote_gap: float | None = 0.25,
    later_winner: bool = True,
    length_debias_bins: int | None = 100,
    seed: int = 0,
    source: str = "stories",
    fmt: str | None = None,
) -> CurationResult:
    """LitBench's pair curation (module docstring); a filter set to None (or
    ``later_winner=False``) is skipped and reported as off.

    Validated on synthetic stories whose kept pairs are known (tests/test_pairwise_curation.py).
    """
    s = validate_curation_stories(stories, source=source, fmt=fmt)
    if min_upvote_gap is not None and not 0 <= float(min_upvote_gap) < 1:
        raise InputError(f"min_upvote_gap: a share in [0, 1), got {min_upvote_gap!r}")
    s["words"] = _word_counts(s["story"])
    tokens_from = "column n_tokens" if "n_tokens" in s.columns else "regex words+punctuation"
    if "n_tokens" not in s.columns:
        s["n_tokens"] = s["story"].str.count(_TOKEN.pattern).to_numpy()
    rows: list[dict] = []

    def step(name, setting, unit, before, after, pairs=None):
        rows.append({"step": name, "setting": setting, "unit": unit, "before": before,
                     "removed": before - after, "after": after,
                     "chosen_longer": _longer_share(pairs) if pairs is not None else math.nan})

    story_filters = (
        ("min_upvotes", min_upvotes, lambda v: s["upvotes"] >= v, "upvotes >= {}"),
        ("max_tokens", max_tokens, lambda v: s["n_tokens"] <= v,
         "tokens <= {} (" + tokens_from + ")"),
        ("min_words", min_words, lambda v: s["words"] >= v, "words >= {}"))
    for name, value, rule, text in story_filters:
        n0 = len(s)
        if value is not None:
            s = s[rule(value).to_numpy()]
        step(name, "off" if value is None else text.format(value), "stories", n0, len(s))
    pairs = _make_pairs(s)
    step("pairs", "every two stories of one prompt; chosen = more upvotes", "pairs",
         len(pairs), len(pairs), pairs)
    n0 = len(pairs)
    if min_upvote_gap is not None:
        uc, ur = pairs["chosen_upvotes"].to_numpy(), pairs["rejected_upvotes"].to_numpy()
        with np.errstate(invalid="ignore", divide="ignore"):
            gap = np.where(uc > 0, (uc - ur) / uc, 0.0)
        pairs = pairs[(gap >= float(min_upvote_gap)) & (uc > ur)]
    step("min_upvote_gap", "off" if min_upvote_gap is None else
         f"(u_chosen - u_rejected) / u_chosen >= {min_upvote_gap:g}", "pairs", n0, len(pairs),
         pairs)
    n0 = len(pairs)
    if later_winner:
        pairs = pairs[pairs["chosen_timestamp"].to_numpy() > pairs["rejected_timestamp"]
                      .to_numpy()]
    step("later_winner", "chosen posted later" if later_winner else "off", "pairs", n0,
         len(pairs), pairs)
    n0 = len(pairs)
    if length_debias_bins is not None:
        pairs = length_debias(pairs, bins=int(length_debias_bins), seed=seed)
    step("length_debias", "off" if length_debias_bins is None else
         f"{length_debias_bins}-bucket histogram of word differences pruned to symmetry "
         f"(seed {seed})", "pairs", n0, len(pairs), pairs)
    pairs = pairs.reset_index(drop=True)
    pairs.insert(0, "id", np.arange(len(pairs)).astype(str))
    settings = {"min_upvotes": min_upvotes, "max_tokens": max_tokens, "tokens": tokens_from,
                "min_words": min_words, "min_upvote_gap": min_upvote_gap,
                "later_winner": later_winner, "length_debias_bins": length_debias_bins,
                "seed": seed}
    return CurationResult(pairs=pairs, report=pd.DataFrame(rows), seed=seed,
                          settings=settings)
