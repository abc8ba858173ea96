"""The perturbation kinds: each maps (text, random generator) to (new text, parameters).

Every kind is deterministic given the generator, so one seed gives byte-identical variants.
Sentences are split by `storyeval.metrics.text.sentences` and joined with one space.

- ``shuffle``: a random order of the sentences (a non-identity one when there are 2+ sentences);
  meaning-altering for coherence, token-preserving (distinct-1, ROUGE-1 unchanged).
- ``repeat``: the longest sentence (in words; the first on ties) repeated right after itself.
- ``truncate``: the first ``keep`` share of the sentences (default 0.5, at least one).
- ``negate``: ``not`` inserted after one auxiliary verb chosen at random (``was`` -> ``was
  not``); without an auxiliary, ``not`` is inserted before the first word of the last sentence.
- ``typo``: two adjacent letters swapped inside ``rate`` (default 5%, at least one) of the
  words of 4+ letters chosen at random.
- ``synonym``: words of `SYNONYMS` replaced by their listed synonym (case kept for the first
  letter); meaning-preserving. `SYNONYMS` is a small fixed table of 36 common words written for
  storyeval, not a lexical resource (no WordNet): most stories change in only a few words, and
  many not at all (``changed`` is False in the manifest). Every variant's parameters name the
  table (``"synonyms": "fixed table of 36 words (storyeval.perturb.kinds.SYNONYMS)"``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from storyeval.exceptions import InputError
from storyeval.metrics.text import sentences as _split_sentences

__all__ = ["KINDS", "SYNONYMS", "SYNONYM_SOURCE", "perturb_text"]

Params = dict[str, Any]


@functools.lru_cache(maxsize=4)
def _sentences_of(text: str) -> tuple[str, ...]:
    return tuple(_split_sentences(text))


def sentences(text: str) -> list[str]:
    """`storyeval.metrics.text.sentences`, remembered for the last few texts (the kinds of one
    story split it once)."""
    return list(_sentences_of(text))

#: A small fixed synonym table (meaning-preserving substitutions for ``synonym``).
SYNONYMS: dict[str, str] = {
    "big": "large", "small": "little", "quick": "fast", "quickly": "rapidly",
    "said": "stated", "begin": "start", "began": "started", "end": "finish",
    "happy": "glad", "sad": "unhappy", "angry": "furious", "afraid": "scared",
    "house": "home", "child": "kid", "children": "kids", "look": "glance",
    "looked": "glanced", "walk": "stroll", "walked": "strolled", "shout": "yell",
    "shouted": "yelled", "large": "huge", "tiny": "minute", "road": "street",
    "gift": "present", "answer": "reply", "answered": "replied", "close": "shut",
    "closed": "shut", "rich": "wealthy", "maybe": "perhaps", "often": "frequently",
    "almost": "nearly", "enough": "sufficient", "strange": "odd", "world": "globe",
}
#: What the ``synonym`` kind draws from, as written into each variant's parameters.
SYNONYM_SOURCE = f"fixed table of {len(SYNONYMS)} words (storyeval.perturb.kinds.SYNONYMS)"

_AUX = re.compile(r"\b(is|was|are|were|am|do|does|did|can|could|will|would|should|has|have|had)"
                  r"\b(?!\s+not\b)", re.IGNORECASE)
_WORD = re.compile(r"\b[A-Za-z]{4,}\b")


def _shuffle(text: str, rng: np.random.Generator) -> tuple[str, Params]:
    sents = sentences(text)
    order = rng.permutation(len(sents))
    if len(sents) > 1 and np.array_equal(order, np.arange(len(sents))):
        order = np.roll(order, 1)
    return " ".join(sents[i] for i in order), {"order": [int(i) for i in order]}


def _repeat(text: str, rng: np.random.Generator) -> tuple[str, Params]:
    sents = sentences(text)
    if not sents:
        return text, {"sentence": None}
    i = int(np.argmax([len(s.split()) for s in sents]))
    return " ".join(sents[:i + 1] + [sents[i]] + sents[i + 1:]), {"sentence": i}


def _truncate(text: str, rng: np.random.Generator, keep: float = 0.5) -> tuple[str, Params]:
    sents = sentences(text)
    k = max(1, int(np.floor(len(sents) * keep)))
    return " ".join(sents[:k]), {"keep": keep, "sentences_kept": k, "sentences": len(sents)}


def _negate(text: str, rng: np.random.Generator) -> tuple[str, Params]:
    hits = list(_AUX.finditer(text))
    if hits:
        m = hits[int(rng.integers(len(hits)))]
        return text[:m.end()] + " not" + text[m.end():], {"position": m.end(), "after": m.group()}
    sents = sentences(text)
    if not sents:
        return text, {"position": None}
    return " ".join(sents[:-1] + ["Not " + sents[-1]]), {"position": "last sentence"}


def _typo(text: str, rng: np.random.Generator, rate: float = 0.05) -> tuple[str, Params]:
    hits = list(_WORD.finditer(text))
    if not hits:
        return text, {"rate": rate, "positions": []}
    k = max(1, int(round(rate * len(hits))))
    chosen = sorted(int(i) for i in rng.choice(len(hits), size=k, replace=False))
    chars = list(text)
    positions = []
    for i in chosen:
        m = hits[i]
        j = m.start() + int(rng.integers(m.end() - m.start() - 1))
        chars[j], chars[j + 1] = chars[j + 1], chars[j]
        positions.append(j)
    return "".join(chars), {"rate": rate, "positions": positions}


def _synonym(text: str, rng: np.random.Generator) -> tuple[str, Params]:
    replaced: list[str] = []

    def sub(m: re.Match[str]) -> str:
        w = m.group()
        new = SYNONYMS.get(w.lower())
        if new is None:
            return w
        replaced.append(w.lower())
        return new.capitalize() if w[0].isupper() else new

    out = re.sub(r"\b[A-Za-z]+\b", sub, text)
    return out, {"replaced": replaced, "synonyms": SYNONYM_SOURCE}


#: The kinds that draw from the random generator (the others are deterministic: no generator
#: is made for them).
RANDOM_KINDS = frozenset({"shuffle", "negate", "typo"})

#: The kinds, in the order of the ``--kinds`` help; each is (function, meaning_preserving).
KINDS: dict[str, tuple[Callable[..., tuple[str, Params]], bool]] = {
    "shuffle": (_shuffle, False), "repeat": (_repeat, False), "truncate": (_truncate, False),
    "negate": (_negate, False), "typo": (_typo, False), "synonym": (_synonym, True),
}


def perturb_text(text: str, kind: str, rng: np.random.Generator | None
                 ) -> tuple[str, Params]:
    """The ``kind`` perturbation of ``text`` and its parameters (see the module docstring).

    Examples
    --------
    >>> perturb_text("A b. C d e. F.", "repeat", np.random.default_rng(0))[0]
    'A b. C d e. C d e. F.'
    """
    if kind not in KINDS:
        raise InputError(f"kinds: unknown kind {kind!r}; expected some of {list(KINDS)}")
    return KINDS[kind][0](text, rng)
