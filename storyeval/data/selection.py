"""Choosing measures and criteria from user specifications (``--metrics``, ``--criteria``).

A measure specification is a comma-separated list of tokens, united in catalogue order:

- ``all``: every automatic metric and every criterion-specific LLM rating;
- ``llm`` / ``non-llm`` (alias ``metrics``): LLM ratings / automatic metrics only;
- ``llm-avg``: LLM ratings averaged over all criteria (``gpt-4o AVG 1``);
- a preset of the dataset (`storyeval.data.Dataset.presets`; HANNA's ``paper`` is what
  the paper's figures show, four LLMs with Eval-Prompt 1 and eight metrics);
- a taxonomy family: ``reference-based``, ``reference-free``, ``lexical``,
  ``embedding``, ``model-based``; families join with ``&`` for an intersection
  (``reference-free&lexical``);
- an LLM rater group (``"gpt-4o 1"``: model and Eval-Prompt) or a model (``"gpt-4o"``);
- a measure identifier or display name (``"BLEU Ξ§"``, ``"BLEU"``; an identifier wins when
  a display name of another measure is the same), or a glob pattern
  (``"ROUGE-*"``, ``"*F1*"``) matched against both.

A name that holds a comma (BERTScore's ``"BERTScore F1 (all-MiniLM-L6-v2 L6, chunked)"``) is
given in double quotes inside the list (``'"BERTScore F1 (all-MiniLM-L6-v2 L6, chunked)",BLEU'``),
or alone (a whole specification that is a measure identifier is that measure), or by a glob
(``'BERTScore F1 (*'``).

An unknown token is an error that suggests close matches.
"""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import pandas as pd

from storyeval.exceptions import InputError

if TYPE_CHECKING:
    from storyeval.data.dataset import Dataset

SCORED_KINDS = ("metric", "llm_rater", "sentinel")
FAMILY_TOKENS = {
    "reference-based": ("reference", "reference-based"),
    "reference-free": ("reference", "reference-free"),
    "lexical": ("family", "lexical"),
    "embedding": ("family", "embedding"),
    "model-based": ("family", "model-based"),
}
KEYWORDS = ("all", "llm", "non-llm", "metrics", "llm-avg", *FAMILY_TOKENS)


def split_list(text: str) -> list[str]:
    """The items of a comma-separated list; an item in double quotes may hold commas
    (``'"a, b",c'`` gives ``["a, b", "c"]``; ``""`` inside quotes is one quote, as in CSV).
    Items are stripped; empty items are dropped. An unclosed quote is an error."""
    import csv

    if text.count('"') % 2:
        raise InputError(f"unbalanced double quote in the list {text!r}; quote a name that "
                         'holds a comma as "NAME, WITH COMMA"')
    row = next(csv.reader([text], skipinitialspace=True), [])
    return [t.strip() for t in row if t.strip()]


def split_spec(spec: str | Sequence[str]) -> list[str]:
    """Tokens of a comma-separated specification (a list is taken as already split); see
    `split_list` for names that hold commas."""
    tokens = split_list(spec) if isinstance(spec, str) else list(spec)
    tokens = [t.strip() for t in tokens if t.strip()]
    if not tokens:
        raise InputError("empty measure specification")
    return tokens


def select_measures(catalogue: pd.DataFrame, spec: str | Sequence[str] = "all", *,
                    presets: Mapping[str, Sequence[str]] | None = None) -> list[str]:
    """Measure identifiers matching ``spec`` (see the module docstring), in catalogue order.

    ``presets`` maps extra keywords to measures or rater groups (a dataset's
    `presets`).

    Raises
    ------
    InputError
        For a token that matches nothing; the message lists close matches, or says that the
        dataset has no measure of a keyword's kind.
    """
    scored = catalogue[catalogue["kind"].isin(SCORED_KINDS)]
    presets = {k.lower(): tuple(v) for k, v in (presets or {}).items()}
    chosen: set[str] = set()
    whole = spec.strip() if isinstance(spec, str) else None
    tokens = [whole] if whole and (scored["measure"] == whole).any() else split_spec(spec)
    for token in tokens:
        if token.lower() in presets:
            named = set(presets[token.lower()])
            pick = (scored["measure"].isin(named) | scored["rater"].isin(named)) \
                & (scored["criterion"] != "AVG")
            found = list(scored.loc[pick, "measure"])
        else:
            found = _match_token(scored, token)
        if not found:
            raise InputError(_unknown_message(scored, token, presets))
        chosen.update(found)
    return [m for m in scored["measure"] if m in chosen]


def resolve_measure(catalogue: pd.DataFrame, token: str, option: str = "--measures") -> str:
    """The one measure identifier that ``token`` names (an identifier, a display name or a
    glob matching exactly one measure); an error naming ``option`` otherwise."""
    scored = catalogue[catalogue["kind"].isin(SCORED_KINDS)]
    found = _match_token(scored, token)
    if len(found) == 1:
        return found[0]
    if not found:
        raise InputError(f"{option}: {_unknown_message(scored, token)}")
    raise InputError(f"{option}: {token!r} matches {len(found)} measures "
                     f"({', '.join(repr(m) for m in found[:5])}{' ...' if len(found) > 5 else ''}"
                     "); name one")


