"""YAKE! keywords per criterion."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from storyeval._optional import import_optional
from storyeval.exceptions import InputError

__all__ = ["keywords_by_group", "yake_keywords"]


def yake_keywords(text: str, *, top: int = 30, max_ngram_size: int = 3, exact: bool = False,
                  language: str = "en", dedup_threshold: float = 0.9) -> list[tuple[str, float]]:
    """The ``top`` YAKE! keywords of one document, most relevant first.

    Parameters
    ----------
    text : str
    top : int, default 30
    max_ngram_size : int, default 3
        YAKE's ``n``: keywords of 1 to ``n`` words (trigrams and shorter).
    exact : bool, default False
        Keep only keywords of exactly ``max_ngram_size`` words (YAKE is asked for enough
        candidates to fill ``top`` when possible).
    language : str, default "en"
        Stop-word list of YAKE.
    dedup_threshold : float, default 0.9
        YAKE's ``dedupLim``: near-duplicate keywords above this similarity are merged.

    Returns
    -------
    list of (keyword, score)
        YAKE scores: lower is more relevant.

    References
    ----------
    1. Campos, R., et al. (2020). YAKE! Keyword extraction from single documents using
       multiple local features. Information Sciences 509, 257-289.

    Examples
    --------
    >>> text = "The ending surprised me. The ending was hard to predict."
    >>> [keyword for keyword, _ in yake_keywords(text, top=2)]
    ['ending surprised', 'ending']

    Validated against calling ``yake.KeywordExtractor`` directly with the same settings.
    """
    yake = import_optional("yake", extra="explain", purpose="keyword extraction")
    if top < 1 or max_ngram_size < 1:
        raise InputError(f"top and max_ngram_size must be >= 1, got {top}, {max_ngram_size}")
    if not isinstance(text, str) or not text.strip():
        return []
    ask = top if not exact else max(top * 20, 200)
    extractor = yake.KeywordExtractor(lan=language, n=max_ngram_size, dedupLim=dedup_threshold,
                                      top=ask)
    found = [(kw, float(score)) for kw, score in extractor.extract_keywords(text)]
    found.sort(key=lambda item: item[1])
    if exact:
        found = [(kw, s) for kw, s in found if len(kw.split()) == max_ngram_size]
    return found[:top]


def keywords_by_group(texts: Sequence[str], groups: Sequence[str], *, top: int = 30,
                      max_ngram_size: int = 3, exact: bool = False, language: str = "en",
                      dedup_threshold: float = 0.9) -> pd.DataFrame:
    """YAKE! keywords of each group (criterion): the group's texts are joined into one document.

    Returns
    -------
    pandas.DataFrame
        Columns ``criterion, rank, keyword, score, n_words, n_texts``; ranks start at 1.
    """
    texts, groups = list(texts), [str(g) for g in groups]
    if len(texts) != len(groups):
        raise InputError(f"texts has {len(texts)} entries but groups has {len(groups)}")
    rows = []
    for g in sorted(set(groups)):
        docs = [t for t, gg in zip(texts, groups) if gg == g]
        found = yake_keywords("\n\n".join(docs), top=top, max_ngram_size=max_ngram_size,
                              exact=exact, language=language, dedup_threshold=dedup_threshold)
        for rank, (kw, score) in enumerate(found, start=1):
            rows.append({"criterion": g, "rank": rank, "keyword": kw, "score": score,
                         "n_words": len(kw.split()), "n_texts": len(docs)})
    return pd.DataFrame(rows, columns=["criterion", "rank", "keyword", "score", "n_words",
                                       "n_texts"])
