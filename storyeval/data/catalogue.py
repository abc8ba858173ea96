"""The measure catalogue: what each column of a dataset is (its role), and how it is shown.

Roles (the ``kind`` column):

- ``human_criterion``: the per-story human score of a criterion (mean of its annotators);
- ``annotator``: one annotator's (or annotator slot's) ratings of one criterion;
- ``annotator_loo``: the mean of the other annotators (leave-one-out), when a dataset ships it;
- ``metric``: an automatic measure;
- ``llm_rater``: an LLM rating; criterion-specific when its ``criterion`` is one of the
  dataset's criteria, criterion-independent (``AVG``) otherwise;
- ``sentinel``: a content-blind reference measure of one criterion (`storyeval.bias.sentinels`),
  criterion-specific like an LLM rating.

Roles are declared by the reader of a dataset (`storyeval.data.io`), never guessed from
a dataset's own vocabulary. Two naming conventions of storyeval's own outputs are understood
for automatic scores:

- an LLM rating ``"{model} {criterion} {eval_prompt}"`` (``criterion`` a criterion name or
  code of the dataset, or ``AVG``), as ``storyeval rate`` writes them;
- a metric name ending in a taxonomy suffix (``Ξ`` reference-based, ``¤`` reference-free;
  ``§`` lexical, ``ε`` embedding, ``Δ`` model-based), as ``storyeval score`` writes them.

Any other name is an automatic metric with an unknown taxonomy.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

import pandas as pd

CATALOGUE_COLUMNS = (
    "measure", "display_name", "kind", "criterion", "annotator", "reference", "family",
    "model", "eval_prompt", "rater",
)
KINDS = ("human_criterion", "annotator", "annotator_loo", "metric", "llm_rater", "sentinel")
HUMAN_KINDS = ("human_criterion", "annotator", "annotator_loo")

REFERENCE_SYMBOLS = {"Ξ": "reference-based", "¤": "reference-free"}
FAMILY_SYMBOLS = {"§": "lexical", "ε": "embedding", "Δ": "model-based"}
AVG = "AVG"
"""The criterion token of an LLM rating averaged over all criteria."""

_TAXONOMY = re.compile(r"^(?P<name>.*\S)\s+(?P<ref>[Ξ¤])(?P<fam>[§εΔ])$")
_LLM = re.compile(r"^(?P<model>.+?) (?P<crit>\S+) (?P<ep>\d+)$")


def _blank_row(measure: str) -> dict[str, object]:
    row: dict[str, object] = dict.fromkeys(CATALOGUE_COLUMNS, "")
    row.update(measure=measure, display_name=measure, annotator=pd.NA, eval_prompt=pd.NA,
               rater=measure)
    return row


def criterion_row(name: str) -> dict[str, object]:
    """The catalogue row of a human criterion's per-story score."""
    row = _blank_row(name)
    row.update(kind="human_criterion", criterion=name)
    return row


def annotator_row(measure: str, criterion: str, annotator: object, *,
                  leave_one_out: bool = False) -> dict[str, object]:
    """The catalogue row of one annotator's ratings (or their leave-one-out mean)."""
    row = _blank_row(measure)
    row.update(kind="annotator_loo" if leave_one_out else "annotator", criterion=criterion,
               annotator=annotator)
    return row


def describe_measure(measure: str, criteria: Mapping[str, str] | None = None
                     ) -> dict[str, object]:
    """The catalogue row of an automatic score's name (see the module docstring).

    ``criteria`` maps the tokens that name a criterion of the dataset (its names and codes) to
    the criterion; an LLM rating is only recognised with one of them (or ``AVG``).
    """
    row = _blank_row(measure)
    tokens = dict(criteria or {})
    match = _LLM.match(measure)
    if match and (match["crit"] in tokens or match["crit"] == AVG) and tokens:
        crit = match["crit"]
        row.update(
            kind="llm_rater",
            criterion=AVG if crit == AVG else tokens[crit],
            model=match["model"],
            eval_prompt=int(match["ep"]),
            rater=f"{match['model']} {match['ep']}" if crit != AVG else measure,
        )
        return row
    row["kind"] = "metric"
    if match := _TAXONOMY.match(measure):
        row.update(display_name=match["name"], reference=REFERENCE_SYMBOLS[match["ref"]],
                   family=FAMILY_SYMBOLS[match["fam"]])
    return row


def criterion_tokens(criteria: Sequence[str], codes: Mapping[str, str] | None = None
                     ) -> dict[str, str]:
    """Token -> criterion for LLM rating names: every criterion's name and code."""
    tokens = {c: c for c in criteria if " " not in c}
    tokens.update({code: crit for crit, code in (codes or {}).items() if crit in criteria})
    return tokens


def catalogue_frame(rows: Iterable[Mapping[str, object]]) -> pd.DataFrame:
    """A catalogue DataFrame from rows (dicts with the `CATALOGUE_COLUMNS`)."""
    frame = pd.DataFrame(list(rows), columns=list(CATALOGUE_COLUMNS))
    frame["annotator"] = frame["annotator"].astype(object)
    frame["eval_prompt"] = frame["eval_prompt"].astype("Int64")
    return frame


def infer_catalogue(measures: Iterable[str], *, criteria: Sequence[str] = (),
                    codes: Mapping[str, str] | None = None) -> pd.DataFrame:
    """The catalogue of columns ``measures``: those in ``criteria`` are human criteria, the
    others automatic scores named as the module docstring says.

    Returns
    -------
    pandas.DataFrame
        One row per measure with the columns of `CATALOGUE_COLUMNS`.

    Examples
    --------
    >>> cat = infer_catalogue(["Overall", "my-metric", "gpt-4o Overall 1"], criteria=["Overall"])
    >>> cat[["measure", "kind", "criterion", "rater"]].values.tolist()
    [['Overall', 'human_criterion', 'Overall', 'Overall'], ['my-metric', 'metric', '', \
'my-metric'], ['gpt-4o Overall 1', 'llm_rater', 'Overall', 'gpt-4o 1']]
    """
    crits = set(criteria)
    tokens = criterion_tokens(list(criteria), codes)
    return catalogue_frame(criterion_row(m) if m in crits else describe_measure(m, tokens)
                           for m in measures)


def merge_catalogues(base: pd.DataFrame, extra: pd.DataFrame) -> pd.DataFrame:
    """``base`` with the rows of ``extra`` added; a measure already in ``base`` keeps its row."""
    new = extra[~extra["measure"].isin(base["measure"])]
    if new.empty:
        return base
    return pd.concat([base, new], ignore_index=True)
