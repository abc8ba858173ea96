"""Tokenisation and n-gram helpers shared by the surface measures.

Two tokenisers:

* `spacy_tokens` (the default of the surface measures): spaCy's rule-based English tokeniser
  (``spacy.blank("en")``, no model download), the one HANNA's released surface columns were
  computed with through SummEval's ``DataStatsMetric``. With ``end_of_line=True`` the text is
  tokenised as one line of a file, ending in a line break that spaCy keeps as a whitespace
  token: that is how HANNA's texts were fed (``docs/metric-fidelity.md`` shows the evidence).
* `word_tokens`: a regular expression that approximates spaCy (clitics split, ``don't`` ->
  ``do`` ``n't``, hyphens and punctuation separate, ``...`` one token); no dependency, fast, but
  not identical to spaCy on some texts. Used by the ``tokenizer="regex"`` variant.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from storyeval._optional import import_optional

__all__ = ["TOKENIZERS", "get_tokenizer", "ngram_counter", "ngrams", "paragraphs", "sentences",
           "spacy_tokens", "spacy_version", "word_tokens"]

#: Tokeniser names accepted by the surface measures: ``"spacy"`` (HANNA-compatible) and
#: ``"regex"`` (dependency-free approximation).
TOKENIZERS = ("spacy", "regex")

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


@functools.lru_cache(maxsize=1)
def _spacy_tokenizer():
    spacy = import_optional("spacy", extra="metrics",
                            purpose="the HANNA-compatible surface measures (tokenizer='spacy'; "
                            "tokenizer='regex' needs no extra package)")
    return spacy.blank("en").tokenizer


def spacy_version() -> str:
    """The installed spaCy version (part of the surface measures' cache key)."""
    _spacy_tokenizer()
    import spacy

    return str(spacy.__version__)


def spacy_tokens(text: str, *, end_of_line: bool = False) -> list[str]:
    """spaCy's English tokens of ``text`` (case kept, whitespace runs other than a single space
    are tokens, as in spaCy).

    Parameters
    ----------
    text : str
    end_of_line : bool
        Tokenise ``text`` as one line of a file: trailing white space is replaced by one line
        break, which spaCy returns as a final ``"\\n"`` token (HANNA's recipe; default False).

    Examples
    --------
    >>> spacy_tokens("I don't know, Ian...")
    ['I', 'do', "n't", 'know', ',', 'Ian', '...']
    >>> spacy_tokens("The end.", end_of_line=True)
    ['The', 'end', '.', '\\n']
    """
    line = text.rstrip() + "\n" if end_of_line else text
    doc = _spacy_tokenizer()(line)
    if not len(doc):
        return []
    # slicing the text by the token offsets avoids creating a Python Token object per token
    idx, length = doc.to_array(["IDX", "LENGTH"]).T.tolist()
    return [line[i:i + n] for i, n in zip(idx, length)]


def get_tokenizer(name: str, *, end_of_line: bool = False) -> Callable[[str], list[str]]:
    """The case-preserving tokeniser called ``name`` (one of `TOKENIZERS`); ``end_of_line``
    applies to spaCy only (see `spacy_tokens`)."""
    if name == "spacy":
        _spacy_tokenizer()  # fail early, with the install hint, if spaCy is missing
        return functools.partial(spacy_tokens, end_of_line=end_of_line)
    if name == "regex":
        return functools.partial(word_tokens, lowercase=False)
    raise ValueError(f"tokenizer: expected one of {TOKENIZERS}, got {name!r}")


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
