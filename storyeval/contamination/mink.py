"""Min-K% Prob and Min-K%++ membership scores."""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from storyeval.contamination._lm import BosPolicy, TokenStatistics, token_statistics
from storyeval.exceptions import InputError, UndefinedStatisticWarning, user_stacklevel

__all__ = ["COUNT_RULES", "min_k_plus_plus", "min_k_prob", "n_lowest", "score_texts"]

_EPS = 1e-9

CountRule = Literal["reference", "floor_eps"]
COUNT_RULES: tuple[str, ...] = ("reference", "floor_eps")


def _check_rule(count_rule: str) -> str:
    if count_rule not in COUNT_RULES:
        raise InputError(f"count_rule must be one of {COUNT_RULES}, got {count_rule!r}")
    return count_rule


def _check_k(k: float) -> float:
    if not isinstance(k, (int, float)) or isinstance(k, bool) or not 0.0 < float(k) <= 1.0:
        raise InputError(f"k must be a fraction in (0, 1], got {k!r}")
    return float(k)


def n_lowest(n_tokens: int, k: float, *, count_rule: CountRule = "reference") -> int:
    """Number of tokens averaged by Min-K% (0 means too short: the score is NaN).

    ``count_rule="reference"`` (default): ``int(n_tokens * k)``, the product truncated in
    floating point exactly as the reference code of Shi et al. (2024) and of Min-K%++
    (Zhang et al.) computes ``k_length = int(len(all_prob) * ratio)``. So ``int(100 * 0.29)``
    is 28 (the product is 28.999999999999996).
    ``count_rule="floor_eps"``: ``floor(k * n_tokens + 1e-9)``, which reads the product as
    the intended decimal (``0.29 * 100`` gives 29); storyeval's default before the reference
    rule. The two differ only when ``k * n`` is within rounding error of an integer.
    """
    k = _check_k(k)
    if _check_rule(count_rule) == "reference":
        return int(n_tokens * k)
    return math.floor(k * n_tokens + _EPS)


def _min_tokens(k: float, count_rule: str) -> int:
    """Smallest text length with at least one token averaged."""
    n = max(1, math.floor(1.0 / k) - 1)
    while n_lowest(n, k, count_rule=count_rule) < 1:
        n += 1
    return n


def _mean_of_lowest(values: np.ndarray, k: float,
                    count_rule: str = "reference") -> tuple[float, str]:
    values = np.asarray(values, dtype=float)
    if values.ndim != 1:
        raise InputError(f"token scores must be one-dimensional, got shape {values.shape}")
    if np.isnan(values).any():
        raise InputError("token scores contain NaN")
    m = n_lowest(values.shape[0], k, count_rule=count_rule)
    if m == 0:
        need = _min_tokens(k, count_rule)
        return math.nan, (f"too short for k={k:g}: {values.shape[0]} scored token(s), "
                          f"at least {need} needed")
    lowest = np.partition(values, m - 1)[:m]
    return float(lowest.mean()), ""


