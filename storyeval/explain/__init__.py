"""Analysis of LLM explanations: which criterion they are about, sentence embeddings, a 2-D
UMAP projection coloured by criterion, silhouette separation with a permutation baseline and
YAKE! keywords per criterion. Heavy dependencies are imported when used."""

from storyeval.explain.analysis import (
    ExplanationAnalysis,
    analyze_explanations,
    keywords_markdown,
    read_explanations,
    user_study_explanations,
)
from storyeval.explain.criterion import (
    UNKNOWN,
    CriterionGuess,
    criterion_cues,
    infer_criteria,
    infer_criterion,
    mask_cues,
)
from storyeval.explain.embed import default_encoder_path, embed_texts
from storyeval.explain.keywords import keywords_by_group, yake_keywords
from storyeval.explain.projection import CRITERION_COLOURS, plot_projection, project_2d
from storyeval.explain.separation import (
    SeparationResult,
    criterion_separation,
    silhouette_samples_precomputed,
)

__all__ = [
    "CRITERION_COLOURS",
    "UNKNOWN",
    "CriterionGuess",
    "ExplanationAnalysis",
    "SeparationResult",
    "analyze_explanations",
    "criterion_cues",
    "criterion_separation",
    "default_encoder_path",
    "embed_texts",
    "infer_criteria",
    "infer_criterion",
    "keywords_by_group",
    "keywords_markdown",
    "mask_cues",
    "plot_projection",
    "project_2d",
    "read_explanations",
    "silhouette_samples_precomputed",
    "user_study_explanations",
    "yake_keywords",
]
