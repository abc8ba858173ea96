"""Uses only storyeval's public API; `mypy --strict tests/typecheck/public_api.py` must pass
(run by .ci/run): the lazy top-level exports have their real types, not Any."""

from __future__ import annotations

import pandas as pd

import storyeval
from storyeval.data import Dataset, read_dataset
from storyeval.exceptions import InputError
from storyeval.meta import MetaResult


def evaluate(ratings: pd.DataFrame, scores: pd.DataFrame) -> str:
    dataset: Dataset = read_dataset(ratings, scores=scores)
    result: MetaResult = storyeval.meta_evaluate(dataset, levels="overall,system")
    tidy: pd.DataFrame = result.to_frame()
    lines: str = result.summary()
    n_rows: int = len(tidy)
    return f"{lines}\n{n_rows} numbers; {storyeval.__version__}"


def hanna() -> MetaResult:
    try:
        return storyeval.meta_evaluate(storyeval.load_hanna(), measures="paper")
    except InputError as error:
        raise SystemExit(str(error)) from error