def min_k_prob(logprob: Sequence[float] | np.ndarray, *, k: float = 0.2,
               count_rule: CountRule = "reference") -> float:
    """Min-K% Prob: mean log-probability of the ``k`` fraction of least likely tokens.

    Parameters
    ----------
    logprob : array-like of float, shape (n,)
        ``log p(x_t | x_<t)`` for each scored token of one text.
    k : float, default 0.2
        Fraction of tokens kept, in (0, 1].
    count_rule : {"reference", "floor_eps"}, default "reference"
        How many tokens are averaged: ``int(n * k)`` as the reference code, or
        ``floor(k * n + 1e-9)``; see `n_lowest`.

    Returns
    -------
    float
        The score (higher: more likely seen in training); NaN with an
        [`UndefinedStatisticWarning`][] when the count is 0 (about fewer than ``1/k`` tokens;
        the reference code's ``np.mean`` of an empty slice is NaN too).

    Notes
    -----
    With ``m = n_lowest(n, k)`` (``int(n k)`` by default) and ``L`` the ``m`` smallest values
    of ``log p(x_t | x_<t)``: ``MinK%(x) = (1/m) sum_{t in L} log p(x_t | x_<t)``. (The
    reference code reports the negated mean, ``-np.mean``; storyeval keeps the sign so that
    higher means "more likely a member" for both scores.)

    References
    ----------
    1. Shi, W., et al. (2024). Detecting pretraining data from large language models.
       ICLR 2024 (arXiv:2310.16789).

    Examples
    --------
    >>> min_k_prob([-1.0, -5.0, -0.5, -2.0, -0.1], k=0.4)
    -3.5

    Validated against a hand computation (sorting and averaging) in the tests.
    """
    score, reason = _mean_of_lowest(np.asarray(logprob, dtype=float), _check_k(k),
                                    _check_rule(count_rule))
    if reason:
        warnings.warn(reason, UndefinedStatisticWarning, stacklevel=user_stacklevel())
    return score


def min_k_plus_plus(logprob: Sequence[float] | np.ndarray, mu: Sequence[float] | np.ndarray,
                    sigma: Sequence[float] | np.ndarray, *, k: float = 0.2,
                    count_rule: CountRule = "reference") -> float:
    """Min-K%++: Min-K% over log-probabilities standardised by the next-token distribution.

    Parameters
    ----------
    logprob, mu, sigma : array-like of float, shape (n,)
        Per token: ``log p(x_t | x_<t)``, and the mean and standard deviation of
        ``log p(v | x_<t)`` over the vocabulary under ``p(. | x_<t)``
        (`storyeval.contamination.token_statistics` gives all three).
    k : float, default 0.2
        Fraction of tokens kept, in (0, 1].
    count_rule : {"reference", "floor_eps"}, default "reference"
        See `n_lowest`.

    Returns
    -------
    float
        The score; NaN with an [`UndefinedStatisticWarning`][] when the text is too
        short for ``k``. A token with ``sigma_t == 0`` (a one-hot distribution) makes the
        standardised value undefined and raises [`InputError`][] naming the token.

    Notes
    -----
    ``z_t = (log p(x_t | x_<t) - mu_t) / sigma_t`` with
    ``mu_t = sum_v p_v log p_v`` and ``sigma_t^2 = sum_v p_v (log p_v)^2 - mu_t^2``;
    the score is the mean of the ``n_lowest(n, k)`` smallest ``z_t`` (``int(n k)`` by
    default, as the reference code).

    References
    ----------
    1. Zhang, J., et al. (2025). Min-K%++: Improved baseline for detecting pre-training
       data from large language models. ICLR 2025 (arXiv:2404.02936).

    Examples
    --------
    >>> min_k_plus_plus([-1.0, -3.0], [-2.0, -2.0], [1.0, 0.5], k=0.5)
    -2.0

    Validated against a hand computation from the logits (softmax moments) in the tests.
    """
    lp, m_, s_ = (np.asarray(a, dtype=float) for a in (logprob, mu, sigma))
    if not lp.shape == m_.shape == s_.shape:
        raise InputError(f"logprob, mu and sigma must have the same shape, got "
                         f"{lp.shape}, {m_.shape}, {s_.shape}")
    zero = np.flatnonzero(~(s_ > 0))
    if zero.size:
        raise InputError(f"sigma is not positive at token {int(zero[0])}: the standardised "
                         f"log-probability is undefined")
    score, reason = _mean_of_lowest((lp - m_) / s_, _check_k(k), _check_rule(count_rule))
    if reason:
        warnings.warn(reason, UndefinedStatisticWarning, stacklevel=user_stacklevel())
    return score


