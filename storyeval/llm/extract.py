"""Rating extraction: turn an LLM's free-text answer into a rating, an explanation and a status.

Nothing is imputed here: an answer without a usable rating gets ``rating = NaN`` and a status
saying why. Statuses:

``ok``
    one rating on the scale was found.
``no_number``
    no rating could be found in the answer.
``out_of_range``
    the rating found is outside the scale (e.g. ``7``, ``0``, ``8/10``).
``ambiguous``
    several different ratings, a range (``3-4``, ``3 or 4``) or a non-integer (``3.5``).

Re-parsing stored raw answers with a newer :data:`PARSER_VERSION` needs no new request: the
cache keeps the raw text (see :mod:`storyeval.llm.cache`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from storyeval.exceptions import InputError

__all__ = [
    "PARSER_VERSION",
    "STATUSES",
    "ParsedRating",
    "parse_many",
    "parse_rating",
    "parser_accuracy",
]

#: Bumped whenever the extraction rules change; stored next to every cached answer.
PARSER_VERSION = "strict-1"

STATUSES: tuple[str, ...] = ("ok", "no_number", "out_of_range", "ambiguous")

_NUM = r"\d+(?:\.\d+)?"
# A rating at the very start of the answer (the prompts end with "Rating:"), optionally after a
# label ("Rating:", "Score =", "**Rating**:") and markdown, optionally followed by "/5" or "out of 5".
_LEAD = re.compile(
    r"^[\s*_#>`\"'(\[]*"
    r"(?:(?:final\s+|my\s+|overall\s+)?(?:rating|score|grade|answer)[\s*_]*(?:[:=\-\u2014\u2013]|is)?[\s*_\"']*)?"
    rf"(?P<num>{_NUM})"
    rf"(?:\s*(?:/|out\s+of)\s*(?P<den>{_NUM}))?"
    r"(?P<after>[\s\S]*)\Z",
    re.IGNORECASE,
)
# After a leading number: something that makes it a range ("3-4", "3 or 4", "3 to 4").
_RANGE_AFTER = re.compile(rf"^\s*(?:-|\u2013|\u2014|or|to|/)\s*{_NUM}(?!\s*(?:/|out\s+of))",
                          re.IGNORECASE)
# The number must end there: "4-D" or "3rd" or "2nd" are not ratings.
_BAD_AFTER = re.compile(r"^(?:[A-Za-z]|-[A-Za-z]|,\d|\.\d)")
# An explicit rating phrase anywhere: "I would rate this story a 3", "rating of 4", "gave it 2".
_PHRASE = re.compile(
    r"\b(?:rat(?:e|es|ed|ing)|giv(?:e|es|ing|en)|gave|scor(?:e|es|ed|ing)|assign(?:s|ed)?|grade[sd]?)\b"
    r"(?P<gap>[^\d.\n!?;]{0,40}?)"
    rf"(?<![\w.])(?P<num>{_NUM})(?![\w]|\.\d|-\w)"
    rf"(?:\s*(?:/|out\s+of)\s*(?P<den>{_NUM}))?"
    r"(?P<range>\s*(?:-|\u2013|or|to)\s*\d)?",
    re.IGNORECASE,
)
# A first-person rating statement ("I would rate it a 3", "I gave the story 4", "my rating is 2"):
# after a leading number only these can contradict it ("... missing depth to rate a 5" cannot).
_SELF = re.compile(
    r"\b(?:I\s+(?:would\s+|will\s+|'d\s+|'ll\s+|must\s+|can\s+|therefore\s+|thus\s+)?"
    r"(?:rate|rated|give|gave|score|scored|assign|assigned|grade|graded)"
    r"|(?:my|final|overall)\s+(?:rating|score|grade)\s+(?:is|would\s+be|:))\b"
    r"(?P<gap>[^\d.\n!?;]{0,40}?)"
    rf"(?<![\w.])(?P<num>{_NUM})(?![\w]|\.\d|-\w)",
    re.IGNORECASE,
)
# "4/5" or "4 out of 5" anywhere.
_FRACTION = re.compile(rf"(?<![\w.])(?P<num>{_NUM})\s*(?:/|out\s+of)\s*(?P<den>{_NUM})(?![\w]|\.\d)",
                       re.IGNORECASE)
_ANY_NUM = re.compile(rf"(?<![\w.]){_NUM}")
_LEAD_SEP = re.compile(r"^[\s*_\"'`)\]:.,;\u2014\u2013-]+")


@dataclass(frozen=True)
class ParsedRating:
    """Result of :func:`parse_rating`.

    Attributes
    ----------
    rating : float
        The rating, NaN unless ``status == "ok"``.
    status : str
        One of :data:`STATUSES`.
    explanation : str
        The answer without the rating token (the whole answer when no rating was found).
    candidate : float
        The number found when the status is ``out_of_range`` (else NaN), for diagnostics.
    """

    rating: float
    status: str
    explanation: str
    candidate: float = math.nan

    def __iter__(self):
        return iter((self.rating, self.status, self.explanation))


def _judge(num: float, den: float | None, scale: tuple[int, int], explanation: str) -> ParsedRating:
    lo, hi = scale
    if den is not None and den != hi:
        return ParsedRating(math.nan, "out_of_range", explanation, num)
    if num != int(num):
        return ParsedRating(math.nan, "ambiguous", explanation, num)
    if not lo <= num <= hi:
        return ParsedRating(math.nan, "out_of_range", explanation, num)
    return ParsedRating(float(num), "ok", explanation)


def _phrase_values(text: str) -> tuple[list[tuple[float, float | None]], bool]:
    vals: list[tuple[float, float | None]] = []
    ranged = False
    for m in _PHRASE.finditer(text):
        gap = m.group("gap")
        # "rated the story a 3", "rating of 4", "give it 2", "rate it: 4"; not "rating, 3 ..."
        if len(gap.split()) > 6:
            continue
        if m.group("range"):
            ranged = True
        den = m.group("den")
        vals.append((float(m.group("num")), float(den) if den else None))
    return vals, ranged


def parse_rating(text: str | None, *, scale: tuple[int, int] = (1, 5),
                 method: str = "strict") -> ParsedRating:
    """Extract a Likert rating from an LLM answer.

    Parameters
    ----------
    text : str or None
        The model's answer (the continuation after ``"Rating:"``). None is read as ``""``.
    scale : (int, int), default (1, 5)
        Inclusive ends of the rating scale.
    method : {"strict", "first_number"}, default "strict"
        ``"strict"``: a number at the start of the answer (after an optional ``Rating:`` label),
        else explicit rating phrases ("I would rate this story a 3", "rating of 4", "4/5");
        different candidates make the answer ``ambiguous``. ``"first_number"``: the first number
        anywhere in the text, as in the paper's extraction (without its replacement of failures
        by 3, which is :func:`storyeval.llm.outputs.to_scores`'s ``on_unparsed="midpoint"``).

    Returns
    -------
    ParsedRating
        ``(rating, status, explanation)``; rating is NaN unless status is ``"ok"``.

    Notes
    -----
    Strict rules, in order: (1) leading number ``n`` (optionally ``n/d`` or ``n out of d``); if
    it is followed by ``-m``, ``or m``, ``to m`` it is a range (ambiguous); if a later explicit
    first-person rating statement ("I would rate it a 3") gives a different value, ambiguous. (2) otherwise the values of all explicit
    rating phrases and ``n/d`` fractions; one distinct value is the rating, several are
    ambiguous. (3) otherwise ``no_number``. A found value that is not an integer is ambiguous;
    outside the scale, or with a denominator other than the scale maximum, is out of range.

    Validated against the 100 real LLM explanations of HANNA's user study (ratings read by a
    person; see ``docs/llm.md``): 100% coverage and accuracy.

    Examples
    --------
    >>> parse_rating(" 4 — The ending surprised you, but would have been difficult to predict.")
    ParsedRating(rating=4.0, status='ok', explanation='The ending surprised you, but would have been difficult to predict.', candidate=nan)
    >>> parse_rating("I would rate this story a 3 on Complexity.").rating
    3.0
    >>> parse_rating("Somewhere between 3 and 4.").status
    'no_number'
    """
    if text is None or (isinstance(text, float) and math.isnan(text)):
        text = ""
    if not isinstance(text, str):
        raise InputError(f"text must be a string, got {type(text).__name__}")
    lo, hi = scale
    if not (isinstance(lo, int) and isinstance(hi, int) and lo < hi):
        raise InputError(f"scale must be two increasing integers, got {scale!r}")
    if method == "first_number":
        m = _ANY_NUM.search(text)
        if m is None:
            return ParsedRating(math.nan, "no_number", text.strip())
        expl = _LEAD_SEP.sub("", text[m.end():]).strip()
        return _judge(float(m.group()), None, scale, expl)
    if method != "strict":
        raise InputError(f"method must be 'strict' or 'first_number', got {method!r}")

    lead = _LEAD.match(text)
    if lead is not None and not _BAD_AFTER.match(lead.group("after")):
        after = lead.group("after")
        num = float(lead.group("num"))
        den = float(lead.group("den")) if lead.group("den") else None
        expl = _LEAD_SEP.sub("", after).strip()
        if _RANGE_AFTER.match(after):
            return ParsedRating(math.nan, "ambiguous", expl, num)
        others = [float(m.group("num")) for m in _SELF.finditer(after)
                  if len(m.group("gap").split()) <= 6]
        if any(v != num for v in others):
            return ParsedRating(math.nan, "ambiguous", expl, num)
        return _judge(num, den, scale, expl)

    vals, ranged = _phrase_values(text)
    for m in _FRACTION.finditer(text):
        vals.append((float(m.group("num")), float(m.group("den"))))
    if not vals:
        return ParsedRating(math.nan, "no_number", text.strip())
    distinct = {v for v, _ in vals}
    if ranged or len(distinct) > 1:
        return ParsedRating(math.nan, "ambiguous", text.strip(), vals[0][0])
    den = next((d for _, d in vals if d is not None), None)
    return _judge(vals[0][0], den, scale, text.strip())


def parse_many(texts, *, scale: tuple[int, int] = (1, 5), method: str = "strict") -> pd.DataFrame:
    """:func:`parse_rating` over a sequence; a DataFrame with columns rating, status, explanation."""
    rows = [parse_rating(t, scale=scale, method=method) for t in texts]
    return pd.DataFrame({
        "rating": np.array([r.rating for r in rows], dtype=float),
        "status": [r.status for r in rows],
        "explanation": [r.explanation for r in rows],
    })


def parser_accuracy(texts, truth, *, scale: tuple[int, int] = (1, 5),
                    method: str = "strict") -> dict[str, float]:
    """Coverage and accuracy of the parser against ratings read by a person.

    Returns
    -------
    dict
        ``n``; ``coverage`` = share of answers with status ok; ``accuracy`` = share of all answers
        whose parsed rating equals the truth (a failure counts as wrong); ``accuracy_parsed`` =
        the same among parsed answers; ``n_wrong`` the number of confident wrong ratings.
    """
    truth = np.asarray(truth, dtype=float)
    parsed = parse_many(texts, scale=scale, method=method)
    if len(parsed) != len(truth):
        raise InputError(f"texts ({len(parsed)}) and truth ({len(truth)}) differ in length")
    ok = parsed["status"].to_numpy() == "ok"
    correct = ok & (parsed["rating"].to_numpy() == truth)
    n = len(truth)
    return {
        "n": n,
        "coverage": float(ok.mean()) if n else math.nan,
        "accuracy": float(correct.mean()) if n else math.nan,
        "accuracy_parsed": float(correct[ok].mean()) if ok.any() else math.nan,
        "n_wrong": int((ok & ~correct).sum()),
    }
