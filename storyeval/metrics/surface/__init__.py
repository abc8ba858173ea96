"""Surface and diversity measures of stories (metric card: ``README.md`` here).

Pure Python on token lists; no heavy dependency. Per-story measures come from
`story_measures`; set-level ones (`distinct_n`, `inter_story_repetition`) take
several stories; `SurfaceMetric` exposes all of them to [`storyeval.metrics.score`][].
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from storyeval.exceptions import InputError
from storyeval.metrics.base import Measure, Metric, register
from storyeval.metrics.text import ngrams, paragraphs, sentences, word_tokens

__all__ = [
    "ARTICLES",
    "PRONOUNS",
    "SurfaceMetric",
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


def _is_word(tok: str) -> bool:
    return any(ch.isalnum() for ch in tok)


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


def story_measures(story: str, prompt: str | None = None) -> dict[str, float]:
    """Per-story surface measures (keys as in `SurfaceMetric` measure names).

    Parameters
    ----------
    story : str
        The story.
    prompt : str, optional
        Its story-prompt; the prompt measures are NaN without it.

    Returns
    -------
    dict
        ``length`` (tokens), ``paragraphs``, ``article_start`` and ``pronoun_start`` (shares of
        sentences), ``unique_words`` (distinct / all word tokens), ``intra_rep3`` (1 - distinct /
        all word trigrams), ``distinct_{n}``, ``repetition_{n}``, and with a prompt
        ``novelty_{n}``, ``prompt_overlap3``, ``coverage``, ``density``, ``compression``.

    Notes
    -----
    Tokens are `storyeval.metrics.text.word_tokens`, punctuation kept.
    Over all tokens T with their case (as HANNA's released values, computed with SummEval's
    ``DataStatsMetric``; lower-casing lowers the agreement, see ``docs/metrics.md``; the
    extractive fragments, however, are matched case-insensitively, which agrees better), with G_n the set of
    the story's n-grams and c(g) their counts: repetition-n = |{g in G_n : c(g) > 1}| / |G_n|;
    novelty-n = |G_n minus P_n| / |G_n| with P_n the prompt's n-grams. Over word tokens W only
    (punctuation removed, lower-cased; the measures of Huot et al., 2024 and Yao et al., 2019):
    unique-word ratio = |set(W)| / |W|; intra-story trigram repetition = 1 - |set(W_3)| / |W_3|;
    prompt trigram overlap = share of the story's word-trigram occurrences that occur in the
    prompt; distinct-n = |set(W_n)| / |W_n|. A sentence starts with an article or a pronoun if
    its first word token is in `ARTICLES` or `PRONOUNS`. Undefined ratios (0/0) are
    NaN.

    Examples
    --------
    >>> m = story_measures("The cat sat. The cat ran.", prompt="A cat sat.")
    >>> m["length"], m["article_start"], m["repetition_1"]
    (8, 1.0, 0.6)
    """
    toks = word_tokens(story, lowercase=False)
    words = [t.lower() for t in toks if _is_word(t)]
    out: dict[str, float] = {"length": len(toks), "paragraphs": len(paragraphs(story))}
    firsts = []
    for sent in sentences(story):
        first = next((t for t in word_tokens(sent) if _is_word(t)), None)
        if first is not None:
            firsts.append(first)
    out["article_start"] = _share(sum(f in ARTICLES for f in firsts), len(firsts))
    out["pronoun_start"] = _share(sum(f in PRONOUNS for f in firsts), len(firsts))
    out["unique_words"] = _share(len(set(words)), len(words))
    w3 = ngrams(words, 3)
    out["intra_rep3"] = _share(len(w3) - len(set(w3)), len(w3))
    for n in ORDERS:
        wn = ngrams(words, n)
        out[f"distinct_{n}"] = _share(len(set(wn)), len(wn))
        counts = Counter(ngrams(toks, n))
        out[f"repetition_{n}"] = _share(sum(c > 1 for c in counts.values()), len(counts))
    if prompt is None:
        for key in [f"novelty_{n}" for n in ORDERS] + ["prompt_overlap3", "coverage", "density",
                                                        "compression"]:
            out[key] = math.nan
        return out
    ptoks = word_tokens(prompt, lowercase=False)
    for n in ORDERS:
        sset = set(ngrams(toks, n))
        out[f"novelty_{n}"] = _share(len(sset - set(ngrams(ptoks, n))), len(sset))
    p3 = set(ngrams([t.lower() for t in ptoks if _is_word(t)], 3))
    out["prompt_overlap3"] = _share(sum(g in p3 for g in w3), len(w3))
    # fragments are matched case-insensitively (Grusky et al.'s default; closest to HANNA's)
    out.update(fragment_statistics([t.lower() for t in toks], [t.lower() for t in ptoks]))
    return out


def distinct_n(texts: Sequence[str], n: int = 2) -> float:
    """Distinct-n of a set of texts: distinct word n-grams / all word n-grams over the set.

    Notes
    -----
    distinct-n(O) = |unique n-grams(O)| / |n-grams(O)| (Li et al., 2016; as defined in paper 003
    of the project's reading list). NaN if the set has no n-gram.

    Examples
    --------
    >>> distinct_n(["a b a b", "a b c"], n=1)
    0.42857142857142855
    """
    if n < 1:
        raise InputError(f"n: must be >= 1, got {n}")
    grams = [g for t in texts for g in ngrams([w for w in word_tokens(t) if _is_word(w)], n)]
    return _share(len(set(grams)), len(grams))


def inter_story_repetition(texts: Sequence[str], n: int = 3) -> float:
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
        grams.extend(set(ngrams([w for w in word_tokens(t) if _is_word(w)], n)))
    return _share(len(grams) - len(set(grams)), len(grams))


def system_diversity(stories, *, orders: Sequence[int] = ORDERS):
    """Set-level diversity of each system's stories: distinct-n and inter-story trigram
    repetition over all stories of the system.

    Parameters
    ----------
    stories : DataFrame
        Columns ``story`` and ``system`` (all stories form one group ``""`` without ``system``).
    orders : sequence of int
        The n of distinct-n (default 1, 2, 3).

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
            rows.append((system, f"Distinct-{n} (set)", distinct_n(texts, n), len(texts)))
        rows.append((system, "Inter-story trigram repetition (set)",
                     inter_story_repetition(texts), len(texts)))
    return pd.DataFrame(rows, columns=["system", "measure", "value", "n_stories"])


_SPEC = [  # key, measure name, display name, needs prompt
    ("length", "Length (tokens)", "Length", False),
    ("paragraphs", "Paragraphs", "Paragraphs", False),
    ("article_start", "Sentences starting with an article", "Article start", False),
    ("pronoun_start", "Sentences starting with a pronoun", "Pronoun start", False),
    ("unique_words", "Unique-word ratio", "Unique words", False),
    ("intra_rep3", "Intra-story trigram repetition", "Intra-rep-3", False),
    *[(f"distinct_{n}", f"Distinct-{n}", f"Distinct-{n}", False) for n in ORDERS],
    *[(f"repetition_{n}", f"Repetition-{n}", f"Repetition-{n}", False) for n in ORDERS],
    *[(f"novelty_{n}", f"Novelty-{n} (vs prompt)", f"Novelty-{n}", True) for n in ORDERS],
    ("prompt_overlap3", "Prompt trigram overlap", "Prompt overlap-3", True),
    ("coverage", "Coverage (vs prompt)", "Coverage", True),
    ("density", "Density (vs prompt)", "Density", True),
    ("compression", "Compression (prompt/story)", "Compression", True),
]
INTER_NAME = "Inter-story trigram repetition"


@register("surface")
@dataclass
class SurfaceMetric(Metric):
    """All surface and diversity measures (see `story_measures`), reference-free, lexical.

    Parameters
    ----------
    inter_story : bool
        Add the per-story inter-story trigram repetition (default True): the share of the story's
        word-trigram occurrences that occur in another story of the same system (all stories are
        one group when no system is given). It depends on the set of stories scored together.

    Notes
    -----
    Prompt measures are produced only when prompts are given. Formulas: `story_measures`.

    References
    ----------
    1. Grusky, M., Naaman, M., Artzi, Y. (2018). Newsroom. NAACL (coverage, density,
       compression).
    2. Fabbri, A. R., et al. (2021). SummEval. TACL (novelty-n, repetition-n as released by
       HANNA).
    3. Huot, F., et al. (2024). Agents' Room (length, paragraphs, article / pronoun starts,
       unique words, intra / inter-story trigram repetition, prompt overlap).
    4. Yao, L., et al. (2019). Plan-and-write. AAAI (inter / intra-story repetition).

    Validated on hand-worked texts (``tests/test_metrics_surface.py``) and against HANNA's
    released values for the 96 human stories (``docs/metrics.md``).

    Examples
    --------
    >>> [m.name for m in SurfaceMetric().measures(has_prompt=False)][:2]
    ['Length (tokens)', 'Paragraphs']
    """

    inter_story: bool = True

    def __post_init__(self) -> None:
        self.name = "surface"

    def measures(self, *, has_reference: bool = True, has_prompt: bool = True) -> list[Measure]:
        return [Measure(name, disp, "reference-free", "lexical", ("prompt",) if p else ())
                for _, name, disp, p in _SPEC if has_prompt or not p]

    def config(self) -> dict:
        return {"tokenizer": "storyeval.text v1", "version": 1}

    def score_batch(self, stories, references, prompts, measures) -> np.ndarray:
        key_of = {name: key for key, name, _, _ in _SPEC}
        out = np.full((len(stories), len(measures)), np.nan)
        for i, (s, p) in enumerate(zip(stories, prompts)):
            vals = story_measures(s, p)
            out[i] = [vals[key_of[m.name]] for m in measures]
        return out

    def finalize(self, values, measures, context):
        if not self.inter_story:
            return values, list(measures)
        stories, systems = context["stories"], context.get("systems")
        grams = [ngrams([w for w in word_tokens(s or "") if _is_word(w)], 3) for s in stories]
        groups = systems if systems is not None else [""] * len(stories)
        doc_freq: dict[str, Counter] = {}
        for g, tri in zip(groups, grams):
            doc_freq.setdefault(g, Counter()).update(set(tri))
        col = np.full(len(stories), np.nan)
        for i, (g, tri) in enumerate(zip(groups, grams)):
            if tri:
                df = doc_freq[g]
                col[i] = sum(df[t] > 1 for t in tri) / len(tri)
        extra = Measure(INTER_NAME, "Inter-rep-3", "reference-free", "lexical")
        return np.column_stack([values, col]), [*measures, extra]
