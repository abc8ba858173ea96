"""All the texts of a set as one array of word codes: each text tokenised once, in chunks.

`TokenTable` holds the word codes of every text one after the other (int32, 4 bytes a word),
the texts' lengths and the vocabulary; the set statistics (distinct-n of each cell, the n-gram
hashes for corpus novelty, word counts for keyness) are then array operations, with no Python
loop over texts or n-grams. Memory: 4 bytes per word held, plus about 24 bytes per word while
one statistic of one order is computed (n-gram ids, cell codes and their pairs).

The words are those of `storyeval.generation.corpus.words` (lower-cased word tokens of the
regex tokeniser, punctuation dropped): `words_of` returns the same list, faster (one regular
expression without the punctuation alternatives; a token of the full tokeniser holds a letter
or digit exactly when it ends with one, so the two agree token for token).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from storyeval._progress import progress_bar
from storyeval.metrics.text import _APOS

__all__ = ["TokenTable", "words_of"]

# storyeval.metrics.text._TOKEN_RE without its punctuation alternatives (ellipsis, any other
# single character): those never start a word token, so the scan finds the same words
_WORD_RE = re.compile(
    rf"""
    [^\W_]+(?=n[{_APOS}]t\b)
    | n[{_APOS}]t\b
    | [{_APOS}](?:s|m|d|ll|re|ve)\b
    | [^\W_]+(?:[.,]\d+)*
    """,
    re.VERBOSE | re.IGNORECASE | re.UNICODE,
)

# the same with a separator between texts: a chunk of texts is scanned as one string
_CHUNK_RE = re.compile("\x01|" + _WORD_RE.pattern, _WORD_RE.flags)
_SEP = "\n\x01\n"

#: Texts tokenised per chunk (bounds the Python strings held at once).
CHUNK_TEXTS = 20_000


def words_of(text: str) -> list[str]:
    """`storyeval.generation.corpus.words` of ``text`` (the same list, faster)."""
    toks = _WORD_RE.findall(text)
    return " ".join(toks).lower().split(" ") if toks else []


def _chunk_words(chunk: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The words of a chunk of texts (an object array, one text after the other) and each
    text's number of words; the texts are joined by a separator and scanned at once."""
    big = _SEP.join(chunk)
    if big.count("\x01") != max(len(chunk) - 1, 0):  # a text holds the separator itself
        toks = [words_of(t) for t in chunk]
        return (np.array([w for t in toks for w in t], dtype=object),
                np.array([len(t) for t in toks], dtype=np.int64))
    found = _CHUNK_RE.findall(big)
    if not found:
        return np.empty(0, dtype=object), np.zeros(len(chunk), dtype=np.int64)
    tokens = np.array(" ".join(found).lower().split(" "), dtype=object)
    sep = np.flatnonzero(tokens == "\x01")
    lengths = np.diff(np.concatenate([[-1], sep, [len(tokens)]])) - 1
    return np.delete(tokens, sep), lengths.astype(np.int64)


class TokenTable:
    """The word codes of a sequence of texts (see the module docstring).

    Attributes
    ----------
    codes : int32 array
        Word codes of all texts, one text after the other.
    lengths : int64 array
        Words per text.
    vocabulary : list of str
        The word of each code, in order of first appearance.
    """

    def __init__(self, codes: np.ndarray, lengths: np.ndarray, vocabulary: list[str]) -> None:
        self.codes = codes
        self.lengths = lengths
        self.vocabulary = vocabulary

    @classmethod
    def from_texts(cls, texts: Sequence[str], *, show: bool | None = False,
                   desc: str = "tokenising") -> TokenTable:
        """Tokenise ``texts`` (strings) in chunks of `CHUNK_TEXTS`, with a progress bar on a
        terminal when ``show`` is None."""
        index: dict[str, int] = {}
        parts: list[np.ndarray] = []
        lengths = np.zeros(len(texts), dtype=np.int64)
        with progress_bar(total=len(texts), desc=desc, unit="texts", show=show) as bar:
            for lo in range(0, len(texts), CHUNK_TEXTS):
                chunk = texts[lo:lo + CHUNK_TEXTS]
                flat, lengths[lo:lo + len(chunk)] = _chunk_words(chunk)
                local, uniques = pd.factorize(flat)
                glob = np.array([index.setdefault(w, len(index)) for w in uniques],
                                dtype=np.int32)
                parts.append(glob[local] if len(local) else np.empty(0, dtype=np.int32))
                bar.update(len(chunk))
        codes = np.concatenate(parts) if parts else np.empty(0, dtype=np.int32)
        return cls(codes, lengths, list(index))

    def starts(self) -> np.ndarray:
        """Position of each text's first word in `codes`."""
        return np.concatenate([[0], np.cumsum(self.lengths)[:-1]]).astype(np.int64)

    def positions(self, n: int, texts: np.ndarray | None = None) -> np.ndarray:
        """Positions in `codes` where an ``n``-gram starts inside one text (of ``texts``, the
        indices of some texts; default all), in text order."""
        lengths, starts = self.lengths, self.starts()
        if texts is not None:
            lengths, starts = lengths[texts], starts[texts]
        count = np.maximum(lengths - n + 1, 0)
        total = int(count.sum())
        first = np.repeat(starts - np.concatenate([[0], np.cumsum(count)[:-1]]), count)
        return first + np.arange(total, dtype=np.int64)

    def text_of_positions(self, n: int) -> np.ndarray:
        """The text of each position of ``positions(n)``."""
        return np.repeat(np.arange(len(self.lengths)), np.maximum(self.lengths - n + 1, 0))

    def ngram_ids(self, n: int, pos: np.ndarray) -> np.ndarray:
        """Exact integer ids of the ``n``-grams starting at ``pos`` (equal ids, equal n-grams),
        built one word at a time by factorising (previous id, next word code) pairs."""
        ids = self.codes[pos].astype(np.int64)
        width = max(len(self.vocabulary), 1)
        for k in range(1, n):
            ids = pd.factorize(ids * width + self.codes[pos + k])[0].astype(np.int64)
        return ids

    def distinct(self, n: int, cells: np.ndarray, n_cells: int
                 ) -> tuple[np.ndarray, np.ndarray]:
        """Per cell (``cells``: the cell code of each text), the number of distinct ``n``-grams
        and of ``n``-gram occurrences."""
        pos = self.positions(n)
        cell = np.asarray(cells, dtype=np.int64)[self.text_of_positions(n)]
        total = np.bincount(cell, minlength=n_cells)
        if not len(pos):
            return np.zeros(n_cells, dtype=np.int64), total
        ids = self.ngram_ids(n, pos)
        pairs = pd.unique(cell * (int(ids.max()) + 1) + ids)
        distinct = np.bincount(pairs // (int(ids.max()) + 1), minlength=n_cells)
        return distinct, total

    def word_hashes(self, hasher) -> np.ndarray:
        """64-bit hash of every word of `codes` (``hasher``: a list of words -> uint64 array,
        `storyeval.generation.corpus.NgramIndex`'s), one hash per vocabulary word."""
        return np.asarray(hasher(self.vocabulary), dtype=np.uint64)[self.codes]
