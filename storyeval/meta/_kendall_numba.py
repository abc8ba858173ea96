"""Deprecated path: this module moved to `storyeval.correlation._kendall_numba` (release 0.2)."""

from storyeval._moved import forward

__getattr__ = forward(__name__, "storyeval.correlation._kendall_numba")
