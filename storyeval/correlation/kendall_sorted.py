"""O(n log n) Kendall counts per pair of measures: sort once per measure, count inversions.

For many observations the O(n^2) sign-matrix kernel of `storyeval.correlation.kendall` loses to
counting per pair of measures in O(n log n) (the choice is the cost model there). For the pair
(x, y), with both present on N observations:

    S = n0 - Tx - Ty + Txy - 2 D,    n0 = N (N - 1) / 2,

Tx, Ty the pairs tied in x, in y, Txy in both, and D the strict inversions of the x ranks
listed in (y, x) order (Knight's algorithm, as ``scipy.stats.kendalltau``). Every count is an
exact integer, so the results equal the sign-matrix kernel's at every n.

Each measure is sorted once (its dense ranks and an order by rank). Two engines count the
pairs of measures:

* **numba** (the optional ``fast`` extra, `storyeval.correlation._kendall_numba`): one compiled task per
  pair of measures, in parallel; a Fenwick tree over the ranks of the side with fewer levels, or
  a counting sort and a merge sort.
* **NumPy** (always available): all the pairs of a chunk at once. The (y, x) order of every pair
  comes from x's sorted order by a stable radix sort on y's ranks (16-bit digits, O(n)); D comes
  from a wavelet decomposition of the x ranks: from the top bit down, a stable partition of
  every group of equal higher bits by the current bit, counting, for each element with bit 0,
  the elements with bit 1 before it in its group. Each of the log2(levels) steps is a few
  vectorised passes over (pairs x n) arrays; the only Python loops are over those bit levels
  and over memory-bounded chunks of pairs.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

__all__ = ["ENGINES", "engine", "rank_order", "sorted_counts"]

ENGINES = ("numba", "numpy")

# Working memory of one chunk of pairs in the NumPy engine (bytes): about 12 int64 arrays of
# (pairs, n) live at once.
_CHUNK_BYTES = 96 * 2**20
_DIGIT = 16  # radix-sort digit (bits): NumPy's stable argsort of uint16 is a radix sort


# Seconds to make a compiled module runnable in a process that has not loaded it: importing
# numba and reading cached machine code (warm), or compiling it (the first run after install,
# or after numba or the source changed: measured 2-6 s per module on the 2-core development
# machine, e.g. 8.3 s vs 2.2 s of CPU for a first `meta` on 200 stories before this rule).
NUMBA_WARM_SECONDS = 0.8
NUMBA_COLD_SECONDS = 4.0
#: Compiled modules this process found without cached machine code (the NumPy engines ran
#: instead); `storyeval.cli.warmup` compiles them after a command, in the background.
COLD_MODULES: set[str] = set()
#: Set to "1" in the warm-up process: every compiled kernel counts as loaded, so it runs.
WARMUP_ENV = "STORYEVAL_NUMBA_WARMUP"


def numba_load_seconds(module: str) -> float:
    """Predicted seconds before the compiled kernels of ``module`` (a dotted name under
    ``storyeval``) can run here: 0 when it is imported, `NUMBA_WARM_SECONDS` when numba's cache
    holds its machine code, else `NUMBA_COLD_SECONDS` (it will be compiled). The cache is looked
    for where numba writes it: ``NUMBA_CACHE_DIR`` when set, else ``__pycache__`` beside the
    source. A cost model, not a promise: a stale cache also recompiles. A module found
    without cached code is noted in `COLD_MODULES`."""
    import sys
    from pathlib import Path

    if module in sys.modules or os.environ.get(WARMUP_ENV) == "1":
        return 0.0  # loaded, or the warm-up process (`storyeval.cli.warmup`)
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return NUMBA_COLD_SECONDS
    source = Path(spec.origin)
    where = os.environ.get("NUMBA_CACHE_DIR")
    stem = source.stem
    if where:
        found = any(Path(where).rglob(f"{stem}.*.nbi"))
    else:
        found = any((source.parent / "__pycache__").glob(f"{stem}.*.nbi"))
    if not found:
        COLD_MODULES.add(module)  # compiled after the command, in the background
    return NUMBA_WARM_SECONDS if found else NUMBA_COLD_SECONDS


def engine() -> str:
    """``"numba"`` when numba is installed and ``STORYEVAL_KENDALL_ENGINE`` does not say
    ``numpy``, else ``"numpy"`` (numba itself is imported only when a kernel runs)."""
    if os.environ.get("STORYEVAL_KENDALL_ENGINE", "").strip().lower() == "numpy":
        return "numpy"
    return "numba" if importlib.util.find_spec("numba") is not None else "numpy"


def rank_order(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dense ranks (1..k, 0 where missing), an order by rank and k, per column.

    ``a`` (g, n, p) float with NaN for missing values. Returns ``ranks`` and ``order`` as
    (g, p, n) int32 (``order`` lists the observations by rank, missing ones last) and
    ``levels`` (g, p) int64.
    """
    cols = np.ascontiguousarray(a.transpose(0, 2, 1))
    present = ~np.isnan(cols)
    # any sort order will do: ties are resolved by the ranks, not by the order
    order = np.argsort(np.where(present, cols, np.inf), axis=2)
    srt = np.take_along_axis(cols, order, axis=2)
    step = np.ones(srt.shape, dtype=np.int32)
    if srt.shape[2] > 1:
        step[:, :, 1:] = srt[:, :, 1:] != srt[:, :, :-1]  # NaN != NaN: missing ones are not tied
    dense = np.cumsum(step, axis=2, dtype=np.int32)
    dense[~np.take_along_axis(present, order, axis=2)] = 0
    ranks = np.empty_like(dense)
    np.put_along_axis(ranks, order, dense, axis=2)
    levels = dense.max(axis=2, initial=0).astype(np.int64)
    return ranks, order.astype(np.int32), levels


