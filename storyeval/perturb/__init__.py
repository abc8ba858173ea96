"""Seeded story perturbations for robustness suites (OpenMEVA-style) and the robustness
statistics of a measure on them: discrimination (original preferred over a corrupted story)
and invariance (score change under a meaning-preserving change).

See `storyeval.perturb.kinds`, `storyeval.perturb.suite` and `storyeval.perturb.robustness`.
"""

from storyeval.perturb.kinds import KINDS, perturb_text
from storyeval.perturb.robustness import robustness_table
from storyeval.perturb.suite import perturb_stories

__all__ = ["KINDS", "perturb_stories", "perturb_text", "robustness_table"]
