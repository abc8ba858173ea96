"""Data layer: readers for any story-evaluation dataset, the measure catalogue, and the
embedded HANNA data (one dataset among others, read with its own naming conventions)."""

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
    read_hanna_wide,
)
from storyeval.data.io import read_score_table, read_table, validate_scores
from storyeval.data.load import read_dataset, read_score_files
from storyeval.data.ratings import ratings_to_dataset, validate_ratings
from storyeval.data.scores import read_scores, scores_to_dataset
from storyeval.data.summary import describe_dataset
from storyeval.data.wide import wide_to_dataset

__all__ = [
    "CODE_TO_CRITERION",
    "CRITERIA",
    "CRITERION_CODES",
    "CRITERION_DEFINITIONS",
    "HUMAN_SYSTEM",
    "PAPER_REFERENCE_RATER",
    "SCORE_COLUMNS",
    "Dataset",
    "describe_dataset",
    "infer_catalogue",
    "load_hanna",
    "load_hanna_stories",
    "load_user_study",
    "make_story_id",
    "ratings_to_dataset",
    "read_dataset",
    "read_hanna_wide",
    "read_score_files",
    "read_score_table",
    "read_scores",
    "read_table",
    "resolve_criterion",
    "scores_to_dataset",
    "validate_ratings",
    "validate_scores",
    "wide_to_dataset",
]
