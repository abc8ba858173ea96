"""A corpus of n-grams read as a stream into sorted 64-bit hashes, in runs on disk.

Memory bound: while building, one chunk of at most ``chunk_ngrams`` hashes is held (8 bytes
each, plus the sort's copy: about ``24 * chunk_ngrams`` bytes); each chunk is sorted,
de-duplicated and written to a ``.npy`` run in a temporary folder. A query reads each run
memory-mapped and looks the query's hashes up with a binary search, so querying holds the
query's hashes plus the pages the operating system maps in.

Hashing: each word is hashed to 64 bits with BLAKE2b (``digest_size=8``); an n-gram's hash
combines its words' hashes position by position (multiply by an odd constant and add, modulo
2^64) and is finished with the SplitMix64 mixer. Two different n-grams share a hash with
probability about 2^-64, so a query of M distinct n-grams against N distinct corpus n-grams
reports a false match with probability at most M * N / 2^64 (1e5 * 1e8 / 1.8e19 = 5.4e-7).
No n-gram of the corpus is ever missed (no false negatives).
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from storyeval.exceptions import InputError
from storyeval.generation.tokens import words_of

__all__ = ["NgramIndex", "hash_ngrams", "words"]

_MULT = np.uint64(0x9E3779B97F4A7C15)


def words(text: str) -> list[str]:
    """Lower-cased word tokens of ``text`` (`storyeval.metrics.text.word_tokens`, keeping the
    tokens with at least one letter or digit: punctuation removed); computed by
    `storyeval.generation.tokens.words_of`, which gives the same list faster."""
    return words_of(text)


class _WordHasher:
    """BLAKE2b-64 of each word, cached per distinct word."""

    def __init__(self) -> None:
        self._cache: dict[str, int] = {}

    def __call__(self, toks: Sequence[str]) -> np.ndarray:
        cache = self._cache
        hashes = [cache.get(t) for t in toks]
        if None in hashes:
            for i, t in enumerate(toks):
                if hashes[i] is None:
                    h = int.from_bytes(hashlib.blake2b(t.encode("utf-8"),
                                                       digest_size=8).digest(), "little")
                    if len(cache) < 5_000_000:  # bounds the cache (about 0.5 GB at most)
                        cache[t] = h
                    hashes[i] = h
        return np.array(hashes, dtype=np.uint64)


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser (elementwise, modulo 2^64)."""
    with np.errstate(over="ignore"):
        x = x ^ (x >> np.uint64(30))
        x = x * np.uint64(0xBF58476D1CE4E5B9)
        x = x ^ (x >> np.uint64(27))
        x = x * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def hash_ngrams(word_hashes: np.ndarray, n: int) -> np.ndarray:
    """64-bit hashes of the contiguous ``n``-grams of a sequence of word hashes (vectorised)."""
    m = len(word_hashes) - n + 1
    if m <= 0:
        return np.empty(0, dtype=np.uint64)
    with np.errstate(over="ignore"):
        h = np.full(m, np.uint64(n), dtype=np.uint64)
        for k in range(n):
            h = h * _MULT + word_hashes[k:k + m]
    return _mix(h)


