"""Data layer: the embedded HANNA tables, the measure catalogue, and readers for user data."""

from storyeval.data.catalogue import infer_catalogue
from storyeval.data.criteria import (
    CODE_TO_CRITERION,
    CRITERIA,
    CRITERION_CODES,
    CRITERION_DEFINITIONS,
    resolve_criterion,
)
from storyeval.data.dataset import SCORE_COLUMNS, Dataset, make_story_id
from storyeval.data.hanna import (
    HUMAN_SYSTEM,
    PAPER_REFERENCE_RATER,
    load_hanna,
    load_hanna_stories,
    load_user_study,
)
from storyeval.data.io import (
    read_hanna_wide,
    read_score_table,
    read_scores,
    scores_to_dataset,
    validate_scores,
)

__all__ = [
    "CODE_TO_CRITERION", "CRITERIA", "CRITERION_CODES", "CRITERION_DEFINITIONS", "Dataset",
    "HUMAN_SYSTEM", "PAPER_REFERENCE_RATER", "SCORE_COLUMNS", "infer_catalogue",
    "load_hanna", "load_hanna_stories", "load_user_study", "make_story_id", "read_hanna_wide",
    "read_score_table", "read_scores", "resolve_criterion", "scores_to_dataset",
    "validate_scores",
]
