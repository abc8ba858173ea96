"""What the answer of a meta-evaluation needs beyond the run's own tables: an interval for the
best and the next measure's correlations when the run computed none (``--ci none``, the
default), and the test of the best against the next measure when the run did not compare that
pair (a run against a reference rater compares every measure with the reference only).

Both are computed the way the run computed its own: the intervals by the run's bootstrap
(`storyeval.resample.bootstrap.bootstrap_correlations`, resampling prompts, the run's seed);
the test by `MetaResult.compare_pair` (`meta_evaluate` on the two measures with the run's
test, coefficient, sign convention and seed). The test stands alone: its p-value is unadjusted (a family of one), and
the answer says so.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import pandas as pd

from storyeval.meta.decisions import ResultLike as MetaResult

__all__ = ["AnswerExtras", "answer_extras"]


@dataclass
class AnswerExtras:
    """``intervals``: ``level, criterion, measure, ci_low, ci_high`` of the measures asked;
    ``tests``: one row per (level, criterion) of the best-against-next test (the columns of
    `MetaResult.comparisons`); ``settings``: how they were computed; ``reasons``: what could
    not be computed, one line each."""

    intervals: pd.DataFrame = field(default_factory=pd.DataFrame)
    tests: pd.DataFrame = field(default_factory=pd.DataFrame)
    settings: dict = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)


def answer_extras(result: MetaResult, rows: list[tuple[str, str, str, str | None]], *,
                  intervals: bool = True, n_resamples: int = 1000,
                  confidence_level: float = 0.95) -> AnswerExtras:
    """Intervals (when ``intervals``) and best-against-next tests for ``rows`` of
    ``(level, criterion, best, next)`` (``next`` None: only the interval of ``best``); a test
    is run only where the run compared measures (not under reference "none") but not this pair."""
    extras = AnswerExtras(settings={"n_resamples": n_resamples, "resample_by": "prompts",
                                    "confidence_level": confidence_level,
                                    "random_state": result.settings.get("comparisons", {})
                                    .get("effect_size", {}).get("random_state", 0)})
    if result.dataset is None or not rows:
        return extras
    if intervals:
        extras.intervals = _intervals(result, rows, extras)
    extras.tests = _tests(result, rows, extras)
    return extras


def _intervals(result: MetaResult, rows, extras: AnswerExtras) -> pd.DataFrame:
    from storyeval.resample.bootstrap import bootstrap_correlations

    assert result.dataset is not None
    wide = result.dataset.wide()
    st = extras.settings
    frames = []
    by_level: dict[str, list[tuple[str, str]]] = {}
    for level, criterion, best, nxt in rows:
        if level == "within":
            continue
        pairs = by_level.setdefault(level, [])
        pairs += [p for p in ((best, criterion), (nxt, criterion)) if p[0] and p not in pairs]
    for level, pairs in by_level.items():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the run warned about its data already
                boot = bootstrap_correlations(
                    wide, pairs, level=level, method=result.settings["coefficient"],
                    n_resamples=st["n_resamples"], confidence_level=st["confidence_level"],
                    random_state=st["random_state"],
                    tie_rtol=result.settings.get("tie_rtol", 1e-12), show_progress=False)
        except (ValueError, ArithmeticError) as exc:  # e.g. missing scores: no interval
            extras.reasons.append(f"{level} level: no interval ({str(exc).splitlines()[0]})")
            continue
        assert isinstance(boot, pd.DataFrame)  # without return_distribution
        frames.append(boot.assign(level=level)[["level", "criterion", "measure", "ci_low",
                                                "ci_high"]])
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _tests(result: MetaResult, rows, extras: AnswerExtras) -> pd.DataFrame:
    chosen = result.settings.get("comparisons", {})
    # a run without comparison tests (reference "none") asked for none: the answer runs none
    tested_levels = set() if chosen.get("comparison") == "none" else set(chosen.get("levels", []))
    done = result.comparisons
    out = []
    for level, criterion, best, nxt in rows:
        if nxt is None or level not in tested_levels:
            continue
        if len(done):
            hit = done[(done["level"] == level) & (done["criterion"] == criterion)
                       & (((done["measure_a"] == best) & (done["measure_b"] == nxt))
                          | ((done["measure_a"] == nxt) & (done["measure_b"] == best)))]
            if len(hit):
                continue
        try:
            one = result.compare_pair(best, nxt, level=level, criterion=criterion,
                                      n_resamples=extras.settings["n_resamples"],
                                      random_state=extras.settings["random_state"])
        except (ValueError, ArithmeticError) as exc:
            extras.reasons.append(f"{level} level, {criterion}: {best} against {nxt} not "
                                  f"tested ({str(exc).splitlines()[0]})")
            continue
        out.append(one)
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()
