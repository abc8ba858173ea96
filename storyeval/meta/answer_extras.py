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
    todo: dict[str, list[tuple[str, str, str]]] = {}
    for level, criterion, best, nxt in rows:
        if nxt is None or level not in tested_levels:
            continue
        if len(done):
            hit = done[(done["level"] == level) & (done["criterion"] == criterion)
                       & (((done["measure_a"] == best) & (done["measure_b"] == nxt))
                          | ((done["measure_a"] == nxt) & (done["measure_b"] == best)))]
            if len(hit):
                continue
        todo.setdefault(level, []).append((criterion, best, nxt))
    out = []
    for level, items in todo.items():
        batch = _batched(result, level, items, extras) if _symmetric(chosen, level) else None
        out += [batch] if batch is not None else [
            test for test in (_one_test(result, level, *item, extras) for item in items)
            if test is not None]
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


def _symmetric(chosen: dict, level: str) -> bool:
    """Whether a pair's p-value is the same in either order (a two-sided test, or the paper's
    direction of the larger |r|): then every pair of a level can be tested in one run."""
    def per_level(value):
        return value.get(level) if isinstance(value, dict) else value

    return (per_level(chosen.get("alternative")) == "two-sided"
            or per_level(chosen.get("direction")) == "larger")


def _batched(result: MetaResult, level: str, items: list[tuple[str, str, str]],
             extras: AnswerExtras) -> pd.DataFrame | None:
    """The best-against-next tests of a level from one run on all pairs of the measures
    involved (a row's test never depends on the other measures of a run: each row is
    `MetaResult.compare_pair`'s test of the pair, possibly listed as (next, best), which the
    answer reads either way: the level's p-value is symmetric); None where that run fails
    (each pair then alone). One run instead of one per pair: 0.5 s of HANNA's answer."""
    measures = list(dict.fromkeys(m for _, best, nxt in items for m in (best, nxt)))
    criteria = list(dict.fromkeys(c for c, _, _ in items))
    try:
        table = result._compare_measures(measures, level=level, criteria=criteria,
                                         reference=None,
                                         n_resamples=extras.settings["n_resamples"],
                                         random_state=extras.settings["random_state"])
    except (ValueError, ArithmeticError):
        return None
    wanted = {(c, frozenset((b, n))) for c, b, n in items}
    keys = zip(table["criterion"].to_numpy(dtype=object),
               table["measure_a"].to_numpy(dtype=object),
               table["measure_b"].to_numpy(dtype=object))
    keep = [(c, frozenset((a, b))) in wanted for c, a, b in keys]
    found = table[keep]
    if len(found) != len(wanted):  # a pair the run could not test: each pair alone
        return None
    return found.reset_index(drop=True)


def _one_test(result: MetaResult, level: str, criterion: str, best: str, nxt: str,
              extras: AnswerExtras) -> pd.DataFrame | None:
    try:
        return result.compare_pair(best, nxt, level=level, criterion=criterion,
                                   n_resamples=extras.settings["n_resamples"],
                                   random_state=extras.settings["random_state"])
    except (ValueError, ArithmeticError) as exc:
        extras.reasons.append(f"{level} level, {criterion}: {best} against {nxt} not "
                              f"tested ({str(exc).splitlines()[0]})")
        return None
