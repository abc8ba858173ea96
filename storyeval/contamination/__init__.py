"""Pretraining-data contamination checks: Min-K% Prob and Min-K%++ for causal LMs.

``score_texts`` scores texts; ``evaluate_membership`` gives ROC AUC and TPR at low FPR on
labelled data; ``contamination_rate`` gives the share of flagged texts with a threshold
calibrated on known non-members. torch and transformers are imported only when a model is
used.
"""

from storyeval.contamination._lm import (
    TokenStatistics,
    load_causal_lm,
    resolve_device,
    token_statistics,
)
from storyeval.contamination.evaluation import (
    ContaminationRate,
    MembershipEvaluation,
    calibrate_threshold,
    contamination_rate,
    evaluate_membership,
    roc_auc,
    tpr_at_fpr,
)
from storyeval.contamination.mink import min_k_plus_plus, min_k_prob, n_lowest, score_texts
from storyeval.contamination.plot import plot_membership, roc_points
from storyeval.contamination.toy import train_tiny_causal_lm

__all__ = [
    "ContaminationRate",
    "MembershipEvaluation",
    "TokenStatistics",
    "calibrate_threshold",
    "contamination_rate",
    "evaluate_membership",
    "load_causal_lm",
    "min_k_plus_plus",
    "min_k_prob",
    "n_lowest",
    "plot_membership",
    "resolve_device",
    "roc_auc",
    "roc_points",
    "score_texts",
    "token_statistics",
    "tpr_at_fpr",
    "train_tiny_causal_lm",
]
