"""Deprecated path: this module moved to `storyeval.power.planner` (release 0.2)."""

from storyeval._moved import forward

__getattr__ = forward(__name__, "storyeval.power.planner")