def _match_token(scored: pd.DataFrame, token: str) -> list[str]:
    key = token.lower()
    is_llm = scored["kind"] == "llm_rater"
    is_avg = scored["criterion"] == "AVG"
    if key == "all":
        return list(scored.loc[~is_avg, "measure"])
    if key == "llm":
        return list(scored.loc[is_llm & ~is_avg, "measure"])
    if key in ("non-llm", "metrics"):
        return list(scored.loc[scored["kind"] == "metric", "measure"])
    if key == "llm-avg":
        return list(scored.loc[is_llm & is_avg, "measure"])
    if all(part.strip() in FAMILY_TOKENS for part in key.split("&")):
        mask = ~is_llm
        for part in key.split("&"):
            column, value = FAMILY_TOKENS[part.strip()]
            mask &= scored[column] == value
        return list(scored.loc[mask, "measure"])
    if (scored["measure"] == token).any():  # an identifier wins over a display name
        return [token]
    exact = scored[(scored["display_name"] == token) | (scored["rater"] == token)
                   | (scored["model"] == token)]
    if not exact.empty:
        if token in set(scored["model"]):  # a model name means its criterion-specific ratings
            exact = exact[exact["criterion"] != "AVG"]
        return list(exact["measure"])
    if any(ch in token for ch in "*?["):
        names = scored["measure"].tolist()
        shown = scored["display_name"].tolist()
        return [m for m, d in zip(names, shown)
                if fnmatch.fnmatchcase(m, token) or fnmatch.fnmatchcase(d, token)]
    return []


def _unknown_message(scored: pd.DataFrame, token: str,
                     presets: Mapping[str, Sequence[str]] | None = None) -> str:
    key = token.lower()
    if key in KEYWORDS or key in (presets or {}) or all(
            part.strip() in FAMILY_TOKENS for part in key.split("&")):
        have = ", ".join(f"{n} {k}" for k, n in scored["kind"].value_counts().items())
        return (f"measure keyword {token!r} selects nothing: the dataset has no such measures "
                f"(it has {have or 'no automatic measures at all; add --scores'})")
    vocabulary = list(dict.fromkeys([*KEYWORDS, *(presets or {}), *scored["measure"],
                                     *scored["display_name"],
                                     *scored["rater"], *(m for m in scored["model"] if m)]))
    close = difflib.get_close_matches(token, vocabulary, n=5, cutoff=0.5)
    lowered = {v.lower(): v for v in vocabulary}
    close += [lowered[t] for t in difflib.get_close_matches(token.lower(), list(lowered), n=5,
                                                            cutoff=0.5) if lowered[t] not in close]
    hint = f"; did you mean {', '.join(repr(c) for c in close[:5])}?" if close else ""
    return (f"unknown measure {token!r}{hint} (keywords: {', '.join(KEYWORDS)}; "
            "glob patterns such as 'ROUGE-*' are accepted)")


def select_criteria(dataset: Dataset, spec: str | Sequence[str] = "all") -> list[str]:
    """The dataset's criteria from ``"all"`` or a comma-separated list of names or codes
    (``"RE,coherence"``), in the dataset's order."""
    tokens = split_spec(spec)
    if not dataset.criteria:
        dataset.resolve_criterion(tokens[0])  # raises: the dataset has no criteria
    if [t.lower() for t in tokens] == ["all"]:
        return dataset.criteria
    chosen = {dataset.resolve_criterion(t) for t in tokens}
    return [c for c in dataset.criteria if c in chosen]


def human_criteria(catalogue: pd.DataFrame) -> set[str]:
    """The criteria that a catalogue holds per-story human scores of."""
    return set(catalogue.loc[catalogue["kind"] == "human_criterion", "measure"])


def resolve_rater(catalogue: pd.DataFrame, rater: str, criterion: str) -> str:
    """The measure that rater group ``rater`` uses for ``criterion``.

    An LLM rater group such as ``"Beluga-13B 1"`` resolves to its criterion-matched measure
    (``"Beluga-13B RE 1"`` for Relevance); a metric resolves to itself.
    """
    rows = catalogue[(catalogue["rater"] == rater) | (catalogue["measure"] == rater)
                     | (catalogue["display_name"] == rater)]
    rows = rows[rows["kind"].isin(SCORED_KINDS)]
    if rows.empty:
        raise InputError(_unknown_message(catalogue[catalogue["kind"].isin(SCORED_KINDS)], rater)
                         .replace("unknown measure", "unknown reference"))
    matched = rows[rows["criterion"] == criterion]
    if not matched.empty:
        return str(matched["measure"].iloc[0])
    generic = rows[~rows["criterion"].isin(human_criteria(catalogue))]
    if generic.empty:
        raise InputError(f"reference {rater!r} has no rating for criterion {criterion!r}")
    return str(generic["measure"].iloc[0])


def criterion_pairs(catalogue: pd.DataFrame, measures: Iterable[str], criteria: Sequence[str],
                    *, llm_criteria: str = "matched") -> pd.DataFrame:
    """The (measure, criterion) pairs to correlate.

    Metrics and criterion-independent ratings pair with every criterion. A criterion-specific
    LLM rating (``Beluga-13B RE 1``) pairs only with its own criterion when
    ``llm_criteria="matched"`` (the paper's figures) and with every criterion when ``"all"``.
    """
    if llm_criteria not in ("matched", "all"):
        raise InputError(f"llm_criteria must be 'matched' or 'all', got {llm_criteria!r}")
    info = catalogue.set_index("measure")
    # plain dicts: scalar lookups in a DataFrame cost microseconds each
    own = dict(zip(info.index, info["criterion"]))
    kind = dict(zip(info.index, info["kind"]))
    rater = dict(zip(info.index, info["rater"]))
    crits = human_criteria(catalogue)
    rows = []
    for measure in measures:
        specific = kind[measure] in ("llm_rater", "sentinel") and own[measure] in crits
        for criterion in criteria:
            if specific and llm_criteria == "matched" and own[measure] != criterion:
                continue
            rows.append((measure, criterion, rater[measure]))
    return pd.DataFrame(rows, columns=["measure", "criterion", "rater"])