def sorted_counts(x: np.ndarray, y: np.ndarray, same: bool = False,
                  engine_name: str | None = None,
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """S, tx, ty and N for every pair of columns of x (g, n, p) and y (g, n, q), NaN missing.

    Returns (g, p, q) float64 arrays (exact integers): S, the pairs untied in x and in y among
    the observations where both measures are present, and the number N of those observations.
    ``same=True`` (y is x) counts each unordered pair once; the diagonal comes from the tie
    groups.
    """
    name = engine() if engine_name is None else engine_name
    if name not in ENGINES:
        raise ValueError(f"unknown Kendall engine {name!r}; use one of {ENGINES}")
    g, n, p = x.shape
    q = y.shape[2]
    if same:
        pa, pb = np.triu_indices(p, k=1)
    else:
        pa, pb = (a.ravel() for a in np.meshgrid(np.arange(p), np.arange(q), indexing="ij"))
    pa = pa.astype(np.int64)
    pb = pb.astype(np.int64)
    if name == "numba":
        import storyeval.correlation._kendall_numba as compiled

        out = np.zeros((4, g, p, q))
        if n <= compiled.DIRECT_MAX_N:  # a few observations: no ranks needed
            args = (np.ascontiguousarray(x, dtype=np.float64),
                    np.ascontiguousarray(y, dtype=np.float64), pa, pb, same, out)
            _on_threads(compiled.direct_counts, args, g * pa.size)
        else:
            rx, ox, kx = rank_order(x)
            ry, oy, ky = (rx, ox, kx) if same else rank_order(y)
            args = (rx, ox, kx, ry, oy, ky, pa, pb, same, out)
            _on_threads(compiled.pair_counts, args, g * pa.size)
    else:
        rx, ox, kx = rank_order(x)
        ry, oy, ky = (rx, ox, kx) if same else rank_order(y)
        out = _assemble(_numpy_pair_counts(rx, ox, kx, ry, pa, pb), pa, pb, p, q, same)
    if same:
        _fill_diagonal(out, x)
    return out[0], out[1], out[2], out[3]


def _on_threads(kernel, args: tuple, tasks: int) -> None:
    """``kernel(*args, start, stop)`` over ranges of the tasks on up to two threads (the
    compiled kernels release the GIL; the tasks write disjoint cells of the output)."""
    workers = min(2, os.cpu_count() or 1, tasks)
    if workers <= 1:
        kernel(*args, 0, tasks)
        return
    # interleaved ranges: costs vary along the task list (e.g. criteria columns come last)
    bounds = np.linspace(0, tasks, 8 * workers + 1).astype(np.int64)
    ranges = list(itertools.pairwise(bounds))
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(lambda r: kernel(*args, int(r[0]), int(r[1])), ranges))


