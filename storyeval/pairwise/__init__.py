"""Pairwise judging: verdict tables, win matrices, Bradley-Terry strengths with ties, position
consistency, judge accuracy with intervals and tests, judge comparisons and significance
groups, agreement on verdict tables, judge-vs-human ranking agreement, pairwise accuracy of
pointwise measures (against the human ratings or a file of human preferences, also without a
ratings table), prediction-powered rank-sets and strengths from few human and many judge
verdicts, judge panels, and a side-by-side LLM judging prompt (dimensions of paper 000)."""

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
from storyeval.pairwise.bt_matrix import bradley_terry_matrix, read_win_matrix
from storyeval.pairwise.consistency import position_consistency
from storyeval.pairwise.from_scores import verdicts_from_scores
from storyeval.pairwise.inference import (
    AccuracyInference,
    JudgeComparison,
    accuracy_from_counts,
    accuracy_inference,
    binomial_accuracy,
    chance_level,
    compare_accuracies,
    compare_judges,
    judge_accuracy_inference,
    significance_groups,
)
from storyeval.pairwise.judge import JudgePlan, JudgeRun, judge_pairs, make_pairs, plan_judging
from storyeval.pairwise.leaderboard import Leaderboard, leaderboard
from storyeval.pairwise.panel import judge_panel
from storyeval.pairwise.ppi_strengths import ppi_bradley_terry
from storyeval.pairwise.ppr import prediction_powered_ranking, rank_sets
from storyeval.pairwise.preferences import (
    OVERALL_PREFERENCE,
    PREFERENCE_COLUMNS,
    preference_scores,
    read_preferences,
    validate_preferences,
)
from storyeval.pairwise.ranking import ranking_agreement, system_strengths
from storyeval.pairwise.style_control import controlled_strengths
from storyeval.pairwise.template import (
    load_dimensions,
    parse_side_by_side,
    render_side_by_side,
    side_by_side_messages,
    verdict_records,
)
from storyeval.pairwise.verdict_agreement import (
    cohen_kappa,
    label_agreement,
    verdict_agreement,
    verdict_labels,
)
from storyeval.pairwise.verdicts import VERDICT_COLUMNS, VERDICTS, read_verdicts, validate_verdicts
from storyeval.pairwise.winmatrix import WinMatrix, win_matrix

__all__ = [
    "OVERALL_PREFERENCE",
    "PREFERENCE_COLUMNS",
    "VERDICTS",
    "VERDICT_COLUMNS",
    "AccuracyInference",
    "BradleyTerryResult",
    "JudgeComparison",
    "JudgePlan",
    "JudgeRun",
    "Leaderboard",
    "WinMatrix",
    "accuracy_from_counts",
    "accuracy_inference",
    "binomial_accuracy",
    "bradley_terry",
    "bradley_terry_matrix",
    "chance_level",
    "cohen_kappa",
    "compare_accuracies",
    "compare_judges",
    "controlled_strengths",
    "fit_bradley_terry",
    "judge_accuracy",
    "judge_accuracy_inference",
    "judge_pairs",
    "judge_panel",
    "label_agreement",
    "leaderboard",
    "load_dimensions",
    "make_pairs",
    "parse_side_by_side",
    "plan_judging",
    "pointwise_pairwise_accuracy",
    "position_consistency",
    "ppi_bradley_terry",
    "prediction_powered_ranking",
    "preference_accuracy",
    "preference_scores",
    "rank_sets",
    "ranking_agreement",
    "read_preferences",
    "read_verdicts",
    "read_win_matrix",
    "render_side_by_side",
    "side_by_side_messages",
    "significance_groups",
    "story_index",
    "system_strengths",
    "validate_preferences",
    "validate_verdicts",
    "verdict_agreement",
    "verdict_labels",
    "verdict_records",
    "verdicts_from_scores",
    "win_matrix",
]
