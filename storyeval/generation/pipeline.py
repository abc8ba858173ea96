"""All generation statistics of one stories table at once (what ``storyeval diversity`` runs)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from storyeval.exceptions import InputError
from storyeval.generation.corpus import NgramIndex
from storyeval.generation.keyness import log_odds_keyness
from storyeval.generation.lexical import diversity_table, run_spread
from storyeval.generation.similarity import group_similarity

__all__ = ["align_embeddings", "diversity_statistics", "embed_stories"]


def embed_stories(texts: Sequence[str]) -> np.ndarray:
    """Embeddings from the offline MiniLM of the ``explain`` extra (imported only here)."""
    from storyeval.explain.embed import embed_texts

    return np.asarray(embed_texts(list(texts)), dtype=np.float64)


def align_embeddings(stories: pd.DataFrame, table: pd.DataFrame, *, id_column: str,
                     source: str = "embeddings") -> np.ndarray:
    """The rows of an embedding table (an id column and numeric columns) in the stories' order."""
    for frame, name in ((stories, "stories"), (table, source)):
        if id_column not in frame.columns:
            raise InputError(f"{name}: no id column {id_column!r}")
    emb = table.set_index(table[id_column].astype(str)).drop(columns=[id_column])
    for c in emb.columns:
        values = pd.to_numeric(emb[c], errors="coerce")
        if values.isna().any():
            row = int(np.flatnonzero(values.isna().to_numpy())[0])
            raise InputError(f"{source}: column {c!r} is not a number in row {row + 1}")
        emb[c] = values
    ids = stories[id_column].astype(str)
    missing = ids[~ids.isin(emb.index)]
    if len(missing):
        raise InputError(f"{source}: no embedding for {id_column} {missing.iloc[0]!r}")
    return emb.loc[ids].to_numpy(dtype=np.float64)


def diversity_statistics(stories: pd.DataFrame, *, text: str = "story", group: str = "system",
                         time: str | None = None, run: str | None = None,
                         orders: Sequence[int] = (1, 2),
                         corpus_files: Sequence[str | Path] = (),
                         corpus_texts: Sequence[str] | None = None,
                         chunk_ngrams: int = 2 ** 23, embeddings: np.ndarray | None = None,
                         n_permutations: int = 999, random_state: int = 0,
                         ) -> dict[str, pd.DataFrame]:
    """distinct-n, novelty-n (with a corpus), run spread, similarity and keyness tables.

    Returns
    -------
    dict
        ``diversity`` (per group x time x run cell), ``spread`` (mean, SD over ``run``; absent
        without ``run``), ``similarity`` (per time x run, with embeddings), ``keyness`` (each
        group against all other stories, per time when given; top 20 words each way).
    """
    by = [c for c in (group, time, run) if c]
    use_corpus = bool(corpus_files) or corpus_texts is not None
    index = NgramIndex(orders, chunk_ngrams=chunk_ngrams) if use_corpus else None
    try:
        if index is not None:
            for f in corpus_files:
                index.add_file(f)
            if corpus_texts is not None:
                index.add_texts(corpus_texts)
        div = diversity_table(stories, text=text, by=by, orders=orders, index=index)
    finally:
        if index is not None:
            index.close()
    out = {"diversity": div}
    if run:
        out["spread"] = run_spread(div, run=run)
    outer = [c for c in (time, run) if c]
    if embeddings is not None:
        frames = []
        for key, cell in (stories.groupby(outer, sort=True) if outer else [((), stories)]):
            key = key if isinstance(key, tuple) else (key,)
            res = group_similarity(embeddings[cell.index.to_numpy()], cell[group].to_numpy(),
                                   n_permutations=n_permutations, random_state=random_state)
            frames.append(res.assign(**dict(zip(outer, key))))
        out["similarity"] = pd.concat(frames, ignore_index=True)
    frames = []
    tcells = stories.groupby(time, sort=True) if time else [(None, stories)]
    for tkey, cell in tcells:
        for g in sorted(cell[group].astype(str).unique()):
            mask = cell[group].astype(str) == g
            k = log_odds_keyness(cell.loc[mask, text].astype(str).tolist(),
                                 cell.loc[~mask, text].astype(str).tolist())
            top = pd.concat([k.head(20), k.tail(20)]).assign(group=g)
            if time:
                top[time] = tkey
            frames.append(top)
    out["keyness"] = pd.concat(frames, ignore_index=True)
    return out
