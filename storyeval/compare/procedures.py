"""Which test compares two measures' correlations with a human criterion, and how.

`meta_evaluate` compares measures pairwise (a reference rater against the others, or all pairs);
this module names the tests it can run and runs them on the comparison rows of one level:

======================  =========================================================================
``paper``               Williams' t on the level's coefficient, one-sided, run in the direction of
                        the larger ``|r|`` (chosen after seeing the data): the HANNA paper's
                        convention. Measured type-I error at nominal 0.05: see `PAPER_LEVEL`.
``williams``            Williams' t, two-sided, direction fixed (a vs b). Exact for Pearson and
                        normal data; on Kendall's tau far too conservative.
``ustat``               Kendall tau-b only: z-test of the difference with a U-statistic variance
                        (`storyeval.compare.dependent.ustat_diff`), two-sided.
``jackknife``           z-test with the delete-one-item jackknife variance of the difference,
                        any coefficient, two-sided.
``bootstrap``           paired bootstrap of the difference (prompts, systems or both resampled,
                        the same resamples for both measures; `storyeval.resample`), two-sided.
``permutation``         paired permutation test of Deutsch et al. (2021) (PERM-INPUTS/SYSTEMS/BOTH,
                        `storyeval.resample.permutation`), ``p = (1 + #extreme) / (1 + N)``.
``permutation-random``  system level: the same swaps of whole prompts with ties between the
                        observed and a permuted difference broken at random, which makes the
                        test exact (level = nominal) under exchangeability even with 5 systems,
                        whose Kendall differences take few values.
``auto``                the calibrated default (`calibrated_test`): overall level ``ustat``
                        (tau-b), ``jackknife`` (Pearson, Spearman, tau-c); system
                        level ``permutation-random``. On the embedded HANNA data, ``paper``
                        (the reproduction).
======================  =========================================================================

Every result row carries the effect size: ``delta = r(h, a) - r(h, b)`` (after the sign
convention) with a confidence interval (`ci_method`) from the procedure of the test where it
has one: the U-statistic or jackknife normal interval at the overall level (the test's own
standard error), the permutation interval of ``permutation-random`` (the test's own swaps) at
the system level, the bootstrap's own interval for ``bootstrap``; Zou (2007) for Pearson with
the Williams tests; otherwise a paired bootstrap of prompts (percentile). The measured levels and power of every test are produced by
``benchmarks/bench_calibration.py`` (docs page "Which test?").
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import cast

import numpy as np
import pandas as pd

from storyeval.compare.dependent import (
    DiffEstimate,
    jackknife_diff,
    normal_test,
    shared_kendall_rows,
    ustat_diff,
    zou_ci,
)
from storyeval.compare.dependent_batch import (
    jackknife_gram_estimates,
    ustat_integer_estimates,
)
from storyeval.compare.within import WITHIN_LEVEL_TESTS
from storyeval.exceptions import InputError, StoryevalWarning

__all__ = ["CALIBRATED", "MIN_SYSTEMS", "PAPER_LEVEL", "SIGN_CONVENTIONS",
           "SYSTEM_PERMUTATION_TESTS", "TESTS", "TEST_PERMUTATIONS", "compatible_interval",
           "TEST_DESCRIPTIONS", "calibrated_test", "compare_rows", "comparison_uniforms",
           "orientation", "resolve_sign_convention", "resolve_tests"]

# permutations of the comparison tests by default: at 2,000 the Monte Carlo error of a p-value
# near 0.05 (sd 0.0049) changes the decision between two seeds for about 0.55% of null data
# sets (1,000: about 0.8%, measured up to 1.1%; benchmarks/bench_calibration.py
# --seed-stability)
TEST_PERMUTATIONS = 2000
TESTS = ("auto", "paper", "williams", "ustat", "jackknife", "bootstrap", "permutation",
         "permutation-random", "permutation-midp", "prompt-t", "prompt-jackknife")
# the tests that run at the prompt level (within-prompt correlations averaged over prompts)
PROMPT_LEVEL_TESTS = ("prompt-t", "permutation")
# the tests that run at the within-system level: WITHIN_LEVEL_TESTS (`storyeval.compare.within`)
# the system-level tests that swap whole prompts (`system_permutation`)
SYSTEM_PERMUTATION_TESTS = ("permutation-random", "permutation-midp")
CALIBRATED = {
    # Pearson: Williams' t assumes normal data (measured P(p < 0.05) 0.10-0.27 with heavy-tailed
    # metric noise, docs: Which test?); the jackknife held 0.044-0.063 in every cell
    "overall": {"kendall_b": "ustat", "kendall_c": "jackknife", "pearson": "jackknife",
                "spearman": "jackknife"},
    # mid-p: a function of the data and the seed's swaps only (issue 35: the randomised
    # tie-break was a hash of the names, so one user's level was 0.02-0.21 at 5 systems)
    "system": dict.fromkeys(("kendall_b", "kendall_c", "pearson", "spearman"),
                            "permutation-midp"),
    # the paired t over prompts of the within-prompt differences (`compare_prompt_level`);
    # whatever the dataset's default test: the paper tested no prompt-level difference
    "prompt": dict.fromkeys(("kendall_b", "kendall_c", "pearson", "spearman"), "prompt-t"),
    # the delete-one-prompt jackknife t of the within-system difference
    # (`storyeval.compare.within`; benchmarks/bench_within.py)
    "within": dict.fromkeys(("kendall_b", "kendall_c", "pearson", "spearman"),
                            "prompt-jackknife"),
}
TEST_DESCRIPTIONS = {
    "paper": "Williams t (Steiger 1980 form), one-sided, in the direction of the larger |r| "
             "chosen after seeing the data (the HANNA paper's convention)",
    "williams": "Williams t (Steiger 1980 form), direction fixed (a vs b)",
    "ustat": "z-test of tau-b(h,a) - tau-b(h,b) with a U-statistic variance (Sen 1960, delta "
             "method)",
    "jackknife": "z-test of r(h,a) - r(h,b) with the delete-one-item jackknife variance",
    "bootstrap": "paired bootstrap of r(h,a) - r(h,b) (same resamples for both measures)",
    "permutation": "paired permutation test (Deutsch et al. 2021), p = (1 + #extreme)/(1 + N)",
    "permutation-random": "paired permutation test swapping whole prompts, ties with the "
                          "observed difference broken at random (exact under exchangeability)",
    "permutation-midp": "paired permutation test swapping whole prompts, mid-p: swaps whose "
                        "difference of the coefficient ties with the observed one count one "
                        "half (a test of this coefficient's difference only; a function of the "
                        "data and the seed's swaps)",
    "prompt-t": "paired t-test over prompts of the within-prompt differences r_p(h,a) - "
                "r_p(h,b), prompts - 1 df (the prompt level's estimand: the mean within-prompt "
                "difference over prompts, systems fixed)",
    "prompt-jackknife": "t-test of the within-system difference r_W(h,a) - r_W(h,b) (each "
                        "system's correlation across its prompts, averaged over systems) with "
                        "the delete-one-prompt jackknife variance, prompts - 1 df (systems "
                        "fixed; a prompt left out of every system at once)",
}
# Measured P(p < 0.05) under the null, (lowest, highest, where) over the cells of a level:
# the earlier benchmarks/bench_calibration.py (--reps 10000 --seed 0; "Other tests" on the
# docs page Which test?). The paper's convention (Williams, one-sided, larger |r|):
PAPER_LEVEL = {
    "kendall_b": {"overall": (0.010, 0.015, "30-5,000 stories"),
                  "system": (0.019, 0.273, "5-20 systems")},
    "pearson": {"overall": (0.098, 0.108, "30-5,000 stories"),
                "system": (0.082, 0.099, "5-20 systems")},
    "spearman": {"overall": (0.117, 0.122, "30-5,000 stories"),
                 "system": (0.150, 0.288, "5-20 systems")},
}
# The calibrated defaults (CALIBRATED) on user data, as `meta` runs them (sign convention raw).
# System level since 0.4.0: benchmarks/bench_system_level.py --reps 1000 (docs/which-test.md,
# "The system-level test at the edges"). Otherwise: benchmarks/bench_calibration.py --reps 2000
# --seed 0 (docs/which-test.md;
# Likert-mean and single-rating human scores, rho 0.1, rho(a, b) 0.8, heavy tails). Spearman's
# jackknife rows come from the earlier benchmark (30 and 100 stories only; its leave-one-out
# ranks cost O(n^2) per replication).
CALIBRATED_LEVEL = {
    "kendall_b": {"within": (0.023, 0.040, "10 systems x 30-96 prompts, exchangeable and "
                                           "non-exchangeable nulls, 300 per cell "
                                           "(benchmarks/bench_within.py)"),
                  "prompt": (0.042, 0.065, "5-10 systems x 10-30 prompts, 400 per cell"),
                  "overall": (0.044, 0.055, "30-1,000 stories, 5 simulated data types"),
                  "system": (0.037, 0.051, "5-10 systems, exchangeable and heavy-tailed "
                                           "nulls, 1,000 per cell")},
    "pearson": {"within": (0.020, 0.067, "10 systems x 30-96 prompts, exchangeable and "
                                         "non-exchangeable nulls, 300 per cell "
                                         "(benchmarks/bench_within.py)"),
                "prompt": (0.042, 0.065, "5-10 systems x 10-30 prompts, 400 per cell"),
                "overall": (0.039, 0.061, "30-1,000 stories, 5 simulated data types"),
                "system": (0.051, 0.061, "5-10 systems, exchangeable and heavy-tailed "
                                         "nulls, 1,000 per cell")},
    # the system-level Spearman row was measured with 0.3.1's tie order: not claimed since
    "spearman": {"overall": (0.036, 0.045, "30-100 stories")},
}
_TOL = 1e-12
# A system-level correlation of fewer systems is +-1 or undefined whatever the measures: it is
# reported as NaN with a reason, and nothing is tested on it (`meta` and `power` alike).
MIN_SYSTEMS = 3
MIN_SYSTEMS_REASON = (f"fewer than {MIN_SYSTEMS} systems: a system-level correlation is +-1 or "
                      "undefined whatever the measures, so it is not reported or tested")
SIGN_CONVENTIONS = ("auto", "raw", "paper")
# Below this many systems a system-level comparison says little: a coefficient of 3-4 system
# means takes a handful of values, and the mid-p test of a rank coefficient's difference (which
# borrows nothing from another coefficient: issue 47) cannot reach the nominal level there. The
# levels measured with the default test on exchangeable data (benchmarks/bench_system_level.py,
# 1,000 null data sets per cell; docs "Which test?"): the row's note says so wherever the row
# is printed (terminal, HTML, CSV), with the test that can reach the level.
FEW_SYSTEMS = 5
FEW_SYSTEMS_LEVEL = {"kendall_b": (0.014, 0.021), "pearson": (0.059, 0.061)}


def few_systems_note(method: str) -> str:
    """The validity note of a system-level comparison of fewer than `FEW_SYSTEMS` systems."""
    measured = method if method in FEW_SYSTEMS_LEVEL else "kendall_b"
    low, high = FEW_SYSTEMS_LEVEL[measured]
    which = "" if measured == method else " (measured for tau-b)"
    text = ("fewer than 5 systems: a coefficient of 3-4 system means takes a handful of values; "
            f"the system-level test's measured type-I error was {low:.3f}-{high:.3f} at "
            f"nominal 0.05 with 3-4 systems{which} (docs: Which test?), its power is very low, "
            "and its p-value is not comparable with larger studies'")
    if method != "pearson":
        text += ("; this rank coefficient is too discrete for the test to reach the level "
                 "there: for a test that does, compare Pearson correlations (--coef pearson)")
    return text


FEW_SYSTEMS_NOTE = few_systems_note("kendall_b")
PERMUTATION_INTERVAL = ("permutation interval: delta +- the {cl:.0%} quantile of |delta*| over "
                        "the test's {n} prompt swaps (fixed systems)")
MIDP_INTERVAL = ("test-compatible interval (fixed systems): delta +- max(c, {z:.2f} se), c "
                 "from inverting the mid-p test ({n} prompt swaps), se the sd of delta over {b} "
                 "bootstrap resamples of prompts; where p < {alpha:.2g}, cut at 0 and open there")


def calibrated_test(level: str, method: str) -> str:
    """The default test at ``level`` for ``method`` on user data (see the module table)."""
    return CALIBRATED[level][method]


def resolve_tests(test: str | Mapping[str, str], levels: list[str], method: str,
                  default_test: str | None = None) -> dict[str, str]:
    """The test of each tested level: ``test`` may be a name of `TESTS` or a mapping level ->
    name; ``"auto"`` becomes the dataset's ``default_test`` when it has one (the embedded HANNA
    data: ``"paper"``, its reproduction), else `calibrated_test`."""
    chosen = dict(test) if isinstance(test, Mapping) else dict.fromkeys(levels, test)
    unknown = [lev for lev in chosen if lev not in ("overall", "system", "prompt", "within")]
    if unknown:
        raise InputError(f"test: comparisons are run at the overall, system, prompt and within "
                         f"levels, not {unknown}")
    out = {}
    for level in levels:
        name = chosen.get(level, "auto")
        if name == "auto":
            name = (calibrated_test(level, method) if level in ("prompt", "within")
                    else default_test or calibrated_test(level, method))
        if level == "within" and name not in WITHIN_LEVEL_TESTS:
            raise InputError(f"test {name!r} does not run at the within-system level; use "
                             f"{' or '.join(repr(n) for n in WITHIN_LEVEL_TESTS)}")
        if name == "prompt-jackknife" and level != "within":
            raise InputError("test 'prompt-jackknife' runs at the within-system level only")
        if level == "prompt" and name not in PROMPT_LEVEL_TESTS:
            raise InputError(f"test {name!r} does not run at the prompt level; use "
                             f"{' or '.join(repr(n) for n in PROMPT_LEVEL_TESTS)}")
        if name == "prompt-t" and level != "prompt":
            raise InputError("test 'prompt-t' runs at the prompt level only")
        if name not in TESTS or name == "auto":
            raise InputError(f"unknown test {name!r}; use one of {', '.join(TESTS)}")
        if name == "ustat" and method != "kendall_b":
            raise InputError(f"test 'ustat' is for Kendall tau-b, not {method!r}; use "
                             "'jackknife' or 'bootstrap'")
        if name in SYSTEM_PERMUTATION_TESTS and level != "system":
            raise InputError(f"test {name!r} runs at the system level only; at the "
                             "overall level use 'ustat', 'jackknife', 'bootstrap' or "
                             "'permutation'")
        out[level] = name
    return out


def resolve_sign_convention(sign_convention: str, default_test: str | None) -> str:
    """``"auto"``: the paper's convention (|r|, each measure oriented by the sign of its sample
    correlation) on a dataset whose default test is the paper's (the HANNA reproduction), else
    ``"raw"``: correlations as they are, a measure reversed only when declared lower-is-better
    in advance. Orienting by the sample sign picks the direction after seeing the data, which
    makes the two-sided tests conservative (docs: Which test?)."""
    if sign_convention not in SIGN_CONVENTIONS:
        raise InputError(f"sign_convention must be one of {', '.join(SIGN_CONVENTIONS)}, not "
                         f"{sign_convention!r}")
    if sign_convention == "auto":
        return "paper" if default_test == "paper" else "raw"
    return sign_convention


def orientation(r: np.ndarray, sign_convention: str, measures: np.ndarray | None = None,
                lower_is_better: frozenset[str] = frozenset()) -> np.ndarray:
    """+-1 per correlation. ``"paper"``: the sign of the sample correlation (compares |r|; a
    zero counts as positive). ``"raw"``: -1 for the measures declared lower-is-better in
    advance (``lower_is_better``), +1 for the others."""
    r = np.asarray(r, dtype=float)
    if sign_convention == "paper":
        return np.where(r < 0, -1.0, 1.0)
    if not lower_is_better or measures is None:
        return np.ones_like(r)
    declared = np.isin(np.asarray(measures, dtype=object).astype(str), list(lower_is_better))
    return np.where(declared, -1.0, 1.0)


def _orient_rows(comp: dict[str, np.ndarray], sign_convention: str,
                 lower_is_better: frozenset[str]) -> tuple[np.ndarray, np.ndarray]:
    return (orientation(comp["r_a"], sign_convention, comp["measure_a"], lower_is_better),
            orientation(comp["r_b"], sign_convention, comp["measure_b"], lower_is_better))


def comparison_uniforms(comp: Mapping[str, np.ndarray], level: str,
                        random_state: int | None) -> np.ndarray:
    """One Uniform(0, 1) per comparison, a function of its names (level, criterion, measure a,
    measure b) and the seed only: a comparison's randomised p-value does not change when other
    measures join the run. A 64-bit BLAKE2b hash of the names is mixed with the seed by the
    SplitMix64 finaliser (Steele et al. 2014); ``random_state=None`` draws a fresh seed."""
    import hashlib

    seed = (np.random.default_rng().integers(2**63) if random_state is None
            else int(random_state))
    keys = np.array([int.from_bytes(hashlib.blake2b(
        "\x1f".join((level, str(c), str(a), str(b))).encode(), digest_size=8).digest(), "little")
        for c, a, b in zip(comp["criterion"], comp["measure_a"], comp["measure_b"])],
        dtype=np.uint64)
    with np.errstate(over="ignore"):
        x = keys ^ np.uint64(seed % 2**64) * np.uint64(0x9E3779B97F4A7C15)
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
    return (x >> np.uint64(11)).astype(np.float64) * 2.0**-53


def compare_rows(wide: pd.DataFrame, comp: dict[str, np.ndarray], *, level: str, method: str,
                 test: str, alternative: str = "two-sided", sign_convention: str = "paper",
                 confidence_level: float = 0.95, n_resamples: int = 1000,
                 n_permutations: int = TEST_PERMUTATIONS, resample_by: str = "prompts",
                 permutation_unit: str = "prompt", random_state: int | None = 0,
                 nan_policy: str = "raise", tie_rtol: float = 1e-12,
                 lower_is_better: frozenset[str] = frozenset()) -> dict[str, np.ndarray]:
    """Run ``test`` (not ``paper``/``williams``, which `meta_evaluate` runs with
    `williams_test`) on the comparison rows of one level and add the effect size.

    ``comp`` holds arrays ``criterion, measure_a, measure_b, r_a, r_b, r_ab, n``. Returns arrays
    ``t`` (the statistic: z, or the observed difference for resampling tests), ``p``,
    ``statistic_kind``, ``delta``, ``ci_low``, ``ci_high``, ``ci_method``, ``test_reason``.
    ``lower_is_better``: measures reversed under the ``"raw"`` sign convention (`orientation`).

    The interval of a difference of two correlations is clipped to its possible range
    ``[-2, 2]`` (a normal or location-shift interval of few systems can reach past it; the
    clip never changes whether it covers 0).
    """
    out = _compare_rows(wide, comp, level=level, method=method, test=test,
                        alternative=alternative, sign_convention=sign_convention,
                        confidence_level=confidence_level, n_resamples=n_resamples,
                        n_permutations=n_permutations, resample_by=resample_by,
                        permutation_unit=permutation_unit, random_state=random_state,
                        nan_policy=nan_policy, tie_rtol=tie_rtol,
                        lower_is_better=lower_is_better)
    for key in ("ci_low", "ci_high"):
        if key in out:
            out[key] = np.clip(np.asarray(out[key], dtype=np.float64), -2.0, 2.0)
    return out


def _compare_rows(wide: pd.DataFrame, comp: dict[str, np.ndarray], *, level: str, method: str,
                  test: str, alternative: str = "two-sided", sign_convention: str = "paper",
                  confidence_level: float = 0.95, n_resamples: int = 1000,
                  n_permutations: int = TEST_PERMUTATIONS, resample_by: str = "prompts",
                  permutation_unit: str = "prompt", random_state: int | None = 0,
                  nan_policy: str = "raise", tie_rtol: float = 1e-12,
                  lower_is_better: frozenset[str] = frozenset()) -> dict[str, np.ndarray]:
    """`compare_rows` before the clip."""
    sa, sb = _orient_rows(comp, sign_convention, lower_is_better)
    delta = sa * comp["r_a"] - sb * comp["r_b"]
    size = len(delta)
    out = {"t": np.full(size, np.nan), "p": np.full(size, np.nan),
           "statistic_kind": np.full(size, "", dtype=object),
           "test_reason": np.full(size, "", dtype=object)}
    est = None
    if test in ("ustat", "jackknife"):
        est = _normal_estimates(wide, comp, sa, sb, level, method, test, nan_policy, tie_rtol)
        z, p, _, _ = normal_test(est, alternative, confidence_level)
        out.update(t=z, p=p, statistic_kind=np.full(size, "z", dtype=object))
    elif test == "bootstrap":
        boot = _bootstrap(wide, comp, sa, sb, level, method, n_resamples, resample_by,
                          random_state, confidence_level, alternative, tie_rtol)
        out.update(t=delta, p=boot["p"], statistic_kind=np.full(size, "delta", dtype=object),
                   test_reason=boot["reason"])
    elif test == "permutation":
        out.update(_permutation(wide, comp, level, method, permutation_unit, n_permutations,
                                alternative, random_state, tie_rtol, sign_convention,
                                lower_is_better))
    elif test == "prompt-t":
        out.update(_prompt_t(wide, comp, sa, sb, method, alternative, confidence_level))
        return out
    elif test == "prompt-jackknife":
        from storyeval.compare.within import compare_within_level

        res = compare_within_level(wide, comp, sa, sb, method=method, alternative=alternative,
                                   confidence_level=confidence_level)
        out.update({k: v for k, v in res.items() if k not in ("df", "se")})
        return out
    elif test in SYSTEM_PERMUTATION_TESTS:
        try:
            perm = system_permutation(wide, comp, sa, sb, method, alternative, n_permutations,
                                      random_state, tie_rtol, confidence_level,
                                      ties="random" if test == "permutation-random" else "mid",
                                      n_resamples=n_resamples)
        except InputError as exc:  # missing scores: the rows say why, the rest still runs
            out["test_reason"] = np.full(size, str(exc), dtype=object)
        else:
            # the interval of the test's own swaps (one comparison, one story: see
            # `system_permutation`), not a bootstrap of another resampling scheme
            interval = {k: perm.pop(k) for k in ("ci_low", "ci_high")}
            out.update(perm)
            out.update(delta=delta, **interval, ci_reason=np.full(size, "", dtype=object),
                       ci_method=np.full(size, PERMUTATION_INTERVAL.format(
                           n=n_permutations, cl=confidence_level)
                           if test == "permutation-random" else MIDP_INTERVAL.format(
                           n=n_permutations, alpha=1 - confidence_level, b=n_resamples,
                           z=_z(confidence_level) if alternative == "two-sided"
                           else _z(2 * confidence_level - 1))
                           + ("" if alternative == "two-sided"
                              else f", one-sided ({alternative})"),
                           dtype=object))
            return out
    out.update(effect_sizes(wide, comp, level=level, method=method, test=test,
                            sign_convention=sign_convention, confidence_level=confidence_level,
                            n_resamples=n_resamples, resample_by=resample_by,
                            random_state=random_state, nan_policy=nan_policy, tie_rtol=tie_rtol,
                            estimate=est, lower_is_better=lower_is_better,
                            alternative=alternative))
    return out


PROMPT_T_INTERVAL = "t interval over prompts (prompts - 1 df; the interval the test inverts)"


def _prompt_t(wide: pd.DataFrame, comp: dict[str, np.ndarray], sa: np.ndarray, sb: np.ndarray,
              method: str, alternative: str, confidence_level: float) -> dict[str, np.ndarray]:
    """`compare_prompt_level` of the rows, each measure taken with its row's orientation (a
    reversed measure is its negation: every coefficient here changes sign exactly)."""
    from storyeval.compare.prompt_level import compare_prompt_level

    cols = {}
    def named(measures: np.ndarray, signs: np.ndarray) -> list[str]:
        out = []
        for m, s in zip(measures, signs):
            key = str(m) if s > 0 else f"\x1freversed {m}"
            if key not in cols:
                cols[key] = wide[m] if s > 0 else -wide[m]
            out.append(key)
        return out

    a, b = named(comp["measure_a"], sa), named(comp["measure_b"], sb)
    crit = [str(c) for c in comp["criterion"]]
    for c in crit:
        cols.setdefault(c, wide[c])
    res = compare_prompt_level(pd.DataFrame(cols, index=wide.index), crit, a, b,
                               method=method, confidence_level=confidence_level,
                               alternative=alternative)
    size = len(res)
    return {"t": res["t"].to_numpy(float), "p": res["p"].to_numpy(float),
            "statistic_kind": np.full(size, "t(prompts-1)", dtype=object),
            "test_reason": res["reason"].to_numpy(object),
            "delta": res["delta"].to_numpy(float), "ci_low": res["ci_low"].to_numpy(float),
            "ci_high": res["ci_high"].to_numpy(float),
            "ci_method": np.full(size, PROMPT_T_INTERVAL, dtype=object),
            "ci_reason": np.full(size, "", dtype=object)}


def effect_sizes(wide: pd.DataFrame, comp: dict[str, np.ndarray], *, level: str, method: str,
                 test: str, sign_convention: str = "paper", confidence_level: float = 0.95,
                 n_resamples: int = 1000, resample_by: str = "prompts",
                 random_state: int | None = 0, nan_policy: str = "raise",
                 tie_rtol: float = 1e-12,
                 estimate: DiffEstimate | None = None,
                 lower_is_better: frozenset[str] = frozenset(),
                 alternative: str = "two-sided") -> dict[str, np.ndarray]:
    """``delta`` and its confidence interval ``ci_low, ci_high`` (method in ``ci_method``) for
    every comparison row, whatever the test (see the module doc). ``estimate``: the rows'
    U-statistic or jackknife estimate when the test (``test``) already computed it.

    ``alternative`` ``"greater"``/``"less"``: the one-sided interval of a one-sided test,
    ``[low, 2]`` or ``[-2, high]`` with the end of the same method's two-sided interval at
    level ``1 - 2 (1 - confidence_level)`` (the other end the difference's bound)."""
    if alternative in ("greater", "less"):
        out = effect_sizes(wide, comp, level=level, method=method, test=test,
                           sign_convention=sign_convention,
                           confidence_level=1.0 - 2.0 * (1.0 - confidence_level),
                           n_resamples=n_resamples, resample_by=resample_by,
                           random_state=random_state, nan_policy=nan_policy,
                           tie_rtol=tie_rtol, estimate=estimate,
                           lower_is_better=lower_is_better)
        bound = np.where(np.isfinite(out["delta"]), 2.0, np.nan)
        key = "ci_high" if alternative == "greater" else "ci_low"
        out[key] = bound if alternative == "greater" else -bound
        out["ci_method"] = np.char.add(out["ci_method"].astype(str),
                                       f", one-sided ({alternative})").astype(object)
        return out
    sa, sb = _orient_rows(comp, sign_convention, lower_is_better)
    delta = sa * comp["r_a"] - sb * comp["r_b"]
    size = len(delta)
    ci_reason = np.full(size, "", dtype=object)
    if method == "pearson" and test not in ("bootstrap", "jackknife"):
        low, high = zou_ci(sa * comp["r_a"], sb * comp["r_b"], sa * sb * comp["r_ab"],
                           comp["n"], confidence_level)
        kind = f"Zou (2007), Fisher z, n = {'systems' if level == 'system' else 'stories'}"
    elif level == "overall" and test != "bootstrap":
        # the interval of the test when it is a normal test (one procedure, one story)
        name = "ustat" if method == "kendall_b" and test != "jackknife" else "jackknife"
        est = (estimate if estimate is not None and test == name else
               _normal_estimates(wide, comp, sa, sb, level, method, name, nan_policy, tie_rtol))
        _, _, low, high = normal_test(est, "two-sided", confidence_level)
        kind = ("U-statistic normal interval" if name == "ustat"
                else "jackknife normal interval")
    else:
        boot = _bootstrap(wide, comp, sa, sb, level, method, n_resamples, resample_by,
                          random_state, confidence_level, "two-sided", tie_rtol)
        low, high = boot["low"], boot["high"]
        kind = f"bootstrap percentile ({n_resamples} resamples of {resample_by})"
        why = np.asarray(boot["reason"], dtype=object).astype(str)
        ci_reason = np.where(why != "", np.char.add("interval: ", why), "").astype(object)
    return {"delta": delta, "ci_low": np.asarray(low, dtype=float),
            "ci_high": np.asarray(high, dtype=float),
            "ci_method": np.full(size, kind, dtype=object), "ci_reason": ci_reason}


# ------------------------------------------------------------------------------------------------
# U-statistic and jackknife tests on the level's data


def _level_frame(wide: pd.DataFrame, columns: list[str], level: str, nan_policy: str,
                 tie_rtol: float) -> pd.DataFrame:
    from storyeval.correlation.levels import level_data

    return level_data(wide, columns, level=level, nan_policy=nan_policy, tie_rtol=tie_rtol)


def _normal_estimates(wide, comp, sa, sb, level, method, test, nan_policy,
                      tie_rtol) -> DiffEstimate:
    """delta and se of every row (rows with missing values on their complete items)."""
    cols = list(dict.fromkeys([*comp["criterion"], *comp["measure_a"], *comp["measure_b"]]))
    frame = _level_frame(wide, cols, level, "omit" if nan_policy == "raise" else nan_policy,
                         tie_rtol)
    X = frame.to_numpy(dtype=np.float64)
    pos = {c: k for k, c in enumerate(frame.columns)}
    ih = np.array([pos[c] for c in comp["criterion"]])
    ia = np.array([pos[c] for c in comp["measure_a"]])
    ib = np.array([pos[c] for c in comp["measure_b"]])
    size = len(ih)
    delta, se = np.full(size, np.nan), np.full(size, np.nan)
    items = np.full(size, float(X.shape[0]))  # the items of each row (n - 1: jackknife df)
    # per column, not per comparison: X[:, ih] would be a stories x comparisons copy
    gaps = np.isnan(X).any(0)
    complete = ~(gaps[ih] | gaps[ia] | gaps[ib])

    def run(rows, items=slice(None)):
        h = X[items][:, ih[rows]].T
        a = X[items][:, ia[rows]].T * sa[rows, None]
        b = X[items][:, ib[rows]].T * sb[rows, None]
        if test == "ustat":
            return ustat_diff(h, a, b)
        return jackknife_diff(h, a, b, method)

    full = np.flatnonzero(complete)
    if test == "ustat":
        est = _ustat_shared(X, ih[full], ia[full], ib[full], sa[full], sb[full])
        delta[full], se[full] = est.delta, est.se
    else:
        est = _jackknife_shared(X, ih[full], ia[full], ib[full], sa[full], sb[full], method)
        delta[full], se[full] = est.delta, est.se
    if nan_policy != "propagate":
        for row in np.flatnonzero(~complete):  # pairwise deletion: one row at a time
            keep = ~np.isnan(X[:, [ih[row], ia[row], ib[row]]]).any(1)
            if keep.sum() > 3:
                est = run(np.array([row]), keep)
                delta[row], se[row] = est.delta[0], est.se[0]
                items[row] = keep.sum()
    # the jackknife refers its z to Student's t with n - 1 df (storyeval.compare.dependent)
    return DiffEstimate(delta, se, None if test == "ustat" else items - 1.0)


def _shared_pairs(ih: np.ndarray, ia: np.ndarray, ib: np.ndarray):
    """The distinct (criterion, measure) column pairs of the comparisons, and each comparison's
    pair of a and of b."""
    keys = np.concatenate([np.stack([ih, ia], 1), np.stack([ih, ib], 1)])
    pairs, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    return pairs, inverse[:len(ih)], inverse[len(ih):]


def _jackknife_shared(X: np.ndarray, ih: np.ndarray, ia: np.ndarray, ib: np.ndarray,
                      sa: np.ndarray, sb: np.ndarray, method: str) -> DiffEstimate:
    """`jackknife_diff` of many comparisons on complete columns of ``X``: the leave-one-out
    coefficients of each distinct (criterion, measure) pair once, then one Gram matrix per
    criterion (`storyeval.compare.dependent_batch`); an orientation of -1 negates a measure's
    coefficients."""
    from storyeval.compare.dependent import _kendall_loo, _pearson_loo, _spearman_loo

    pairs, ka, kb = _shared_pairs(ih, ia, ib)
    n = X.shape[0]
    full, loo = np.empty(len(pairs)), np.empty((len(pairs), n))
    step = max(1, int(2e7 // max(n * (n if method == "spearman" else 64), 1)))
    for lo in range(0, len(pairs), step):
        sl = slice(lo, lo + step)
        h, x = X[:, pairs[sl, 0]].T, X[:, pairs[sl, 1]].T
        if method in ("kendall_b", "kendall_c"):
            full[sl], loo[sl] = _kendall_loo(h, x, method)
        elif method == "pearson":
            full[sl], loo[sl] = _pearson_loo(h, x)
        else:
            full[sl], loo[sl] = _spearman_loo(h, x)
    return jackknife_gram_estimates(full, loo, pairs[:, 0], ka, kb, sa, sb)


def _ustat_shared(X: np.ndarray, ih: np.ndarray, ia: np.ndarray, ib: np.ndarray,
                  sa: np.ndarray, sb: np.ndarray) -> DiffEstimate:
    """`ustat_diff` of many comparisons on complete columns of ``X`` (items x columns): the
    Kendall rows of each distinct (criterion, measure) pair and the untied counts of each
    column are computed once (HANNA's 50,232 all-pairs tests share 1,188 pairs), then combined
    per comparison in chunks; an orientation of -1 negates a measure's rows."""
    pairs, ka, kb = _shared_pairs(ih, ia, ib)
    columns = np.unique(np.concatenate([ih, ia, ib]))
    where = np.zeros(X.shape[1], dtype=np.int64)
    where[columns] = np.arange(len(columns))
    # each column sorted once for all its pairs and for its untied counts
    rows, untied = shared_kendall_rows(X[:, columns], where[pairs[:, 0]], where[pairs[:, 1]])
    # then one exact integer Gram matrix per criterion for every comparison
    # (`storyeval.compare.dependent_batch.ustat_integer_estimates`)
    return ustat_integer_estimates(rows, untied, where[pairs[:, 0]], where[pairs[:, 1]], ka, kb,
                                   sa, sb)


# ------------------------------------------------------------------------------------------------
# resampling


def _pairs(comp) -> tuple[list[tuple[str, str]], np.ndarray, np.ndarray]:
    pairs = list(dict.fromkeys([*zip(comp["measure_a"], comp["criterion"]),
                                *zip(comp["measure_b"], comp["criterion"])]))
    where = {p: k for k, p in enumerate(pairs)}
    ka = np.array([where[p] for p in zip(comp["measure_a"], comp["criterion"])])
    kb = np.array([where[p] for p in zip(comp["measure_b"], comp["criterion"])])
    return pairs, ka, kb


def _bootstrap_deltas(wide, comp, sa, sb, level, method, n_resamples, resample_by,
                      random_state, tie_rtol=1e-12) -> np.ndarray | str:
    """(B, rows) paired bootstrap differences of every row from one set of resamples (the
    engine of `storyeval.resample.bootstrap`), or why there are none."""
    got = _bootstrap_theta(wide, comp, level, method, n_resamples, resample_by, random_state,
                           tie_rtol)
    if isinstance(got, str):
        return got
    theta, ka, kb = got
    return theta[:, ka] * sa - theta[:, kb] * sb


def _bootstrap_sd(wide, comp, sa, sb, level, method, n_resamples, resample_by, random_state,
                  tie_rtol=1e-12) -> np.ndarray | None:
    """`_sd_columns` of `_bootstrap_deltas` (None for no bootstrap), a block of rows at a
    time: the (B, rows) matrix is never built (its page faults and memory passes cost more
    than the bootstrap at 200 stories). Column by column the same sums, so the same bits."""
    got = _bootstrap_theta(wide, comp, level, method, n_resamples, resample_by, random_state,
                           tie_rtol)
    if isinstance(got, str):
        return None
    theta, ka, kb = got
    out = np.empty(len(ka))
    for b in _column_blocks((theta.shape[0], len(ka))):
        out[b] = _sd_columns(theta[:, ka[b]] * sa[b] - theta[:, kb[b]] * sb[b])
    return out


def _bootstrap_theta(wide, comp, level, method, n_resamples, resample_by, random_state,
                     tie_rtol) -> tuple[np.ndarray, np.ndarray, np.ndarray] | str:
    """The (B, K) bootstrap correlations of the K distinct (measure, criterion) columns of the
    rows and each row's two columns, or why there are none."""
    from storyeval.resample.bootstrap import bootstrap_correlations

    pairs, ka, kb = _pairs(comp)
    try:
        with warnings.catch_warnings():
            # few clusters / undefined resamples: the row's reason says so instead
            warnings.simplefilter("ignore", StoryevalWarning)
            _, theta = bootstrap_correlations(wide, pairs, level=level, method=method,
                                              n_resamples=n_resamples, resample_by=resample_by,
                                              random_state=random_state,
                                              return_distribution=True, show_progress=False,
                                              tie_rtol=tie_rtol)
    except InputError as exc:
        return f"no bootstrap: {exc}"
    return theta, ka, kb


def _bootstrap(wide, comp, sa, sb, level, method, n_resamples, resample_by, random_state,
               confidence_level, alternative, tie_rtol=1e-12) -> dict[str, np.ndarray]:
    """Paired bootstrap of every row's difference: p-value and percentile interval."""
    from storyeval.resample._common import quantile_columns

    size = len(sa)
    d = _bootstrap_deltas(wide, comp, sa, sb, level, method, n_resamples, resample_by,
                          random_state, tie_rtol)
    if isinstance(d, str):
        nan = np.full(size, np.nan)
        return {"p": nan, "low": nan, "high": nan, "reason": np.full(size, d, dtype=object)}
    valid = np.isfinite(d)
    B = valid.sum(0)
    below = ((d <= _TOL) & valid).sum(0)
    above = ((d >= -_TOL) & valid).sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        if alternative == "two-sided":
            p = np.minimum(1.0, 2.0 * np.minimum(1 + below, 1 + above) / (B + 1))
        elif alternative == "greater":
            p = (1 + below) / (B + 1)
        else:
            p = (1 + above) / (B + 1)
    alpha = (1 - confidence_level) / 2
    low, high = quantile_columns(d, np.stack([np.full(size, alpha), np.full(size, 1 - alpha)]))
    reason = np.where(B < 2, "no defined bootstrap difference", "").astype(object)
    return {"p": np.where(B > 0, p, np.nan), "low": low, "high": high, "reason": reason}


def _z(confidence_level: float) -> float:
    from storyeval._normal import ndtri  # no scipy import on the default path

    return float(ndtri(0.5 + confidence_level / 2))


def _sd_columns(d: np.ndarray | str) -> np.ndarray | None:
    """The standard deviation (ddof 1) of each column's finite values (NaN with fewer than 2);
    None for no bootstrap."""
    if isinstance(d, str):
        return None
    valid = np.isfinite(d)
    if valid.all():  # the usual case: the same sums without the masks (the same bits)
        n = np.full(d.shape[1], d.shape[0])
        centred = d - d.sum(0) / n
    else:
        n = valid.sum(0)
        filled = np.where(valid, d, 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            centred = np.where(valid, d - filled.sum(0) / n, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        ss = (centred ** 2).sum(0)
        return np.where(n >= 2, np.sqrt(ss / (n - 1)), np.nan)


def compatible_interval(observed: np.ndarray, low: np.ndarray, high: np.ndarray,
                        se: np.ndarray | None, confidence_level: float = 0.95,
                        reject: np.ndarray | None = None,
                        alternative: str = "two-sided") -> tuple[np.ndarray, np.ndarray]:
    """The test's interval ``[low, high]`` (around ``observed``) widened by ``z se`` and made
    to agree with the test's decision ``reject`` (default: whether ``[low, high]`` excludes 0).

    Two-sided: ``observed +- max(c, z se)`` (``c`` the test interval's half-width, ``z`` the
    two-sided normal quantile). One-sided (``alternative`` ``"greater"``: the test's ``[low,
    inf)``; ``"less"``: ``(-inf, high]``): the finite end moved out to ``observed -+ z se``
    (``z`` the one-sided quantile) where that is further, the other end the coefficient's
    bound (``+-2``, the possible range of a difference).
    Where the test does not reject, the interval is stretched to include 0 if it does not
    already. Where the test rejects (say ``observed > 0``), the side away from 0 stays wide and
    the side towards 0 is cut at 0, open there: ``max(observed - z se, 0+)``, represented by
    the smallest positive float (``np.nextafter(0, 1)``) so that ``ci_low > 0`` stays true. So
    the interval excludes 0 exactly when the test rejects (agreement by construction), and
    covers the true difference whenever the wide interval does, except when the test's sign is
    wrong (a directional error, rarer than its level). ``se`` None: the test's interval
    unchanged; ``se`` NaN in a row: the wide interval is the test's interval there.

    Why: the test's own interval inverts a permutation test of exchangeable measures, whose
    swaps hold the human scores fixed; when the measures differ, delta varies more than the
    swaps say (measured coverage of the fixed-systems difference 0.83-0.90 at 5-10 systems for
    Pearson, docs "Which test?"), while a bootstrap of prompts carries that variance (and errs on
    the wide side under the null, where the cut keeps the test's decision). Measured with the
    default test on the benchmark's alternatives: coverage 0.94-0.99 at 5, 10 and 20 systems
    (`benchmarks/bench_calibration.py --coverage`).
    """
    if se is None:
        return low, high
    observed, low, high = (np.asarray(x, dtype=np.float64) for x in (observed, low, high))
    if reject is None:
        with np.errstate(invalid="ignore"):
            reject = (low > 0) | (high < 0)
    one_sided = alternative in ("greater", "less")
    z = _z(1.0 - 2.0 * (1.0 - confidence_level)) if one_sided else _z(confidence_level)
    with np.errstate(invalid="ignore"):
        stretch = np.where(np.isfinite(se), z * se, 0.0)
        if alternative == "greater":
            wide_low = np.minimum(low, observed - stretch)
            wide_high = np.full_like(observed, 2.0)
        elif alternative == "less":
            wide_low = np.full_like(observed, -2.0)
            wide_high = np.maximum(high, observed + stretch)
        else:
            half = np.maximum(stretch, np.maximum(high - observed, observed - low))
            wide_low, wide_high = observed - half, observed + half
        tiny = np.nextafter(0.0, 1.0)
        up, down = reject & (observed > 0), reject & (observed < 0)
        wide_low = np.where(up, np.maximum(wide_low, tiny), wide_low)
        wide_high = np.where(down, np.minimum(wide_high, -tiny), wide_high)
        wide_low = np.where(~reject, np.minimum(wide_low, 0.0), wide_low)
        wide_high = np.where(~reject, np.maximum(wide_high, 0.0), wide_high)
    keep = ~np.isfinite(observed) | np.isnan(low) | np.isnan(high)
    return np.where(keep, low, wide_low), np.where(keep, high, wide_high)


def _permutation(wide, comp, level, method, unit, n_permutations, alternative, random_state,
                 tie_rtol, sign_convention, lower_is_better) -> dict[str, np.ndarray]:
    from storyeval.resample.permutation import permutation_pvalues

    paper = sign_convention == "paper"
    if not paper and lower_is_better:  # the declared orientation, fixed before the test
        wide = oriented_wide(wide, lower_is_better)

    frame = pd.DataFrame({"criterion": comp["criterion"], "measure_a": comp["measure_a"],
                          "measure_b": comp["measure_b"], "level": level})
    size = len(frame)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StoryevalWarning)
            res = permutation_pvalues(wide, frame, method=method, unit={level: unit},
                                      n_permutations=n_permutations, alternative=alternative,
                                      random_state=random_state, tie_rtol=tie_rtol,
                                      orient=paper)
    except InputError as exc:
        return {"test_reason": np.full(size, f"no permutation test: {exc}", dtype=object)}
    return {"t": res["perm_delta"].to_numpy(dtype=float), "p": res["perm_p"].to_numpy(dtype=float),
            "statistic_kind": np.full(size, "delta", dtype=object)}


def oriented_wide(wide: pd.DataFrame, lower_is_better: frozenset[str]) -> pd.DataFrame:
    """``wide`` with the columns declared lower-is-better negated (a copy)."""
    cols = [c for c in wide.columns if c in lower_is_better]
    if not cols:
        return wide
    out = wide.copy()
    out[cols] = -out[cols]
    return out


def _label_codes(index: pd.Index, level: int) -> np.ndarray:
    """Position of each story's label at ``level`` among the sorted distinct labels (as
    strings): ``np.unique(labels.astype(str), return_inverse=True)[1]``, from the index's
    codes (the distinct labels only are converted and sorted)."""
    if isinstance(index, pd.MultiIndex):
        codes = np.asarray(index.codes[level])
        labels = index.levels[level]
        if len(codes) and codes.min() >= 0:
            used = np.bincount(codes, minlength=len(labels)) > 0  # levels may hold unused labels
            _, inverse = np.unique(labels[used].astype(str), return_inverse=True)
            position = np.full(len(labels), -1, dtype=np.int64)
            position[used] = inverse.ravel()
            return position[codes]
    _, inverse = np.unique(index.get_level_values(level).astype(str), return_inverse=True)
    return inverse.ravel()


def _prompt_sums(index: pd.Index, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per (prompt, system) sums of the columns of ``X`` (stories x columns, in the order of
    ``index``) over their stories, (P, S, K), and the stories per system (S,), prompts and
    systems in the order of their labels as strings."""
    names = list(index.names)
    sl = names.index("system") if "system" in names else 0
    pl = names.index("prompt_id") if "prompt_id" in names else 1
    s_idx = _label_codes(index, sl)
    p_idx = _label_codes(index, pl)
    X = np.asarray(X, dtype=np.float64)
    S, P, K = int(s_idx.max()) + 1, int(p_idx.max()) + 1, X.shape[1]
    cell = p_idx * S + s_idx
    count = np.bincount(s_idx, minlength=S).astype(np.float64)
    if np.bincount(cell, minlength=P * S).max(initial=0) <= 1:
        # one story per cell (as system_permutation's data always have): its sum is
        # 0.0 + x, as np.add.at computed it (-0.0 becomes 0.0), placed without a reduction
        sums = np.zeros((P, S, K))
        sums[p_idx, s_idx] = X
        sums += 0.0
        return sums, count
    # bincount adds the weights of a cell in story order, from 0.0, as np.add.at does (the
    # same sums, bit for bit), and much faster
    flat = np.empty((K, P * S))
    for k in range(K):  # one pass over the stories per column
        flat[k] = np.bincount(cell, weights=X[:, k], minlength=P * S)
    return np.ascontiguousarray(flat.T).reshape(P, S, K), count


def _system_means(wide: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """(S, K) system means of ``columns`` as the reported system-level correlations compute
    them (`storyeval.correlation.levels.level_data`, before the tie rule), systems in sorted
    order."""
    from storyeval.correlation.levels import level_data

    frame = cast("pd.DataFrame", level_data(wide, columns, level="system", tie_rtol=0.0))
    order = np.argsort(frame.index.astype(str).to_numpy(), kind="stable")
    return frame.to_numpy(dtype=np.float64)[order]


def system_permutation(wide: pd.DataFrame, comp: dict[str, np.ndarray], sa: np.ndarray,
                       sb: np.ndarray, method: str, alternative: str = "two-sided",
                       n_permutations: int = TEST_PERMUTATIONS,
                       random_state: int | None = 0,
                       tie_rtol: float = 1e-12,
                       confidence_level: float = 0.95,
                       ties: str = "random",
                       n_resamples: int = 1000) -> dict[str, np.ndarray]:
    """System-level paired permutation test with random tie-breaking (``permutation-random``).

    Every permutation swaps a's and b's (z-scored, oriented) scores on all stories of a random
    half of the prompts (each prompt independently with probability 1/2, the same masks for every
    row), recomputes the system means and their coefficient with the human system means, and
    compares ``delta* = r(h, a*) - r(h, b*)`` with the observed ``delta``. Two-sided:

    ``p = (#{|delta*| > |delta|} + U (1 + #{|delta*| = |delta|})) / (1 + N)``, U ~ Uniform(0, 1),

    which is uniform under the null that a and b are exchangeable within prompts (the observed
    data counted as one of the N + 1 equally likely arrangements): the test's level is the
    nominal one even when the coefficient of 5 system means takes few values and ties with the
    observed difference are frequent (counting them as extreme, as ``permutation`` does, makes
    the test conservative). ``"greater"``/``"less"`` compare signed differences. Needs no
    complete system x prompt grid; missing scores are not allowed (stories with one are an
    error). The masks are drawn from ``random_state`` alone (they depend on the seed and the
    number of prompts, not on the measures) and the tie-breaking uniform of each row is
    `comparison_uniforms` of its names: a row's p-value is the same whatever other measures are
    compared in the run.

    ``ties="mid"`` (test ``permutation-midp``, the default): the uniform is replaced by its
    mean, ``p = (#{|delta*| > |delta|} + (1 + #{|delta*| = |delta|}) / 2) / (1 + N)`` (the
    mid-p value; Lancaster 1961): a function of the data and of the seed's swaps only, never of
    the names. It is a test of the coefficient's own difference: tied swaps are split, never
    ordered by another statistic (0.3.1 ordered the ties of rank coefficients by their Pearson
    difference, which made many of tau-b's rejections a Pearson test's: issue 47). A rank
    coefficient of 3-4 system means is too discrete for the mid-p test to reach the nominal
    level; those rows carry `few_systems_note`. Its interval is `compatible_interval` with the
    test's decision: the interval that inverts the mid-p test of the coefficient
    (`_midp_interval`, half-width ``c``) widened to ``delta +- z se``, ``se`` the standard
    deviation of delta over ``n_resamples`` paired bootstrap resamples of prompts
    (`storyeval.resample.bootstrap`, the same ``random_state``); where the test rejects, the
    side towards 0 is cut at 0 (open there), else the interval reaches 0 at least. So ``p < 1 -
    confidence_level`` exactly when the interval excludes 0 (two-sided tests),
    and it covers the fixed-systems difference E[delta | these systems] in 0.94-0.99 of the
    data sets of the benchmark (5-20 systems, tau-b and Pearson; the mid-p interval alone:
    0.83-0.97).

    The interval ``ci_low, ci_high`` of ``ties="random"`` inverts the same test: ``delta +- d_(k)`` with ``d_(k)``
    the ``k = ceil(confidence_level (N + 1))``-th smallest ``|delta*|`` (infinite when
    ``k > N``), i.e. the differences a two-sided test of this size would not reject, assuming
    the permutation distribution of ``delta*`` describes ``delta`` minus its true value (a
    location-shift pivot). It resamples what the test resamples (prompts, systems fixed) in the
    same orientation, so that p < 1 - confidence_level and an interval excluding 0 agree up to
    the random tie-breaking (measured in benchmarks/bench_calibration.py).

    A swap whose coefficient is undefined (e.g. a swapped mean vector that is constant) is
    left out of the mid-p test and of its interval alike: ``N`` above is the number of swaps
    with a defined difference (the test conditions on the defined arrangements; before 0.4.1
    such swaps counted as less extreme and the interval was NaN).

    Engines: with numba installed (the ``fast`` extra), Kendall's tau-b and tau-c of the
    swapped means come from a compiled kernel (`storyeval.correlation._permutation_numba`,
    no (permutations x rows x systems) temporaries; the rows of one pair of measures share
    their swapped means across criteria, and the mid-p counts and the interval's half-width
    are computed per row inside the kernel) unless the NumPy engine would take less than
    loading numba; both give the same bits. The NumPy engine computes Pearson and
    Spearman, and everything with ``STORYEVAL_KENDALL_ENGINE=numpy``.
    Masks of more than 128 MB (permutations x prompts, 8 bytes each) are drawn and multiplied in
    blocks of permutations (the same masks; BLAS may sum a block's products in another order
    than the whole matrix's, in the last bits).
    """
    from storyeval.correlation.ties import tie_values

    cols = list(dict.fromkeys([*comp["criterion"], *comp["measure_a"], *comp["measure_b"]]))
    values = wide[cols]
    if values.isna().to_numpy().any():
        raise InputError("test 'permutation-random' needs every story scored by every compared "
                         "measure (missing values found); use test 'bootstrap' or drop them")
    # the reported means first: their temporaries are freed before the sums are built
    observed_means = _system_means(wide, cols)
    z = values.copy()
    del values
    measures = [c for c in cols if c not in set(comp["criterion"])]
    sd = z[measures].std(ddof=0).replace(0, 1.0)
    mu = z[measures].mean()
    z[measures] = (z[measures] - mu) / sd
    X, index = z[cols].to_numpy(dtype=np.float64), z.index
    del z  # one copy of the scores at a time
    sums, count = _prompt_sums(index, X)
    del X
    # the tie rule is relative, so the swapped system means are mapped back to the scale of
    # the measure they stand for (a positive affine map: no coefficient changes otherwise),
    # and the identity arrangement is the reported data's own system means
    scale = pd.Series(1.0, index=cols)
    shift = pd.Series(0.0, index=cols)
    scale[measures], shift[measures] = sd, mu
    scale, shift = scale.to_numpy(), shift.to_numpy()
    pos = {c: k for k, c in enumerate(cols)}
    ih = np.array([pos[c] for c in comp["criterion"]])
    ia = np.array([pos[c] for c in comp["measure_a"]])
    ib = np.array([pos[c] for c in comp["measure_b"]])
    P, S, _ = sums.shape
    mean = sums.sum(0) / count[:, None]  # (S, K)
    swapped = _swapped_means(sums, count, n_permutations, random_state)
    # the criterion's system means under the tie rule (snapped per column: once for all rows)
    H = tie_values(observed_means[:, ih], "system", axis=0, rtol=tie_rtol)
    size = len(ih)
    alpha = 1.0 - confidence_level
    engine_args = (swapped, mean, observed_means, scale, shift, H, ia, ib, sa, sb, tie_rtol)
    units = len(np.unique(np.stack([ia, ib, sa, sb], 1), axis=0)) if method == "kendall_b" \
        else size  # what the NumPy engine computes once (`_NUMPY_PAIR_SECONDS`)
    compiled = method in ("kendall_b", "kendall_c") and _compiled_permutation(
        units, len(swapped), S, method)
    if ties == "mid" and (compiled or method == "kendall_b"):
        # the default: each row's test summarised as its swaps are computed (in the kernel, or
        # block by block), no (N + 1, R) matrix
        if compiled:
            from storyeval.correlation._permutation_numba import kendall_midp

            observed, more, tied, defined, spread, undone = kendall_midp(
                *engine_args, method, alternative, alpha, _TOL)
            rows = np.flatnonzero(undone)  # a swapped mean overflowed: NumPy engine's rules
        else:
            observed, more, tied, defined, spread, rows = _kendall_b_midp(
                swapped, mean, observed_means, scale, shift, H, ih, ia, ib, sa, sb, tie_rtol,
                alternative, alpha)
        if len(rows):
            deltas = _numpy_rows(rows, *engine_args, method, n_permutations)
            observed[rows] = deltas[0]
            more[rows], tied[rows], defined[rows] = _midp_counts(deltas[0], deltas[1:],
                                                                 alternative)
            spread[rows] = _midp_spread(deltas[0], deltas[1:], alpha, alternative)
    else:
        if compiled:
            from storyeval.correlation._permutation_numba import kendall_deltas

            deltas, undone = kendall_deltas(*engine_args, method)
            rows = np.flatnonzero(undone)
        elif method == "kendall_b":
            deltas, rows = _kendall_b_deltas(swapped, mean, observed_means, scale, shift, H, ih,
                                             ia, ib, sa, sb, tie_rtol)
        elif method == "pearson":
            deltas, rows = _pearson_deltas(swapped, mean, H, ih, ia, ib, sa, sb), np.arange(0)
            if "r_a" in comp:  # the printed difference is the tested one (the reported means)
                deltas[0] = (sa * np.asarray(comp["r_a"], float)
                             - sb * np.asarray(comp["r_b"], float))
        else:
            deltas, rows = np.empty((n_permutations + 1, size)), np.arange(size)
        if len(rows):
            deltas[:, rows] = _numpy_rows(rows, *engine_args, method, n_permutations)
        observed, perm = deltas[0], deltas[1:]
        # the test of the coefficient's own difference: swaps that tie with the data (frequent
        # for a rank coefficient of few system means) are split, never ordered by another
        # statistic
        more, tied, defined = _midp_counts(observed, perm, alternative)
        if ties == "mid":
            spread = _midp_spread(observed, perm, alpha, alternative)
    if ties == "mid":
        # swaps whose coefficient is undefined (a constant swapped mean vector) are left out:
        # the test conditions on the defined arrangements, and so does its interval
        p = (more + 0.5 * (1 + tied)) / (defined + 1)
        low, high = _spread_interval(observed, spread, alternative)
        boot_sd = _bootstrap_sd(wide, comp, sa, sb, "system", method, n_resamples, "prompts",
                                random_state, tie_rtol)
        low, high = compatible_interval(observed, low, high, boot_sd,
                                        confidence_level, reject=p < alpha,
                                        alternative=alternative)
    else:
        u = comparison_uniforms(comp, "system", random_state)
        # a difference of exactly 0 is no evidence either way: mid-p there (p >= 0.5), so that
        # the randomised split never rejects a printed 0
        u = np.where(np.abs(observed) <= _TOL, 0.5, u) if alternative == "two-sided" else u
        p = (more + u * (1 + tied)) / (n_permutations + 1)
        low, high = _permutation_interval(observed, perm, confidence_level)
    ok = np.isfinite(observed)
    note = few_systems_note(method) if S < FEW_SYSTEMS else ""
    return {"t": observed, "p": np.where(ok, p, np.nan), "ci_low": low, "ci_high": high,
            "note": np.full(size, note, dtype=object),
            "statistic_kind": np.full(size, "delta", dtype=object),
            "test_reason": np.where(ok, "", "coefficient undefined (constant input)")
            .astype(object)}


def _numpy_rows(rows: np.ndarray, swapped: np.ndarray, mean: np.ndarray,
                observed_means: np.ndarray, scale: np.ndarray, shift: np.ndarray,
                H: np.ndarray, ia: np.ndarray, ib: np.ndarray, sa: np.ndarray, sb: np.ndarray,
                tie_rtol: float, method: str, n_permutations: int) -> np.ndarray:
    """(N + 1, len(rows)) deltas of ``rows`` by the NumPy engine, in blocks of rows whose
    temporaries stay under 256 MB."""
    S = mean.shape[0]
    out = np.empty((n_permutations + 1, len(rows)))
    per_row = (n_permutations + 1) * S * S * 3 * 8 * 3
    step = max(1, int(2**28 // per_row))
    for start in range(0, len(rows), step):
        out[:, start:start + step] = _numpy_deltas(
            rows[start:start + step], swapped, mean, observed_means, scale, shift, H, ia, ib,
            sa, sb, tie_rtol, method)
    return out


def _column_blocks(shape: tuple[int, ...]) -> list[slice]:
    """Blocks of the columns of an (N, rows) float64 matrix of about 1 MB each: the passes
    over a block (mid-p summaries, bootstrap standard deviations) then run in cache (whole
    60 MB temporaries cost page faults and memory traffic; `_kendall_b_deltas` returns its
    deltas column-contiguous for the same reason)."""
    step = max(1, 2**20 // (8 * max(shape[0], 1)))
    return [slice(lo, lo + step) for lo in range(0, shape[1], step)]


def _midp_counts(observed: np.ndarray, perm: np.ndarray,
                 alternative: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per column, the swaps more extreme than the observed difference, those tied with it
    (within `_TOL`), in the test's orientation (`_oriented`), and those with a defined
    difference (not NaN)."""
    parts = [_midp_counts_block(observed[b], perm[:, b], alternative)
             for b in _column_blocks(perm.shape)]
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    more, tied, defined = zip(*parts)
    return np.concatenate(more), np.concatenate(tied), np.concatenate(defined)


def _midp_counts_block(observed: np.ndarray, perm: np.ndarray,
                       alternative: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`_midp_counts` of one block of columns."""
    obs, dist = _oriented(observed, perm, alternative)
    return ((dist > obs + _TOL).sum(0), (np.abs(dist - obs) <= _TOL).sum(0),
            (~np.isnan(dist)).sum(0))


def _oriented(observed: np.ndarray, perm: np.ndarray,
              alternative: str) -> tuple[np.ndarray, np.ndarray]:
    """The observed and permuted statistics ordered so that larger is more extreme."""
    if alternative == "two-sided":
        return np.abs(observed), np.abs(perm)
    if alternative == "greater":
        return observed, perm
    return -observed, -perm


def _kendall_b_deltas(swapped: np.ndarray, mean: np.ndarray, observed_means: np.ndarray,
                      scale: np.ndarray, shift: np.ndarray, H: np.ndarray, ih: np.ndarray,
                      ia: np.ndarray, ib: np.ndarray, sa: np.ndarray, sb: np.ndarray,
                      tie_rtol: float) -> tuple[np.ndarray, np.ndarray]:
    """(N + 1, rows) tau-b deltas of every swap by the NumPy engine
    (`storyeval.compare._taub_blocks`), and the rows it leaves to `_numpy_deltas`."""
    from storyeval.compare._taub_blocks import TauBBlocks

    # row-major: each row's swaps contiguous, as the mid-p counts and partitions read them
    out = np.empty((len(ia), len(swapped)))

    def keep(rows: np.ndarray, block: np.ndarray) -> None:
        out[rows] = block

    back = TauBBlocks(swapped, mean, observed_means, scale, shift, H, ih, ia, ib, sa, sb,
                      tie_rtol).run(keep)
    return out.T, back


def _kendall_b_midp(swapped: np.ndarray, mean: np.ndarray, observed_means: np.ndarray,
                    scale: np.ndarray, shift: np.ndarray, H: np.ndarray, ih: np.ndarray,
                    ia: np.ndarray, ib: np.ndarray, sa: np.ndarray, sb: np.ndarray,
                    tie_rtol: float, alternative: str, alpha: float) -> tuple[np.ndarray, ...]:
    """The mid-p summary of `kendall_midp` (observed, more, tied, defined, spread, and the rows
    left to `_numpy_deltas`) by the NumPy engine (`storyeval.compare._taub_blocks`), its
    blocks summarised as they come (the (N + 1, rows) matrix is never built; `_midp_counts`
    and `_midp_spread` of it, column by column the same numbers)."""
    from storyeval.compare._taub_blocks import TauBBlocks

    size = len(ia)
    observed, spread = np.empty(size), np.empty(size)
    more, tied, defined = (np.zeros(size, dtype=np.int64) for _ in range(3))

    def consume(rows: np.ndarray, block: np.ndarray) -> None:
        obs, perm = block[:, 0], block[:, 1:].T  # perm: each row's swaps contiguous
        observed[rows] = obs
        more[rows], tied[rows], defined[rows] = _midp_counts(obs, perm, alternative)
        spread[rows] = _midp_spread(obs, perm, alpha, alternative)

    undone = TauBBlocks(swapped, mean, observed_means, scale, shift, H, ih, ia, ib, sa, sb,
                        tie_rtol).run(consume)
    return observed, more, tied, defined, spread, undone


def _pearson_deltas(swapped: np.ndarray, mean: np.ndarray, H: np.ndarray, ih: np.ndarray,
                    ia: np.ndarray, ib: np.ndarray, sa: np.ndarray,
                    sb: np.ndarray) -> np.ndarray:
    """(N + 1, rows) Pearson deltas ``r(h, a*) - r(h, b*)`` of every swap from inner products
    of centred system-mean vectors (S systems): with ``M`` the centred means, ``W`` a swap's
    centred swapped sums (row 0: none swapped) and ``a* = sa M_a + sb W_b - sa W_a``,
    ``b* = sb M_b - sb W_b + sa W_a``, every ``h . a*`` and ``|a*|^2`` is a sum of products
    that are computed once per measure or per distinct pair (a, b), whatever the criteria, in
    blocks of 64 MB. Pearson is affine-invariant, so the z-scale of the swapped sums is kept.
    A constant swapped vector gives NaN, as the coefficient is undefined there."""
    W = swapped - swapped.mean(axis=1, keepdims=True)  # (N+1, S, K)
    M = mean - mean.mean(axis=0, keepdims=True)  # (S, K)
    from storyeval.compare._taub_blocks import criterion_columns

    Hu, hrow = criterion_columns(H, ih)
    Hc = Hu - Hu.mean(axis=0, keepdims=True)  # (S, C)
    hh = (Hc * Hc).sum(0)  # (C,)
    # h . W_k and h . M_k for the (criterion, measure) combinations of the rows only (every
    # C x K one could be far more: 2,000 criteria x 6,000 measures of a simulation asked for
    # 179 GiB), in blocks of 64 MB of gathered swaps
    total, S = W.shape[0], W.shape[1]
    combos, crow = np.unique(np.r_[np.c_[hrow, ia], np.c_[hrow, ib]], axis=0,
                             return_inverse=True)
    crow = crow.ravel()
    ca, cb = crow[:len(ia)], crow[len(ia):]
    G = np.empty((total, len(combos)))
    step = max(1, int(2**26 // (8 * total * S)))
    for lo in range(0, len(combos), step):
        c, k = combos[lo:lo + step, 0], combos[lo:lo + step, 1]
        G[:, lo:lo + step] = np.einsum("nsj,sj->nj", W[:, :, k], Hc[:, c])
    g = np.einsum("sj,sj->j", Hc[:, combos[:, 0]], M[:, combos[:, 1]])
    ww = np.einsum("nsk,nsk->nk", W, W)  # |W_k|^2
    mw = np.einsum("sk,nsk->nk", M, W)  # M_k . W_k
    mm = (M * M).sum(0)
    pairs, prow = np.unique(np.stack([ia, ib], 1), axis=0, return_inverse=True)
    prow = prow.ravel()
    wab, mab, mba = (np.empty((total, len(pairs))) for _ in range(3))
    step = max(1, int(2**26 // (8 * total * S)))
    for lo in range(0, len(pairs), step):
        pa, pb = pairs[lo:lo + step, 0], pairs[lo:lo + step, 1]
        Wa, Wb = W[:, :, pa], W[:, :, pb]
        wab[:, lo:lo + step] = np.einsum("nsr,nsr->nr", Wa, Wb)
        mab[:, lo:lo + step] = np.einsum("sr,nsr->nr", M[:, pa], Wb)
        mba[:, lo:lo + step] = np.einsum("sr,nsr->nr", M[:, pb], Wa)
    s2 = sa * sb
    ha = sa * g[ca] + sb * G[:, cb] - sa * G[:, ca]
    hb = sb * g[cb] - sb * G[:, cb] + sa * G[:, ca]
    aa = (mm[ia] + ww[:, ib] + ww[:, ia] + 2 * s2 * mab[:, prow] - 2 * mw[:, ia]
          - 2 * s2 * wab[:, prow])
    bb = (mm[ib] + ww[:, ib] + ww[:, ia] - 2 * mw[:, ib] + 2 * s2 * mba[:, prow]
          - 2 * s2 * wab[:, prow])
    with np.errstate(invalid="ignore", divide="ignore"):
        scale_a = np.sqrt(hh[hrow] * np.maximum(aa, 0.0))
        scale_b = np.sqrt(hh[hrow] * np.maximum(bb, 0.0))
        ra = np.where(scale_a > 0, ha / scale_a, np.nan)
        rb = np.where(scale_b > 0, hb / scale_b, np.nan)
    return np.clip(ra, -1.0, 1.0) - np.clip(rb, -1.0, 1.0)


# The NumPy engines' seconds per (unit, permutation, pair of systems) of a Kendall coefficient,
# a unit being what the engine computes once, and the compiled kernel's share of that time.
# tau-b's pair signs are shared over criteria, so its unit is a distinct (a, b, orientations)
# of the rows; measured on the quiet 2-core machine, both engines on two threads: 630 units x
# 2,001 permutations x 45 pairs (10 systems) take 0.35 s by `_kendall_b_midp` (0.22 s of it
# the pair signs) and 0.19 s by the kernel, which spends most of it summarising the rows; at 100
# systems the kernel takes 4e-10 s per unit-pair (2.6 s for 630 x 2,001 x 4,950). tau-c's unit
# is a row (`_numpy_deltas`: 1.8 s for 2,610 rows x 1,001 x 45, loaded machine).
_NUMPY_PAIR_SECONDS = {"kendall_b": 4e-9, "kendall_c": 1.5e-8}
_COMPILED_SHARE = {"kendall_b": 0.1, "kendall_c": 0.35}


def _compiled_permutation(units: int, total: int, systems: int,
                          method: str = "kendall_c") -> bool:
    """Whether `system_permutation` runs its Kendall coefficients on the compiled kernel:
    numba installed and not switched off, and the time it saves over the NumPy engine above
    what loading it costs here (`numba_load_seconds`: nothing when loaded, a second with a warm
    cache, several on a first run that compiles it). ``units``: see `_NUMPY_PAIR_SECONDS`."""
    from storyeval.correlation.kendall_sorted import engine, numba_load_seconds

    if engine() != "numba":
        return False
    work = _NUMPY_PAIR_SECONDS[method] * units * total * systems * (systems - 1) / 2
    saved = work * (1.0 - _COMPILED_SHARE[method])
    return saved > numba_load_seconds("storyeval.correlation._permutation_numba")


# Mask matrices up to this size are drawn whole and multiplied at once (as before: the same
# product, bit for bit); larger ones (e.g. 1,000 permutations of 10^5 prompts: 800 MB) in
# blocks of `_MASK_BLOCK_BYTES`, whose BLAS products may differ from the whole product's in the
# last bits (BLAS sums in an order that depends on the matrix shape). Blocks of a few dozen
# rows cost 4x more: every product packs the whole (prompts x columns) matrix again.
_MASK_BYTES = 2**27
_MASK_BLOCK_BYTES = 2**27


def _prompt_masks(rng: np.random.Generator, n_permutations: int, P: int, block_bytes: int):
    """(start, masks) blocks of the (N + 1, P) float 0/1 mask matrix, row 0 the identity (no
    prompt swapped), row i > 0 ``rng.random(P) < 0.5`` of the i-th permutation: the same
    numbers as one ``rng.random((N, P))`` draw (the generator fills row by row). Every block is
    a view of one buffer of ``block_bytes``, refilled for the next block."""
    total = n_permutations + 1
    step = min(total, max(1, block_bytes // (8 * max(P, 1))))
    buffer = np.empty((step, P))
    draw = max(1, 2**20 // max(P, 1))  # rows of uniforms drawn at once (8 MB)
    for start in range(0, total, step):
        masks = buffer[:min(total, start + step) - start]
        first = 0
        if start == 0:
            masks[0] = 0.0
            first = 1
        for row in range(first, len(masks), draw):
            end = min(len(masks), row + draw)
            np.less(rng.random((end - row, P)), 0.5, out=masks[row:end])
        yield start, masks


def _swapped_means(sums: np.ndarray, count: np.ndarray, n_permutations: int,
                   random_state: int | None) -> np.ndarray:
    """(N + 1, S, K): every permutation's sums over the swapped prompts of each system and
    column, divided by the system's stories (one matrix product per block of permutations;
    row 0, no prompt swapped, is 0)."""
    P, S, K = sums.shape
    rng = np.random.default_rng(random_state)
    flat = sums.reshape(P, -1)
    total = n_permutations + 1
    whole = total * P * 8 <= _MASK_BYTES
    out = np.empty((total, S * K))
    for start, masks in _prompt_masks(rng, n_permutations, P,
                                      _MASK_BYTES if whole else _MASK_BLOCK_BYTES):
        out[start:start + len(masks)] = masks @ flat
    return out.reshape(total, S, K) / count[None, :, None]


def _numpy_deltas(rows: np.ndarray, swapped: np.ndarray, mean: np.ndarray,
                  observed_means: np.ndarray, scale: np.ndarray, shift: np.ndarray,
                  H: np.ndarray, ia: np.ndarray, ib: np.ndarray, sa: np.ndarray, sb: np.ndarray,
                  tie_rtol: float, method: str) -> np.ndarray:
    """(N + 1, len(rows)) deltas ``r(h, a*) - r(h, b*)`` of the given rows, every coefficient
    (the NumPy engine of `system_permutation`)."""
    from storyeval.correlation.resampled import direct
    from storyeval.correlation.ties import tie_values

    S = mean.shape[0]
    sa, sb, ia, ib = sa[rows], sb[rows], ia[rows], ib[rows]
    a_s = mean[:, ia] * sa
    b_s = mean[:, ib] * sb
    move = swapped[:, :, ib] * sb - swapped[:, :, ia] * sa
    A = (a_s[None] + move) * scale[ia] + sa * shift[ia]
    Bm = (b_s[None] - move) * scale[ib] + sb * shift[ib]
    A[0] = observed_means[:, ia] * sa
    Bm[0] = observed_means[:, ib] * sb
    A = tie_values(A, "system", axis=1, rtol=tie_rtol)
    Bm = tie_values(Bm, "system", axis=1, rtol=tie_rtol)
    Hr = np.broadcast_to(H[:, rows][None], A.shape)
    V = np.stack([Hr, A, Bm], axis=-1).transpose(0, 2, 1, 3)  # (N+1, R, S, 3)
    r = direct(V, np.ones(S), np.array([1, 2]), np.array([0, 0]), method)  # (N+1, R, 2)
    return r[..., 0] - r[..., 1]


def _midp_interval(observed: np.ndarray, perm: np.ndarray, alpha: float,
                   alternative: str = "two-sided") -> tuple[np.ndarray, np.ndarray]:
    """The values ``delta0`` that the mid-p test of the location shift ``delta - delta0`` does
    not reject at ``alpha``, against the swaps' ``delta*`` ordered as the test orders them
    (`_oriented`): two-sided ``observed +- c``; ``"greater"`` ``[observed - c, inf)``;
    ``"less"`` ``(-inf, observed + c]`` (``c`` from `_midp_spread`)."""
    return _spread_interval(observed, _midp_spread(observed, perm, alpha, alternative),
                            alternative)


def _midp_spread(observed: np.ndarray, perm: np.ndarray, alpha: float,
                 alternative: str = "two-sided") -> np.ndarray:
    """The half-width ``c`` of `_midp_interval` per column. The mid-p of ``x`` is ``(#{d > x}
    + (1 + #{d = x}) / 2) / (N + 1)``, nonincreasing in ``x``; the accepted ``x`` are those
    below ``c``, a value of the ordered ``delta*`` (``c`` is then shrunk by a few tolerances
    so that an observed ``delta = c`` lies outside, as the test rejects it): the test at 0 and
    the interval agree by construction. Swaps with an undefined difference (NaN) are left out
    as the test leaves them. Every column at once, by one partition (O(N) per column); the
    compiled kernel (`storyeval.correlation._permutation_numba._midp_summary`)
    repeats these operations row by row."""
    parts = [_midp_spread_block(observed[b], perm[:, b], alpha, alternative)
             for b in _column_blocks(perm.shape)]
    return np.concatenate(parts) if parts else np.zeros(0)


def _midp_spread_block(observed: np.ndarray, perm: np.ndarray, alpha: float,
                       alternative: str) -> np.ndarray:
    """`_midp_spread` of one block of columns."""
    _, d = _oriented(observed, perm, alternative)
    n, rows = d.shape
    defined = (~np.isnan(d)).sum(axis=0)
    cut = alpha * (defined + 1)  # undefined swaps are left out, as the test leaves them
    # the test rejects just above v when #{d > v} < cut - 1/2, i.e. #{d > v} <= top: the first
    # such v is the (top + 1)-th largest value (one partition per column, no sort); undefined
    # swaps sort below every value
    top = np.ceil(cut - 0.5).astype(np.int64) - 1
    spread = np.full(rows, np.inf)
    has = top >= 0
    if has.any():
        k = np.where(has, np.maximum(0, n - 1 - top), n - 1)
        filled = np.where(np.isnan(d), -np.inf, d)
        v = np.partition(filled, np.unique(k), axis=0)[k, np.arange(rows)]
        above = (d > v + _TOL).sum(axis=0)
        tied = (np.abs(d - v) <= _TOL).sum(axis=0)
        at = above + 0.5 * (1 + tied)  # the mid-p count at v itself
        # v itself rejected: [0, v); else v accepted and anything above rejected: [0, v]
        with np.errstate(invalid="ignore"):
            width = np.where(at < cut, v - 4 * _TOL * np.maximum(1.0, np.abs(v)), v)
        spread = np.where(has, np.where(np.isfinite(v), width, np.nan), np.inf)
    return np.where(np.isfinite(observed), spread, np.nan)


def _spread_interval(observed: np.ndarray, spread: np.ndarray,
                     alternative: str = "two-sided") -> tuple[np.ndarray, np.ndarray]:
    """``observed +- spread`` on the alternative's sides (a bound within `_TOL` of 0 is 0)."""
    rows = len(observed)
    if alternative == "greater":
        low, high = observed - spread, np.full(rows, np.inf)
    elif alternative == "less":
        low, high = np.full(rows, -np.inf), observed + spread
    else:
        low, high = observed - spread, observed + spread
    with np.errstate(invalid="ignore"):
        return (np.where(np.abs(low) <= _TOL, 0.0, low),
                np.where(np.abs(high) <= _TOL, 0.0, high))


def _permutation_interval(observed: np.ndarray, perm: np.ndarray,
                          confidence_level: float) -> tuple[np.ndarray, np.ndarray]:
    """``observed +- d_(k)``, ``d_(k)`` the k-th smallest ``|delta*|`` of each column,
    ``k = ceil(confidence_level (N + 1))`` (see `system_permutation`)."""
    n = perm.shape[0]
    k = math.ceil(confidence_level * (n + 1) - 1e-9)
    with np.errstate(invalid="ignore"):
        spread = (np.full(perm.shape[1], np.inf) if k > n
                  else np.partition(np.abs(perm), k - 1, axis=0)[k - 1])
    spread = np.where(np.isfinite(observed), spread, np.nan)
    low, high = observed - spread, observed + spread
    # a bound equal to 0 in exact arithmetic (|delta| tied with the quantile) prints as 0
    return np.where(np.abs(low) <= _TOL, 0.0, low), np.where(np.abs(high) <= _TOL, 0.0, high)
