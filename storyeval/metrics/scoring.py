"""Score a table of stories with several metrics and return the tidy score table."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from storyeval._progress import progress_bar
from storyeval.data.shards import Shard, shard_rows
from storyeval.exceptions import InputError, UndefinedStatisticWarning, user_stacklevel
from storyeval.metrics.base import Measure, Metric
from storyeval.metrics.cache import ScoreCache, text_key
from storyeval.metrics.registry import get_metric, resolve_metrics

__all__ = [
    "INPUT_COLUMNS",
    "SCORE_COLUMNS",
    "hanna_stories",
    "measure_catalogue",
    "score",
    "validate_stories",
]

#: Input columns: ``story_id`` and ``story`` are required.
INPUT_COLUMNS = ("story_id", "story", "reference", "prompt", "system", "prompt_id")
#: Output columns (the tidy score table of ``docs/design.md`` plus ``reason``).
SCORE_COLUMNS = ("story_id", "system", "prompt_id", "measure", "value", "reason")

REASON_NO_REFERENCE = "no reference"
REASON_SELF_REFERENCE = "reference is the story itself"
REASON_NO_PROMPT = "no prompt"
REASON_EMPTY = "empty story"
REASON_UNDEFINED = "undefined for this text (e.g. fewer tokens than the n-gram order)"


def _text_or_none(value) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return None
    text = str(value)
    return text if text.strip() else None


def validate_stories(stories: pd.DataFrame, *, source: str = "stories") -> pd.DataFrame:
    """Check an input table of stories and return a normalised copy.

    Required columns: ``story_id`` (unique), ``story`` (text). Optional: ``reference`` (the
    human story for the same prompt), ``prompt`` (the story-prompt), ``system``, ``prompt_id``
    (integers, or text such as ``item-7``). Without ``story_id``, ids are built as
    ``"{system}/{prompt_id}"`` when both columns are present (as for score tables); without
    ``system`` and ``prompt_id``, story ids of the form ``SYSTEM/PROMPT`` (every id holds a
    ``/``; split at the last one) give them, so the score table says each story's system.
    Other missing optional columns are added empty.

    Raises
    ------
    InputError
        Naming ``source``, the missing column, or the offending row.
    """
    if not isinstance(stories, pd.DataFrame):
        raise InputError(f"{source}: expected a pandas DataFrame, got {type(stories).__name__}")
    if "story_id" not in stories.columns and {"system", "prompt_id"} <= set(stories.columns):
        from storyeval.data import make_story_id

        stories = stories.copy()
        try:
            ids = [make_story_id(s, p) for s, p in zip(stories["system"], stories["prompt_id"])]
        except (TypeError, ValueError) as exc:
            raise InputError(f"{source}: no 'story_id' column and story ids cannot be built "
                             f"from 'system' and 'prompt_id' ({exc})") from exc
        stories.insert(0, "story_id", ids)
    missing = [c for c in ("story_id", "story") if c not in stories.columns]
    if missing:
        raise InputError(f"{source}: missing required column(s) {missing}; found columns "
                         f"{list(stories.columns)}; expected {list(INPUT_COLUMNS)} "
                         "(story_id and story required)")
    df = stories.copy()
    if df["story_id"].isna().any():
        row = int(np.flatnonzero(df["story_id"].isna().to_numpy())[0])
        raise InputError(f"{source}: column 'story_id' is empty in data row {row} "
                         "(0-based, header excluded)")
    df["story_id"] = df["story_id"].astype(str)
    dup = df["story_id"].duplicated(keep=False)
    if dup.any():
        rows = np.flatnonzero(dup.to_numpy())[:5].tolist()
        raise InputError(f"{source}: column 'story_id' has duplicates "
                         f"({df['story_id'].iloc[rows[0]]!r} in data rows {rows}, 0-based, "
                         "header excluded)")
    for col in ("story", "reference", "prompt"):
        if col not in df.columns:
            df[col] = None
            continue
        bad = [i for i, v in enumerate(df[col]) if v is not None and v is not pd.NA
               and not isinstance(v, str) and not (isinstance(v, float) and math.isnan(v))]
        if bad:
            raise InputError(f"{source}: column {col!r} must hold text; data row {bad[0]} "
                             f"(0-based, header excluded) holds {df[col].iloc[bad[0]]!r}")
    if not {"system", "prompt_id"} & set(df.columns) and \
            df["story_id"].str.contains("/", regex=False).all():
        # story ids SYSTEM/PROMPT say the story: the score table carries them, so `meta` and
        # `describe` read it with system-level correlations
        parts = df["story_id"].str.rsplit("/", n=1, expand=True)
        df["system"], df["prompt_id"] = parts[0].to_numpy(), parts[1].to_numpy()
    if "system" not in df.columns:
        df["system"] = pd.NA
    df["system"] = df["system"].astype("string")
    df["prompt_id"] = _prompt_ids(df["prompt_id"] if "prompt_id" in df.columns
                                  else pd.Series(pd.NA, index=df.index), source)
    return df.reset_index(drop=True)


def _prompt_ids(col: pd.Series, source: str) -> pd.Series:
    """Prompt ids as `storyeval meta` reads them: integers (``Int64``) when every given id is
    a whole number, else text (``item-7``); empty cells stay missing."""
    from storyeval.data.io import prompt_column

    given = col.notna() & (col.astype(str).str.strip() != "")
    if not given.any():
        return pd.Series(pd.NA, index=col.index, dtype="Int64")
    ids = prompt_column(col[given], source, None)
    if pd.api.types.is_integer_dtype(ids):
        return ids.reindex(col.index).astype("Int64")
    return ids.reindex(col.index).astype("string")


def measure_catalogue(measures: Sequence[Measure]) -> pd.DataFrame:
    """Catalogue rows (``docs/design.md``) for metric measures: measure, display_name, kind,
    criterion, annotator, reference, family, model, eval_prompt, rater, and the extra columns
    higher_is_better, implementation (the reference implementation a measure reproduces) and
    variant (its configuration)."""
    return pd.DataFrame({
        "measure": [m.name for m in measures],
        "display_name": [m.display_name for m in measures],
        "kind": "metric",
        "criterion": "",
        "annotator": pd.array([pd.NA] * len(measures), dtype="Int64"),
        "reference": [m.reference for m in measures],
        "family": [m.family for m in measures],
        "model": "",
        "eval_prompt": pd.array([pd.NA] * len(measures), dtype="Int64"),
        "rater": [m.name for m in measures],
        "higher_is_better": [m.higher_is_better for m in measures],
        "implementation": [m.implementation for m in measures],
        "variant": [m.variant for m in measures],
    })


def score(
    stories: pd.DataFrame,
    metrics: str | Sequence[str | Metric] = "rouge,bleu,chrf,surface",
    *,
    options: Mapping[str, Mapping] | None = None,
    cache: str | Path | None = None,
    batch_size: int = 32,
    self_reference: str = "exclude",
    show_progress: bool | None = None,
    return_catalogue: bool = False,
    shard: str | Shard | None = None,
) -> pd.DataFrame | tuple[pd.DataFrame, pd.DataFrame]:
    """Score stories with metrics; return the tidy score table.

    Parameters
    ----------
    stories : DataFrame
        Columns ``story_id``, ``story`` and optionally ``reference``, ``prompt``, ``system``,
        ``prompt_id`` (see `validate_stories`).
    metrics : str or sequence
        Comma-separated metric / family names (``"rouge,bleu,embedding"``), ``"evaluate:PATH"``
        entries, or [`Metric`][] instances.
    options : mapping, optional
        Keyword options per metric name, e.g. ``{"bertscore": {"model": "roberta-large"}}``.
    cache : path, optional
        Folder of the score cache (one SQLite file per metric configuration). Cached stories are
        not scored again; each batch is saved as soon as it is scored.
    batch_size : int
        Stories per call of a metric (default 32).
    self_reference : {"exclude", "keep"}
        What to do when a story's reference is the story itself (HANNA's human stories):
        ``"exclude"`` (default) gives NaN with the reason for reference-based measures.
    show_progress : bool, optional
        Progress bars (default: only on a terminal).
    return_catalogue : bool
        Also return the measure catalogue (default False).
    shard : str or Shard, optional
        Score only the stories of shard ``"K/N"`` (`storyeval.data.shards.shard_rows` of the
        story ids). Everything set-level is taken from all the stories (which measures apply,
        BERTScore's idf weights and rescaling baseline, the inter-story repetition), so the
        rows of the N shards together are the rows of one run (`storyeval merge`).

    Returns
    -------
    DataFrame
        Columns ``story_id, system, prompt_id, measure, value, reason``; one row per story and
        measure; ``reason`` is empty where ``value`` is a number and says why where it is NaN.
        Rows are ordered by metric, then story (input order), then measure;
        ``attrs["metric_blocks"]`` lists each metric's measures (what `storyeval merge` needs
        to restore that order).
    catalogue : DataFrame
        Only with ``return_catalogue=True``: `measure_catalogue` of the measures
        (taxonomy of each measure, as ``docs/design.md`` describes).

    Raises
    ------
    InputError
        Unknown metric, missing input column a metric needs, bad option.

    Warns
    -----
    UndefinedStatisticWarning
        When some values are undefined for their text (e.g. a story shorter than the n-gram
        order); they are NaN with a reason.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"story_id": ["a"], "story": ["The cat sat on the mat."],
    ...                    "reference": ["A cat was on the mat."]})
    >>> t = score(df, "bleu", show_progress=False)
    >>> t[["story_id", "measure"]].values.tolist()
    [['a', 'BLEU']]
    """
    df = validate_stories(stories)
    rows = (np.arange(len(df)) if shard is None
            else shard_rows(df["story_id"].tolist(), Shard.parse(shard)))
    if self_reference not in ("exclude", "keep"):
        raise InputError(f"self_reference: expected 'exclude' or 'keep', got {self_reference!r}")
    if int(batch_size) < 1:
        raise InputError(f"batch_size: must be >= 1, got {batch_size!r}")
    options = {k.lower(): dict(v) for k, v in (options or {}).items()}
    metric_objs: list[Metric] = []
    if isinstance(metrics, str):
        metrics = resolve_metrics(metrics)
    for m in metrics:
        if isinstance(m, Metric):
            metric_objs.append(m)
        else:
            for name in resolve_metrics([m]):
                try:
                    # rm:PATH takes the options given under "rm" (one entry for every path)
                    opts = options.get(name.lower(), options.get(name.split(":", 1)[0].lower(),
                                                                 {}))
                    metric_objs.append(get_metric(name, **opts))
                except TypeError as exc:
                    raise InputError(f"options for metric {name!r}: {exc}") from exc

    texts = [_text_or_none(v) for v in df["story"].tolist()]
    refs = [_text_or_none(v) for v in df["reference"].tolist()]
    prompts = [_text_or_none(v) for v in df["prompt"].tolist()]
    ref_reason = [REASON_NO_REFERENCE if r is None else "" for r in refs]
    if self_reference == "exclude":
        for i, (s, r) in enumerate(zip(texts, refs)):
            if r is not None and s is not None and r.strip() == s.strip():
                refs[i] = None
                ref_reason[i] = REASON_SELF_REFERENCE
    empty = np.array([t is None for t in texts], dtype=bool)
    no_ref = np.array([r is None for r in refs], dtype=bool)
    no_prompt = np.array([p is None for p in prompts], dtype=bool)
    ref_reason_arr = np.array(ref_reason, dtype=object)
    has_ref = any(r is not None for r in refs)
    has_prompt = any(p is not None for p in prompts)
    systems = df["system"].tolist()
    systems = None if df["system"].isna().all() else ["" if pd.isna(s) else s for s in systems]

    frames, all_measures, blocks = [], [], []
    for metric in metric_objs:
        values, measures = _score_one(metric, texts, refs, prompts, systems, has_ref, has_prompt,
                                      cache=cache, batch_size=int(batch_size),
                                      show_progress=show_progress, rows=rows)
        reasons = np.full(values.shape, "", dtype=object)
        for j, m in enumerate(measures):  # precedence: empty story, then missing inputs
            col = np.full(len(texts), "", dtype=object)
            if "prompt" in m.needs:
                col[no_prompt] = REASON_NO_PROMPT
            if "reference" in m.needs:
                col[no_ref] = ref_reason_arr[no_ref]
            col[empty] = REASON_EMPTY
            reasons[:, j] = col
        values, reasons = values[rows], reasons[rows]
        values[reasons != ""] = np.nan
        undefined = np.isnan(values) & (reasons == "")
        if undefined.any():
            reasons[undefined] = REASON_UNDEFINED
            warnings.warn(f"{metric.name}: {int(undefined.sum())} value(s) undefined for their "
                          f"text (NaN, reason {REASON_UNDEFINED!r})", UndefinedStatisticWarning,
                          stacklevel=user_stacklevel())
        n, k = values.shape
        frames.append(pd.DataFrame({
            "story_id": np.repeat(df["story_id"].to_numpy()[rows], k),
            "system": np.repeat(df["system"].to_numpy()[rows], k),
            "prompt_id": np.repeat(df["prompt_id"].to_numpy()[rows], k),
            "measure": np.tile([m.name for m in measures], n),
            "value": values.reshape(-1).astype(float),
            "reason": reasons.reshape(-1),
        }))
        all_measures.extend(measures)
        blocks.append(measures)
    names = [m.name for m in all_measures]
    dups = sorted({x for x in names if names.count(x) > 1})
    if dups:
        raise InputError(f"metrics: two metrics produce the same measure name(s) {dups}; "
                         "give them different configurations")
    out = pd.concat(frames, ignore_index=True)
    out["system"] = out["system"].astype("string")
    out["prompt_id"] = out["prompt_id"].astype(df["prompt_id"].dtype)
    out["reason"] = out["reason"].astype(str)
    out.attrs["metric_blocks"] = [[m.name for m in block] for block in blocks]
    if return_catalogue:
        return out, measure_catalogue(all_measures)
    return out


def _score_one(metric: Metric, texts, refs, prompts, systems, has_ref, has_prompt, *, cache,
               batch_size, show_progress, rows) -> tuple[np.ndarray, list[Measure]]:
    context = {"stories": texts, "references": refs, "prompts": prompts, "systems": systems}
    metric.prepare(context)
    measures = metric.measures(has_reference=has_ref, has_prompt=has_prompt)
    if not measures:
        needs = sorted({x for m in metric.measures() for x in m.needs})
        raise InputError(f"metric {metric.name!r} needs input column(s) {needs} "
                         "with at least one non-empty value")
    for m in measures:
        for need, present in (("reference", has_ref), ("prompt", has_prompt)):
            if need in m.needs and not present:
                raise InputError(f"metric {metric.name!r} (measure {m.name!r}) needs a {need!r} "
                                 "column with at least one non-empty value")
    uses = metric.uses()
    keys = [None if s is None else text_key(s, r if "reference" in uses else None,
                                            p if "prompt" in uses else None)
            for s, r, p in zip(texts, refs, prompts)]
    values = np.full((len(texts), len(measures)), np.nan)
    store = None
    if cache is not None and metric.cacheable:
        store = ScoreCache(cache, metric=metric.name, config_key=metric.config_key(),
                           config=metric.config(), measures=[m.name for m in measures])
    try:
        known = (store.get_many(keys[i] for i in rows.tolist() if keys[i] is not None)
                 if store else {})
        first_row: dict[str, int] = {}
        for i in rows.tolist():  # only the stories of this shard (all without one)
            k = keys[i]
            if k is not None and k not in known and k not in first_row:
                first_row[k] = i
        todo = list(first_row.values())
        with progress_bar(total=len(todo), desc=metric.name, unit="story",
                          show=show_progress) as bar:
            for b in range(0, len(todo), batch_size):
                batch = todo[b:b + batch_size]
                vals = np.asarray(metric.score_batch(
                    [texts[i] for i in batch], [refs[i] for i in batch],
                    [prompts[i] for i in batch], measures), dtype=float)
                if vals.shape != (len(batch), len(measures)):
                    raise RuntimeError(f"metric {metric.name!r} returned shape {vals.shape}, "
                                       f"expected {(len(batch), len(measures))}")
                new = {keys[i]: vals[r].tolist() for r, i in enumerate(batch)}
                known.update(new)
                if store is not None:
                    store.put_many(new.items())
                bar.update(len(batch))
            for i in rows.tolist():
                if keys[i] is not None:
                    values[i] = known[keys[i]]
            # set-level measures (surface: seconds at 10^4 stories): under the open bar, which
            # keeps redrawing its elapsed time
            values, measures = metric.finalize(values, measures, context)
    finally:
        if store is not None:
            store.close()
    return np.asarray(values, dtype=float), list(measures)


def hanna_stories(*, include: str = "all") -> pd.DataFrame:
    """The stories shipped with storyeval, ready for [`score`][].

    The 96 human-written HANNA stories (system ``"Human"``, prompt ids 0..95 in HANNA's order,
    aligned with the human ratings) and the 576 LLM stories of ``hanna_llm_stories.csv`` (six
    systems x 96 prompts) with the human story of the same prompt as reference. Human stories have no reference (their
    reference-based measures are NaN with reason "no reference"), as in HANNA.
    Loaded with [`storyeval.data.load_hanna_stories`][].

    Parameters
    ----------
    include : {"all", "human", "llm"}
    """
    if include not in ("all", "human", "llm"):
        raise InputError(f"include: expected 'all', 'human' or 'llm', got {include!r}")
    from storyeval.data import load_hanna_stories

    df = load_hanna_stories()
    df = df[["story_id", "system", "prompt_id", "prompt", "story", "reference"]]
    if include == "human":
        df = df[df["system"] == "Human"]
    elif include == "llm":
        df = df[df["system"] != "Human"]
    return df.reset_index(drop=True)

