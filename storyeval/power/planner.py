"""How many stories (or systems) does a comparison of two measures need? Power by simulation.

A researcher planning a human evaluation wants to know how many stories to have rated so that
the comparison test of `storyeval meta` (`storyeval.compare.procedures`) detects that measure a
agrees with the humans better than measure b by ``delta`` (in the coefficient's units) with a
given probability. `plan_power` answers by simulation, for a grid of sizes ``n``:

* the three correlations ``r_h1 = r(h, a)``, ``r_h2 = r(h, b) = r_h1 - delta`` and
  ``r_12 = r(a, b)`` are **assumed** (``r_human``, ``r_between``) or **estimated from pilot
  data** (a `Dataset` or wide table, two measures and a criterion; ``delta`` defaults to the
  observed difference);
* data are drawn from a Gaussian copula whose latent correlations are chosen so that the
  population coefficients equal the targets: Greiner's relations (``rho = sin(pi tau / 2)``
  for Kendall, ``2 sin(pi rho_s / 6)`` for Spearman) between continuous variables, and a
  numerical calibration (on 60,000 common draws; exact for Pearson) where the human score is discrete;
* **overall level**: ``n`` stories; the human score takes the values of ``human_scale``
  (default ``"ratings"``: the distribution of the mean of three 1-5 ratings of
  ``benchmarks/bench_calibration.py``, 13 values, realistic ties; ``"continuous"``; or the
  pilot criterion's own values in pilot mode);
* **system level**: ``n`` systems x ``prompts`` prompts; each story's (h, a, b) is
  ``sqrt(g) Q_s (1, 1, 1) + e_sp``: a quality ``Q_s ~ N(0, 1)`` of the system that the human
  and both measures share equally, and story terms ``e_sp ~ N(0, P (R - g 11'))`` (R the
  latent correlations, P prompts), so the system means are exactly ``N(0, R)``. ``g`` is
  ``shared_quality`` times its largest possible value ``1 / (1' R^-1 1)``. Under the null
  (``delta = 0``) a and b are then exchangeable within prompts, the assumption of
  ``permutation-random`` (which swaps whole prompts, as `compare.system_permutation` does);
  the other tests are applied to the system means;
* the test (``auto``: the calibrated default of `storyeval.compare.procedures.calibrated_test`) is
  applied two-sided at level ``alpha`` to every replication at once (replications are a batch
  axis), and power is the share of ``p < alpha`` with its Monte Carlo standard error.

The test ``fisher-z`` is the textbook comparison of two correlations measured on *independent*
samples of ``n`` stories each (a and b rated in two separate studies); its power has the
closed form `fisher_z_power`, which the tests use to check the simulator.

The model is an approximation of real data (normal latent scores, one common correlation
structure at both levels): use the result to plan an order of magnitude, not as a guarantee.

The simulated data (scales, copula, calibration) are in `storyeval.power.model`, the
tests applied to a batch of replications in `storyeval.power.batch`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import special

from storyeval._progress import progress_bar
from storyeval.compare.procedures import MIN_SYSTEMS, SYSTEM_PERMUTATION_TESTS
from storyeval.exceptions import InputError
from storyeval.power.batch import _coef, _perm_random, _pvalues
from storyeval.power.model import (
    _calibrate,
    _draw,
    _greiner,
    _Human,
    _latent_matrix,
    _ratings_scale,
    _scale_from_values,
)

__all__ = ["COEFFICIENTS", "PLANNER_TESTS", "PowerResult", "fisher_z_power", "plan_power",
           "simulate_power"]

COEFFICIENTS = ("kendall_b", "pearson", "spearman")
PLANNER_TESTS = {
    "overall": ("auto", "williams", "ustat", "jackknife", "fisher-z"),
    "system": ("auto", "permutation-midp", "permutation-random", "williams", "ustat",
               "jackknife"),
}
DEFAULT_N = {"overall": (25, 50, 100, 200, 400, 800), "system": (5, 10, 20, 40)}
_SPEARMAN_BUDGET = 5e7  # replications x n^2 of Spearman's jackknife per size
_CHUNK = 3_000_000  # values per replication chunk (stories x replications)
_SLICE = 250_000  # values per slice of a chunk tested at once (the bar moves after each)


# ------------------------------------------------------------------------------------------------
# closed form


def fisher_z_power(r1: float, r2: float, n1: int, n2: int | None = None,
                   alpha: float = 0.05) -> float:
    """Power of the two-sided Fisher-z test of two Pearson correlations from independent
    samples of ``n1`` and ``n2`` items:
    ``Phi(|z1 - z2| / s - z_{1-alpha/2}) + Phi(-|z1 - z2| / s - z_{1-alpha/2})`` with
    ``z = atanh(r)`` and ``s = sqrt(1 / (n1 - 3) + 1 / (n2 - 3))``.

    >>> round(fisher_z_power(0.5, 0.3, 200), 3)
    0.663
    """
    n2 = n1 if n2 is None else n2
    if min(n1, n2) <= 3:
        raise InputError("fisher_z_power needs more than 3 items per sample")
    s = math.sqrt(1.0 / (n1 - 3) + 1.0 / (n2 - 3))
    d = abs(math.atanh(r1) - math.atanh(r2)) / s
    q = float(special.ndtri(1 - alpha / 2))
    return float(special.ndtr(d - q) + special.ndtr(-d - q))


# ------------------------------------------------------------------------------------------------
# the simulator
def simulate_power(r_h1: float, r_h2: float, r_12: float, *, n: Any = None,
                   level: str = "overall", coef: str = "kendall_b", test: str = "auto",
                   alpha: float = 0.05, human_scale: Any = "ratings", prompts: int = 50,
                   shared_quality: float = 0.5, replications: int = 2000,
                   n_permutations: int = 100, stop_power: float | None = None,
                   seed: int | None = 0, show_progress: bool | None = None) -> pd.DataFrame:
    """Simulated power of ``test`` for each size of the grid ``n`` (see the module doc).

    ``r_h1, r_h2, r_12``: the population coefficients r(h, a), r(h, b), r(a, b) (at the
    system level: of the system means). ``human_scale``: ``"ratings"``, ``"continuous"`` or
    ``(values, probabilities)`` (overall level; system means are continuous). ``stop_power``:
    sizes larger than the first one whose power reaches it are not simulated (None: all).
    ``show_progress``: a progress bar per size on standard error (None: on a terminal only,
    and not under ``STORYEVAL_NO_PROGRESS=1``). Returns the tidy table ``n, stories, power, mc_se, test, coef, level, alpha, delta,
    n_replications``.
    """
    level, coef, test = _check_design(level, coef, test)
    alpha = _check_fraction(alpha, "alpha (--alpha)")
    if not 0 < shared_quality < 1:
        raise InputError(f"shared_quality must be in (0, 1), not {shared_quality!r}")
    if int(replications) < 10:
        raise InputError(f"replications (--replications) must be at least 10, not "
                         f"{replications!r}")
    replications = int(replications)
    for name, r in (("r(h,a)", r_h1), ("r(h,b)", r_h2), ("r(a,b) (--r-between)", r_12)):
        if not -1 < float(r) < 1:
            raise InputError(f"{name} must be strictly between -1 and 1, not {r!r}")
    grid = _check_grid(n, level, test, prompts)
    if human_scale == "ratings":
        human = _Human(_ratings_scale())
    elif human_scale == "continuous" or human_scale is None or level == "system":
        human = _Human(None)
    else:
        human = _Human(human_scale)
    if test == "fisher-z":
        R = np.eye(3)  # two independent samples: (h, a) and (h', b), each bivariate
        lat = (_calibrate((r_h1, r_h2), coef, human) if human.discrete
               else [_greiner(r_h1, coef), _greiner(r_h2, coef)])
    else:
        R = _latent_matrix(r_h1, r_h2, r_12, coef, human)
    L = np.linalg.cholesky(R) if test != "fisher-z" else None
    if level == "system":
        g = shared_quality / float(np.ones(3) @ np.linalg.solve(R, np.ones(3)))
        vals, vecs = np.linalg.eigh(prompts * (R - g))
        L_story = vecs * np.sqrt(vals.clip(0))
    rng = np.random.default_rng(seed)
    rows = []
    for size in grid:
        stories = size * (prompts if level == "system" else 1)
        reps = replications
        if test == "jackknife" and coef == "spearman" and level == "overall":
            # leave-one-out ranks cost O(n^2) per replication: bounded work per size
            reps = min(replications, max(200, int(_SPEARMAN_BUDGET // (size * size))))
        step = max(1, min(reps, _CHUNK // max(stories, 1)))
        if level == "overall" and ((test in ("ustat", "jackknife") and not human.discrete)
                                   or (test == "jackknife" and coef == "spearman")):
            step = max(1, min(step, int(2e7 // (size * size))))
        if test in SYSTEM_PERMUTATION_TESTS:
            step = max(1, min(step, int(1e7 // (n_permutations * max(size * size // 2, prompts)))))
        hits = 0
        done = 0
        bar = progress_bar(total=reps, desc=f"simulating n={size}", unit="rep",
                           show=show_progress)
        while done < reps:
            k = min(step, reps - done)
            done += k
            if level == "overall" and test == "fisher-z":
                p = _fisher_z_batch(rng, k, size, lat, human)
            elif level == "overall":
                h, a, b = _draw(rng, (k, size), L)
                hits += _hits_in_slices(test, human(h), a, b, coef, alpha, bar)
                continue
            else:
                q = math.sqrt(g) * rng.standard_normal((k, size, 1))
                h, a, b = (q + ev for ev in _draw(rng, (k, size, prompts), L_story))
                if test in SYSTEM_PERMUTATION_TESTS:
                    p = _perm_random(h, a, b, coef, n_permutations, rng,
                                     "random" if test == "permutation-random" else "mid")
                else:
                    p = _pvalues(test, h.mean(-1), a.mean(-1), b.mean(-1), coef)
            hits += int(np.sum(np.asarray(p) < alpha))  # an undefined p (NaN) is no detection
            bar.update(k)  # after the work: the bar shows what is done
        bar.close()
        power = hits / reps
        rows.append({"n": size, "stories": stories, "power": power,
                     "mc_se": math.sqrt(max(power * (1 - power), 0.25 / reps) / reps),
                     "test": test, "coef": coef, "level": level, "alpha": alpha,
                     "delta": r_h1 - r_h2, "n_replications": reps})
        if stop_power is not None and power >= stop_power:
            break
    return pd.DataFrame(rows)


def _hits_in_slices(test: str, h: np.ndarray, a: np.ndarray, b: np.ndarray, coef: str,
                    alpha: float, bar) -> int:
    """Detections among the drawn replications (rows), tested in slices of about `_SLICE`
    values so that the progress bar moves within a chunk: the draws are made for the whole
    chunk (the random stream is that of 0.4.0) and the replications are independent rows, so
    the p-values are those of one call on the chunk."""
    rows = max(1, _SLICE // max(h.shape[-1], 1))
    hits = 0
    for lo in range(0, h.shape[0], rows):
        part = slice(lo, lo + rows)
        p = _pvalues(test, h[part], a[part], b[part], coef)
        hits += int(np.sum(np.asarray(p) < alpha))  # an undefined p (NaN) is no detection
        bar.update(min(rows, h.shape[0] - lo))
    return hits


def _fisher_z_batch(rng, k, size, lat, human) -> np.ndarray:
    """Fisher-z test of r(h, a) on one sample against r(h', b) on an independent one."""
    rs = []
    for rho in lat:
        z, e = rng.standard_normal((2, k, size))
        x = rho * z + math.sqrt(1 - rho * rho) * e
        rs.append(_coef(human(z), x, "pearson"))
    with np.errstate(invalid="ignore", divide="ignore"):
        d = (np.arctanh(rs[0]) - np.arctanh(rs[1])) / math.sqrt(2.0 / (size - 3))
    return 2 * special.ndtr(-np.abs(d))


# ------------------------------------------------------------------------------------------------
# checks


def _check_design(level: str, coef: str, test: str) -> tuple[str, str, str]:
    from storyeval.compare.procedures import calibrated_test

    if level not in PLANNER_TESTS:
        raise InputError(f"level (--level) must be 'overall' or 'system', not {level!r}")
    if coef not in COEFFICIENTS:
        raise InputError(f"coef (--coef) must be one of {', '.join(COEFFICIENTS)}, not "
                         f"{coef!r}")
    if test not in PLANNER_TESTS[level]:
        raise InputError(f"test (--test) {test!r} is not available at the {level} level; use "
                         f"one of {', '.join(PLANNER_TESTS[level])}")
    if test == "auto":
        test = calibrated_test(level, coef)
    if test == "ustat" and coef != "kendall_b":
        raise InputError(f"test (--test) 'ustat' is for Kendall tau-b, not {coef!r}")
    if test == "fisher-z" and coef != "pearson":
        raise InputError("test (--test) 'fisher-z' compares Pearson correlations; use "
                         "--coef pearson")
    return level, coef, test


def _check_fraction(value: float, name: str) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number in (0, 1), not {value!r}") from None
    if not 0 < value < 1:
        raise InputError(f"{name} must be in (0, 1), not {value!r}")
    return value


def _check_grid(n: Any, level: str, test: str, prompts: int) -> list[int]:
    grid = list(DEFAULT_N[level] if n is None else np.atleast_1d(n))
    try:
        out = sorted({int(v) for v in grid if float(v) == int(v)})
    except (TypeError, ValueError):
        raise InputError(f"n (--n) must be whole numbers, not {n!r}") from None
    if len(out) != len(grid) or not out:
        raise InputError(f"n (--n) must be distinct whole numbers, not {n!r}")
    # the system-level minimum is meta's (`storyeval.compare.procedures.MIN_SYSTEMS`): fewer systems
    # give a coefficient of +-1 or none, reported as NaN there and refused here
    low = 5 if test == "fisher-z" else (4 if level == "overall" else MIN_SYSTEMS)
    if out[0] < low:
        raise InputError(f"n (--n) must be at least {low} {'systems' if level == 'system' else 'stories'}, "
                         f"not {out[0]}")
    if level == "system" and (int(prompts) != prompts or prompts < 2):
        raise InputError(f"prompts (--prompts) must be a whole number >= 2, not {prompts!r}")
    return out


# ------------------------------------------------------------------------------------------------
# front end


@dataclass
class PowerResult:
    """Power per size (``table``), the smallest size of the grid reaching the target power
    (``required_n``, None if none does) and the settings of the simulation."""

    table: pd.DataFrame
    required_n: int | None
    target_power: float
    settings: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def unit(self) -> str:
        return "systems" if self.settings.get("level") == "system" else "stories"

    def summary(self) -> str:
        """One paragraph: what was planned and the answer."""
        s = self.settings
        head = (f"{s['coef']} at the {s['level']} level, test {s['test']} (two-sided, alpha "
                f"{s['alpha']:g}); r(h,a) = {s['r_h1']:.3f}, r(h,b) = {s['r_h2']:.3f}, "
                f"r(a,b) = {s['r_12']:.3f}: delta = {s['delta']:.3f}")
        if s["level"] == "system":
            head += f", {s['prompts']} prompts per system"
        if self.required_n is None:
            answer = (f"power {self.target_power:g} is not reached by n = "
                      f"{int(self.table['n'].max())} {self.unit}; extend the grid (--n)")
        else:
            row = self.table.set_index("n").loc[self.required_n]
            answer = (f"smallest n with power >= {self.target_power:g}: {self.required_n} "
                      f"{self.unit} (power {row['power']:.3f} +- {row['mc_se']:.3f}, "
                      f"{int(row['n_replications'])} replications)")
        return f"{head}.\n{answer}."

    def plot(self, path: str | Path) -> Path:
        """Power against n (log scale) with 95% Monte Carlo bars, the target power and the
        required n; written atomically (`storyeval._figure_io.save_figure`)."""
        from storyeval._figure_io import _pyplot, save_figure

        plt = _pyplot()
        t = self.table
        fig, ax = plt.subplots(figsize=(6, 4))
        try:
            ax.errorbar(t["n"], t["power"], yerr=1.96 * t["mc_se"], marker="o", capsize=3,
                        label=f"{self.settings['test']} ({self.settings['coef']})")
            ax.axhline(self.target_power, color="grey", ls="--", lw=1,
                       label=f"target {self.target_power:g}")
            ax.axhline(self.settings["alpha"], color="grey", ls=":", lw=1,
                       label=f"alpha {self.settings['alpha']:g}")
            if self.required_n is not None:
                ax.axvline(self.required_n, color="tab:red", lw=1,
                           label=f"n = {self.required_n}")
            ax.set_xscale("log")
            ax.set_xticks(list(t["n"]))
            ax.set_xticklabels([str(v) for v in t["n"]])
            ax.minorticks_off()
            ax.set_ylim(0, 1.02)
            ax.set_xlabel(f"n ({self.unit})")
            ax.set_ylabel("power")
            ax.set_title(f"{self.settings['level']} level, delta = "
                         f"{self.settings['delta']:.3f}", fontsize=10)
            ax.margins(x=0.08)
            ax.legend(fontsize=8, loc="upper left")
            fig.tight_layout()
            return save_figure(fig, path, dpi=120)
        finally:
            plt.close(fig)

    def to_json(self) -> dict[str, Any]:
        return {"required_n": self.required_n, "target_power": self.target_power,
                "settings": self.settings, "notes": self.notes,
                "table": self.table.to_dict("records")}


def pilot_correlations(data: Any, measures: tuple[str, str] | list[str], criterion: str, *,
                       level: str = "overall", coef: str = "kendall_b"
                       ) -> dict[str, Any]:
    """r(h, a), r(h, b), r(a, b) of a pilot `Dataset` or wide table (index ``system,
    prompt_id``) at ``level``, stories with a missing value left out; measures where lower is
    better (negative r with h) are reversed. Also the criterion's values (its scale), the
    number of prompts and notes."""
    from storyeval.correlation.levels import level_data

    notes: list[str] = []
    if len(measures) != 2 or measures[0] == measures[1]:
        raise InputError(f"measures (--measures) must name two different measures, not "
                         f"{list(measures)!r}")
    if hasattr(data, "table") and hasattr(data, "resolve_criterion"):
        criterion = data.resolve_criterion(criterion)
        if hasattr(data, "catalogue"):  # display names and globs, as --metrics takes them
            from storyeval.data.selection import resolve_measure

            measures = [resolve_measure(data.catalogue, m) for m in measures]
        wide = data.table
        ref = getattr(data, "reference_system", None)
        if ref is not None and ref in wide.index.get_level_values(0):
            wide = wide.drop(ref, level=0)
            notes.append(f"pilot: the reference system {ref!r} is left out")
    elif isinstance(data, pd.DataFrame):
        wide = data
    else:
        raise InputError("data must be a storyeval Dataset or a wide DataFrame")
    cols = [criterion, *measures]
    missing = [c for c in cols if c not in wide.columns]
    if missing:
        which = "criterion (--criterion)" if criterion in missing else "measures (--measures)"
        raise InputError(f"{which}: {missing} not in the pilot data; its columns are "
                         f"{list(wide.columns)[:20]}")
    sub = wide[cols].apply(pd.to_numeric, errors="coerce").dropna()
    dropped = len(wide) - len(sub)
    if dropped:
        notes.append(f"pilot: {dropped} stories with a missing value left out")
    if len(sub) < 10:
        raise InputError(f"the pilot data have {len(sub)} complete stories; at least 10 are "
                         "needed to estimate the correlations")
    frame = level_data(sub, cols, level=level)
    X = np.asarray(frame, dtype=float)
    if level == "system" and X.shape[0] < MIN_SYSTEMS:
        raise InputError(f"the pilot data have fewer than {MIN_SYSTEMS} systems: no system-level "
                         "correlation to estimate")
    h, a, b = X[:, 0], X[:, 1], X[:, 2]
    r_h1, r_h2, r_12 = (float(_coef(x[None], y[None], coef)[0]) for x, y in
                        ((h, a), (h, b), (a, b)))
    if not all(np.isfinite([r_h1, r_h2, r_12])):
        raise InputError("a pilot correlation is undefined (a constant column)")
    sa, sb = (-1.0 if r_h1 < 0 else 1.0), (-1.0 if r_h2 < 0 else 1.0)
    for s, m in ((sa, measures[0]), (sb, measures[1])):
        if s < 0:
            notes.append(f"pilot: {m!r} correlates negatively with {criterion!r}; reversed "
                         "(lower is better)")
    prompts = (sub.index.get_level_values(1).nunique() if isinstance(sub.index, pd.MultiIndex)
               and sub.index.nlevels > 1 else None)
    return {"r_h1": sa * r_h1, "r_h2": sb * r_h2, "r_12": sa * sb * r_12,
            "criterion": criterion, "criterion_values": sub[criterion].to_numpy(float),
            "prompts": prompts, "n_pilot": int(X.shape[0]), "notes": notes}


def plan_power(r_human: Any = None, r_between: float | None = None, *,
               delta: float | None = None, data: Any = None,
               measures: tuple[str, str] | list[str] | None = None,
               criterion: str | None = None, level: str = "overall",
               coef: str = "kendall_b", test: str = "auto", power: float = 0.8,
               alpha: float = 0.05, n: Any = None, human_scale: Any = None,
               prompts: int | None = None, shared_quality: float = 0.5,
               replications: int = 2000, n_permutations: int = 100,
               full_grid: bool = False, seed: int | None = 0,
               show_progress: bool | None = None) -> PowerResult:
    """Sample size needed to detect ``delta`` with probability ``power`` (see the module doc).

    Assumed mode: ``r_human = (r_h1, r_h2)`` (``delta = r_h1 - r_h2``) or ``r_human = r_h1``
    with ``delta`` (``r_h2 = r_h1 - delta``), and ``r_between = r(a, b)``. Pilot mode:
    ``data`` (a `Dataset` or wide table), ``measures = (a, b)`` and ``criterion``; the three
    coefficients are estimated at ``level`` and ``delta`` defaults to the observed one (a's
    correlation is kept, b's set to ``r_h1 - delta``); at the overall level the human score
    takes the pilot criterion's values, at the system level ``prompts`` defaults to the
    pilot's. Sizes beyond the first that reaches ``power`` are not simulated unless
    ``full_grid``. ``show_progress``: progress bars of the simulation (None: on a terminal
    only; see `simulate_power`).

    >>> res = plan_power((0.5, 0.4), 0.6, coef="pearson", n=[100, 400], replications=200)
    >>> list(res.table.columns[:4])
    ['n', 'stories', 'power', 'mc_se']
    """
    target = _check_fraction(power, "power (--power)")
    level, coef, test_name = _check_design(level, coef, test)
    notes: list[str] = []
    settings: dict[str, Any] = {}
    if data is not None:
        if r_human is not None or r_between is not None:
            raise InputError("give either pilot data (--data/--dataset with --measures, "
                             "--criterion) or assumed correlations (--r-human, --r-between), "
                             "not both")
        if measures is None or criterion is None:
            raise InputError("pilot mode needs measures (--measures A,B) and a criterion "
                             "(--criterion)")
        pilot = pilot_correlations(data, list(measures), criterion, level=level, coef=coef)
        notes += pilot["notes"]
        r_h1, r_12 = pilot["r_h1"], pilot["r_12"]
        observed = pilot["r_h1"] - pilot["r_h2"]
        d = observed if delta is None else float(delta)
        r_h2 = r_h1 - d
        if human_scale is None and level == "overall":
            human_scale = _scale_from_values(pilot["criterion_values"]) or "continuous"
        if prompts is None and level == "system":
            prompts = pilot["prompts"] or 50
        settings.update(mode="pilot", measures=list(measures), criterion=pilot["criterion"],
                        n_pilot=pilot["n_pilot"], observed_delta=observed)
        notes.append(f"pilot ({pilot['n_pilot']} {'systems' if level == 'system' else 'stories'}"
                     f"): r(h,a) = {pilot['r_h1']:.3f}, r(h,b) = {pilot['r_h2']:.3f}, r(a,b) = "
                     f"{r_12:.3f}, observed delta = {observed:.3f}")
        if abs(d) < 1e-12:
            notes.append("delta is 0: the table shows the type-I error, not power")
    else:
        if measures is not None or criterion is not None:
            raise InputError("measures (--measures) and criterion (--criterion) need pilot "
                             "data (--data or --dataset)")
        if r_human is None or r_between is None:
            raise InputError("give assumed correlations (--r-human A[,B] and --r-between R) "
                             "or pilot data (--data/--dataset with --measures and --criterion)")
        rh = [float(v) for v in np.atleast_1d(r_human)]
        if len(rh) == 2:
            if delta is not None:
                raise InputError("--delta is implied by two values of --r-human (r(h,a) - "
                                 "r(h,b)); give one value of --r-human with --delta, or two")
            r_h1, r_h2 = rh
        elif len(rh) == 1:
            if delta is None:
                raise InputError("with one value of --r-human, --delta is needed")
            r_h1, r_h2 = rh[0], rh[0] - float(delta)
        else:
            raise InputError(f"--r-human takes one or two values, not {len(rh)}")
        r_12 = float(r_between)
        settings.update(mode="assumed")
    if not -1 < r_h2 < 1:
        raise InputError(f"r(h,b) = r(h,a) - delta = {r_h2:g} is outside (-1, 1): --delta "
                         "too large")
    if human_scale is None:
        human_scale = "ratings"
    if prompts is None:
        prompts = 50
    table = simulate_power(r_h1, r_h2, r_12, n=n, level=level, coef=coef, test=test_name,
                           alpha=alpha, human_scale=human_scale, prompts=prompts,
                           shared_quality=shared_quality, replications=replications,
                           n_permutations=n_permutations,
                           stop_power=None if full_grid else target, seed=seed,
                           show_progress=show_progress)
    reached = table.loc[table["power"] >= target, "n"]
    required = int(reached.iloc[0]) if len(reached) else None
    scale = ("continuous" if level == "system" or human_scale == "continuous" else
             "mean of three 1-5 ratings" if human_scale == "ratings" else
             f"{len(human_scale[0])} values of the pilot criterion")
    settings.update(level=level, coef=coef, test=test_name, alpha=float(alpha),
                    r_h1=float(r_h1), r_h2=float(r_h2), r_12=float(r_12),
                    delta=float(r_h1 - r_h2), human_scale=scale,
                    replications=int(replications), seed=seed)
    if level == "system":
        settings.update(prompts=int(prompts), shared_quality=shared_quality)
        if test_name in SYSTEM_PERMUTATION_TESTS:
            settings["n_permutations"] = int(n_permutations)
    grid = _check_grid(n, level, test_name, prompts)
    if len(table) < len(grid):
        notes.append(f"n > {required} not simulated (the target power is reached; "
                     "--full-grid simulates them)")
    if (table["n_replications"] < int(replications)).any():
        notes.append("Spearman's jackknife costs O(n^2) per replication: fewer replications "
                     "at the larger n (column n_replications)")
    if test_name == "fisher-z":
        notes.append("fisher-z: a and b on independent samples of n stories each (2n in all); "
                     "r(a,b) is not used")
    return PowerResult(table, required, target, settings, notes)