def _assemble(counts: np.ndarray, pa: np.ndarray, pb: np.ndarray, p: int, q: int,
              same: bool) -> np.ndarray:
    """(g, M, 4) task counts (S, N, Tx, Ty) -> (4, g, p, q): S, untied in x, in y, N."""
    g = counts.shape[0]
    out = np.zeros((4, g, p, q))
    n_obs = counts[:, :, 1]
    untied = n_obs * (n_obs - 1) // 2
    values = (counts[:, :, 0], untied - counts[:, :, 2], untied - counts[:, :, 3], n_obs)
    for k, v in enumerate(values):
        out[k][:, pa, pb] = v
    if same:  # (b, a) mirrors (a, b) with the roles of x and y exchanged
        for k, mirror in enumerate((0, 2, 1, 3)):
            out[k][:, pb, pa] = values[mirror]
    return out


def _fill_diagonal(out: np.ndarray, x: np.ndarray) -> None:
    """Each measure against itself (y is x): S = untied pairs among its present values."""
    present = ~np.isnan(x)
    n_a = present.sum(axis=1)
    srt = np.sort(np.where(present, x, np.inf), axis=1)
    tied = np.zeros(srt.shape, dtype=bool)
    tied[:, 1:] = (srt[:, 1:] == srt[:, :-1]) & np.isfinite(srt[:, 1:])
    # each element tied with its predecessor closes one more tied pair per earlier member
    start = np.maximum.accumulate(np.where(~tied, np.arange(x.shape[1])[None, :, None], 0),
                                  axis=1)
    tied_pairs = (np.arange(x.shape[1])[None, :, None] - start).sum(axis=1)
    untied = n_a * (n_a - 1) // 2 - tied_pairs
    diag = np.arange(x.shape[2])
    for k, val in enumerate((untied, untied, untied, n_a)):
        out[k][:, diag, diag] = val


# --------------------------------------------------------------------------------------------
# NumPy engine


