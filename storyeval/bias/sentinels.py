"""Sentinel measures: content-blind scores that meta-evaluation should rank low.

Perrella et al. (2024) showed that measures which never read the output can rank high in a
meta-evaluation at some grouping levels. `add_sentinels` adds such measures to a dataset, one
per human criterion (matched to its criterion like an LLM rating), *cross-fitted* so that a
story's own human score is never used, and they then go through every table and comparison
of ``storyeval meta`` like any other measure:

* ``system``: the mean human score of the same system's stories on the other prompts
  (leave-one-prompt-out); it knows which system wrote the story and nothing else;
* ``length``: the human score predicted from the story's length by least squares fitted on the
  other prompts' stories (leave-one-prompt-out);
* ``prompt``: the human score predicted from the prompt's text alone (ridge regression of the
  prompt's mean human score on its word counts and log length, fitted on the other prompts,
  leave-one-prompt-out): one value per prompt, so it cannot rank the stories of a prompt.
* ``prompt-mean`` (on request only: not among `SENTINEL_KINDS`, the default set): the mean
  human score of the other systems' stories of the same prompt (leave-one-system-out); it knows
  which prompt the story answers and how the humans rated the other answers, nothing of the
  story. It is the sentinel of the within-system level (a system's stories ranked by how good
  the prompt's other stories were), as ``system`` is the one of the system and prompt levels.
  Within a prompt it is ``(T_p - h) / (S - 1)``, a decreasing function of the story's own
  score, and over a system's prompts its mean is ``(G - H_s) / (S - 1)``: its prompt- and
  system-level correlations are -1 by construction, not a finding.

At the system level the ``system`` sentinel reproduces the human system means exactly (the
mean over a system's prompts of its leave-one-prompt-out means is its mean), so a measure
compared with it there is compared with the humans themselves.

References
----------
1. Perrella, S., Proietti, L., Scire, A., Barba, E., Navigli, R. (2024). Guardians of the
   Machine Translation Meta-Evaluation: Sentinel Metrics Fall In! ACL 2024.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from storyeval.exceptions import InputError

__all__ = ["ALL_SENTINEL_KINDS", "SENTINEL_KINDS", "SENTINEL_NAMES", "add_sentinels",
           "sentinel_scores"]

#: The sentinels, in the order they are added (the default set).
SENTINEL_KINDS = ("system", "length", "prompt")
#: Every sentinel that can be asked for: the default set and ``prompt-mean``.
ALL_SENTINEL_KINDS = (*SENTINEL_KINDS, "prompt-mean")
#: Their rater group names (a sentinel measure is "<name> <criterion code>").
SENTINEL_NAMES = {"system": "Sentinel: system identity", "length": "Sentinel: length only",
                  "prompt": "Sentinel: prompt only", "prompt-mean": "Sentinel: prompt mean"}
RIDGE = 1.0


def _loo_group_mean(y: np.ndarray, groups: np.ndarray, prompts: np.ndarray) -> np.ndarray:
    """Mean of ``y`` over the other prompts' units of the same group (NaN ``y`` ignored)."""
    ok = np.isfinite(y)
    key = pd.factorize(groups)[0]
    tot = np.bincount(key, weights=np.where(ok, y, 0.0))
    cnt = np.bincount(key, weights=ok.astype(float))
    # the same system may hold several stories of one prompt: remove the prompt's share
    pk = pd.factorize(pd.MultiIndex.from_arrays([key, prompts]))[0]
    ptot = np.bincount(pk, weights=np.where(ok, y, 0.0))[pk]
    pcnt = np.bincount(pk, weights=ok.astype(float))[pk]
    with np.errstate(invalid="ignore", divide="ignore"):
        return (tot[key] - ptot) / (cnt[key] - pcnt)


def _loo_linear(y: np.ndarray, x: np.ndarray, prompts: np.ndarray) -> np.ndarray:
    """Least-squares ``y ~ a + b x`` fitted without each story's prompt, predicted there."""
    ok = np.isfinite(y) & np.isfinite(x)
    key = pd.factorize(prompts)[0]
    parts = [np.where(ok, v, 0.0) for v in (np.ones_like(y), x, y, x * x, x * y)]
    total = [p.sum() for p in parts]
    mine = [np.bincount(key, weights=p)[key] for p in parts]
    n, sx, sy, sxx, sxy = (t - m for t, m in zip(total, mine))
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = (n * sxy - sx * sy) / (n * sxx - sx * sx)
        intercept = (sy - slope * sx) / n
    return np.where(np.isfinite(x), intercept + slope * x, np.nan)


