"""All generation statistics of one stories table at once (what ``storyeval diversity`` runs)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from storyeval._progress import Stages
from storyeval.data.io import row_label
from storyeval.exceptions import InputError
from storyeval.generation.corpus import NgramIndex
from storyeval.generation.keyness import keyness_from_counts
from storyeval.generation.lexical import diversity_table, run_spread
from storyeval.generation.similarity import group_similarity
from storyeval.generation.tokens import TokenTable

__all__ = ["align_embeddings", "check_stories", "diversity_statistics", "embed_stories"]


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
    if table.empty:
        raise InputError(f"{source}: no rows (a header only)")
    dup = table[id_column].astype(str).duplicated().to_numpy()
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        raise InputError(f"{source}: row {i + 1}: {id_column} {table[id_column].iloc[i]!r} has "
                         "a second embedding")
    emb = table.set_index(table[id_column].astype(str)).drop(columns=[id_column])
    for c in emb.columns:
        values = pd.to_numeric(emb[c], errors="coerce")
        bad = ~np.isfinite(values.to_numpy(dtype=float))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise InputError(f"{source}: column {c!r} is not a finite number in row {row + 1}: "
                             f"{emb[c].iloc[row]!r}")
        emb[c] = values
    ids = stories[id_column].astype(str)
    missing = ids[~ids.isin(emb.index)]
    if len(missing):
        raise InputError(f"{source}: no embedding for {id_column} {missing.iloc[0]!r}")
    return emb.loc[ids].to_numpy(dtype=np.float64)


def check_stories(stories: pd.DataFrame, *, text: str = "story", id_column: str = "story_id",
                  columns: Sequence[str | None] = (), source: str = "stories",
                  fmt: str | None = None) -> None:
    """One line naming ``source`` and the row for a table without rows, without the text
    column or one of ``columns`` (group, time, run), an empty text, a story id (``id_column``,
    when the table has it) given twice, or, without ids, a row given twice: a duplicated story
    would be counted twice in every statistic."""
    import difflib

    if stories.empty:
        raise InputError(f"{source}: no stories (a header only)")
    for name in (text, *[c for c in columns if c]):
        if name not in stories.columns:
            close = difflib.get_close_matches(str(name), [str(c) for c in stories.columns], n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"has {list(stories.columns)}"
            raise InputError(f"{source}: no column {name!r}; {hint}")
    empty = (stories[text].isna() | (stories[text].astype(str).str.strip() == "")).to_numpy()
    if empty.any():
        i = int(np.flatnonzero(empty)[0])
        raise InputError(f"{row_label(source, i, fmt)}: column {text!r} is empty "
                         f"({int(empty.sum())} row(s) in all)")
    if id_column in stories.columns:
        dup, what = stories[id_column].astype(str).duplicated().to_numpy(), id_column
    else:
        dup, what = stories.astype(str).duplicated().to_numpy(), "row"
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        value = stories[id_column].iloc[i] if what != "row" else stories[text].iloc[i][:40]
        raise InputError(f"{row_label(source, i, fmt)}: {what} {value!r} appears twice "
                         f"({int(dup.sum())} duplicate(s)); a story counts once: remove the "
                         "copies")


def stories_with_embeddings(stories_path: str | Path, *, text: str, id_column: str,
                            embeddings_path: str | Path | None = None
                            ) -> tuple[pd.DataFrame, np.ndarray, str]:
    """(stories, one unit-norm-checkable embedding row per story, where the embeddings came
    from) for the commands that compare stories by embedding (`storyeval dedup`, `storyeval
    cluster`): the stories file read and checked (an id column, ids given once, texts present),
    then the user's embeddings aligned to its ids, or MiniLM embeddings of the texts; a zero or
    non-finite row is an error naming it."""
    from storyeval.data.io import read_table
    from storyeval.generation.dedup import unit_rows

    stories, fmt = read_table(stories_path)
    stories = stories.reset_index(drop=True)
    if id_column not in stories.columns:
        raise InputError(f"{stories_path}: no id column {id_column!r}; has "
                         f"{list(stories.columns)}")
    check_stories(stories, text=text, id_column=id_column, source=str(stories_path), fmt=fmt)
    if embeddings_path is not None:
        table, _ = read_table(embeddings_path)
        emb = align_embeddings(stories, table, id_column=id_column, source=str(embeddings_path))
        source = str(embeddings_path)
    else:
        emb = embed_stories(stories[text].astype(str).tolist())
        source = "MiniLM embeddings"
    unit_rows(emb, source=source)
    return stories, emb, source


def diversity_statistics(stories: pd.DataFrame, *, text: str = "story", group: str = "system",
                         time: str | None = None, run: str | None = None,
                         orders: Sequence[int] = (1, 2),
                         corpus_files: Sequence[str | Path] = (),
                         corpus_texts: Sequence[str] | None = None,
                         chunk_ngrams: int = 2 ** 23, embeddings: np.ndarray | None = None,
                         n_permutations: int = 999, random_state: int = 0,
                         show_progress: bool | None = False) -> dict[str, pd.DataFrame]:
    """distinct-n, novelty-n (with a corpus), run spread, similarity and keyness tables.

    Each story is tokenised once (`storyeval.generation.tokens.TokenTable`, with a progress
    bar on a terminal when ``show_progress`` is None); the statistics are array operations on
    the word codes. Memory: about 4 bytes per word of the stories, plus 24 bytes per word
    while one statistic is computed (10^6 stories of 40 words: about 1 GB at the peak).

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
    stage = Stages(show_progress)
    try:
        if index is not None:
            stage.start("indexing the corpus")
            for f in corpus_files:
                index.add_file(f)
            if corpus_texts is not None:
                index.add_texts(corpus_texts)
            stage.done(f"{index.n_texts:,} texts")
        missing = [c for c in (text, *by) if c not in stories.columns]
        if missing:
            raise InputError(f"stories: missing column(s) {missing}; has "
                             f"{list(stories.columns)}")
        if stories[text].isna().any():
            row = int(np.flatnonzero(stories[text].isna().to_numpy())[0])
            raise InputError(f"stories: column {text!r} is empty in row {row + 1}")
        tokens = TokenTable.from_texts(stories[text].astype(str).tolist(), show=show_progress,
                                       desc="tokenising the stories")
        stage.start("distinct-n" + (" and novelty-n" if index is not None else ""))
        div = diversity_table(stories, text=text, by=by, orders=orders, index=index,
                              tokens=tokens)
        stage.done(f"{len(div):,} rows")
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
    stage.start("keyness")
    out["keyness"] = _keyness(stories, tokens, group=group, time=time)
    stage.done()
    return out


