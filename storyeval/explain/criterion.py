"""Which criterion an explanation is about, read from the text (for tables without the column).

HANNA's user study ships 100 LLM explanations without their criterion. The criterion can be
read from the explanation itself: LLM answers to Eval-Prompt 3 quote the guideline descriptor
of the chosen rating ("2 - The story only has a weak relationship with the prompt."), and other
answers name the criterion ("I would rate this story a 3 on Complexity"). The cues are regular
expressions kept in ``criterion_cues.csv`` next to this module (editable data).

Rule: collect every cue found in the text (case-insensitive). If all cues point to one
criterion, that is the criterion; if none is found, or cues of two or more criteria are
found, the criterion is ``"unknown"`` with the reason. Nothing is guessed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pandas as pd

from storyeval.data.criteria import CRITERIA
from storyeval.exceptions import InputError

__all__ = ["UNKNOWN", "CriterionGuess", "criterion_cues", "infer_criteria", "infer_criterion",
           "mask_cues"]

UNKNOWN = "unknown"
CUES_PATH = Path(__file__).with_name("criterion_cues.csv")


@lru_cache(maxsize=4)
def _load_cues(path: str) -> tuple[tuple[str, str, re.Pattern, str], ...]:
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    needed = {"criterion", "kind", "pattern"}
    if not needed <= set(table.columns):
        raise InputError(f"{path}: cue table needs columns {sorted(needed)}")
    out = []
    for i, row in table.iterrows():
        if row["criterion"] not in CRITERIA:
            raise InputError(f"{path}, line {i + 2}: unknown criterion {row['criterion']!r}")
        if row["kind"] not in ("name", "descriptor"):
            raise InputError(f"{path}, line {i + 2}: kind must be 'name' or 'descriptor'")
        try:
            pattern = re.compile(row["pattern"], flags=re.IGNORECASE)
        except re.error as exc:
            raise InputError(f"{path}, line {i + 2}: bad regular expression: {exc}") from exc
        out.append((row["criterion"], row["kind"], pattern, row.get("note", "")))
    return tuple(out)


def criterion_cues(path: str | Path | None = None) -> pd.DataFrame:
    """The cue table (``criterion, kind, pattern, note``); default: the shipped one."""
    cues = _load_cues(str(path or CUES_PATH))
    return pd.DataFrame([(c, k, p.pattern, n) for c, k, p, n in cues],
                        columns=["criterion", "kind", "pattern", "note"])


@dataclass(frozen=True)
class CriterionGuess:
    """The criterion read from one explanation.

    ``criterion`` is a name from `storyeval.data.criteria.CRITERIA` or ``"unknown"``;
    ``basis`` is ``"named"`` (the criterion's name occurs), ``"descriptor"`` (only guideline
    descriptors occur) or ``"none"`` / ``"conflict"``; ``cues`` lists the matched texts.
    """

    criterion: str
    basis: str
    cues: tuple[str, ...]
    reason: str = ""


def infer_criterion(text: str, *, cues: str | Path | None = None) -> CriterionGuess:
    """Criterion of one explanation from the criterion names and guideline descriptors it quotes.

    Parameters
    ----------
    text : str
        The explanation.
    cues : path-like, optional
        A cue table (CSV with ``criterion, kind, pattern``); default the shipped
        ``criterion_cues.csv``.

    Returns
    -------
    CriterionGuess

    Notes
    -----
    The criterion is assigned only when every matched cue points to the same criterion;
    otherwise it is ``"unknown"``, with reason ``"no cue"`` or ``"cues of several criteria"``.

    Examples
    --------
    >>> infer_criterion("2 - The story only has a weak relationship with the prompt.").criterion
    'Relevance'
    >>> infer_criterion("I liked it.").criterion
    'unknown'

    Validated on the 100 user-study explanations: 99 assigned, 16 or 17 per criterion, one
    unknown (``tests/test_explain.py`` pins these counts).
    """
    if not isinstance(text, str):
        raise InputError(f"explanation must be a string, got {type(text).__name__}")
    found: dict[str, list[tuple[str, str]]] = {}
    for crit, kind, pattern, _ in _load_cues(str(cues or CUES_PATH)):
        match = pattern.search(text)
        if match:
            found.setdefault(crit, []).append((kind, match.group(0)))
    matched = tuple(m for hits in found.values() for _, m in hits)
    if not found:
        return CriterionGuess(UNKNOWN, "none", (), "no cue")
    if len(found) > 1:
        return CriterionGuess(UNKNOWN, "conflict", matched,
                              "cues of several criteria: " + ", ".join(sorted(found)))
    (crit, hits), = found.items()
    basis = "named" if any(kind == "name" for kind, _ in hits) else "descriptor"
    return CriterionGuess(crit, basis, matched)


def infer_criteria(texts: Sequence[str], *, cues: str | Path | None = None) -> pd.DataFrame:
    """`infer_criterion` over many texts: columns ``criterion, basis, cues, reason``."""
    rows = []
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise InputError(f"explanation {i} is {type(t).__name__}, not str")
        g = infer_criterion(t, cues=cues)
        rows.append({"criterion": g.criterion, "basis": g.basis, "cues": "; ".join(g.cues),
                     "reason": g.reason})
    return pd.DataFrame(rows, columns=["criterion", "basis", "cues", "reason"])


def mask_cues(text: str, *, cues: str | Path | None = None) -> str:
    """``text`` with every criterion cue (names and guideline descriptors) blanked out.

    Used to ask whether explanations separate by criterion beyond the guideline wording they
    quote: the cues are replaced by a space, the rest is kept.

    Examples
    --------
    >>> mask_cues("3 - The story was mildly interesting. Nice dragons.")
    '3 - The story was  . Nice dragons.'
    """
    if not isinstance(text, str):
        raise InputError(f"explanation must be a string, got {type(text).__name__}")
    for _, _, pattern, _ in _load_cues(str(cues or CUES_PATH)):
        text = pattern.sub(" ", text)
    return text