def _prompt_features(texts: Sequence[str]) -> np.ndarray:
    """Word counts of the words used by at least two prompts (rows scaled to unit length)
    and the standardised log word count."""
    words = [re.findall(r"[a-z']+", str(t).lower()) for t in texts]
    vocab: dict[str, int] = {}
    for w in {w for ws in words for w in set(ws)}:
        vocab[w] = sum(w in set(ws) for ws in words)
    keep = sorted(w for w, c in vocab.items() if c >= 2)
    index = {w: i for i, w in enumerate(keep)}
    counts = np.zeros((len(texts), len(keep)))
    for row, ws in enumerate(words):
        for w in ws:
            if w in index:
                counts[row, index[w]] += 1
    norm = np.linalg.norm(counts, axis=1, keepdims=True)
    counts = np.divide(counts, norm, out=np.zeros_like(counts), where=norm > 0)
    loglen = np.log1p([len(ws) for ws in words])
    sd = loglen.std()
    loglen = (loglen - loglen.mean()) / sd if sd > 0 else np.zeros_like(loglen)
    return np.column_stack([counts, loglen])


def _loo_ridge(y: np.ndarray, features: np.ndarray) -> np.ndarray:
    """Leave-one-out predictions of ridge regression (unpenalised intercept, penalty RIDGE):
    ``y_i - e_i / (1 - H_ii)`` with ``H = X (X'X + P)^-1 X'``."""
    X = np.column_stack([np.ones(len(y)), features])
    penalty = RIDGE * np.eye(X.shape[1])
    penalty[0, 0] = 0.0
    hat = X @ np.linalg.solve(X.T @ X + penalty, X.T)
    resid = y - hat @ y
    return y - resid / (1 - np.diag(hat))


def _tie_faithful(value: np.ndarray) -> np.ndarray:
    """``value`` rounded to 12 significant digits of its largest magnitude: sums in a
    different order differ in the last bits, which would break ties that exist in exact
    arithmetic (two systems with the same leave-one-prompt-out mean) at random."""
    finite = np.abs(value[np.isfinite(value)])
    top = finite.max() if finite.size else 0.0
    if top == 0:
        return value
    return np.round(value, 11 - int(np.floor(np.log10(top))))


def sentinel_scores(wide: pd.DataFrame, criteria: Sequence[str], *,
                    kinds: Sequence[str] = ("system",), length: str | None = None,
                    prompt_texts: Mapping[object, str] | None = None) -> pd.DataFrame:
    """The cross-fitted sentinel scores of every story for every criterion.

    Parameters
    ----------
    wide : DataFrame
        Index ``(system, prompt_id)``; the human criteria (and ``length``).
    criteria : sequence of str
        The human criterion columns.
    kinds : sequence of {"system", "length", "prompt", "prompt-mean"}
    length : str, optional
        The column holding story lengths (needed by ``"length"``).
    prompt_texts : mapping, optional
        Prompt id -> prompt text (needed by ``"prompt"``).

    Returns
    -------
    DataFrame
        Same index; one column ``(kind, criterion)`` per sentinel and criterion.

    Notes
    -----
    ``system``: ``s(i) = mean{h(j) : system(j) = system(i), prompt(j) != prompt(i)}``.
    ``prompt-mean``: ``s(i) = mean{h(j) : prompt(j) = prompt(i), system(j) != system(i)}``.
    ``length``: OLS of ``h`` on length over the stories of the other prompts, evaluated at the
    story's length. ``prompt``: ridge regression (penalty 1, unpenalised intercept) of the
    prompts' mean human scores on `_prompt_features`, leave-one-prompt-out through the hat
    matrix. In all three a story's own prompt (so its own score) is held out. Values are
    rounded to 12 significant digits so that scores equal in exact arithmetic are equal
    (ties): on HANNA's Coherence, float noise of a different summation order moves the
    prompt-level Kendall tau-b of the system sentinel from 0.290 (exact) to 0.287 or 0.291.

    Validated against direct leave-one-prompt-out refits and the HANNA figures of issue 38
    (tests/test_bias_sentinels.py).
    """
    unknown = [k for k in kinds if k not in ALL_SENTINEL_KINDS]
    if unknown:
        raise InputError(f"unknown sentinel(s) {unknown}; choose among {ALL_SENTINEL_KINDS}")
    systems = wide.index.get_level_values("system").to_numpy()
    prompts = wide.index.get_level_values("prompt_id").to_numpy()
    out = {}
    for kind in kinds:
        if kind == "length" and (length is None or length not in wide.columns):
            raise InputError("the length sentinel needs a column of story lengths (length=...; "
                             f"{length!r} is not in the scores)")
        if kind == "prompt":
            if not prompt_texts:
                raise InputError("the prompt sentinel needs the prompts' texts (prompt_texts)")
            order = pd.unique(prompts)
            missing = [p for p in order if p not in prompt_texts]
            if missing:
                raise InputError(f"prompt_texts: no text for prompt {missing[0]!r}")
            features = _prompt_features([prompt_texts[p] for p in order])
        for crit in criteria:
            y = wide[crit].to_numpy(dtype=np.float64)
            if kind == "system":
                value = _loo_group_mean(y, systems, prompts)
            elif kind == "prompt-mean":  # the same prompt's stories of the other systems
                value = _loo_group_mean(y, prompts, systems)
            elif kind == "length":
                value = _loo_linear(y, wide[length].to_numpy(dtype=np.float64), prompts)
            else:
                means = pd.Series(y).groupby(pd.Categorical(prompts, categories=order)).mean()
                pred = _loo_ridge(means.to_numpy(), features)
                value = pd.Series(pred, index=order).reindex(prompts).to_numpy()
            out[(kind, crit)] = _tie_faithful(value)
    return pd.DataFrame(out, index=wide.index)