def _keyness(stories: pd.DataFrame, tokens: TokenTable, *, group: str, time: str | None
             ) -> pd.DataFrame:
    """Each group against the other stories (of its time), top 20 words each way, from the
    word counts of each (time, group) cell."""
    text_of_word = np.repeat(np.arange(len(stories)), tokens.lengths)
    names, gcode = np.unique(stories[group].astype(str).to_numpy(), return_inverse=True)
    if time:
        tgroups = stories.groupby(time, sort=True)
        tcode = tgroups.ngroup().to_numpy()
        tkeys = list(tgroups.size().index)
    else:
        tcode, tkeys = np.zeros(len(stories), dtype=np.int64), [None]
    vocabulary = np.array(tokens.vocabulary, dtype=object)
    size = len(vocabulary)
    alphabetical = np.empty(size, dtype=np.int64)  # each word's rank in alphabetical order
    alphabetical[np.argsort(vocabulary)] = np.arange(size)
    frames = []
    for t, tkey in enumerate(tkeys):
        if len(tkeys) > 1:
            sel = tcode[text_of_word] == t
            codes, g_of_word = tokens.codes[sel], gcode[text_of_word[sel]]
        else:
            codes, g_of_word = tokens.codes, gcode[text_of_word]
        used = np.flatnonzero(np.bincount(codes, minlength=size))
        used = used[np.argsort(alphabetical[used])]  # the words of time t, alphabetically
        column = np.empty(size, dtype=np.int64)
        column[used] = np.arange(len(used))
        counts = np.bincount(g_of_word * len(used) + column[codes],
                             minlength=len(names) * len(used)).reshape(len(names), len(used))
        total = counts.sum(axis=0)
        vocab = vocabulary[used].tolist()
        for g in np.unique(gcode[tcode == t]):
            k = keyness_from_counts(vocab, counts[g], total - counts[g])
            top = pd.concat([k.head(20), k.tail(20)]).assign(group=names[g])
            if time:
                top[time] = tkey
            frames.append(top)
    return pd.concat(frames, ignore_index=True)
