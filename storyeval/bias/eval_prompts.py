"""A paired comparison of two Eval-Prompts of one LLM on the same stories.

The HANNA paper reads the effect of an Eval-Prompt (e.g. EP3, with guidelines, against EP4, with
a reference story) from overlapping intervals of separate estimates. The two prompts rate the
same stories, so the comparison is paired: per story the two ratings, per criterion their
difference. Stories of one story-prompt share that prompt and are not independent, the prompts
are, so every interval and test here is clustered by prompt:

* ``mean rating``: the mean over stories of ``rating_b - rating_a`` (does the Eval-Prompt make
  the LLM more lenient?), with a cluster-robust t (CR1, `storyeval.bias.inference`);
* ``correlation with human``: ``r(h, rating_b) - r(h, rating_a)`` with the human criterion,
  stories pooled (the overall level), with a leave-one-prompt-out jackknife t.

Both use Student's t with ``prompts - 1`` degrees of freedom; the p-values are adjusted (BH by
default) over the criteria of each quantity.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from storyeval.bias.inference import TEST_NAME, _t_inference, ratio_contrast
from storyeval.compare.multitest import adjust_frame
from storyeval.correlation.kernel import pairwise_correlations, resolve_method
from storyeval.data.dataset import Dataset
from storyeval.exceptions import InputError

__all__ = ["JACKKNIFE_TEST", "compare_eval_prompts"]

#: The test of the difference of correlations.
JACKKNIFE_TEST = ("leave-one-prompt-out jackknife t of r(h, b) - r(h, a), df = prompts - 1")
COLUMNS = ("model", "eval_prompt_a", "eval_prompt_b", "criterion", "quantity", "measure_a",
           "measure_b", "value_a", "value_b", "estimate", "ci_low", "ci_high", "se", "t", "df",
           "pvalue", "p_adjusted", "family", "n_stories", "n_prompts", "test")


def _measure(cat: pd.DataFrame, model: str, ep: int, criterion: str) -> str | None:
    rows = cat[(cat["kind"] == "llm_rater") & (cat["model"] == model)
               & (cat["eval_prompt"] == ep) & (cat["criterion"] == criterion)]
    return None if rows.empty else str(rows["measure"].iloc[0])


def compare_eval_prompts(dataset: Dataset, model: str, *, eval_prompts: Sequence[int] = (3, 4),
                         criteria: Sequence[str] | None = None, method: str = "kendall_b",
                         confidence_level: float = 0.95, alternative: str = "two-sided",
                         adjust: str = "bh") -> pd.DataFrame:
    """Eval-Prompt b against Eval-Prompt a of one LLM, paired on the same stories.

    Parameters
    ----------
    dataset : Dataset
        With the LLM's ratings under both Eval-Prompts (catalogue ``model`` and
        ``eval_prompt``, e.g. HANNA's ``"Beluga-13B RE 3"``) and the human criteria. Leave out
        the reference stories first if they should not count (HANNA:
        ``load_hanna(include_human_stories=False)``).
    model : str
        The LLM (catalogue ``model``), e.g. ``"Beluga-13B"``.
    eval_prompts : (a, b), default (3, 4)
        The Eval-Prompts compared; every estimate is b minus a.
    criteria : sequence of str, optional
        Criteria (names or codes); default every criterion both prompts rate.
    method : str, default "kendall_b"
        The coefficient of the correlation with the human criterion.
    confidence_level : float, default 0.95
    alternative : {"two-sided", "greater", "less"}
        ``"greater"``: Eval-Prompt b is higher (more lenient, or closer to the humans).
    adjust : {"bh", "by", "bonferroni", "holm", "none"}, default "bh"
        Adjustment over the criteria of each quantity.

    Returns
    -------
    pandas.DataFrame
        Two rows per criterion (``quantity`` ``"mean rating"`` and ``"correlation with
        human"``): ``value_a``, ``value_b`` (mean rating, or correlation, under each prompt),
        ``estimate`` (b - a) with ``ci_low, ci_high, se, t, df, pvalue, p_adjusted, family``,
        ``n_stories`` (rated under both prompts and by the humans) and ``n_prompts``.

    Notes
    -----
    Mean rating: ``theta = sum_i (y_bi - y_ai) / n`` with the CR1 cluster-robust variance of
    `storyeval.bias.inference.ratio_contrast`. Correlation: with ``d = r(h, b) - r(h, a)`` on
    all stories and ``d_(g)`` on the stories of every prompt but g (G prompts),
    ``se^2 = (G - 1) / G * sum_g (d_(g) - mean d_(.))^2``. Validated against a direct loop over
    prompts with ``scipy.stats.kendalltau`` (tests).

    Examples
    --------
    >>> from storyeval.data import load_hanna
    >>> res = compare_eval_prompts(load_hanna(include_human_stories=False), "Beluga-13B",
    ...                            criteria=["RE"])
    >>> res["quantity"].tolist()
    ['mean rating', 'correlation with human']
    """
    a, b = (int(e) for e in eval_prompts)
    if a == b:
        raise InputError(f"eval_prompts: two different Eval-Prompts, got {a} and {b}")
    method = resolve_method(method)
    cat = dataset.catalogue
    if model not in set(cat.loc[cat["kind"] == "llm_rater", "model"]):
        known = sorted(set(cat.loc[cat["kind"] == "llm_rater", "model"]) - {""})
        raise InputError(f"model {model!r} has no LLM ratings in dataset {dataset.name!r}; "
                         f"models: {known}")
    crits = (dataset.criteria if criteria is None
             else [dataset.resolve_criterion(c) for c in criteria])
    pairs = [(c, _measure(cat, model, a, c), _measure(cat, model, b, c)) for c in crits]
    missing = [c for c, ma, mb in pairs if ma is None or mb is None]
    if criteria is not None and missing:
        raise InputError(f"{model}: no rating of {missing[0]!r} under Eval-Prompt "
                         f"{a if _measure(cat, model, a, missing[0]) is None else b}")
    pairs = [p for p in pairs if p[0] not in missing]
    if not pairs:
        raise InputError(f"{model}: no criterion rated under both Eval-Prompts {a} and {b}")
    rows = []
    for crit, ma, mb in pairs:
        frame = dataset.wide([crit, ma, mb]).dropna()  # type: ignore[list-item]
        prompts = frame.index.get_level_values("prompt_id").to_numpy()
        h, ya, yb = (frame[c].to_numpy(dtype=np.float64) for c in (crit, ma, mb))
        common = {"model": model, "eval_prompt_a": a, "eval_prompt_b": b, "criterion": crit,
                  "measure_a": ma, "measure_b": mb, "n_stories": len(frame),
                  "n_prompts": len(np.unique(prompts))}
        mean = ratio_contrast(yb - ya, np.ones(len(frame)), clusters=prompts,
                              confidence_level=confidence_level, alternative=alternative)
        rows.append({**common, "quantity": "mean rating", "value_a": ya.mean(),
                     "value_b": yb.mean(), "estimate": mean.estimate, "ci_low": mean.ci_low,
                     "ci_high": mean.ci_high, "se": mean.se, "t": mean.statistic,
                     "df": mean.df, "pvalue": mean.pvalue,
                     "test": f"{TEST_NAME}, clustered by prompt"})
        rows.append({**common, "quantity": "correlation with human",
                     **_correlation_difference(h, ya, yb, prompts, method, confidence_level,
                                               alternative)})
    out = pd.DataFrame(rows)
    out = adjust_frame(out, by=["quantity"], p_col="pvalue", method=adjust,  # type: ignore[arg-type]
                       over="criteria")
    return out.loc[:, list(COLUMNS)]


def _correlation_difference(h: np.ndarray, ya: np.ndarray, yb: np.ndarray, prompts: np.ndarray,
                            method: str, confidence_level: float, alternative: str) -> dict:
    """``r(h, b) - r(h, a)`` with its leave-one-prompt-out jackknife t."""
    x = np.column_stack([ya, yb])
    full = pairwise_correlations(x, h, method=method, warn=False).statistic[:, 0]
    groups = np.unique(prompts)
    # one batch: copy g holds every story but those of prompt g (NaN, pairwise deletion)
    batch = np.repeat(np.column_stack([x, h])[None], len(groups), axis=0)
    batch[prompts[None, :] == groups[:, None]] = np.nan
    loo = pairwise_correlations(batch[:, :, :2], batch[:, :, 2:], method=method,
                                nan_policy="omit", warn=False).statistic[:, :, 0]
    d_loo = loo[:, 1] - loo[:, 0]
    g = len(groups)
    se = float(np.sqrt((g - 1) / g * ((d_loo - d_loo.mean()) ** 2).sum())) if g > 1 else np.nan
    delta = float(full[1] - full[0])
    t, p, low, high = _t_inference(delta, se, max(g - 1, 1), 0.0, confidence_level, alternative)
    return {"value_a": float(full[0]), "value_b": float(full[1]), "estimate": delta,
            "ci_low": low, "ci_high": high, "se": se, "t": t, "df": g - 1, "pvalue": p,
            "test": f"{JACKKNIFE_TEST} ({method})"}
