"""What every reader of a finished meta-evaluation shares: the column its decisions read and
the part of a `storyeval.meta.pipeline.MetaResult` that its views read (a protocol, so that
the views need not import the pipeline, which imports them for the result's methods)."""

from __future__ import annotations

from typing import Any, Protocol

import pandas as pd

__all__ = ["DECISION_P", "ResultLike"]

#: The comparison table's column every decision of a ``storyeval meta`` run reads: the
#: clusters, the answer of index.html and the printed matrices (one run, one set of p-values:
#: the adjusted p, equal to the unadjusted p under ``--adjust none``, WMT's convention).
DECISION_P = "p_adjusted"


class ResultLike(Protocol):
    """What the answer and the notebook views read of a `MetaResult`."""

    correlations: pd.DataFrame
    baseline: pd.DataFrame
    comparisons: pd.DataFrame
    settings: dict
    dataset: Any
    _answer_extras: Any

    def compare_pair(self, best: str, other: str, *, level: str, criterion: str,
                     n_resamples: int, random_state: int | None) -> pd.DataFrame: ...

    def _compare_measures(self, measures: list[str], *, level: str, criteria: list[str],
                          reference: str | None, n_resamples: int,
                          random_state: int | None) -> pd.DataFrame: ...
