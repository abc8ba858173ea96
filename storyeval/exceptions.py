"""Exceptions and warnings raised by storyeval.

Every error about user input is an [`InputError`][] (a `ValueError`) whose message
names the offending argument, file, column or row, so that a user can fix the input without
reading the source.
"""

from __future__ import annotations

__all__ = [
    "DroppedStoriesWarning",
    "FewClustersWarning",
    "InputError",
    "MissingDependencyError",
    "SlowPathWarning",
    "StoryevalError",
    "StoryevalWarning",
    "SuspiciousDataWarning",
    "UndefinedStatisticWarning",
    "user_stacklevel",
]


class StoryevalError(Exception):
    """Base class of all storyeval errors."""


class InputError(StoryevalError, ValueError):
    """Invalid user input: a bad argument, file, column, row or value.

    The command line turns it into exit code 2 with the message on standard error.
    """


class MissingDependencyError(StoryevalError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


class StoryevalWarning(UserWarning):
    """Base class of all storyeval warnings."""


class UndefinedStatisticWarning(StoryevalWarning):
    """A statistic is undefined for the given input and was returned as NaN with a reason.

    Examples: a correlation with a constant vector, a Williams test with n <= 3.
    """


class SuspiciousDataWarning(StoryevalWarning):
    """The data are valid but look wrong in a way that changes results.

    Example: every story's annotator ratings are sorted, so who rated what was lost.
    """


class DroppedStoriesWarning(StoryevalWarning):
    """Scores joined to a dataset cover only some of its stories, so the others are left out
    (or a measure covers fewer stories than the other new measures).

    Example: a ``--scores`` file cut at a row boundary covers 60 of 96 stories.
    """


class FewClustersWarning(StoryevalWarning):
    """A bootstrap resamples fewer than 20 clusters (prompts or systems), so its percentile
    intervals are too short: they cover the true value less often than their nominal level.

    Example: in the simulation of ``benchmarks/bench_coverage.py`` (the "Resampling" docs page),
    95% intervals over 10 prompts covered the true Kendall tau 93% of the time (percentile) and
    90% (BCa); the expanded percentile interval (``ci_method="expanded"``) 97%.
    """


class SlowPathWarning(StoryevalWarning):
    """A computation is predicted to take long because an optional accelerator is missing.

    Example: a bootstrap of Kendall's tau over 20,000 stories without numba (the ``fast``
    extra) runs the NumPy fallback of the weighted counts, about 50 times slower; the warning
    gives the predicted time and the install command.
    """


def user_stacklevel() -> int:
    """The ``stacklevel`` of a warning raised inside storyeval that points at the first frame
    outside the package (the user's call), however deep the call chain: pass
    ``stacklevel=user_stacklevel()`` to `warnings.warn` from the function that warns."""
    import os
    import sys
    import types

    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame: types.FrameType | None = sys._getframe(0)  # this function's: one of the package's
    level = 0
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    return max(level, 1)
