"""Set-level distinct-n and corpus novelty-n, per group x time x run, and their SD across runs."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from storyeval.exceptions import InputError
from storyeval.generation.corpus import NgramIndex, hash_ngrams
from storyeval.generation.tokens import TokenTable

__all__ = ["diversity_table", "novelty_n", "run_spread", "set_distinct_n"]


def _share(num: int, den: int) -> float:
    return num / den if den else math.nan


def set_distinct_n(texts: Sequence[str], n: int = 1) -> float:
    """Distinct-n of a set of texts: |unique n-grams| / |n-gram occurrences| over the set.

    Notes
    -----
    distinct-n(O) = |set(G_n(O))| / |G_n(O)| (Li et al., 2016; paper 003, Sec. 5), n-grams of
    `storyeval.generation.corpus.words` within each text. NaN when the set has no n-gram.
    Validated against hand-computed toy sets (tests/test_generation.py).

    Examples
    --------
    >>> set_distinct_n(["a b a b", "a b c"], n=1)
    0.42857142857142855
    """
    if n < 1:
        raise InputError(f"n: must be >= 1, got {n}")
    distinct, total = TokenTable.from_texts(list(texts)).distinct(n, np.zeros(len(texts)), 1)
    return _share(int(distinct[0]), int(total[0]))


def novelty_n(texts: Sequence[str], index: NgramIndex, n: int = 1) -> float:
    """Novelty-n of a set of texts against a corpus: the share of the set's n-gram occurrences
    that do not occur in the corpus.

    Notes
    -----
    novelty-n(O) = |{g in G_n(O) : g not in corpus}| / |G_n(O)|, counted over occurrences
    (McCoy et al., 2023; paper 003: new n-grams rescaled by the generated tokens). 0 when the
    corpus contains every n-gram, 1 against an empty corpus, NaN without n-grams. Membership is
    `NgramIndex`'s (64-bit hashes; collision bound in `storyeval.generation.corpus`).
    Validated against a ``collections.Counter`` computation (tests/test_generation.py).
    """
    table = TokenTable.from_texts(list(texts))
    novel, total = _novel(table, index, n, np.zeros(len(texts), dtype=np.int64), 1)
    return _share(int(novel[0]), int(total[0]))


def _novel(table: TokenTable, index: NgramIndex, n: int, cells: np.ndarray, n_cells: int
           ) -> tuple[np.ndarray, np.ndarray]:
    """Per cell, the n-gram occurrences not in the corpus and all n-gram occurrences."""
    pos = table.positions(n)
    cell = cells[table.text_of_positions(n)]
    hashes = hash_ngrams(table.word_hashes(index.word_hasher), n)[pos] if len(pos) else \
        np.empty(0, dtype=np.uint64)
    found = index.contains_hashes(n, hashes)  # one pass over the runs for the whole set
    return (np.bincount(cell[~found], minlength=n_cells),
            np.bincount(cell, minlength=n_cells))


def _check_columns(stories: pd.DataFrame, cols: Sequence[str], source: str) -> None:
    missing = [c for c in cols if c not in stories.columns]
    if missing:
        raise InputError(f"{source}: missing column(s) {missing}; has {list(stories.columns)}")


def diversity_table(stories: pd.DataFrame, *, text: str = "story",
                    by: Sequence[str] = ("system",), orders: Sequence[int] = (1, 2),
                    index: NgramIndex | None = None, source: str = "stories",
                    tokens: TokenTable | None = None) -> pd.DataFrame:
    """distinct-n (and novelty-n with a corpus index) of each cell of ``by`` (e.g. group, time,
    run), one row per cell and statistic. ``tokens``: the stories' `TokenTable` when the
    caller has it already (each story is tokenised once; see `storyeval.generation.tokens`
    for the memory).

    Returns
    -------
    DataFrame
        The ``by`` columns, ``statistic`` (``distinct_1``, ``novelty_2``, ...), ``value``,
        ``n_texts`` and ``n_ngrams`` (the denominator).
    """
    _check_columns(stories, [text, *by], source)
    if stories.empty:
        raise InputError(f"{source}: no story")
    if stories[text].isna().any():
        row = int(np.flatnonzero(stories[text].isna().to_numpy())[0])
        raise InputError(f"{source}: column {text!r} is empty in row {row + 1}")
    if min(orders, default=1) < 1:
        raise InputError(f"orders: expected n-gram orders >= 1, got {list(orders)}")
    if tokens is None:
        tokens = TokenTable.from_texts(stories[text].astype(str).tolist())
    groups = stories.groupby(list(by), sort=True, dropna=False)
    cells = groups.ngroup().to_numpy(dtype=np.int64)
    sizes = groups.size()
    keys = [k if isinstance(k, tuple) else (k,) for k in sizes.index]
    stats = {}
    for n in orders:
        stats[f"distinct_{n}"] = tokens.distinct(n, cells, len(keys))
        if index is not None:
            stats[f"novelty_{n}"] = _novel(tokens, index, n, cells, len(keys))
    rows = []
    for c, key in enumerate(keys):
        for n in orders:
            for name in (f"distinct_{n}", f"novelty_{n}"):
                if name in stats:
                    part, total = stats[name]
                    rows.append({**dict(zip(by, key)), "statistic": name,
                                 "value": _share(int(part[c]), int(total[c])),
                                 "n_texts": int(sizes.iloc[c]), "n_ngrams": int(total[c])})
    return pd.DataFrame(rows)


def run_spread(table: pd.DataFrame, *, run: str, value: str = "value") -> pd.DataFrame:
    """Mean and SD (ddof=1, NaN with one run) of each statistic across runs: ``table`` grouped
    by every column except ``run``, ``value`` and the count columns."""
    keys = [c for c in table.columns if c not in {run, value, "n_texts", "n_ngrams",
                                                  "p_value", "n_permutations", "seed"}]
    g = table.groupby(keys, sort=True, dropna=False)[value]
    out = g.agg(mean="mean", sd=lambda s: s.std(ddof=1), n_runs="count").reset_index()
    return out
