"""Stories to rate: HANNA's available stories or a user file, validated into one table.

Columns: ``story_id`` (unique), ``system``, ``prompt_id`` (integers, or text such as
``item-7``), ``prompt``, ``story`` and,
for Eval-Prompt 4, ``reference`` (the human story of the same prompt).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from storyeval.exceptions import InputError

__all__ = ["STORY_COLUMNS", "load_stories", "validate_stories"]

STORY_COLUMNS: tuple[str, ...] = ("story_id", "system", "prompt_id", "prompt", "story")


def _hanna_stories_fallback() -> pd.DataFrame:
    """HANNA stories from the packaged CSV (used only when ``storyeval.data.load_hanna_stories``
    is not available): 96 human + 576 LLM stories; the 960 generated stories' texts are not
    released with the data storyeval ships."""
    from importlib import resources

    with resources.files("storyeval.data").joinpath("hanna").joinpath("hanna_llm_stories.csv").open(
            "r", encoding="utf-8") as fh:
        raw = pd.read_csv(fh)
    prompts = list(dict.fromkeys(raw["Prompt"]))
    pid = {p: i for i, p in enumerate(prompts)}
    human = raw.drop_duplicates("Prompt")[["Prompt", "Human"]]
    rows = [pd.DataFrame({"system": "Human", "prompt_id": human["Prompt"].map(pid).to_numpy(),
                          "prompt": human["Prompt"].to_numpy(), "story": human["Human"].to_numpy(),
                          "reference": None}),
            pd.DataFrame({"system": raw["Model"].to_numpy(),
                          "prompt_id": raw["Prompt"].map(pid).to_numpy(),
                          "prompt": raw["Prompt"].to_numpy(), "story": raw["Story"].to_numpy(),
                          "reference": raw["Human"].to_numpy()})]
    df = pd.concat(rows, ignore_index=True)
    df.insert(0, "story_id", df["system"] + "/" + df["prompt_id"].astype(str))
    return df


def _hanna_stories() -> pd.DataFrame:
    try:
        from storyeval.data import load_hanna_stories  # type: ignore[attr-defined]
    except ImportError:
        return _hanna_stories_fallback()
    return load_hanna_stories()


def validate_stories(stories: pd.DataFrame, *, source: str = "stories",
                     need_reference: bool = False) -> pd.DataFrame:
    """Check and normalise a stories table (see module docstring); returns a copy.

    A missing or empty ``reference`` is kept as None (HANNA's human stories have none); the
    runner gives their Eval-Prompt 4 items the status ``no_reference`` instead of a request.

    Raises
    ------
    InputError
        A missing column, a duplicated ``story_id``, an empty story or ``prompt_id``, or
        (``need_reference``) no ``reference`` column; the message names the
        column and the first offending row.
    """
    if not isinstance(stories, pd.DataFrame):
        raise InputError(f"{source}: expected a pandas DataFrame, got {type(stories).__name__}")
    missing = [c for c in STORY_COLUMNS if c not in stories.columns]
    if missing:
        raise InputError(f"{source}: missing column(s) {missing}; required: {list(STORY_COLUMNS)}"
                         " (+ 'reference' for Eval-Prompt 4)")
    df = stories.reset_index(drop=True).copy()
    if df.empty:
        raise InputError(f"{source}: no stories")
    df["story_id"] = df["story_id"].astype(str)
    dup = df["story_id"].duplicated()
    if dup.any():
        i = int(dup.to_numpy().nonzero()[0][0])
        raise InputError(f"{source}: column 'story_id' repeats {df['story_id'][i]!r} (row {i})")
    from storyeval.data.io import prompt_column

    # integer ids stay integers, any other id scheme ("item-7") is kept as text, as `meta` reads
    df["prompt_id"] = prompt_column(df["prompt_id"], source, None)
    if need_reference and "reference" not in df.columns:
        raise InputError(f"{source}: column 'reference' is needed (Eval-Prompt 4 shows the human "
                         "story of the same prompt)")
    if "reference" in df.columns:
        ref = df["reference"]
        empty = ref.isna() | (ref.astype(str).str.strip() == "")
        df["reference"] = [None if e else str(v) for v, e in zip(ref.tolist(), empty.tolist())]
    for col in ("system", "prompt", "story"):
        vals = df[col]
        empty = vals.isna() | (vals.astype(str).str.strip() == "")
        if empty.any():
            i = int(empty.to_numpy().nonzero()[0][0])
            raise InputError(f"{source}: column {col!r} is empty in row {i} "
                             f"(story_id {df['story_id'][i]!r})")
        df[col] = vals.astype(str)
    return df


def load_stories(source: str | Path | pd.DataFrame, *, need_reference: bool = False) -> pd.DataFrame:
    """Stories to rate from ``"hanna"``, a CSV / JSONL / Parquet file, or a DataFrame.

    ``"hanna"`` gives the 96 human and 576 LLM-written stories of HANNA (the texts of the 960
    stories of the ten original systems are not in the released files storyeval ships).
    """
    if isinstance(source, pd.DataFrame):
        return validate_stories(source, need_reference=need_reference)
    if str(source).lower() == "hanna":
        return validate_stories(_hanna_stories(), source="HANNA stories",
                                need_reference=need_reference)
    p = Path(source)
    if p.is_dir():
        raise InputError(f"stories file {str(p)!r} is a folder; give a CSV, JSONL, JSON or "
                         "Parquet file of stories (or 'hanna')")
    if not p.is_file():
        raise InputError(f"stories file {str(p)!r} does not exist (or pass 'hanna')")
    suffix = p.suffix.lower()
    try:
        if suffix == ".csv":
            from storyeval._csv import restore_frame

            df = restore_frame(pd.read_csv(p))  # cells storyeval neutralised: as they were
        elif suffix in (".jsonl", ".ndjson"):
            df = pd.read_json(p, lines=True)
        elif suffix == ".json":
            df = pd.read_json(p)
        elif suffix == ".parquet":
            df = pd.read_parquet(p)
        else:
            raise InputError(f"stories file {str(p)!r}: unknown format {suffix!r} "
                             "(use .csv, .jsonl, .json or .parquet)")
    except InputError:
        raise
    except (ValueError, OSError, ImportError) as exc:  # unreadable, malformed, no engine
        raise InputError(f"stories file {str(p)!r} could not be read: {exc}") from None
    return validate_stories(df, source=f"stories file {str(p)!r}", need_reference=need_reference)
