"""The HANNA benchmark data shipped inside storyeval (MIT licence, see ``hanna/ATTRIBUTION.md``).

- [`load_hanna`][]: the 1,056 stories (11 systems x 96 prompts) with the six human criteria,
  72 automatic metrics, the three annotators, their leave-one-out means and the LLM ratings.
- [`load_hanna_stories`][]: the texts that were released: the 96 human stories and the 576
  stories written by six LLMs (the 960 texts of the ten older systems are not in the release).
- [`load_user_study`][]: the 100 LLM explanations x 3 crowd workers with six error labels.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import replace
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from storyeval.data.catalogue import (
    annotator_row,
    catalogue_frame,
    criterion_row,
    criterion_tokens,
    describe_measure,
)
from storyeval.data.criteria import CODE_TO_CRITERION, CRITERIA, CRITERION_CODES
from storyeval.data.dataset import Dataset, make_story_id
from storyeval.exceptions import InputError

HUMAN_SYSTEM = "Human"
"""The system name of the human-written stories (the references of reference-based metrics)."""

# The paper's reference for Williams tests: Beluga-13B with Eval-Prompt 1 (criterion-matched).
PAPER_REFERENCE_RATER = "Beluga-13B 1"

# The four LLM raters of the paper's figures, and the eight metrics they display (Section
# "Experimental Details": BLEU, ROUGE, chrF, BERTScore, SUPERT, BLANC, BARTScore, BaryScore).
# The paper names the metrics, not their variants; these variants reproduce the figures' text
# (system-level mean |tau| from 0.13, BLANC-Tune-PS, to 0.57, BERTScore F1 and BARTScore-SH;
# every system-level BH-adjusted Williams p >= 0.11). ROUGE's variant is our choice.
PAPER_LLM_RATERS = ("Beluga-13B 1", "Llama-13B 1", "Mistral-7B 1", "ChatGPT 1")
PAPER_METRICS = (
    "BLEU Ξ§", "ROUGE-1 F-Score Ξ§", "chrF Ξ§", "BERTScore F1 Ξε", "SUPERT-PS ¤ε",
    "BLANC-Tune-PS ¤Δ", "BARTScore-SH ΞΔ", "BaryScore-W Ξε",
)
USER_STUDY_LABELS = {
    "Answer.a-1-guidelines.1": "guidelines",
    "Answer.a-2-syntax.1": "syntax",
    "Answer.a-3-superfluous.1": "superfluous",
    "Answer.a-4-incorrectness.1": "incorrectness",
    "Answer.a-5-unsubstantiated.1": "unsubstantiated",
    "Answer.a-6-incoherence.1": "incoherence",
}
WORKERS_PER_EXPLANATION = 3

HANNA_LLM_SCALE = (1.0, 5.0)
"""The scale of HANNA's LLM ratings (each try a 1-5 rating; a released value is the mean of
three tries)."""
OUT_OF_SCALE_POLICIES = ("keep", "missing")
"""What [`load_hanna`][] does with LLM ratings below the 1-5 scale (see `hanna_out_of_scale`)."""


# HANNA's column names: annotators ``Human {i} {CODE}``, their leave-one-out means
# ``Human Avg {i} {CODE}``; LLM ratings ``{model} {CODE|AVG} {eval_prompt}``.
_ANNOTATOR = re.compile(rf"^Human (?P<loo>Avg )?(?P<i>\d+) (?P<code>{'|'.join(CODE_TO_CRITERION)})$")


def hanna_catalogue(columns: list[str]) -> pd.DataFrame:
    """The catalogue of HANNA's columns, read from HANNA's naming conventions."""
    tokens = criterion_tokens(list(CRITERIA), CRITERION_CODES)
    rows = []
    for name in columns:
        if name in CRITERIA:
            rows.append(criterion_row(name))
        elif match := _ANNOTATOR.match(name):
            rows.append(annotator_row(name, CODE_TO_CRITERION[match["code"]], int(match["i"]),
                                      leave_one_out=bool(match["loo"])))
        else:
            rows.append(describe_measure(name, tokens))
    return catalogue_frame(rows)


def as_hanna(dataset: Dataset, name: str = "hanna") -> Dataset:
    """``dataset`` (with HANNA's columns) with HANNA's roles and settings: the six criteria,
    annotators, the Human reference system, the paper's reference rater, ``paper`` preset and
    comparison test (the reproduction's conventions)."""
    return Dataset(dataset.table, hanna_catalogue(list(dataset.table.columns)), name,
                   reference_system=HUMAN_SYSTEM, default_reference=PAPER_REFERENCE_RATER,
                   criterion_codes=dict(CRITERION_CODES),
                   presets={"paper": (*PAPER_METRICS, *PAPER_LLM_RATERS)},
                   notes=("human criteria: the mean of HANNA's three annotators per story",),
                   default_test="paper", rater_scale=HANNA_LLM_SCALE)


def hanna_out_of_scale(dataset: Dataset) -> pd.DataFrame:
    """HANNA's LLM ratings outside the 1-5 scale, per LLM-rating column.

    The released table holds LLM ratings below 1 (1,174 of them in the 1,056 stories,
    minimum -1.0; ``Mistral-7B SU 1`` alone has 80). A rating is the mean of three tries
    of a 1-5 scale, so a value below 1 can only come from a try that produced no rating and
    was recorded as a code (-1 or 0, by the values seen) and averaged in with the others: a
    failed extraction. Only means pulled below 1 show; a failed try averaged with two good
    ones (``(4 + 4 - 1) / 3 = 2.33``) cannot be told apart and stays.

    Returns
    -------
    pandas.DataFrame
        `storyeval.data.scales.rater_out_of_scale`: ``measure, rater, n_values, n_below,
        n_above, min`` for every LLM-rating column (``rater`` is model and Eval-Prompt, e.g.
        ``"Mistral-7B 1"``).

    Examples
    --------
    >>> counts = hanna_out_of_scale(load_hanna())
    >>> int(counts["n_below"].sum()), float(counts["min"].min())
    (1174, -1.0)
    """
    from storyeval.data.scales import rater_out_of_scale

    return rater_out_of_scale(dataset.table, dataset.catalogue, HANNA_LLM_SCALE)


def apply_out_of_scale(dataset: Dataset, out_of_scale: str = "keep") -> Dataset:
    """``dataset`` (HANNA's columns) with its out-of-scale LLM ratings counted in its notes,
    and kept (``"keep"``, the release as is: the paper's numbers) or made missing
    (``"missing"``).

    With ``"missing"``, an LLM rating below 1 becomes NaN, and so does the ``AVG`` of the
    same model, Eval-Prompt and story when any of its six criteria does (``AVG`` is their
    mean in the release, so it carries the code too). Correlations then need
    ``nan_policy="omit"`` (``storyeval meta --nan-policy omit``).
    """
    from storyeval.data.scales import out_of_scale_per_rater

    if out_of_scale not in OUT_OF_SCALE_POLICIES:
        raise InputError(f"out_of_scale must be one of {OUT_OF_SCALE_POLICIES}, "
                         f"got {out_of_scale!r}")
    counts = hanna_out_of_scale(dataset)
    total = int(counts["n_below"].sum() + counts["n_above"].sum())
    if not total:
        return dataset
    per_rater = out_of_scale_per_rater(counts)
    listed = ", ".join(f"{rater}: {n}" for rater, n in per_rater.items())
    lowest = float(counts["min"].min())
    head = (f"LLM ratings: {total:,} values outside HANNA's 1-5 scale (minimum {lowest:g}), "
            "read as failed-extraction codes averaged into the mean of three tries")
    if out_of_scale == "keep":
        note = (f"{head}; kept as released (the paper's numbers; --hanna-out-of-scale missing "
                f"treats them as missing); per rater: {listed}")
        return replace(dataset, notes=(*dataset.notes, note))
    table = dataset.table.copy()
    lo, hi = HANNA_LLM_SCALE
    bad = {m: ~table[m].between(lo, hi) & table[m].notna() for m in counts["measure"]}
    cat = dataset.catalogue.set_index("measure")
    n_avg = 0
    for measure in counts["measure"]:
        if cat.at[measure, "criterion"] != "AVG":
            continue
        parts = [m for m in counts["measure"] if m != measure
                 and cat.at[m, "model"] == cat.at[measure, "model"]
                 and cat.at[m, "eval_prompt"] == cat.at[measure, "eval_prompt"]]
        extra = np.logical_or.reduce([bad[m] for m in parts]) & ~bad[measure] \
            if parts else np.zeros(len(table), bool)
        n_avg += int(extra.sum())
        bad[measure] = bad[measure] | extra
    for measure, mask in bad.items():
        table.loc[mask, measure] = np.nan
    note = (f"{head}; treated as missing (--hanna-out-of-scale missing), with {n_avg} AVG "
            f"values whose criteria hold one; per rater: {listed}")
    return replace(dataset, table=table, notes=(*dataset.notes, note))


def hanna_annotator_columns(
    criteria: list[str] | None = None,
) -> tuple[dict[str, list[str]], dict[str, list[str]], dict[str, str]]:
    """HANNA's annotator, leave-one-out and criterion-mean column names.

    Returns
    -------
    annotators, loo_columns, mean_columns
        ``{"Relevance": ["Human 1 RE", "Human 2 RE", "Human 3 RE"], ...}``,
        ``{"Relevance": ["Human Avg 1 RE", ...], ...}`` (mean of the two other annotators) and
        ``{"Relevance": "Relevance", ...}``.

    Examples
    --------
    >>> ann, loo, means = hanna_annotator_columns(["Relevance"])
    >>> ann["Relevance"], loo["Relevance"][0], means["Relevance"]
    (['Human 1 RE', 'Human 2 RE', 'Human 3 RE'], 'Human Avg 1 RE', 'Relevance')
    """
    from storyeval.data.criteria import resolve_criterion

    crits = list(CRITERIA) if criteria is None else [resolve_criterion(c) for c in criteria]
    ann = {c: [f"Human {i} {CRITERION_CODES[c]}" for i in (1, 2, 3)] for c in crits}
    loo = {c: [f"Human Avg {i} {CRITERION_CODES[c]}" for i in (1, 2, 3)] for c in crits}
    return ann, loo, {c: c for c in crits}


def hanna_path(filename: str) -> Path:
    """Path of a file shipped in ``storyeval/data/hanna``."""
    path = resources.files("storyeval.data").joinpath("hanna").joinpath(filename)
    return Path(str(path))


@lru_cache(maxsize=2)
def _load_hanna_cached(out_of_scale: str) -> Dataset:
    return read_hanna_wide(hanna_path("hanna_metric_scores_llm.csv"), name="hanna",
                           out_of_scale=out_of_scale)


def load_hanna(*, include_human_stories: bool = True, out_of_scale: str = "keep") -> Dataset:
    """The embedded HANNA scores as a [`Dataset`][].

    Parameters
    ----------
    include_human_stories : bool, default True
        Keep the 96 stories of the ``Human`` system. The paper's correlations leave them out
        (they are the references of the reference-based metrics);
        [`storyeval.meta.meta_evaluate`][storyeval.meta.pipeline.meta_evaluate]
        does so by default.
    out_of_scale : {"keep", "missing"}, default "keep"
        The 1,174 released LLM ratings below the 1-5 scale (failed-extraction codes averaged
        into the mean of three tries; `hanna_out_of_scale`): ``"keep"`` them as released (the
        paper's exact numbers) or treat them as ``"missing"`` (`apply_out_of_scale`). Either
        way the dataset's notes count them per rater.

    Examples
    --------
    >>> from storyeval.data import load_hanna
    >>> ds = load_hanna()
    >>> len(ds.systems), len(ds.prompts)
    (11, 96)
    """
    if out_of_scale not in OUT_OF_SCALE_POLICIES:
        raise InputError(f"out_of_scale must be one of {OUT_OF_SCALE_POLICIES}, "
                         f"got {out_of_scale!r}")
    dataset = _load_hanna_cached(out_of_scale)
    if include_human_stories:
        return dataset
    return dataset.select_systems(exclude=[HUMAN_SYSTEM])


def load_hanna_stories() -> pd.DataFrame:
    """The released HANNA story texts: 96 human stories and 576 LLM stories.

    Returns
    -------
    pandas.DataFrame
        Columns ``story_id, system, prompt_id, prompt, story, reference``. ``reference`` is the
        human story of the same prompt (as HANNA used for reference-based metrics); it is missing
        (NA) for the human stories themselves. Prompt ids follow the order of
        [`load_hanna`][], so the human stories align with their human ratings.
    """
    raw = pd.read_csv(hanna_path("hanna_llm_stories.csv"), keep_default_na=False)
    expected = {"Prompt", "Human", "Story", "Model"}
    if not expected <= set(raw.columns):
        raise InputError(f"hanna_llm_stories.csv: missing columns {expected - set(raw.columns)}")
    raw["prompt_id"] = raw.groupby("Model", sort=False).cumcount()
    first = raw[raw["Model"] == raw["Model"].iloc[0]]
    human = pd.DataFrame({
        "system": HUMAN_SYSTEM,
        "prompt_id": first["prompt_id"].to_numpy(),
        "prompt": first["Prompt"].to_numpy(),
        "story": first["Human"].to_numpy(),
        "reference": pd.NA,
    })
    llm = pd.DataFrame({
        "system": raw["Model"].to_numpy(),
        "prompt_id": raw["prompt_id"].to_numpy(),
        "prompt": raw["Prompt"].to_numpy(),
        "story": raw["Story"].to_numpy(),
        "reference": raw["Human"].to_numpy(),
    })
    stories = pd.concat([human, llm], ignore_index=True)
    stories.insert(0, "story_id", [make_story_id(s, p) for s, p in
                                   zip(stories["system"], stories["prompt_id"])])
    return stories


def load_user_study() -> pd.DataFrame:
    """The paper's user study: 100 Beluga-13B explanations, each labelled by 3 crowd workers.

    Returns
    -------
    pandas.DataFrame
        300 rows with columns ``explanation_id`` (0..99; the three rows of one explanation are
        consecutive in the released file, and ``story_id`` alone is not unique), ``worker``
        (1..3 within the explanation), ``story_id`` (HANNA's ``Input.story_id``),
        ``explanation`` and the six binary labels ``guidelines, syntax, superfluous,
        incorrectness, unsubstantiated, incoherence``. For the last five, 1 means the worker
        saw that error; for ``guidelines`` the released coding is inverted: 1 means the
        explanation *respects* the guidelines (94% of the labels; the explanations labelled 0
        break the guideline they quote), so the "Wrong Guideline" error is ``guidelines == 0``.
    """
    raw = pd.read_csv(hanna_path("user_study.csv"), keep_default_na=False)
    missing = [c for c in ["Input.story_id", "Input.explanation", *USER_STUDY_LABELS]
               if c not in raw.columns]
    if missing:
        raise InputError(f"user_study.csv: missing columns {missing}")
    if len(raw) % WORKERS_PER_EXPLANATION:
        raise InputError(f"user_study.csv: {len(raw)} rows is not a multiple of "
                         f"{WORKERS_PER_EXPLANATION} workers per explanation")
    frame = raw.rename(columns={"Input.story_id": "story_id",
                                "Input.explanation": "explanation", **USER_STUDY_LABELS})
    frame.insert(0, "explanation_id", frame.index // WORKERS_PER_EXPLANATION)
    frame.insert(1, "worker", frame.index % WORKERS_PER_EXPLANATION + 1)
    texts = frame.groupby("explanation_id")["explanation"].nunique()
    if (texts != 1).any():
        bad = int(texts[texts != 1].index[0])
        raise InputError(f"user_study.csv: rows {bad * 3 + 2}-{bad * 3 + 4} should hold one "
                         "explanation rated by three workers but the texts differ")
    labels = list(USER_STUDY_LABELS.values())
    frame[labels] = frame[labels].astype(int)
    return frame[["explanation_id", "worker", "story_id", "explanation", *labels]]


def is_hanna_wide(path: Path) -> bool:
    """Whether ``path`` looks like a table in HANNA's released wide format (a CSV whose first
    column is ``Model``)."""
    from storyeval.data.io import _encoding

    if path.suffix.lower() != ".csv" or not path.is_file():
        return False
    with path.open("rb") as handle:
        head = handle.read(2**20)
    header = head.decode(_encoding(head), errors="replace").lstrip("\ufeff").split("\n")[0]
    return header.startswith("Model,") and "measure" not in header.split(",")


def read_hanna_wide(path: str | Path, *, name: str | None = None,
                    system_column: str = "Model", out_of_scale: str = "keep") -> Dataset:
    """Read a table in HANNA's released wide format into a [`Dataset`][] with HANNA's roles.

    One row per system (column ``system_column``); every other cell is a JSON list with one value
    per story-prompt, in the same prompt order for every row. Prompt ids are 0..N-1 in that order.
    Columns are given their roles by HANNA's names (`hanna_catalogue`). LLM ratings outside
    the 1-5 scale are counted in the notes and kept or made missing (``out_of_scale``, see
    [`load_hanna`][] and `apply_out_of_scale`).
    """
    from storyeval.data.io import _check_header, read_text

    path = Path(path)
    text = read_text(path)  # a missing file, a folder, an encoding other than UTF-8/16: errors
    csv.field_size_limit(2**31 - 1)
    rows = list(csv.reader(io.StringIO(text, newline="")))
    if len(rows) < 2:
        raise InputError(f"{path}: no data rows")
    header, body = rows[0], rows[1:]
    _check_header(header, str(path))
    if system_column not in header:
        raise InputError(f"{path}: missing column {system_column!r}; found {header[:5]}...")
    sys_idx = header.index(system_column)
    measures = [h for i, h in enumerate(header) if i != sys_idx]
    blocks, systems, n_prompts = [], [], None
    for line, row in enumerate(body, start=2):
        if len(row) != len(header):
            raise InputError(f"{path}, line {line}: {len(row)} cells, header has {len(header)}")
        system = row[sys_idx]
        values = _parse_row(path, line, header, row, sys_idx)
        lengths = {len(v) for v in values}
        if len(lengths) != 1 or (n_prompts is not None and lengths != {n_prompts}):
            raise InputError(f"{path}, line {line} (system {system!r}): lists of different "
                             f"lengths {sorted(lengths)}; every cell needs one value per prompt")
        n_prompts = lengths.pop()
        blocks.append(np.array(values, dtype=float).T)
        systems.append(system)
    if len(set(systems)) != len(systems):
        raise InputError(f"{path}: duplicate system names in column {system_column!r}")
    index = pd.MultiIndex.from_product([systems, range(n_prompts)], names=["system", "prompt_id"])
    table = pd.DataFrame(np.vstack(blocks), index=index, columns=measures)
    return apply_out_of_scale(as_hanna(Dataset(table), name or path.stem), out_of_scale)


def _parse_row(path: Path, line: int, header: list[str], row: list[str],
               sys_idx: int) -> list[list[float]]:
    """All the JSON lists of one row; one parse of the whole row when it is well formed (fast),
    cell by cell otherwise, to name the faulty column."""
    cells = [cell for i, cell in enumerate(row) if i != sys_idx]
    try:
        values = json.loads("[" + ",".join(cells) + "]")
    except json.JSONDecodeError:
        values = None
    if values is not None and len(values) == len(cells) and all(
            isinstance(v, list) and all(isinstance(x, (int, float)) for x in v)
            for v in values):
        return values
    return [_parse_cell(path, line, header[i], cell)
            for i, cell in enumerate(row) if i != sys_idx]


def _parse_cell(path: Path, line: int, column: str, cell: str) -> list[float]:
    try:
        values = json.loads(cell)
    except json.JSONDecodeError:
        raise InputError(f"{path}, line {line}, column {column!r}: not a JSON list: "
                         f"{cell[:40]!r}") from None
    if not isinstance(values, list) or not all(
            isinstance(v, (int, float)) or v is None for v in values):
        raise InputError(f"{path}, line {line}, column {column!r}: expected a JSON list of numbers")
    return [np.nan if v is None else v for v in values]