def add_sentinels(dataset, *, kinds: Sequence[str] = SENTINEL_KINDS, length: str | None = None,
                  prompt_texts: Mapping[object, str] | None = None,
                  criteria: Sequence[str] | None = None):
    """``dataset`` with the sentinel measures added (kind ``sentinel``, criterion-matched).

    Parameters
    ----------
    dataset : storyeval.data.Dataset
    kinds : sequence of {"system", "length", "prompt"}
    length : str, optional
        The measure holding story lengths (a measure or display name, e.g. HANNA's
        ``"Text length"``).
    prompt_texts : mapping, optional
        Prompt id -> prompt text.
    criteria : sequence of str, optional
        The criteria (default: all of the dataset's).

    Returns
    -------
    (Dataset, list of str)
        The dataset and the new measure identifiers (``"Sentinel: system identity RE"``; rater
        group ``"Sentinel: system identity"``).

    Notes
    -----
    The sentinels are computed from the stories of ``dataset`` as given: select the systems
    (e.g. leave out HANNA's human-written references) before adding them.
    """
    from storyeval.data.catalogue import catalogue_frame

    crits = list(dataset.criteria if criteria is None else criteria)
    if not crits:
        raise InputError(f"dataset {dataset.name!r} has no human criteria to build sentinels on")
    if length is not None and length not in dataset.table.columns:
        named = dataset.catalogue.loc[dataset.catalogue["display_name"] == length, "measure"]
        if named.empty:
            raise InputError(f"--sentinel-length: no measure {length!r} in the data")
        length = str(named.iloc[0])
    scores = sentinel_scores(dataset.table, crits, kinds=kinds, length=length,
                             prompt_texts=prompt_texts)
    codes = dict(dataset.criterion_codes)
    rows, columns = [], {}
    for kind, crit in scores.columns:
        name = f"{SENTINEL_NAMES[kind]} {codes.get(crit, crit)}"
        columns[name] = scores[(kind, crit)].to_numpy()
        rows.append({"measure": name, "display_name": SENTINEL_NAMES[kind], "kind": "sentinel",
                     "criterion": crit, "annotator": pd.NA, "reference": "", "family": "",
                     "model": "", "eval_prompt": pd.NA, "rater": SENTINEL_NAMES[kind]})
    clash = [m for m in columns if m in dataset.table.columns]
    if clash:
        raise InputError(f"the dataset already has a measure {clash[0]!r}")
    table = pd.concat([dataset.table, pd.DataFrame(columns, index=dataset.table.index)], axis=1)
    catalogue = pd.concat([dataset.catalogue, catalogue_frame(rows)], ignore_index=True)
    return replace(dataset, table=table, catalogue=catalogue), list(columns)