class NgramIndex:
    """Exact (up to 64-bit hash collisions, see the module docstring) membership of n-grams of
    a corpus read as a stream of texts.

    Parameters
    ----------
    orders : sequence of int
        The n-gram orders to index (default (1, 2)).
    chunk_ngrams : int
        Hashes held in memory per order before a sorted run is written (default 2**23, about
        200 MB of peak working memory per order at 24 bytes per hash).
    folder : path, optional
        Where the runs go (default: a fresh temporary folder, removed by `close`).

    Notes
    -----
    n-grams do not cross text boundaries: each text of the stream (a line of a corpus file, a
    story) is tokenised with `words` on its own. Validated against a ``collections.Counter`` of
    the same n-grams (tests/test_generation.py).

    Examples
    --------
    >>> with NgramIndex(orders=(1,)) as idx:
    ...     idx.add_texts(["the cat sat"])
    ...     idx.contains(1, [("cat",), ("dog",)]).tolist()
    [True, False]
    """

    def __init__(self, orders: Sequence[int] = (1, 2), *, chunk_ngrams: int = 2 ** 23,
                 folder: str | Path | None = None) -> None:
        if not orders or min(orders) < 1:
            raise InputError(f"orders: expected n-gram orders >= 1, got {list(orders)}")
        if chunk_ngrams < 1:
            raise InputError(f"chunk_ngrams: must be >= 1, got {chunk_ngrams}")
        self.orders = tuple(sorted(set(int(n) for n in orders)))
        self.chunk_ngrams = int(chunk_ngrams)
        self._own = folder is None
        self.folder = Path(tempfile.mkdtemp(prefix="storyeval-ngrams-") if folder is None
                           else folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self._hasher = _WordHasher()
        self._buffers: dict[int, list[np.ndarray]] = {n: [] for n in self.orders}
        self._held: dict[int, int] = {n: 0 for n in self.orders}
        self._runs: dict[int, list[Path]] = {n: [] for n in self.orders}
        self.n_tokens = 0
        self.n_texts = 0

    def __enter__(self) -> NgramIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Remove the runs (only when the index made its own temporary folder)."""
        if self._own:
            shutil.rmtree(self.folder, ignore_errors=True)

    def add_texts(self, texts: Iterable[str]) -> None:
        """Add the n-grams of each text (texts are read one at a time)."""
        for text in texts:
            toks = words(text)
            self.n_tokens += len(toks)
            self.n_texts += 1
            wh = self._hasher(toks)
            for n in self.orders:
                h = hash_ngrams(wh, n)
                if len(h):
                    self._buffers[n].append(h)
                    self._held[n] += len(h)
                    if self._held[n] >= self.chunk_ngrams:
                        self._flush(n)

    def add_file(self, path: str | Path) -> None:
        """Add a UTF-8 text file, one text per line, read as a stream."""
        p = Path(path)
        try:
            with open(p, encoding="utf-8") as handle:
                self.add_texts(handle)
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{p}: cannot read the corpus ({exc})") from exc

    def _flush(self, n: int) -> None:
        if not self._buffers[n]:
            return
        run = np.unique(np.concatenate(self._buffers[n]))
        self._buffers[n] = []
        self._held[n] = 0
        path = self.folder / f"order{n}-run{len(self._runs[n]):05d}.npy"
        np.save(path, run)
        self._runs[n].append(path)

    def finish(self) -> None:
        """Write the hashes still held in memory to disk (called by the queries)."""
        for n in self.orders:
            self._flush(n)

    def n_distinct_upper(self, n: int) -> int:
        """Sum of the runs' sizes: an upper bound on the distinct n-grams of order ``n``."""
        self.finish()
        return int(sum(np.load(p, mmap_mode="r").shape[0] for p in self._runs[n]))

    def contains_hashes(self, n: int, hashes: np.ndarray) -> np.ndarray:
        """Whether each hash of order ``n`` occurs in the corpus."""
        if n not in self.orders:
            raise InputError(f"n: order {n} is not indexed (orders {list(self.orders)})")
        self.finish()
        q = np.asarray(hashes, dtype=np.uint64)
        found = np.zeros(len(q), dtype=bool)
        for path in self._runs[n]:
            run = np.load(path, mmap_mode="r")
            if run.shape[0] == 0:
                continue
            pos = np.searchsorted(run, q)
            ok = pos < run.shape[0]
            found[ok] |= np.asarray(run[pos[ok]]) == q[ok]
        return found

    def contains(self, n: int, grams: Sequence[Sequence[str]]) -> np.ndarray:
        """Whether each n-gram (a sequence of ``n`` lower-cased words) occurs in the corpus."""
        hashes = np.array([hash_ngrams(self._hasher(list(g)), n)[0] for g in grams],
                          dtype=np.uint64)
        return self.contains_hashes(n, hashes)

    def word_hasher(self, toks: Sequence[str]) -> np.ndarray:
        """The 64-bit hash of each word of ``toks`` (the hashes the index is built from)."""
        return self._hasher(toks)

    def text_hashes(self, n: int, text: str) -> np.ndarray:
        """The hashes of the ``n``-gram occurrences of ``text``, in order."""
        return hash_ngrams(self._hasher(words(text)), n)

    def contains_text(self, n: int, text: str) -> np.ndarray:
        """Whether each ``n``-gram occurrence of ``text`` (in order) occurs in the corpus."""
        return self.contains_hashes(n, self.text_hashes(n, text))
