"""Deprecated path: this module moved to `storyeval.compare.williams` (release 0.2)."""

from storyeval._moved import forward

__getattr__ = forward(__name__, "storyeval.compare.williams")
