"""Pairwise judging: verdict tables, win matrices, Bradley-Terry strengths with ties, position
consistency, judge accuracy, pairwise accuracy of pointwise measures (against the human ratings
or a file of human preferences), and a side-by-side LLM judging prompt (dimensions of paper
000)."""

from storyeval.pairwise.accuracy import (
    judge_accuracy,
    pointwise_pairwise_accuracy,
    preference_accuracy,
    story_index,
)
from storyeval.pairwise.bradley_terry import (
    BradleyTerryResult,
    bradley_terry,
    fit_bradley_terry,
)
from storyeval.pairwise.consistency import position_consistency
from storyeval.pairwise.judge import JudgePlan, JudgeRun, judge_pairs, make_pairs, plan_judging
from storyeval.pairwise.preferences import (
    OVERALL_PREFERENCE,
    PREFERENCE_COLUMNS,
    read_preferences,
    validate_preferences,
)
from storyeval.pairwise.template import (
    load_dimensions,
    parse_side_by_side,
    render_side_by_side,
    side_by_side_messages,
    verdict_records,
)
from storyeval.pairwise.verdicts import VERDICT_COLUMNS, VERDICTS, read_verdicts, validate_verdicts
from storyeval.pairwise.winmatrix import WinMatrix, win_matrix

__all__ = [
    "OVERALL_PREFERENCE",
    "PREFERENCE_COLUMNS",
    "VERDICTS",
    "VERDICT_COLUMNS",
    "BradleyTerryResult",
    "JudgePlan",
    "JudgeRun",
    "WinMatrix",
    "bradley_terry",
    "fit_bradley_terry",
    "judge_accuracy",
    "judge_pairs",
    "load_dimensions",
    "make_pairs",
    "parse_side_by_side",
    "plan_judging",
    "pointwise_pairwise_accuracy",
    "position_consistency",
    "preference_accuracy",
    "read_preferences",
    "read_verdicts",
    "render_side_by_side",
    "side_by_side_messages",
    "story_index",
    "validate_preferences",
    "validate_verdicts",
    "verdict_records",
    "win_matrix",
]
