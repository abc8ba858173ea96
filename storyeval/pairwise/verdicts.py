"""Pairwise verdict tables: reading, validation and the canonical long format.

A *verdict table* has one row per judgment of one pair of stories on one dimension:

=============  ==========================================================================
column         meaning
=============  ==========================================================================
``prompt_id``  the story-prompt both stories answer
``story_a``    story identifier (``"{system}/{prompt_id}"`` for HANNA-style ids)
``story_b``    the other story
``dimension``  what was judged (``"Plot"``, ``"Creativity"``, ..., ``"Overall"``)
``verdict``    ``"A"`` (``story_a`` is better), ``"B"`` (``story_b`` is better) or ``"same"``
``order``      ``"AB"`` if ``story_a`` was shown first, ``"BA"`` if ``story_b`` was
``strong``     optional: True for a strong ("much better") verdict; set from graded
               verdicts ``A>>B`` / ``B>>A`` (Arena-Hard's five-point scale ``A>>B, A>B, A=B,
               B>A, B>>A`` is read as A / B / same plus this flag)
``judge``      optional: who judged (``"human"``, an LLM name, an annotator id); default
               ``"judge"``
``system_a``   optional: the system of ``story_a`` (derived from ``"system/prompt"`` ids
``system_b``   when absent)
=============  ==========================================================================

``verdict`` names a *story*, not a screen position, so the two orders of one pair are directly
comparable. Judges that answer by position ("the first one") are converted on load with
``verdict_refers_to="position"``: then ``"A"`` means the story shown first.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from storyeval.exceptions import InputError

__all__ = [
    "GRADED_ALIASES",
    "VERDICTS",
    "VERDICT_COLUMNS",
    "read_verdicts",
    "validate_verdicts",
]

#: Required columns of a verdict table.
VERDICT_COLUMNS: tuple[str, ...] = ("prompt_id", "story_a", "story_b", "dimension", "verdict",
                                    "order")
#: Canonical verdict labels.
VERDICTS: tuple[str, ...] = ("A", "B", "same")
_VERDICT_ALIASES = {"a": "A", "b": "B", "same": "same", "tie": "same", "about the same": "same"}
#: Graded verdicts (Arena-Hard's five-point scale and mirror spellings) -> (verdict, strong).
GRADED_ALIASES: dict[str, tuple[str, bool]] = {
    "a>>b": ("A", True), "a>b": ("A", False), "a=b": ("same", False), "b=a": ("same", False),
    "b>a": ("B", False), "b>>a": ("B", True), "a<b": ("B", False), "a<<b": ("B", True),
    "b<a": ("A", False), "b<<a": ("A", True),
}
_ORDERS = ("AB", "BA")


def _split_story_id(story: str) -> tuple[str, str] | None:
    if "/" not in story:
        return None
    system, prompt = story.rsplit("/", 1)
    return (system, prompt) if system else None


def _plain(value: object) -> object:
    """A numpy scalar as the Python value (``7``, not ``np.int64(7)``, in messages)."""
    return value.item() if isinstance(value, np.generic) else value


def _prompt_text(value: object) -> str:
    """A prompt id as text: ``7``, ``7.0``, ``np.int64(7)`` and ``"7"`` all give ``"7"``."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip()


def _check_prompts(out: pd.DataFrame, prompt_a: list[str], prompt_b: list[str],
                   source: str) -> None:
    """With ``"{system}/{prompt_id}"`` story ids, a row whose ``prompt_id`` is not the prompt
    of both its stories contradicts itself: an error naming the row (a pair from different
    prompts, or a wrong prompt column, would be clustered under the wrong prompt)."""
    distinct = {v: _prompt_text(v) for v in pd.unique(out["prompt_id"].to_numpy(dtype=object))}
    given = out["prompt_id"].map(distinct).to_numpy(dtype=object)
    bad = np.flatnonzero((given != np.asarray(prompt_a, dtype=object))
                         | (given != np.asarray(prompt_b, dtype=object)))
    if len(bad):
        row = int(bad[0])
        raise InputError(
            f"{source}: row {row} has prompt_id {given[row]!r} but compares stories "
            f"{out['story_a'].iloc[row]!r} and {out['story_b'].iloc[row]!r} (prompts "
            f"{prompt_a[row]!r} and {prompt_b[row]!r}); both stories of a pair answer the "
            f"row's prompt ({len(bad)} row(s) in all)")


