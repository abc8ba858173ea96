"""Near-duplicate filtering by embedding cosine similarity (the poetry paper's pre-selection:
instances whose sentence embeddings have cosine > 0.7 with each other are not both kept).

`near_duplicates` compares every pair of rows in blocks (memory ``block_size x n`` floats,
never ``n x n``) and states, for each removed row, the kept row it duplicates and their cosine.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from storyeval.exceptions import InputError

__all__ = ["KEEP_RULES", "NearDuplicates", "near_duplicates", "unit_rows"]

#: ``first``: of a pair above the threshold the earlier row is kept (a greedy pass in input
#: order: a row is removed when it is too similar to a row already kept; order the table by
#: priority first). ``none``: every row with any partner above the threshold is removed.
KEEP_RULES = ("first", "none")


@dataclass(frozen=True)
class NearDuplicates:
    """The result of `near_duplicates`.

    Attributes
    ----------
    keep : numpy.ndarray of bool, shape (n,)
        Rows kept.
    removed : DataFrame
        One row per removed row: ``row``, ``duplicate_of`` (the row it is too similar to: the
        kept row with the highest cosine under ``keep="first"``, its most similar row under
        ``"none"``), ``cosine``.
    threshold : float
    rule : str
    n_pairs : int
        Pairs of rows above the threshold (each pair once).
    """

    keep: np.ndarray
    removed: pd.DataFrame
    threshold: float
    rule: str
    n_pairs: int

    def summary(self) -> str:
        n = len(self.keep)
        rule = ("of each pair the earlier row kept (greedy, input order)" if self.rule == "first"
                else "every row of a pair removed")
        return (f"{int(self.keep.sum())} of {n} kept, {n - int(self.keep.sum())} removed: "
                f"{self.n_pairs} pair(s) with cosine > {self.threshold:g}; {rule}")


def unit_rows(embeddings: np.ndarray, *, source: str = "embeddings") -> np.ndarray:
    """Rows scaled to unit length (cosine = dot product), in float64.

    Raises
    ------
    InputError
        Not a finite 2-D array, or a row of zeros (its cosine is undefined), naming the row.
    """
    x = np.asarray(embeddings, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] == 0:
        raise InputError(f"{source}: expected a non-empty 2-D array, got shape {x.shape}")
    finite = np.isfinite(x).all(axis=1)
    if not finite.all():
        raise InputError(f"{source}: row {int(np.flatnonzero(~finite)[0]) + 1} is not finite")
    norms = np.linalg.norm(x, axis=1)
    if (norms == 0).any():
        raise InputError(f"{source}: row {int(np.flatnonzero(norms == 0)[0]) + 1} is all zeros "
                         "(no direction: its cosine is undefined)")
    return x / norms[:, None]


def near_duplicates(embeddings: np.ndarray, *, threshold: float = 0.7, keep: str = "first",
                    block_size: int = 2048) -> NearDuplicates:
    """Rows to keep so that no two kept rows have cosine similarity above ``threshold``.

    Parameters
    ----------
    embeddings : array, shape (n, dim)
        One embedding per row (any scale; rows are normalised).
    threshold : float, default 0.7
        A pair with cosine strictly greater is a near-duplicate (the poetry paper: 0.7 with
        SBERT embeddings).
    keep : {"first", "none"}
        See `KEEP_RULES`.
    block_size : int, default 2048
        Rows compared at once (memory ``block_size * n`` float64).

    Returns
    -------
    NearDuplicates

    Notes
    -----
    ``first``: row i is kept iff ``cos(i, j) <= threshold`` for every kept ``j < i``. Each
    block of rows is compared with the rows kept before it (one matrix product); within the
    block, rows with no earlier partner above the threshold are kept at once, and only rows
    with such a partner are decided in order. The result equals the pairwise greedy pass.

    Validated against a brute-force pass over the full similarity matrix of
    ``sklearn.metrics.pairwise.cosine_similarity`` (tests/test_generation_dedup.py).

    Examples
    --------
    >>> e = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]])
    >>> r = near_duplicates(e, threshold=0.7)
    >>> r.keep.tolist(), r.removed["duplicate_of"].tolist()
    ([True, False, True], [0])
    """
    if keep not in KEEP_RULES:
        raise InputError(f"keep must be one of {KEEP_RULES}, got {keep!r}")
    if not -1.0 <= float(threshold) <= 1.0:
        raise InputError(f"threshold must be a cosine in [-1, 1], got {threshold}")
    if int(block_size) < 1:
        raise InputError(f"block_size must be >= 1, got {block_size}")
    x = unit_rows(embeddings)
    if keep == "first":
        kept, partner, cos, n_pairs = _greedy(x, float(threshold), int(block_size))
    else:
        kept, partner, cos, n_pairs = _drop_all(x, float(threshold), int(block_size))
    gone = np.flatnonzero(~kept)
    removed = pd.DataFrame({"row": gone, "duplicate_of": partner[gone], "cosine": cos[gone]})
    return NearDuplicates(keep=kept, removed=removed, threshold=float(threshold), rule=keep,
                          n_pairs=n_pairs)


def _greedy(x: np.ndarray, t: float, block: int):
    n = len(x)
    kept = np.zeros(n, dtype=bool)
    partner = np.full(n, -1, dtype=np.int64)
    cos = np.full(n, np.nan)
    n_pairs = 0
    for start in range(0, n, block):
        stop = min(start + block, n)
        sims = x[start:stop] @ x[:stop].T  # this block against every earlier row and itself
        above = sims > t
        cols = np.arange(stop)
        earlier = cols[None, :] < np.arange(start, stop)[:, None]
        above &= earlier
        n_pairs += int(above.sum())
        # against rows kept in earlier blocks
        prior = above[:, :start] & kept[None, :start]
        within = above[:, start:]
        decided_out = prior.any(axis=1)
        free = ~decided_out & ~within.any(axis=1)
        kept[start:stop] = free
        # rows with an earlier partner inside the block: in order, only where needed
        for i in np.flatnonzero(~decided_out & ~free):
            kept[start + i] = not (within[i] & kept[start:stop]).any()
        out = ~kept[start:stop]
        if out.any():
            cand = np.where(above[out] & kept[None, :stop], sims[out], -np.inf)
            best = cand.argmax(axis=1)
            partner[start:stop][out] = best
            cos[start:stop][out] = cand[np.arange(len(best)), best]
    return kept, partner, cos, n_pairs


def _drop_all(x: np.ndarray, t: float, block: int):
    n = len(x)
    partner = np.full(n, -1, dtype=np.int64)
    cos = np.full(n, np.nan)
    n_pairs = 0
    for start in range(0, n, block):
        stop = min(start + block, n)
        sims = x[start:stop] @ x.T
        sims[np.arange(stop - start), np.arange(start, stop)] = -np.inf  # not with itself
        best = sims.argmax(axis=1)
        top = sims[np.arange(stop - start), best]
        hit = top > t
        partner[start:stop][hit] = best[hit]
        cos[start:stop][hit] = top[hit]
        n_pairs += int((sims > t).sum())
    return partner < 0, partner, cos, n_pairs // 2