def _numpy_pair_counts(rx, ox, kx, ry, pa, pb) -> np.ndarray:
    """(g, M, 4) int64 counts S, N, Tx, Ty of every (group, pair) task, chunk by chunk."""
    g, _, n = rx.shape
    m = pa.size
    out = np.zeros((g, m, 4), dtype=np.int64)
    tasks = g * m
    per_chunk = max(1, _CHUNK_BYTES // (8 * 12 * max(n, 1)))
    for start in range(0, tasks, per_chunk):
        t = np.arange(start, min(tasks, start + per_chunk))
        grp, pair = t // m, t % m
        res = _chunk_counts(rx[grp, pa[pair]], ox[grp, pa[pair]], ry[grp, pb[pair]],
                            int(kx[grp, pa[pair]].max(initial=0)))
        out[grp, pair] = res
    return out


def _chunk_counts(rx: np.ndarray, ox: np.ndarray, ry: np.ndarray, kx: int) -> np.ndarray:
    """(T, 4) counts for T tasks given as rows: x ranks, x order, y ranks (T, n)."""
    t, n = rx.shape
    order = _lex_order(ox, ry)  # (y, x) order of every row
    xs = np.take_along_axis(rx, order, axis=1).astype(np.int64)
    ys = np.take_along_axis(ry, order, axis=1).astype(np.int64)
    w = (xs > 0) & (ys > 0)  # present in both
    n_obs = w.sum(axis=1)
    tx = _tied_weighted(xs, w)
    ty = _tied_weighted(ys, w)
    # pairs tied in both: runs of equal (y, x) in (y, x) order, present in both
    same = np.zeros((t, n), dtype=bool)
    same[:, 1:] = (xs[:, 1:] == xs[:, :-1]) & (ys[:, 1:] == ys[:, :-1])
    txy = _run_pairs(same, w)
    d = _wavelet_inversions(xs, None if w.all() else w.astype(np.int64), kx)
    n0 = n_obs * (n_obs - 1) // 2
    s = n0 - tx - ty + txy - 2 * d
    return np.stack([s, n_obs, tx, ty], axis=1)


def _lex_order(ox: np.ndarray, ry: np.ndarray) -> np.ndarray:
    """Per row, the observations in (y rank, x rank) order: x's order by rank, stably sorted by
    the y ranks with an LSD radix sort of 16-bit digits (NumPy's stable uint16 argsort)."""
    order = ox.astype(np.int64)
    top = int(ry.max(initial=0))
    shift = 0
    while True:
        key = np.take_along_axis(ry, order, axis=1) >> shift
        digit = (key & (2**_DIGIT - 1)).astype(np.uint16)
        order = np.take_along_axis(order, np.argsort(digit, axis=1, kind="stable"), axis=1)
        shift += _DIGIT
        if top >> shift == 0:
            return order


def _tied_weighted(v: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Per row, pairs of present observations (w) with equal values of v (ranks >= 0)."""
    t, _ = v.shape
    top = int(v.max(initial=0)) + 1
    keys = v + (np.arange(t, dtype=np.int64) * top)[:, None]
    counts = np.bincount(keys[w], minlength=t * top).reshape(t, top)
    return (counts * (counts - 1) // 2).sum(axis=1)


def _run_pairs(same_as_previous: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Per row, sum of C(r, 2) over the runs of consecutive equal elements (flagged by
    ``same_as_previous``; a row's first element starts a run), r the run's present
    observations."""
    t, n = w.shape
    starts = ~same_as_previous.ravel()
    run_id = np.cumsum(starts) - 1
    sizes = np.bincount(run_id, weights=w.ravel()).astype(np.int64)
    row_of_run = np.flatnonzero(starts) // n
    return np.bincount(row_of_run, weights=sizes * (sizes - 1) // 2, minlength=t
                       ).astype(np.int64)


def _wavelet_inversions(xs: np.ndarray, w: np.ndarray | None, kx: int) -> np.ndarray:
    """Per row, strict inversions sum_{i before j} w_i w_j [x_i > x_j] (w = 1 if None).

    From the top bit of the ranks down, the elements are kept grouped by their higher bits
    (in their original relative order within a group). A pair splits at the highest bit where
    its ranks differ; it is an inversion when the element with bit 1 comes first. So, per level,
    each bit-0 element counts the bit-1 elements before it in its group; then every group is
    stably partitioned by the bit (a counting sort on ``rank >> bit``, O(n) per level).

    With ``ones`` the exclusive running count of bit-1 elements along the flattened rows and
    O[g] (Z[g]) the bit-1 (bit-0) elements of the groups before g, a bit-0 element has
    ``ones - O[g]`` bit-1 elements before it in its group and moves to ``index - ones + O[g]``;
    a bit-1 element moves to ``ones + Z[g] + zeros(g)``. Summed over a group, the O[g] terms
    are one product per group, so each level costs about a dozen passes over the data.
    """
    t, n = xs.shape
    bits = max(1, int(kx).bit_length())
    flat = xs.ravel().copy()
    weight = None if w is None else w.ravel().copy()
    row_start = (np.arange(t * n, dtype=np.int64) // n) if t > 1 else 0
    index = np.arange(t * n, dtype=np.int64)
    inversions = np.zeros(t, dtype=np.int64)
    for bit in range(bits - 1, -1, -1):
        width = 1 << (bits - bit)  # distinct values of rank >> bit within a row, at most
        key = (flat >> bit) + row_start * width  # rows stay apart; sorted by key >> 1
        one = key & 1
        hist = np.bincount(key, minlength=t * width)
        ones = _exclusive_cumsum(one)
        # table[key]: O[g] for bit-0 keys, zeros of the groups up to g for bit-1 keys
        table = np.empty(t * width, dtype=np.int64)
        table[0::2] = _exclusive_cumsum(hist[1::2])
        table[1::2] = np.cumsum(hist[0::2])
        position = np.where(one == 1, ones, index - ones) + table[key]
        if weight is None:
            before = np.where(one == 0, ones, 0).reshape(t, n).sum(axis=1)
            groups = (hist[0::2] * table[0::2]).reshape(t, -1).sum(axis=1)
        else:
            hist_w = np.bincount(key, weights=weight, minlength=t * width).astype(np.int64)
            ones_w = _exclusive_cumsum(one * weight)
            before = np.where(one == 0, weight * ones_w, 0).reshape(t, n).sum(axis=1)
            groups = (hist_w[0::2] * _exclusive_cumsum(hist_w[1::2])).reshape(t, -1).sum(axis=1)
            weight[position] = weight.copy()
        inversions += before - groups
        flat[position] = flat.copy()
    return inversions


def _exclusive_cumsum(a: np.ndarray) -> np.ndarray:
    out = np.zeros(a.size, dtype=np.int64)
    np.cumsum(a[:-1], out=out[1:])
    return out