def _scores_from_stats(stats: TokenStatistics, k: float,
                       count_rule: str) -> tuple[float, float, str]:
    lp, mu, sd = stats.logprob, stats.mu, stats.sigma
    mink, reason = _mean_of_lowest(lp, k, count_rule)
    if reason:
        return math.nan, math.nan, reason
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (lp - mu) / sd
    if not np.isfinite(z).all():
        bad = int(np.flatnonzero(~np.isfinite(z))[0])
        return mink, math.nan, f"Min-K%++ undefined: zero next-token spread at token {bad}"
    minkpp, _ = _mean_of_lowest(z, k, count_rule)
    return mink, minkpp, ""


_COLUMNS = ["text_id", "n_tokens", "n_lowest", "min_k", "min_k_pp", "mean_logprob", "bos",
            "reason"]


def _row(tid: Any, st: TokenStatistics, k: float, count_rule: str) -> dict[str, Any]:
    mink, minkpp, reason = _scores_from_stats(st, k, count_rule)
    return {"text_id": tid, "n_tokens": st.n_tokens,
            "n_lowest": n_lowest(st.n_tokens, k, count_rule=count_rule),
            "min_k": mink, "min_k_pp": minkpp,
            "mean_logprob": float(st.logprob.mean()) if st.n_tokens else math.nan,
            "bos": st.bos_prepended, "reason": reason}


def _score_with_checkpoint(texts, ids, model, tokenizer, *, k, count_rule, path: Path,
                           every: int, options: dict) -> list[dict[str, Any]]:
    if every < 1:
        raise InputError(f"checkpoint_every must be >= 1, got {every}")
    keys = [json.dumps(t, default=_json_default) for t in ids]
    if len(set(keys)) != len(keys):
        raise InputError("a checkpoint needs unique ids; some ids repeat")
    settings = {"model": str(getattr(model, "name_or_path", "") or
                             getattr(getattr(model, "config", None), "_name_or_path", "")),
                "vocab_size": len(tokenizer), "k": k, "count_rule": count_rule,
                "bos": options["bos"],
                "max_length": options["max_length"], "stride": options["stride"]}
    done: dict[str, dict[str, Any]] = {}
    if path.exists() and path.stat().st_size:
        with path.open(encoding="utf-8") as handle:
            lines = handle.read().splitlines()
        header = json.loads(lines[0]).get("settings")
        if header != settings:
            raise InputError(f"checkpoint {path} was written with other settings ({header}); "
                             f"now {settings}. Use another checkpoint file or delete it")
        for n, line in enumerate(lines[1:], start=2):
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                if n == len(lines):  # a last line cut by an interruption
                    break
                raise InputError(f"checkpoint {path}, line {n}: not JSON") from None
            row = {c: (math.nan if row.get(c) is None and c in ("min_k", "min_k_pp",
                                                                  "mean_logprob")
                       else row.get(c)) for c in _COLUMNS}
            done[json.dumps(row["text_id"], default=_json_default)] = row
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"settings": settings}) + "\n", encoding="utf-8")
    todo = [i for i, key in enumerate(keys) if key not in done]
    for start in range(0, len(todo), every):
        chunk = todo[start:start + every]
        stats = token_statistics([texts[i] for i in chunk], model, tokenizer, **options)
        new = [_row(ids[i], st, k, count_rule) for i, st in zip(chunk, stats)]
        with path.open("a", encoding="utf-8") as handle:
            for row in new:
                clean = {c: (None if isinstance(v, float) and math.isnan(v) else v)
                         for c, v in row.items()}
                handle.write(json.dumps(clean, default=_json_default) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        for i, row in zip(chunk, new):
            done[keys[i]] = row
    return [done[key] for key in keys]


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"text id {value!r} cannot be written to a JSON checkpoint")


