"""Deprecated path: this module moved to `storyeval.reproduction.user_study` (release 0.2)."""

from storyeval._moved import forward

__getattr__ = forward(__name__, "storyeval.reproduction.user_study")
