"""Tokenisation and n-gram helpers shared by the surface measures (pure Python, no heavy deps).

The word tokeniser approximates spaCy's English tokeniser, which HANNA's released surface columns
used through SummEval's ``DataStatsMetric``: words, numbers and punctuation marks are separate
tokens, clitics are split (``don't`` -> ``do`` ``n't``, ``I'm`` -> ``I`` ``'m``), hyphens inside
words are their own tokens, and ``...`` stays one token. It is a regular expression, so it is fast
and deterministic; ``docs/metrics.md`` reports how close it gets to the released token counts.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

__all__ = ["ngram_counter", "ngrams", "paragraphs", "sentences", "word_tokens"]

_APOS = "'\u2019"
_TOKEN_RE = re.compile(
    rf"""
    [^\W_]+(?=n[{_APOS}]t\b)        # 'do' of "don't" (underscores are punctuation)
    | n[{_APOS}]t\b                 # "n't"
    | [{_APOS}](?:s|m|d|ll|re|ve)\b  # other clitics: 's 'm 'd 'll 're 've
    | [^\W_]+(?:[.,]\d+)*            # words and numbers (3.5, 1,000)
    | \.{{2,}} | \u2026             # ellipsis
    | \S                            # any other single non-space character (punctuation)
    """,
    re.VERBOSE | re.IGNORECASE | re.UNICODE,
)
# A sentence ends at . ! ? or an ellipsis, possibly followed by one closing quote / bracket,
# then white space.
_SENT_RE = re.compile(r"(?:(?<=[.!?\u2026])|(?<=[.!?\u2026][\"'\u201d\u2019)\]]))\s+")
_PARA_RE = re.compile(r"(?:\r?\n|<newline>)\s*(?:(?:\r?\n|<newline>)\s*)*")


def word_tokens(text: str, *, lowercase: bool = True) -> list[str]:
    """Split ``text`` into word and punctuation tokens (see the module docstring).

    Examples
    --------
    >>> word_tokens("I don't know, Ian... ")
    ['i', 'do', "n't", 'know', ',', 'ian', '...']
    """
    tokens = _TOKEN_RE.findall(text)
    return [t.lower() for t in tokens] if lowercase else tokens


def sentences(text: str) -> list[str]:
    """Split ``text`` into sentences at ``.``, ``!``, ``?`` or ``...`` followed by white space."""
    return [s for s in (p.strip() for p in _SENT_RE.split(text.strip())) if s]


def paragraphs(text: str) -> list[str]:
    """Split ``text`` into non-empty paragraphs at line breaks (``\\n`` or WritingPrompts'
    ``<newline>`` marker); a text without line breaks is one paragraph."""
    return [p for p in (q.strip() for q in _PARA_RE.split(text)) if p]


def ngrams(tokens: Sequence[str], n: int) -> list[tuple[str, ...]]:
    """All contiguous ``n``-grams of ``tokens``, in order (empty if ``len(tokens) < n``)."""
    return list(zip(*(tokens[i:] for i in range(n))))


def ngram_counter(token_lists: Iterable[Sequence[str]], n: int) -> Counter:
    """Counts of the ``n``-grams over several token lists."""
    counts: Counter = Counter()
    for tokens in token_lists:
        counts.update(ngrams(tokens, n))
    return counts
