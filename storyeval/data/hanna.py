"""The HANNA benchmark data shipped inside storyeval (MIT licence, see ``hanna/ATTRIBUTION.md``).

- :func:`load_hanna`: the 1,056 stories (11 systems x 96 prompts) with the six human criteria,
  72 automatic metrics, the three annotators, their leave-one-out means and the LLM ratings.
- :func:`load_hanna_stories`: the texts that were released: the 96 human stories and the 576
  stories written by six LLMs (the 960 texts of the ten older systems are not in the release).
- :func:`load_user_study`: the 100 LLM explanations x 3 crowd workers with six error labels.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path

import pandas as pd

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


def hanna_path(filename: str) -> Path:
    """Path of a file shipped in ``storyeval/data/hanna``."""
    path = resources.files("storyeval.data").joinpath("hanna", filename)
    return Path(str(path))


@lru_cache(maxsize=1)
def _load_hanna_cached() -> Dataset:
    from storyeval.data.io import read_hanna_wide

    return read_hanna_wide(hanna_path("hanna_metric_scores_llm.csv"), name="hanna")


def load_hanna(*, include_human_stories: bool = True) -> Dataset:
    """The embedded HANNA scores as a :class:`~storyeval.data.Dataset`.

    Parameters
    ----------
    include_human_stories : bool, default True
        Keep the 96 stories of the ``Human`` system. The paper's correlations leave them out
        (they are the references of the reference-based metrics); :func:`storyeval.meta.meta_evaluate`
        does so by default.

    Examples
    --------
    >>> from storyeval.data import load_hanna
    >>> ds = load_hanna()
    >>> len(ds.systems), len(ds.prompts)
    (11, 96)
    """
    dataset = _load_hanna_cached()
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
        :func:`load_hanna`, so the human stories align with their human ratings.
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
