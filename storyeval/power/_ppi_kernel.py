"""The vectorised kernel of prediction-powered inference: many studies (rows) at once.

Every public PPI function (`storyeval.power.ppi`) ends here, one study being one row, so the
benchmark's batched calls and a user's single call run the same arithmetic.
"""

from __future__ import annotations

import numpy as np

METHODS = ("ppi++", "ppi", "classical")


def tuned_lambda_rows(y: np.ndarray, f_lab: np.ndarray, f_unl: np.ndarray) -> np.ndarray:
    """PPI++'s plug-in lambda of each row, clipped to [0, 1] (see `ppi.tuned_lambda`).

    ``y``, ``f_lab``: shape (R, n); ``f_unl``: shape (R, N). A row whose predictions are all
    equal, or with a single labelled item (no covariance), gets lambda 0.
    """
    n, big_n = y.shape[1], f_unl.shape[1]
    f_all = np.concatenate([f_lab, f_unl], axis=1)
    # on values divided by powers of two (exact): no overflow or underflow of the products
    sy, sf = pow2_rows(y)[:, None], pow2_rows(f_all)[:, None]
    y, f_lab, f_all = y / sy, f_lab / sf, f_all / sf
    cov = np.mean((y - y.mean(axis=1, keepdims=True))
                  * (f_lab - f_lab.mean(axis=1, keepdims=True)), axis=1)
    var_f = np.var(f_all, axis=1, ddof=1)
    positive = var_f > 0
    lam = np.where(positive, cov / ((1 + n / big_n) * np.where(positive, var_f, 1.0)), 0.0)
    return np.clip(lam * (sy[:, 0] / sf[:, 0]), 0.0, 1.0)


def pow2_rows(x: np.ndarray) -> np.ndarray:
    """Per row, the power of two just above the largest magnitude (1 for a row of zeros):
    dividing by it is exact and brings every value into [-1, 1]."""
    top = np.max(np.abs(x), axis=1)
    return np.where(top > 0, np.ldexp(1.0, np.frexp(top)[1]), 1.0)


def std_rows(x: np.ndarray, ddof: int) -> np.ndarray:
    """``np.std(x, axis=1, ddof=ddof)`` computed on ``x`` divided by `pow2_rows` (the squares
    neither overflow for values near 1e308 nor underflow for tiny ones)."""
    s = pow2_rows(x)
    return np.std(x / s[:, None], axis=1, ddof=ddof) * s


def fold_of_position(n: int, folds: int, seed: int) -> np.ndarray:
    """Fold (0..k-1, k = min(folds, n)) of each position in the canonical order of n items.

    A seeded permutation dealt round-robin: fold sizes differ by at most one, and the split is
    a function of the seed and of the labelled items' values only (see `crossfit_lambdas`).
    """
    return np.random.default_rng(seed).permutation(n) % min(folds, n)


def crossfit_lambdas(y: np.ndarray, f_lab: np.ndarray, f_unl: np.ndarray, folds: int,
                     seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(y, f_lab, lambda per labelled item), rows in canonical order, lambdas cross-fitted.

    The labelled items of each row are sorted by (human, predicted) value, so that the split
    does not depend on the order of the rows of the input, and dealt to folds by
    `fold_of_position`; an item's lambda is `tuned_lambda_rows` on the other folds' labelled
    items and all unlabelled predictions, never on its own label.
    """
    order = np.lexsort((f_lab, y), axis=-1)
    y = np.take_along_axis(y, order, axis=1)
    f_lab = np.take_along_axis(f_lab, order, axis=1)
    fold = fold_of_position(y.shape[1], folds, seed)
    lam_item = np.empty_like(y)
    for k in np.unique(fold):
        held = fold == k
        lam_item[:, held] = tuned_lambda_rows(y[:, ~held], f_lab[:, ~held], f_unl)[:, None]
    return y, f_lab, lam_item


def estimate_rows(y: np.ndarray, f_lab: np.ndarray, f_unl: np.ndarray, *, method: str,
                  folds: int, seed: int, ddof: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(estimate, se, lambda, folds used) of the prediction-powered mean of each row.

    ``lambda_i`` is the lambda applied to labelled item i (1 for PPI, 0 for classical, the
    tuned lambda for PPI++, its fold's cross-fitted lambda with ``folds > 1``) and
    ``lambda = mean_i lambda_i``:

    ``theta = lambda mean(f~) + mean_i(Y_i - lambda_i f_i)``,
    ``se^2 = lambda^2 var(f~) / N + var_i(Y_i - lambda_i f_i) / n`` (variance divisors
    N - ddof, n - ddof).
    """
    r, n = y.shape
    if method == "ppi++" and folds > 1 and n > 1:
        y, f_lab, lam_item = crossfit_lambdas(y, f_lab, f_unl, folds, seed)
        lam, used = lam_item.mean(axis=1), min(folds, n)
    else:
        fixed = {"ppi": np.ones(r), "classical": np.zeros(r)}.get(method)
        lam = tuned_lambda_rows(y, f_lab, f_unl) if fixed is None else fixed
        lam_item, used = lam[:, None], 1
    rect = y - lam_item * f_lab
    estimate = lam * f_unl.mean(axis=1) + rect.mean(axis=1)
    se = np.hypot(lam * std_rows(f_unl, ddof) / np.sqrt(f_unl.shape[1]),
                  std_rows(rect, ddof) / np.sqrt(n))
    return estimate, se, lam, used