def score_texts(
    texts: Sequence[str],
    model: Any,
    tokenizer: Any,
    *,
    k: float = 0.2,
    ids: Sequence[Any] | None = None,
    count_rule: CountRule = "reference",
    bos: BosPolicy = "reference",
    max_length: int | None = None,
    stride: int | None = None,
    batch_size: int = 8,
    checkpoint: str | os.PathLike | None = None,
    checkpoint_every: int = 64,
    show_progress: bool | None = None,
) -> pd.DataFrame:
    """Min-K% Prob and Min-K%++ of each text under a causal LM.

    Parameters
    ----------
    texts : sequence of str
        The texts to score.
    model, tokenizer
        A ``transformers`` causal LM and its tokenizer (see
        `storyeval.contamination.load_causal_lm`).
    k : float, default 0.2
        Fraction of lowest-scoring tokens averaged (Shi et al. use 20%).
    ids : sequence, optional
        Identifiers of the texts (default ``0..n-1``), written to the ``text_id`` column.
    count_rule : {"reference", "floor_eps"}, default "reference"
        How many tokens are averaged (``int(n k)`` as the reference code); see
        `n_lowest`.
    bos, max_length, stride, batch_size, show_progress
        See `storyeval.contamination.token_statistics`.
    checkpoint : path-like, optional
        A JSON-lines file that receives each text's row as soon as its chunk of
        ``checkpoint_every`` texts is scored. If it exists, texts already in it (same
        ``text_id``) are not scored again, so an interrupted run resumes; its first line
        records the settings (model, tokenizer size, ``k``, ``count_rule``, ``bos``,
        ``max_length``,
        ``stride``) and a mismatch raises [`InputError`][]. Needs unique ``ids``.
        Scores do not depend on how texts are chunked or batched.
    checkpoint_every : int, default 64
        Texts scored between two writes of the checkpoint.

    Returns
    -------
    pandas.DataFrame
        One row per text: ``text_id``, ``n_tokens`` (scored tokens), ``n_lowest``
        (tokens averaged, by ``count_rule``), ``min_k`` (Min-K% Prob), ``min_k_pp`` (Min-K%++), ``mean_logprob``
        (the loss-attack score, for reference), ``bos`` (whether a BOS token was prepended),
        ``reason`` (empty, or why a score is NaN). Higher scores mean "more likely a member".
        If some texts are too short, one [`UndefinedStatisticWarning`][] gives their
        number. The conventions used are in ``table.attrs["conventions"]``:
        ``{"k", "count_rule", "bos"}``.

    Notes
    -----
    See [`min_k_prob`][] and [`min_k_plus_plus`][] for the formulas.

    Examples
    --------
    >>> table = score_texts(["A short story ..."], model, tokenizer, k=0.2)  # doctest: +SKIP

    Validated against a hand computation from the model's logits in
    ``tests/test_contamination.py``.
    """
    k = _check_k(k)
    count_rule = _check_rule(count_rule)
    texts = list(texts)
    if ids is None:
        ids = list(range(len(texts)))
    else:
        ids = list(ids)
        if len(ids) != len(texts):
            raise InputError(f"ids has {len(ids)} entries but texts has {len(texts)}")
    options = {"bos": bos, "max_length": max_length, "stride": stride,
               "batch_size": batch_size, "show_progress": show_progress}
    if checkpoint is None:
        stats = token_statistics(texts, model, tokenizer, **options)
        rows = [_row(tid, st, k, count_rule) for tid, st in zip(ids, stats)]
    else:
        rows = _score_with_checkpoint(texts, ids, model, tokenizer, k=k, count_rule=count_rule,
                                      path=Path(checkpoint),
                                      every=checkpoint_every, options=options)
    table = pd.DataFrame(rows, columns=_COLUMNS)
    table.attrs["conventions"] = {"k": k, "count_rule": count_rule, "bos": bos}
    n_bad = int((table["reason"] != "").sum())
    if n_bad:
        warnings.warn(f"{n_bad} of {len(table)} text(s) have no Min-K% score; see the "
                      f"'reason' column", UndefinedStatisticWarning, stacklevel=user_stacklevel())
    return table
