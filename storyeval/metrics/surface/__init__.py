"""Surface and diversity measures of stories (metric card: ``README.md`` here).

Two variants, chosen with ``tokenizer``:

* ``"spacy"`` (default, HANNA-compatible): the ten surface columns HANNA released (*Text
  length*, *Novelty-1/2/3*, *Repetition-1/2/3*, *Coverage*, *Density*, *Compression*) are computed
  with the recipe that produced them: SummEval's ``DataStatsMetric`` (Newsroom's extractive
  fragments) over spaCy's English tokens, each text tokenised as one line ending in a line
  break. They equal the released values on all 96 human stories (``docs/metric-fidelity.md``).
* ``"regex"``: the same formulas over a dependency-free regular-expression tokeniser; every
  measure name carries the suffix ``" [regex tokens]"`` so the variants never share a name.

Per-story measures come from `story_measures`; set-level ones (`distinct_n`,
`inter_story_repetition`) take several stories; `SurfaceMetric` exposes them to
[`storyeval.metrics.score`][].
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from storyeval.exceptions import InputError
from storyeval.metrics.base import Measure, Metric
from storyeval.metrics.text import (
    TOKENIZERS,
    get_tokenizer,
    ngrams,
    paragraphs,
    sentences,
    spacy_version,
    word_tokens,
)

__all__ = [
    "ARTICLES",
    "DEPRECATED_MEASURES",
    "PRONOUNS",
    "SurfaceMetric",
    "data_statistics",
    "distinct_n",
    "extractive_fragments",
    "fragment_statistics",
    "inter_story_repetition",
    "story_measures",
    "system_diversity",
]

ARTICLES = frozenset({"a", "an", "the"})
#: English personal, possessive, demonstrative and indefinite pronouns counted as sentence openers.
PRONOUNS = frozenset(["i", "me", "my", "mine", "myself", "you", "your", "yours", "yourself", "yourselves", "he", "him", "his", "himself", "she", "her", "hers", "herself", "it", "its", "itself", "we", "us", "our", "ours", "ourselves", "they", "them", "their", "theirs", "themselves", "this", "that", "these", "those", "who", "whom", "whose", "which", "what", "someone", "somebody", "something", "anyone", "anybody", "anything", "everyone", "everybody", "everything", "no-one", "nobody", "nothing", "one"])

ORDERS = (1, 2, 3)
REGEX_SUFFIX = " [regex tokens]"

#: Measure names no longer produced, each a duplicate of a kept measure (scoring both would add
#: a redundant test to every multiple-testing family): old name -> what to use instead.
DEPRECATED_MEASURES = {
    "Unique-word ratio": "Distinct-1 (the same value: distinct / all words of the story)",
    "Intra-story trigram repetition": "Distinct-3 (intra-story repetition = 1 - Distinct-3)",
}


_WORD_CHAR = re.compile(r"[^\W_]")  # a letter or digit (str.isalnum without the loop)


def _is_word(tok: str) -> bool:
    return _WORD_CHAR.search(tok) is not None


@functools.lru_cache(maxsize=4096)
def _line_tokens(text: str, tokenizer: str) -> tuple[str, ...]:
    """Tokens of ``text`` as one line (cached: the set-level step tokenises the stories again)."""
    return tuple(get_tokenizer(tokenizer, end_of_line=True)(text))


def _words(tokens: Sequence[str]) -> list[str]:
    """Word tokens (at least one letter or digit), lower-cased: punctuation and white space
    tokens removed."""
    return [t.lower() for t in tokens if _is_word(t)]


def extractive_fragments(summary: Sequence[str], text: Sequence[str]) -> list[tuple[int, int]]:
    """Greedy extractive fragments of ``summary`` in ``text`` (Grusky et al., 2018).

    Scanning the summary left to right, at each position take the longest run of tokens that
    also occurs contiguously in ``text`` (scanning ``text`` left to right and resuming after each
    run, as the original algorithm does), record it if non-empty, and continue after it.

    Returns
    -------
    list of (start, length)
        Fragments as positions in ``summary``.

    Examples
    --------
    >>> extractive_fragments("a b c x b c".split(), "b c a b".split())
    [(0, 2), (2, 1), (4, 2)]
    """
    where: dict[str, list[int]] = {}
    for j, tok in enumerate(text):
        where.setdefault(tok, []).append(j)
    out: list[tuple[int, int]] = []
    n_s, n_t = len(summary), len(text)
    i = 0
    while i < n_s:
        best = 0
        resume = 0
        for j in where.get(summary[i], ()):
            if j < resume:
                continue
            k = 0
            while i + k < n_s and j + k < n_t and summary[i + k] == text[j + k]:
                k += 1
            best = max(best, k)
            resume = j + k
        if best:
            out.append((i, best))
        i += max(best, 1)
    return out


def fragment_statistics(summary: Sequence[str], text: Sequence[str]) -> dict[str, float]:
    """Coverage, density and compression of ``summary`` with respect to ``text``.

    Notes
    -----
    With F the extractive fragments (`extractive_fragments`), S the summary (the story)
    and A the text (the prompt): coverage = sum_f |f| / |S|, density = sum_f |f|^2 / |S|,
    compression = |A| / |S| (Grusky et al., 2018, as SummEval's ``DataStatsMetric``).
    NaN for an empty summary.

    Examples
    --------
    >>> fragment_statistics("a b c x b c".split(), "b c a b".split())["density"]
    1.5
    """
    if not summary:
        return {"coverage": math.nan, "density": math.nan, "compression": math.nan}
    lengths = np.array([n for _, n in extractive_fragments(summary, text)], dtype=float)
    n = float(len(summary))
    return {"coverage": float(lengths.sum() / n), "density": float((lengths ** 2).sum() / n),
            "compression": len(text) / n}


def _share(num: float, den: float) -> float:
    return num / den if den else math.nan


def data_statistics(story: Sequence[str], prompt: Sequence[str], *,
                    orders: Sequence[int] = ORDERS) -> dict[str, float]:
    """SummEval's "data statistics" of a tokenised story (the summary) against its tokenised
    prompt (the source), as HANNA released them.

    Notes
    -----
    With S the story's tokens (case kept), P the prompt's, G_n the set of the story's n-grams
    and c(g) their counts in S: ``length`` = |S|; ``novelty_n`` = |G_n minus n-grams(P)| / |G_n|;
    ``repetition_n`` = |{g in G_n : c(g) > 1}| / |G_n|; ``coverage``, ``density`` and
    ``compression`` are `fragment_statistics` over the lower-cased tokens (SummEval passes
    ``case=False`` to Newsroom's fragments, which lower-cases, while its n-gram counts use the
    original tokens). Undefined ratios are NaN (SummEval skips them).

    Examples
    --------
    >>> d = data_statistics("a b a".split(), "b c".split())
    >>> d["novelty_1"], d["repetition_1"], d["compression"]
    (0.5, 0.5, 0.6666666666666666)
    """
    out: dict[str, float] = {"length": len(story)}
    for n in orders:
        counts = Counter(ngrams(story, n))
        novel = set(counts).difference(ngrams(prompt, n))
        out[f"novelty_{n}"] = _share(len(novel), len(counts))
        out[f"repetition_{n}"] = _share(sum(c > 1 for c in counts.values()), len(counts))
    out.update(fragment_statistics([t.lower() for t in story], [t.lower() for t in prompt]))
    return out


def _sentence_openers(story: str) -> list[str]:
    """The first word (lower-cased) of each sentence that has one. Both variants split
    sentences and find their first word with the regular expressions of
    `storyeval.metrics.text` (a first word is the same token under either tokeniser, and
    running spaCy once per sentence would double the cost of the measures)."""
    firsts = []
    for sent in sentences(story):
        first = next((t for t in word_tokens(sent) if _is_word(t)), None)
        if first is not None:
            firsts.append(first)
    return firsts


def story_measures(story: str, prompt: str | None = None, *,
                   tokenizer: str = "spacy") -> dict[str, float]:
    """Per-story surface measures (keys as in `SurfaceMetric` measure names).

    Parameters
    ----------
    story : str
        The story.
    prompt : str, optional
        Its story-prompt; the prompt measures are NaN without it.
    tokenizer : {"spacy", "regex"}
        ``"spacy"`` (default): spaCy tokens with the end-of-line token, HANNA's recipe;
        ``"regex"``: `storyeval.metrics.text.word_tokens`, no end-of-line token.

    Returns
    -------
    dict
        ``length`` (tokens), ``paragraphs``, ``article_start`` and ``pronoun_start`` (shares of
        sentences), ``distinct_{n}``, ``repetition_{n}``, and with a prompt ``novelty_{n}``,
        ``prompt_overlap3``, ``coverage``, ``density``, ``compression``.

    Notes
    -----
    ``length``, ``repetition_n``, ``novelty_n``, ``coverage``, ``density`` and ``compression``
    are `data_statistics` (HANNA's columns). Over word tokens W only (punctuation and white space
    removed, lower-cased): distinct-n = |set(W_n)| / |W_n| (Li et al., 2016; distinct-1 is the
    unique-word ratio of Huot et al., 2024, and 1 - distinct-3 their intra-story trigram
    repetition); prompt trigram overlap = share of the story's word-trigram occurrences that
    occur in the prompt. A sentence starts with an article or a pronoun if its first word is in
    `ARTICLES` or `PRONOUNS`. Undefined ratios (0/0) are NaN.

    Examples
    --------
    >>> m = story_measures("The cat sat. The cat ran.", prompt="A cat sat.")
    >>> m["length"], m["article_start"], m["repetition_1"]
    (9, 1.0, 0.5)
    """
    if tokenizer not in TOKENIZERS:
        raise InputError(f"tokenizer: expected one of {TOKENIZERS}, got {tokenizer!r}")
    toks = _line_tokens(story, tokenizer)
    words = _words(toks)
    out: dict[str, float] = {"paragraphs": len(paragraphs(story))}
    firsts = _sentence_openers(story)
    out["article_start"] = _share(sum(f in ARTICLES for f in firsts), len(firsts))
    out["pronoun_start"] = _share(sum(f in PRONOUNS for f in firsts), len(firsts))
    for n in ORDERS:
        wn = ngrams(words, n)
        out[f"distinct_{n}"] = _share(len(set(wn)), len(wn))
    if prompt is None:
        stats = data_statistics(toks, [])
        for key in [f"novelty_{n}" for n in ORDERS] + ["prompt_overlap3", "coverage", "density",
                                                        "compression"]:
            stats[key] = math.nan
        return {**out, **stats}
    ptoks = _line_tokens(prompt, tokenizer)
    p3 = set(ngrams(_words(ptoks), 3))
    w3 = ngrams(words, 3)
    out["prompt_overlap3"] = _share(sum(g in p3 for g in w3), len(w3))
    return {**out, **data_statistics(toks, ptoks)}


def _word_ngrams(text: str, n: int, tokenizer: str) -> list[tuple[str, ...]]:
    return ngrams(_words(_line_tokens(text, tokenizer)), n)


def distinct_n(texts: Sequence[str], n: int = 2, *, tokenizer: str = "spacy") -> float:
    """Distinct-n of a set of texts: distinct word n-grams / all word n-grams over the set.

    Notes
    -----
    distinct-n(O) = |unique n-grams(O)| / |n-grams(O)| (Li et al., 2016; as defined in paper 003
    of the project's reading list), over lower-cased word tokens of ``tokenizer``. NaN if the
    set has no n-gram.

    Examples
    --------
    >>> distinct_n(["a b a b", "a b c"], n=1)
    0.42857142857142855
    """
    if n < 1:
        raise InputError(f"n: must be >= 1, got {n}")
    grams = [g for t in texts for g in _word_ngrams(t, n, tokenizer)]
    return _share(len(set(grams)), len(grams))


def inter_story_repetition(texts: Sequence[str], n: int = 3, *, tokenizer: str = "spacy",
                           ) -> float:
    """Inter-story n-gram repetition of a set: 1 - distinct / all word n-grams, where each story
    contributes its *distinct* n-grams, so only repetition across stories counts (Yao et al.,
    2019). NaN if the set has no n-gram.

    Examples
    --------
    >>> inter_story_repetition(["a b c a b c", "a b c d"])  # 5 distinct-per-story, 4 distinct
    0.2
    """
    grams: list = []
    for t in texts:
        grams.extend(set(_word_ngrams(t, n, tokenizer)))
    return _share(len(grams) - len(set(grams)), len(grams))


def system_diversity(stories, *, orders: Sequence[int] = ORDERS, tokenizer: str = "spacy"):
    """Set-level diversity of each system's stories: distinct-n and inter-story trigram
    repetition over all stories of the system.

    Parameters
    ----------
    stories : DataFrame
        Columns ``story`` and ``system`` (all stories form one group ``""`` without ``system``).
    orders : sequence of int
        The n of distinct-n (default 1, 2, 3).
    tokenizer : {"spacy", "regex"}
        Word tokeniser (default spaCy's).

    Returns
    -------
    DataFrame
        Columns ``system, measure, value, n_stories``; measures ``"Distinct-{n} (set)"`` and
        ``"Inter-story trigram repetition (set)"``.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"system": ["A", "A"], "story": ["a b a b", "a b c"]})
    >>> system_diversity(df, orders=[1])["value"].round(4).tolist()
    [0.4286, 0.0]
    """
    import pandas as pd

    if "story" not in stories.columns:
        raise InputError("stories: missing column 'story'")
    groups = stories["system"] if "system" in stories.columns else pd.Series([""] * len(stories))
    rows = []
    for system, texts in stories["story"].fillna("").groupby(groups.to_numpy(), sort=False):
        texts = texts.tolist()
        for n in orders:
            rows.append((system, f"Distinct-{n} (set)", distinct_n(texts, n, tokenizer=tokenizer),
                         len(texts)))
        rows.append((system, "Inter-story trigram repetition (set)",
                     inter_story_repetition(texts, tokenizer=tokenizer), len(texts)))
    return pd.DataFrame(rows, columns=["system", "measure", "value", "n_stories"])


_DATASTATS = "SummEval DataStatsMetric (Fabbri et al., 2021)"
_FRAGMENTS = "Newsroom Fragments (Grusky et al., 2018) via SummEval DataStatsMetric"
_HUOT = "definition of Huot et al. (2024); storyeval's implementation"
_SPEC = [  # key, measure name, display name, needs prompt, reference implementation
    ("length", "Length (tokens)", "Length", False,
     f"{_DATASTATS} summary_length = HANNA 'Text length'"),
    ("paragraphs", "Paragraphs", "Paragraphs", False, _HUOT),
    ("article_start", "Sentences starting with an article", "Article start", False, _HUOT),
    ("pronoun_start", "Sentences starting with a pronoun", "Pronoun start", False, _HUOT),
    *[(f"distinct_{n}", f"Distinct-{n}", f"Distinct-{n}", False,
       "definition of Li et al. (2016), per story; storyeval's implementation") for n in ORDERS],
    *[(f"repetition_{n}", f"Repetition-{n}", f"Repetition-{n}", False,
       f"{_DATASTATS} percentage_repeated_{n}-gram_in_summ = HANNA 'Repetition-{n}'")
      for n in ORDERS],
    *[(f"novelty_{n}", f"Novelty-{n} (vs prompt)", f"Novelty-{n}", True,
       f"{_DATASTATS} percentage_novel_{n}-gram = HANNA 'Novelty-{n}'") for n in ORDERS],
    ("prompt_overlap3", "Prompt trigram overlap", "Prompt overlap-3", True, _HUOT),
    ("coverage", "Coverage (vs prompt)", "Coverage", True, f"{_FRAGMENTS} = HANNA 'Coverage'"),
    ("density", "Density (vs prompt)", "Density", True, f"{_FRAGMENTS} = HANNA 'Density'"),
    ("compression", "Compression (prompt/story)", "Compression", True,
     f"{_FRAGMENTS} = HANNA 'Compression'"),
]
INTER_NAME = "Inter-story trigram repetition"
_VARIANTS = {
    "spacy": "HANNA-compatible: spaCy English tokens, text as one line (end-of-line token)",
    "regex": "regex tokens (approximates spaCy; no end-of-line token)",
}


@dataclass
class SurfaceMetric(Metric):
    """All surface and diversity measures (see `story_measures`), reference-free, lexical.

    Parameters
    ----------
    tokenizer : {"spacy", "regex"}
        ``"spacy"`` (default): the HANNA-compatible recipe (needs the ``metrics`` extra for
        spaCy); ``"regex"``: a dependency-free approximation whose measure names end in
        ``" [regex tokens]"``.
    inter_story : bool
        Add the per-story inter-story trigram repetition (default True): the share of the story's
        word-trigram occurrences that occur in another story of the same system (all stories are
        one group when no system is given). It depends on the set of stories scored together.

    Notes
    -----
    Prompt measures are produced only when prompts are given. Formulas: `story_measures`.
    Measures that duplicated another one are gone (`DEPRECATED_MEASURES`).

    References
    ----------
    1. Grusky, M., Naaman, M., Artzi, Y. (2018). Newsroom. NAACL (coverage, density,
       compression).
    2. Fabbri, A. R., et al. (2021). SummEval. TACL (novelty-n, repetition-n as released by
       HANNA).
    3. Huot, F., et al. (2024). Agents' Room (paragraphs, article / pronoun starts, inter-story
       trigram repetition, prompt overlap).
    4. Yao, L., et al. (2019). Plan-and-write. AAAI (inter-story repetition).
    5. Li, J., et al. (2016). A diversity-promoting objective function. NAACL (distinct-n).

    Validated on hand-worked texts and against HANNA's released values for the 96 human stories,
    which the default variant reproduces exactly (``tests/test_metrics_surface.py``,
    ``docs/metric-fidelity.md``).

    Examples
    --------
    >>> [m.name for m in SurfaceMetric().measures(has_prompt=False)][:2]
    ['Length (tokens)', 'Paragraphs']
    >>> SurfaceMetric(tokenizer="regex").measures()[0].name
    'Length (tokens) [regex tokens]'
    """

    tokenizer: str = "spacy"
    inter_story: bool = True

    def __post_init__(self) -> None:
        self.name = "surface"
        if self.tokenizer not in TOKENIZERS:
            raise InputError(f"surface tokenizer: expected one of {TOKENIZERS}, "
                             f"got {self.tokenizer!r}")

    def _name(self, base: str) -> str:
        return base + (REGEX_SUFFIX if self.tokenizer == "regex" else "")

    def _measure(self, base: str, display: str, needs_prompt: bool, impl: str) -> Measure:
        return Measure(self._name(base), display, "reference-free", "lexical",
                       ("prompt",) if needs_prompt else (), implementation=impl,
                       variant=_VARIANTS[self.tokenizer])

    def measures(self, *, has_reference: bool = True, has_prompt: bool = True) -> list[Measure]:
        return [self._measure(name, disp, p, impl) for _, name, disp, p, impl in _SPEC
                if has_prompt or not p]

    def config(self) -> dict:
        tok = f"spacy {spacy_version()} blank en + end of line" if self.tokenizer == "spacy" \
            else "storyeval.text regex v1"
        return {"tokenizer": tok, "version": 2}

    def score_batch(self, stories, references, prompts, measures) -> np.ndarray:
        key_of = {self._name(name): key for key, name, _, _, _ in _SPEC}
        out = np.full((len(stories), len(measures)), np.nan)
        for i, (s, p) in enumerate(zip(stories, prompts)):
            if s is None:
                continue
            vals = story_measures(s, p, tokenizer=self.tokenizer)
            out[i] = [vals[key_of[m.name]] for m in measures]
        return out

    def finalize(self, values, measures, context):
        if not self.inter_story:
            return values, list(measures)
        stories, systems = context["stories"], context.get("systems")
        grams = [_word_ngrams(s or "", 3, self.tokenizer) for s in stories]
        groups = systems if systems is not None else [""] * len(stories)
        doc_freq: dict[str, Counter] = {}
        for g, tri in zip(groups, grams):
            doc_freq.setdefault(g, Counter()).update(set(tri))
        col = np.full(len(stories), np.nan)
        for i, (g, tri) in enumerate(zip(groups, grams)):
            if tri:
                df = doc_freq[g]
                col[i] = sum(df[t] > 1 for t in tri) / len(tri)
        extra = self._measure(INTER_NAME, "Inter-rep-3", False,
                              "definition of Yao et al. (2019) / Huot et al. (2024), per story; "
                              "storyeval's implementation")
        return np.column_stack([values, col]), [*measures, extra]