def validate_verdicts(
    verdicts: pd.DataFrame,
    *,
    verdict_refers_to: str = "story",
    source: str = "verdicts",
) -> pd.DataFrame:
    """Check a verdict table and return it in canonical form.

    Parameters
    ----------
    verdicts : DataFrame
        Columns as in the module docstring (extra columns are kept).
    verdict_refers_to : {"story", "position"}, default "story"
        ``"story"``: ``"A"`` means ``story_a``. ``"position"``: ``"A"`` means the story shown
        first (``story_b`` when ``order == "BA"``); converted to the story convention.
    source : str
        Name used in error messages (a file name).

    Returns
    -------
    DataFrame
        A copy with ``verdict`` in ``{"A", "B", "same"}``, ``order`` in ``{"AB", "BA"}``,
        ``judge`` (filled with ``"judge"`` if absent), ``system_a``/``system_b`` (derived from
        story ids ``"system/prompt"`` if absent, else left out), ``dimension`` and story ids as
        str, and ``winner`` (the better story's id; missing, NaN, for ``"same"``).

    Raises
    ------
    InputError
        Missing column, unknown verdict or order, a story compared with itself, missing values,
        or the same (judge, dimension, prompt, pair, order) judged twice; the message names the
        row (0-based position in the table).

    Examples
    --------
    >>> import pandas as pd
    >>> v = pd.DataFrame({"prompt_id": [0], "story_a": ["X/0"], "story_b": ["Y/0"],
    ...                   "dimension": ["Plot"], "verdict": ["a"], "order": ["BA"]})
    >>> validate_verdicts(v, verdict_refers_to="position")["winner"].tolist()
    ['Y/0']
    """
    if not isinstance(verdicts, pd.DataFrame):
        raise InputError(f"{source}: expected a pandas DataFrame, got {type(verdicts).__name__}")
    if verdict_refers_to not in ("story", "position"):
        raise InputError("verdict_refers_to must be 'story' or 'position', "
                         f"got {verdict_refers_to!r}")
    missing = [c for c in VERDICT_COLUMNS if c not in verdicts.columns]
    if missing:
        raise InputError(f"{source}: missing column(s) {missing}; a verdict table needs "
                         f"{list(VERDICT_COLUMNS)}")
    if len(verdicts) == 0:
        raise InputError(f"{source}: the verdict table is empty")
    out = verdicts.reset_index(drop=True).copy()
    if "judge" not in out.columns:
        out["judge"] = "judge"
    required = [*VERDICT_COLUMNS, "judge"]
    for col in required:
        na = out[col].isna().to_numpy()
        if na.any():
            raise InputError(f"{source}: missing value in column {col!r} at row "
                             f"{int(np.argmax(na))}")
    for col in ("story_a", "story_b", "dimension", "judge"):
        out[col] = out[col].astype(str)

    raw = out["verdict"].astype(str).str.strip()
    lower = raw.str.lower().str.replace(" ", "", regex=False)
    graded = lower.isin(list(GRADED_ALIASES)).to_numpy()
    canon = raw.str.lower().map(_VERDICT_ALIASES)
    if graded.any():  # graded verdicts: the direction, and a "strong" flag for >> / <<
        canon = canon.where(~graded, lower.map(lambda x: GRADED_ALIASES.get(x, ("", False))[0]))
        strong = lower.map(lambda x: GRADED_ALIASES.get(x, ("", False))[1]).to_numpy(bool)
        out["strong"] = strong | (out["strong"].fillna(False).astype(bool).to_numpy()
                                  if "strong" in out.columns else False)
    bad = canon.isna().to_numpy()
    if bad.any():
        row = int(np.argmax(bad))
        raise InputError(f"{source}: unknown verdict {raw.iloc[row]!r} at row {row}; expected one "
                         "of 'A', 'B', 'same' (aliases: 'tie', 'about the same') or a graded "
                         "verdict 'A>>B', 'A>B', 'A=B', 'B>A', 'B>>A'")
    order = out["order"].astype(str).str.strip().str.upper()
    bad = ~order.isin(_ORDERS).to_numpy()
    if bad.any():
        row = int(np.argmax(bad))
        raise InputError(f"{source}: unknown order {out['order'].iloc[row]!r} at row {row}; "
                         "expected 'AB' (story_a shown first) or 'BA'")
    if verdict_refers_to == "position":
        flip = (order == "BA") & canon.isin(["A", "B"])
        canon = canon.where(~flip, canon.map({"A": "B", "B": "A"}))
    out["verdict"] = canon.astype(str)
    out["order"] = order

    same_story = (out["story_a"] == out["story_b"]).to_numpy()
    if same_story.any():
        row = int(np.argmax(same_story))
        raise InputError(f"{source}: row {row} compares story {out['story_a'].iloc[row]!r} "
                         "with itself")

    for side in ("a", "b"):
        col = f"system_{side}"
        if col in out.columns:
            na = out[col].isna().to_numpy()
            if na.any():
                raise InputError(f"{source}: missing value in column {col!r} at row "
                                 f"{int(np.argmax(na))}")
            out[col] = out[col].astype(str)
    if "system_a" not in out.columns or "system_b" not in out.columns:
        parts_a = [_split_story_id(s) for s in out["story_a"]]
        parts_b = [_split_story_id(s) for s in out["story_b"]]
        if all(p is not None for p in parts_a + parts_b):
            out["system_a"] = [p[0] for p in parts_a]
            out["system_b"] = [p[0] for p in parts_b]
            _check_prompts(out, [p[1] for p in parts_a], [p[1] for p in parts_b], source)

    # the pair, independent of which story is called "a"
    lo = np.where(out["story_a"] <= out["story_b"], out["story_a"], out["story_b"])
    hi = np.where(out["story_a"] <= out["story_b"], out["story_b"], out["story_a"])
    first = np.where(out["order"] == "AB", out["story_a"], out["story_b"])
    key = pd.DataFrame({"judge": out["judge"], "dimension": out["dimension"],
                        "prompt_id": out["prompt_id"], "lo": lo, "hi": hi, "first": first})
    dup = key.duplicated().to_numpy()
    if dup.any():
        row = int(np.argmax(dup))
        raise InputError(
            f"{source}: row {row} repeats a judgment (judge {out['judge'].iloc[row]!r}, dimension "
            f"{out['dimension'].iloc[row]!r}, prompt {_plain(out['prompt_id'].iloc[row])!r}, stories "
            f"{lo[row]!r} vs {hi[row]!r}, {first[row]!r} shown first); give repeated judgments "
            "distinct 'judge' labels")
    out["winner"] = np.where(out["verdict"] == "A", out["story_a"],
                             np.where(out["verdict"] == "B", out["story_b"], None))
    return out


def read_verdicts(
    path: str | Path,
    *,
    verdict_refers_to: str = "story",
) -> pd.DataFrame:
    """Read a verdict table from CSV, TSV or JSON lines and validate it.

    Parameters
    ----------
    path : str or Path
        ``.csv``, ``.tsv`` or ``.jsonl`` / ``.json`` (one record per line) file with the columns
        of [`validate_verdicts`][].
    verdict_refers_to : {"story", "position"}, default "story"
        See [`validate_verdicts`][].

    Returns
    -------
    DataFrame
        The canonical table of [`validate_verdicts`][].
    """
    from storyeval.data.io import read_table

    path = Path(path)
    if not path.exists():
        raise InputError(f"verdict file not found: {path}")
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".tsv", ".jsonl", ".json"):
        raise InputError(f"{path}: unsupported verdict file type {suffix!r}; use .csv, .tsv "
                         "or .jsonl")
    frame, _ = read_table(path)  # encodings, folders, duplicated columns, JSON Lines
    return validate_verdicts(frame, verdict_refers_to=verdict_refers_to, source=str(path))
