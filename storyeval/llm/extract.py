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
    several different ratings, a range (``3-4``, ``3 or 4``, ``between 3 and 4``) or a
    non-integer (``3.5``; the ``first_number`` method keeps it, as the paper did).

Two methods (`PARSERS`): ``"strict"`` (the default, rules in `parse_rating`) and
``"first_number"`` (the paper's rule). Each cached answer carries the tag `parser_id` of
the parser that read it (method and `PARSER_VERSION`); re-parsing stored raw answers with
another method or a newer version needs no new request (see `storyeval.llm.cache`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from storyeval.exceptions import InputError

__all__ = [
    "PARSERS",
    "PARSER_VERSION",
    "STATUSES",
    "ParsedRating",
    "parse_many",
    "parse_rating",
    "parser_accuracy",
    "parser_id",
]

#: Version of the extraction rules, bumped whenever they change. The cache stores it with the
#: method (:func:`parser_id`), and a run re-parses every stored answer whose tag differs.
PARSER_VERSION = "3"

#: The extraction methods of :func:`parse_rating`.
PARSERS: tuple[str, ...] = ("strict", "first_number")

STATUSES: tuple[str, ...] = ("ok", "no_number", "out_of_range", "ambiguous")

_WORD_VALUES = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
                "seven": 7, "eight": 8, "nine": 9, "ten": 10}
_DIGITS = r"\d+(?:\.\d+)?"
# Where a rating ends: punctuation, a line end, the end, a scale ("out of 5", "/5") or a word that
# typically follows a rating ("4 stars", "a 3 on Surprise", "2 because ...").
_END = (r"(?=[ \t]*(?:[^\w\s]|\n|$)|\s+(?:out\s+of|stars?|points?|on|for|because|as|since|"
        r"given|here|and|or|to|but|overall)\b)")
# A number word counts only where a rating would end ("Three.", "a four", "two out of five"),
# never in "one of", "this one" or "four characters".
_WORD = (r"(?<!\bthis )(?<!\bthat )(?<!\bthe )(?<!\beach )(?<!\bno )(?<!\bany )(?<!\bevery )"
         r"(?:" + "|".join(_WORD_VALUES) + r")\b" + _END)
_NUM = rf"(?:{_DIGITS}|{_WORD})"
_DEN = rf"(?:\s*(?:/|out\s+of)\s*(?P<den>{_NUM}))?"
_I = re.IGNORECASE
# A rating at the very start of the answer (the prompts end with "Rating:"), optionally after a
# label ("Rating:", "Score =", "**Rating**:", "Overall:") and markdown, optionally followed by
# "/5" or "out of 5".
_LEAD = re.compile(
    r"^[\s*_#>`\"'(\[]*"
    r"(?:(?:(?:(?:final|my|overall)\s+)?(?:rating|score|grade|answer)|overall)"
    r"[\s*_]*(?:[:=\-\u2014\u2013]|is)?[\s*_\"']*)?"
    rf"(?P<num>{_NUM}){_DEN}"
    r"(?P<after>[\s\S]*)\Z", _I)
# After a leading number: something that makes it a range ("3-4", "3 or 4", "3 and 4").
_RANGE_AFTER = re.compile(rf"^\s*(?:-|\u2013|\u2014|or|to|and|/)\s*{_NUM}(?!\s*(?:/|out\s+of))", _I)
# The number must end there: "4-D" or "3rd" or "2nd" are not ratings.
_BAD_AFTER = re.compile(r"^(?:[A-Za-z]|-[A-Za-z]|,\d|\.\d)")
_NUM_END = r"(?![\w]|\.\d|-[A-Za-z])"
# An explicit rating phrase anywhere: "I would rate this story a 3", "rating of 4", "gave it 2".
_PHRASE = re.compile(
    r"\b(?:rat(?:e|es|ed|ing)|giv(?:e|es|ing|en)|gave|scor(?:e|es|ed|ing)|assign(?:s|ed)?|grade[sd]?)\b"
    r"(?P<gap>[^\d.\n!?;]{0,40}?)"
    rf"(?<![\w.])(?P<num>{_NUM}){_NUM_END}{_DEN}"
    rf"(?P<range>\s*(?:-|\u2013|or|to|and)\s*{_NUM})?", _I)
# A first-person rating statement ("I would rate it a 3", "I gave the story 4", "my rating is 2"):
# after a leading number only these can contradict it ("... missing depth to rate a 5" cannot).
_SELF = re.compile(
    r"\b(?:I\s+(?:would\s+|will\s+|'d\s+|'ll\s+|must\s+|can\s+|therefore\s+|thus\s+)?"
    r"(?:rate|rated|give|gave|score|scored|assign|assigned|grade|graded)"
    r"|(?:my|final|overall)\s+(?:rating|score|grade)\s+(?:is|would\s+be|:))\b"
    r"(?P<gap>[^\d.\n!?;]{0,40}?)"
    rf"(?<![\w.])(?P<num>{_NUM}){_NUM_END}", _I)
# "I'd say 2", "I would go with a 4": the number must directly follow and end there.
_SAY = re.compile(
    r"\bI(?:\s+would|\s*'d|\s+will|\s*'ll)?\s+(?:say|go\s+with|settle\s+(?:on|for)|choose|pick)"
    r"\s*(?:[:,]\s*)?(?:(?:a|an|it\s*'s|it\s+is)\s+)?"
    rf"(?<![\w.])(?P<num>{_NUM}){_NUM_END}{_DEN}{_END}", _I)
# "Overall 4", "Final score: 3/5", "Total: 2": a summary label right before the number.
_LABEL = re.compile(
    r"\b(?:overall|final|total)(?:\s+(?:rating|score|grade))?[\s*_]*[:=\-\u2013\u2014]?[\s*_]*"
    rf"(?<![\w.])(?P<num>{_NUM}){_NUM_END}{_DEN}{_END}", _I)
# "4/5" or "4 out of 5" anywhere.
_FRACTION = re.compile(rf"(?<![\w.])(?P<num>{_NUM})\s*(?:/|out\s+of)\s*(?P<den>{_NUM})(?![\w]|\.\d)",
                       _I)
# "between 3 and 4": a range wherever it is.
_BETWEEN = re.compile(rf"\bbetween\s+(?:(?:a|an)\s+)?(?P<num>{_NUM})\s*(?:and|&|-|\u2013|to|or)\s*"
                      rf"(?:(?:a|an)\s+)?{_NUM}", _I)
# Masked before parsing (they are not ratings): the scale ("on a scale from 1 to 5", an "out of 5"
# or "/5" after no number) and numbered-list markers ("1. ... 2. ...").
_SCALE = re.compile(rf"\b(?:on\s+)?(?:a\s+)?scale\s+(?:from\s+|of\s+)?{_NUM}\s*(?:to|-|\u2013)\s*{_NUM}",
                    _I)
_SCALE_DEN = re.compile(rf"(?:/|\bout\s+of)\s*{_NUM}", _I)
_NUM_BEFORE = re.compile(rf"(?:(?<![\w.]){_DIGITS}|\b(?:{'|'.join(_WORD_VALUES)}))\Z", _I)
# (Markdown emphasis around a marker, "**1.**" or "__2)__", is part of it.)
_MARKER = re.compile(r"(?:^|(?<=[.!?:;] ))[ \t]*(?:\*\*|__|\*|_)?(?P<num>\d+)[.)](?:\*\*|__|\*|_)?"
                     r"(?=[ \t]+[^\d\s])", re.MULTILINE)
# The paper's rule: the first number anywhere.
_FIRST = re.compile(r"\d+(?:\.\d+)?")
_LEAD_SEP = re.compile(r"^[\s*_\"'`)\]:.,;\u2014\u2013-]+")


def _value(token: str) -> float:
    try:
        return float(token)
    except ValueError:
        return float(_WORD_VALUES[token.lower()])


def _check_method(method: str) -> None:
    if method not in PARSERS:
        raise InputError(f"method must be one of {', '.join(map(repr, PARSERS))}, got {method!r}")


def parser_id(method: str = "strict") -> str:
    """The tag stored with every parsed answer: ``"{method}-{PARSER_VERSION}"``.

    A run re-parses (from the stored raw text, without any request) every cached answer whose
    tag differs from the one of the parser it uses, so changing the method or the rules never
    needs a new request.

    Examples
    --------
    >>> parser_id("first_number") == f"first_number-{PARSER_VERSION}"
    True
    """
    _check_method(method)
    return f"{method}-{PARSER_VERSION}"


def _mask(text: str) -> str:
    """``text`` with its scale mentions and numbered-list markers blanked (same length)."""
    spans: list[tuple[int, int]] = [m.span() for m in _SCALE.finditer(text)]
    for m in _SCALE_DEN.finditer(text):
        if not _NUM_BEFORE.search(text[:m.start()].rstrip()):
            spans.append(m.span())
    # list markers: a run 1, 2, ... of markers in reading order (a lone "3. The story ..." is a
    # rating followed by its explanation, not a list)
    marks = [(int(m.group("num")), m.span("num")[0], m.end()) for m in _MARKER.finditer(text)]
    used = [False] * len(marks)
    for i, (v, _, _) in enumerate(marks):
        if v != 1 or used[i]:
            continue
        run, want = [i], 2
        for j in range(i + 1, len(marks)):
            if not used[j] and marks[j][0] == want:
                run.append(j)
                want += 1
        if len(run) >= 2:
            for j in run:
                used[j] = True
                spans.append(marks[j][1:])
    if not spans:
        return text
    chars = list(text)
    for a, b in spans:
        chars[a:b] = " " * (b - a)
    return "".join(chars)


@dataclass(frozen=True)
class ParsedRating:
    """Result of `parse_rating`.

    Attributes
    ----------
    rating : float
        The rating, NaN unless ``status == "ok"``.
    status : str
        One of `STATUSES`.
    explanation : str
        The answer without the rating token (the whole answer when no rating was found).
    candidate : float
        The number found when the status is ``out_of_range`` or ``ambiguous`` (else NaN), for
        diagnostics.
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


def _den(m: re.Match) -> float | None:
    den = m.group("den")
    return _value(den) if den else None


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
        vals.append((_value(m.group("num")), _den(m)))
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
        ``"strict"``: the rules below. ``"first_number"``: the paper's rule, the first number
        anywhere in the text (the first match of ``[0-9]+(\\.[0-9]+)?``), kept as it is when it
        lies on the scale, even if not an integer; ``no_number`` when there is none and
        ``out_of_range`` when it is off the scale. With
        `storyeval.llm.outputs.to_scores`'s ``on_unparsed="midpoint"`` those two become 3,
        which is exactly the paper's rule.

    Returns
    -------
    ParsedRating
        ``(rating, status, explanation)``; rating is NaN unless status is ``"ok"``.

    Notes
    -----
    Strict rules. Before anything, the scale is blanked out (``"on a scale from 1 to 5"``, and an
    ``"out of 5"`` or ``"/5"`` that follows no number) and so are numbered-list markers: a run
    ``1.``, ``2.``, ... (or ``1)``, ``2)``) at line starts or after a sentence end; a lone
    ``"3. The story..."`` stays a rating. Numbers are digits or the words zero to ten (a word
    only where a rating ends: ``"Three."``, ``"a four"``, not ``"one of"`` or ``"this one"``).
    Then, in order: (1) a leading number ``n`` (after an optional ``Rating:``/``Overall:`` label,
    optionally ``n/d`` or ``n out of d``); if it is followed by ``-m``, ``or m``, ``to m``,
    ``and m`` it is a range (ambiguous); if a later first-person statement ("I would rate it a
    3", "I'd say 2") or summary label ("Overall 3") gives a different value, ambiguous. (2)
    otherwise ``between n and m`` is ambiguous, and the values of all explicit rating phrases
    ("rating of 4", "I'd give it a four"), first-person choices ("I'd say 2"), summary labels
    ("Overall 4") and ``n/d`` fractions are collected: one distinct value is the rating,
    several are ambiguous. (3) otherwise ``no_number``. A value that is not an integer is
    ambiguous; outside the scale, or with a denominator other than the scale maximum, it is out
    of range.

    Validated against the 100 real LLM explanations of HANNA's user study (ratings read by a
    person; see ``docs/llm.md``): 100% coverage and accuracy for both methods.

    Examples
    --------
    >>> parse_rating(" 4 — The ending surprised you, but would have been difficult to predict.")
    ParsedRating(rating=4.0, status='ok', explanation='The ending surprised you, but would have been difficult to predict.', candidate=nan)
    >>> parse_rating("I would rate this story a 3 on Complexity.").rating
    3.0
    >>> parse_rating("1. The plot is thin. 2. The ending is flat. Overall 2").rating
    2.0
    >>> parse_rating("Out of 5, I'd say four.").rating
    4.0
    >>> parse_rating("Somewhere between 3 and 4.").status
    'ambiguous'
    >>> parse_rating("3.5", method="first_number").rating
    3.5
    """
    if text is None or (isinstance(text, float) and math.isnan(text)):
        text = ""
    if not isinstance(text, str):
        raise InputError(f"text must be a string, got {type(text).__name__}")
    lo, hi = scale
    if not (isinstance(lo, int) and isinstance(hi, int) and lo < hi):
        raise InputError(f"scale must be two increasing integers, got {scale!r}")
    _check_method(method)
    if method == "first_number":
        m = _FIRST.search(text)
        if m is None:
            return ParsedRating(math.nan, "no_number", text.strip())
        num = float(m.group())
        expl = _LEAD_SEP.sub("", text[m.end():]).strip()
        if not lo <= num <= hi:
            return ParsedRating(math.nan, "out_of_range", expl, num)
        return ParsedRating(num, "ok", expl)

    masked = _mask(text)
    lead = _LEAD.match(masked)
    if lead is not None and not _BAD_AFTER.match(lead.group("after")):
        after = lead.group("after")
        num = _value(lead.group("num"))
        den = _den(lead)
        expl = _LEAD_SEP.sub("", text[lead.start("after"):]).strip()
        if _RANGE_AFTER.match(after):
            return ParsedRating(math.nan, "ambiguous", expl, num)
        others = [_value(m.group("num")) for m in _SELF.finditer(after)
                  if len(m.group("gap").split()) <= 6]
        others += [_value(m.group("num")) for rx in (_SAY, _LABEL) for m in rx.finditer(after)]
        if any(v != num for v in others):
            return ParsedRating(math.nan, "ambiguous", expl, num)
        return _judge(num, den, scale, expl)

    expl = text.strip()
    between = _BETWEEN.search(masked)
    if between is not None:
        return ParsedRating(math.nan, "ambiguous", expl, _value(between.group("num")))
    vals, ranged = _phrase_values(masked)
    for rx in (_SAY, _LABEL, _FRACTION):
        vals += [(_value(m.group("num")), _den(m)) for m in rx.finditer(masked)]
    if not vals:
        return ParsedRating(math.nan, "no_number", expl)
    distinct = {v for v, _ in vals}
    if ranged or len(distinct) > 1:
        return ParsedRating(math.nan, "ambiguous", expl, vals[0][0])
    den = next((d for _, d in vals if d is not None), None)
    return _judge(vals[0][0], den, scale, expl)


def parse_many(texts, *, scale: tuple[int, int] = (1, 5), method: str = "strict") -> pd.DataFrame:
    """`parse_rating` over a sequence; a DataFrame with columns rating, status, explanation."""
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
