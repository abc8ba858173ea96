"""Judge biases with prompt-clustered intervals and tests: self-preference (and family
preference), length preference, position bias, leniency and scale use, and content-blind
sentinel measures for meta-evaluation.

Every estimate is a smooth function of sums over stories, verdicts or pairs, clustered by
prompt; its interval and test are a cluster-robust t (`storyeval.bias.inference`).
"""

from storyeval.bias.inference import ClusteredEstimate, clustered_correlation, ratio_contrast
from storyeval.bias.length import (
    balanced_accuracy,
    length_controlled_win_rates,
    length_preference,
    residual_length_correlation,
)
from storyeval.bias.leniency import leniency, scale_use
from storyeval.bias.position import position_bias
from storyeval.bias.self_preference import pairwise_self_preference, self_preference
from storyeval.bias.sentinel_compare import compare_with_system_sentinel
from storyeval.bias.sentinels import SENTINEL_KINDS, add_sentinels, sentinel_scores

__all__ = [
    "SENTINEL_KINDS",
    "ClusteredEstimate",
    "add_sentinels",
    "balanced_accuracy",
    "clustered_correlation",
    "compare_with_system_sentinel",
    "leniency",
    "length_controlled_win_rates",
    "length_preference",
    "pairwise_self_preference",
    "position_bias",
    "ratio_contrast",
    "residual_length_correlation",
    "scale_use",
    "self_preference",
    "sentinel_scores",
]
