"""The measure catalogue: what each measure is (kind, criterion, taxonomy, LLM, display name).

HANNA encodes its metric taxonomy in trailing symbols of the column names
(``Ξ`` reference-based, ``¤`` reference-free; ``§`` lexical, ``ε`` embedding, ``Δ`` model-based),
its annotators as ``Human {i} {CODE}``, leave-one-out means as ``Human Avg {i} {CODE}`` and LLM
ratings as ``{model} {CODE|AVG} {eval_prompt}``. :func:`infer_catalogue` reads those conventions;
any other name is an automatic metric with an unknown taxonomy.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import pandas as pd

from storyeval.data.criteria import CODE_TO_CRITERION, CRITERIA

CATALOGUE_COLUMNS = (
    "measure", "display_name", "kind", "criterion", "annotator", "reference", "family",
    "model", "eval_prompt", "rater",
)
KINDS = ("human_criterion", "annotator", "annotator_loo", "metric", "llm_rater")

REFERENCE_SYMBOLS = {"Ξ": "reference-based", "¤": "reference-free"}
FAMILY_SYMBOLS = {"§": "lexical", "ε": "embedding", "Δ": "model-based"}

_CODES = "|".join(CODE_TO_CRITERION)
_ANNOTATOR = re.compile(rf"^Human (?P<loo>Avg )?(?P<i>\d+) (?P<code>{_CODES})$")
_LLM = re.compile(rf"^(?P<model>.+?) (?P<code>{_CODES}|AVG) (?P<ep>\d+)$")
_TAXONOMY = re.compile(r"^(?P<name>.*\S)\s+(?P<ref>[Ξ¤])(?P<fam>[§εΔ])$")


def describe_measure(measure: str) -> dict[str, object]:
    """One catalogue row for a measure name, following HANNA's naming conventions."""
    row: dict[str, object] = dict.fromkeys(CATALOGUE_COLUMNS, "")
    row.update(measure=measure, display_name=measure, annotator=pd.NA, eval_prompt=pd.NA,
               rater=measure)
    if measure in CRITERIA:
        row.update(kind="human_criterion", criterion=measure)
    elif match := _ANNOTATOR.match(measure):
        criterion = CODE_TO_CRITERION[match["code"]]
        loo = bool(match["loo"])
        row.update(
            kind="annotator_loo" if loo else "annotator",
            criterion=criterion,
            annotator=int(match["i"]),
        )
    elif match := _LLM.match(measure):
        code = match["code"]
        row.update(
            kind="llm_rater",
            criterion="AVG" if code == "AVG" else CODE_TO_CRITERION[code],
            model=match["model"],
            eval_prompt=int(match["ep"]),
            rater=f"{match['model']} {match['ep']}" if code != "AVG" else measure,
        )
    else:
        row["kind"] = "metric"
        if match := _TAXONOMY.match(measure):
            row.update(
                display_name=match["name"],
                reference=REFERENCE_SYMBOLS[match["ref"]],
                family=FAMILY_SYMBOLS[match["fam"]],
            )
    return row


def infer_catalogue(measures: Iterable[str]) -> pd.DataFrame:
    """The catalogue of ``measures`` inferred from their names (see the module docstring).

    Returns
    -------
    pandas.DataFrame
        One row per measure with the columns of :data:`CATALOGUE_COLUMNS`.
    """
    rows = [describe_measure(m) for m in measures]
    frame = pd.DataFrame(rows, columns=list(CATALOGUE_COLUMNS))
    frame["annotator"] = frame["annotator"].astype("Int64")
    frame["eval_prompt"] = frame["eval_prompt"].astype("Int64")
    return frame


def merge_catalogues(base: pd.DataFrame, extra: pd.DataFrame) -> pd.DataFrame:
    """``base`` with the rows of ``extra`` added; a measure already in ``base`` keeps its row."""
    new = extra[~extra["measure"].isin(base["measure"])]
    if new.empty:
        return base
    return pd.concat([base, new], ignore_index=True)
