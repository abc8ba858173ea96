"""How many human labels and how many judge calls: the cheapest prediction-powered design.

A study estimates a human mean (or a win rate, a mean of preferences) from ``n`` items labelled
by humans and judged, plus ``N`` items judged only (PPI / PPI++, `storyeval.power.ppi`). Human
labels cost ``c_h`` each, judge calls ``c_j`` each (every labelled item is judged too, so the
judge is called ``n + N`` times). From a pilot (human and judge scores on some items),
`plan_label_budget` gives the ``(n, N)`` that reaches a target interval width, standard error
or power at the least cost, or the most precise design a budget buys, and the human-only
design that would reach the same precision. `simulate_label_budget` checks the predicted width
by drawing studies of that design from the pilot.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from storyeval.exceptions import InputError

__all__ = ["LabelBudget", "plan_label_budget", "simulate_label_budget"]

ROUNDINGS = ("conservative", "nearest")


@dataclass(frozen=True)
class LabelBudget:
    """A label budget: how many human labels and judge calls, what they cost and buy.

    Attributes
    ----------
    n_human : int
        Items to label by humans (each also judged).
    n_judge : int
        Judge calls: ``n_human + n_unlabelled``.
    n_unlabelled : int
        Items judged only.
    cost : float
        ``n_human * cost_human + n_judge * cost_judge``.
    predicted_se, predicted_width : float
        Standard error and interval width (``2 q se``) of the design, from the pilot's
        variances and the planned lambda.
    lam : float
        The power-tuning lambda the design assumes (0: human labels only).
    ppi_corr : float
        Correlation of human and judge scores on the pilot (divisor n).
    effective_n : float
        Human labels that alone give ``predicted_se``.
    human_only_n, human_only_cost : int, float
        The human-only design with at least the same precision (or, for a budget, the most
        labels the budget buys), and its cost.
    method : str
        ``"ppi++"`` or ``"classical"`` (the judge does not pay for itself).
    target : str
        What was asked (``"width 0.2"``, ``"se 0.05"``, ``"power 0.8 for effect 0.1"``,
        ``"budget 500"``).
    """

    n_human: int
    n_judge: int
    n_unlabelled: int
    cost: float
    cost_human: float
    cost_judge: float
    predicted_se: float
    predicted_width: float
    confidence_level: float
    interval: str
    lam: float
    ppi_corr: float
    effective_n: float
    human_only_n: int
    human_only_cost: float
    method: str
    target: str
    rounding: str
    n_pilot: int
    sd_human: float
    sd_judge: float

    def to_frame(self) -> pd.DataFrame:
        """One row."""
        return pd.DataFrame([asdict(self)])


def _pilot(human, judge) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(human, dtype=float).ravel()
    f = np.asarray(judge, dtype=float).ravel()
    if y.shape != f.shape:
        raise InputError(f"pilot: human and judge have different lengths ({y.size} and "
                         f"{f.size})")
    bad = np.flatnonzero(~np.isfinite(f))
    if bad.size:
        raise InputError(f"pilot: judge value missing or not finite at item {bad[0]}")
    keep = np.isfinite(y)
    if np.isinf(y).any():
        raise InputError(f"pilot: infinite human value at item {np.flatnonzero(np.isinf(y))[0]}")
    y, f = y[keep], f[keep]
    order = np.lexsort((f, y))  # a canonical order: the plan does not depend on the rows'
    y, f = y[order], f[order]
    if y.size < 3:
        raise InputError(f"pilot: at least 3 items with a human and a judge score are needed, "
                         f"got {y.size}")
    if np.var(y) == 0:
        raise InputError("pilot: the human scores do not vary; nothing to plan")
    return y, f


def _positive(name: str, value: float, *, zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)) \
            or not math.isfinite(value) or value < 0 or (value == 0 and not zero):
        raise InputError(f"{name} must be a finite number {'>=' if zero else '>'} 0, got "
                         f"{value!r}")
    return float(value)


def _design_lambda(var_y: float, var_f: float, cov: float, c_h: float, c_j: float) -> float:
    """The lambda of the cheapest design, clipped to [0, 1].

    Minimises ``K(lambda) = (sqrt(A (c_h + c_j)) + sqrt(B c_j))^2`` with ``A = var(Y - lambda
    f)`` and ``B = lambda^2 var(f)``; setting dK/dlambda = 0 gives
    ``lambda = (cov - sd_f sd_y sqrt((1 - rho^2) c_j / c_h)) / var_f``. K is convex in
    lambda (a norm of an affine function plus a linear one, squared), so clipping is exact.
    """
    if var_f == 0:
        return 0.0
    rho2 = min(cov * cov / (var_y * var_f), 1.0)
    lam = (cov - math.sqrt(var_f * var_y * (1 - rho2) * c_j / c_h)) / var_f
    return min(max(lam, 0.0), 1.0)


def _quantile(level: float, interval: str, n: float) -> float:
    if interval == "z":
        return float(stats.norm.ppf(0.5 + level / 2))
    return float(stats.t.ppf(0.5 + level / 2, max(n - 1, 1)))


def _continuous(a: float, b: float, c_h: float, c_j: float, variance: float | None,
                budget: float | None) -> tuple[float, float]:
    """(n, N) of the cheapest design with ``A/n + B/N = variance``, or of the most precise
    one costing ``budget``: ``n = sqrt(A/(c_h+c_j)) S / V``, ``N = sqrt(B/c_j) S / V``,
    ``S = sqrt(A (c_h+c_j)) + sqrt(B c_j)``, cost ``S^2 / V`` (Lagrange)."""
    s = math.sqrt(a * (c_h + c_j)) + math.sqrt(b * c_j)
    v = variance if variance is not None else s * s / float(budget or 1)
    return math.sqrt(a / (c_h + c_j)) * s / v, math.sqrt(b / c_j) * s / v


def _round(n: float, big_n: float, a: float, b: float, c_h: float, c_j: float,
           variance: float | None, budget: float | None, rounding: str) -> tuple[int, int]:
    if rounding == "nearest":  # ppi-python's convention: each to the nearest integer
        return max(round(n), 1), max(round(big_n), 0)
    if variance is not None:  # the target is met: n up, then the fewest N that reach it
        ni = max(math.ceil(n - 1e-9), 2)
        if b == 0:
            return ni, 0
        room = variance - a / ni
        return ni, max(math.ceil(b / room - 1e-9), 0) if room > 0 else 0
    ni = max(math.floor(n + 1e-9), 2)  # a budget is not exceeded
    left = float(budget or 0) - ni * (c_h + c_j)
    return ni, max(math.floor(left / c_j + 1e-9), 0) if b > 0 else 0


def plan_label_budget(human, judge, *, cost_human: float, cost_judge: float,
                      width: float | None = None, se: float | None = None,
                      power: float | None = None, effect: float | None = None,
                      budget: float | None = None, alpha: float = 0.05,
                      confidence_level: float = 0.95, interval: str = "t",
                      rounding: str = "conservative") -> LabelBudget:
    """The cheapest split of a study between human labels and judge calls (PPI++ for a mean
    or a win rate), from pilot data.

    Parameters
    ----------
    human, judge : array-like, shape (n_pilot,)
        Pilot items: the human score (NaN where not labelled; such items are left out) and
        the judge's score.
    cost_human, cost_judge : float
        Cost of one human label and of one judge call (any currency, the same for both; a
        judge call is the judge's score of one item). ``cost_judge`` may be 0.
    width : float, optional
        Target: the full width of the interval at ``confidence_level``.
    se : float, optional
        Target: the standard error.
    power, effect : float, optional
        Target: power to detect a difference ``effect`` from a fixed value with a two-sided
        level-``alpha`` test (normal approximation: ``se = |effect| / (z_{1-alpha/2} +
        z_power)``).
    budget : float, optional
        No target: the most precise design costing at most ``budget``.
    alpha : float, default 0.05
    confidence_level : float, default 0.95
    interval : {"t", "z"}, default "t"
        The interval the width refers to (``"t"``: Student t with n - 1 degrees of freedom,
        as `storyeval.power.ppi.ppi_mean`'s default; ``"z"``: normal, as ppi-python).
    rounding : {"conservative", "nearest"}, default "conservative"
        ``"conservative"``: round so that the target is met (n up, then the fewest judge
        calls) or the budget not exceeded (both down). ``"nearest"``: each to the nearest
        integer (ppi-python's convention; the target may be missed by a fraction of a label).

    Returns
    -------
    LabelBudget

    Notes
    -----
    With pilot variances ``var_y``, ``var_f`` and covariance ``c`` (divisor n), PPI with
    lambda has ``Var = A/n + B/N``, ``A = var_y - 2 lambda c + lambda^2 var_f`` (the
    rectifier) and ``B = lambda^2 var_f`` (the judge's mean over the ``N`` unlabelled items).
    For a fixed lambda the cheapest ``(n, N)`` reaching ``Var = V`` costs ``S^2 / V`` with
    ``S = sqrt(A (c_h + c_j)) + sqrt(B c_j)`` (Lagrange), at ``n = sqrt(A / (c_h + c_j)) S / V``
    and ``N = sqrt(B / c_j) S / V``; lambda then minimises ``S^2``:
    ``lambda = (c - sd_f sd_y sqrt((1 - rho^2) c_j / c_h)) / var_f``, clipped to [0, 1] (the
    clipping PPI++ applies). Unclipped, this is the design of Broska, Howes and van Loon
    (2024) that ppi-python's power analysis computes, with ``n_eff = n (n + N) / (n + (1 -
    rho^2) N)``. When human labels alone are cheaper (a weak judge or an expensive one), the
    plan is human-only (``method="classical"``, no judge call). With ``interval="t"`` the
    quantile depends on n: the plan is iterated to a fixed point. The plan assumes the pilot's
    variances hold in the study, that the judge's scores of unlabelled items vary as on the
    pilot, and that the labelled items are a uniformly random subset.

    References
    ----------
    1. Angelopoulos, Duchi & Zrnic (2023), PPI++: Efficient prediction-powered inference,
       arXiv:2311.01453.
    2. Broska, Howes & van Loon (2024), The mixed subjects design: treating large language
       models as (potentially) informative observations, SocArXiv j3bnt.

    Validated against ``ppi_py.ppi_mean_power`` (ppi-python 0.2.3; ``rounding="nearest"``,
    target ``se = sd_y / sqrt(effective_n)`` or a budget): the same n, N and cost; and by
    simulation (`simulate_label_budget`: the predicted width within 10% of the simulated
    mean width, tests/test_power_budget.py).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = rng.normal(3, 1, 200); f = y + rng.normal(0, 0.6, 200)
    >>> plan = plan_label_budget(y, f, cost_human=1.0, cost_judge=0.01, width=0.2)
    >>> plan.method, plan.n_human < plan.human_only_n, plan.predicted_width <= 0.2
    ('ppi++', True, True)
    """
    targets = {k: v for k, v in (("width", width), ("se", se), ("budget", budget))
               if v is not None}
    if power is not None or effect is not None:
        if power is None or effect is None:
            raise InputError("a power target needs both power and effect")
        targets["power"] = power
    if len(targets) != 1:
        raise InputError("give exactly one target: width, se, power (with effect) or budget; "
                         f"got {sorted(targets) or 'none'}")
    if interval not in ("t", "z"):
        raise InputError(f"interval must be 't' or 'z', got {interval!r}")
    if rounding not in ROUNDINGS:
        raise InputError(f"rounding must be one of {list(ROUNDINGS)}, got {rounding!r}")
    for name, value in (("confidence_level", confidence_level), ("alpha", alpha)):
        if not 0 < value < 1:
            raise InputError(f"{name} must be in (0, 1), got {value}")
    c_h = _positive("cost_human", cost_human)
    c_j = _positive("cost_judge", cost_judge, zero=True)
    y, f = _pilot(human, judge)
    var_y, var_f = float(np.var(y)), float(np.var(f))
    cov = float(np.mean((y - y.mean()) * (f - f.mean())))
    rho = cov / math.sqrt(var_y * var_f) if var_f > 0 else 0.0
    if c_j == 0:  # free judge calls: as many as needed; keep the formulas finite
        c_j = c_h * 1e-12
    lam = _design_lambda(var_y, var_f, cov, c_h, c_j)
    a, b = var_y - 2 * lam * cov + lam * lam * var_f, lam * lam * var_f

    what = next(iter(targets))
    variance: float | None = None
    total: float | None = None
    half = 0.0
    if what == "budget":
        total = _positive("budget", targets["budget"])
        target_text = f"budget {total:g}"
    elif what == "power":
        wanted = float(targets["power"])
        if not 0 < wanted < 1:
            raise InputError(f"power must be in (0, 1), got {wanted}")
        size = _positive("effect", abs(float(effect)))  # type: ignore[arg-type]
        sd = size / (stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(wanted))
        variance = float(sd * sd)
        target_text = f"power {wanted:g} for effect {effect:g} (alpha {alpha:g})"
    elif what == "se":
        variance = _positive("se", targets["se"]) ** 2
        target_text = f"se {targets['se']:g}"
    else:
        half = _positive("width", targets["width"]) / 2
        variance = (half / _quantile(confidence_level, "z", 0)) ** 2
        target_text = f"width {targets['width']:g}"

    def design(var_target: float | None) -> tuple[int, int, str, float, float]:
        """(n, N, method, A, B) of the cheaper of PPI with ``lam`` and human labels only."""
        ppi_cost = (math.sqrt(a * (c_h + c_j)) + math.sqrt(b * c_j)) ** 2
        if lam == 0 or ppi_cost >= c_h * var_y:  # the judge does not pay for itself
            n = var_y / var_target if var_target is not None else float(total or 0) / c_h
            if rounding == "nearest":
                ni = max(round(n), 1)
            elif var_target is not None:
                ni = max(math.ceil(n - 1e-9), 2)
            else:
                ni = max(math.floor(n + 1e-9), 2)
            return ni, 0, "classical", var_y, 0.0
        n, big_n = _continuous(a, b, c_h, c_j, var_target, total)
        ni, nn = _round(n, big_n, a, b, c_h, c_j, var_target, total, rounding)
        return ni, nn, "ppi++", a, b

    n_h, n_u, method, a_used, b_used = design(variance)
    if what == "width" and interval == "t":  # the t quantile depends on n: a fixed point
        for _ in range(50):
            v = (half / _quantile(confidence_level, "t", n_h)) ** 2
            again = design(v)
            if again[:2] == (n_h, n_u):
                break
            n_h, n_u, method, a_used, b_used = again
            variance = v
        variance = (half / _quantile(confidence_level, "t", n_h)) ** 2
    pred_var = a_used / n_h + (b_used / n_u if n_u else 0.0)
    pred_se = math.sqrt(pred_var)
    q = _quantile(confidence_level, interval, n_h)
    if variance is not None:
        human_n = math.ceil(var_y / variance - 1e-9)
    else:
        human_n = math.floor(float(total or 0) / c_h + 1e-9)
    return LabelBudget(
        n_human=int(n_h), n_judge=int(n_h + n_u) if method == "ppi++" else 0,
        n_unlabelled=int(n_u), cost=n_h * c_h + (n_h + n_u) * c_j * (method == "ppi++"),
        cost_human=c_h, cost_judge=float(cost_judge), predicted_se=pred_se,
        predicted_width=2 * q * pred_se, confidence_level=confidence_level, interval=interval,
        lam=lam if method == "ppi++" else 0.0, ppi_corr=rho, effective_n=var_y / pred_var,
        human_only_n=int(human_n), human_only_cost=human_n * c_h, method=method,
        target=target_text, rounding=rounding, n_pilot=int(y.size), sd_human=math.sqrt(var_y),
        sd_judge=math.sqrt(var_f))


def simulate_label_budget(plan: LabelBudget, human, judge, *, reps: int = 500, seed: int = 0,
                          folds: int = 5, show_progress: bool | None = None) -> dict[str, Any]:
    """Draw studies of the planned design from the pilot and measure their intervals.

    Each replication draws ``n_human`` (human, judge) pairs and ``n_unlabelled`` judge scores
    with replacement from the pilot items and computes `storyeval.power.ppi.ppi_mean_many`
    (PPI++, ``folds`` cross-fitting folds, the plan's interval; human-only t or z interval for
    a classical plan).

    Returns
    -------
    dict
        ``simulated_width`` (mean interval width), ``width_ratio`` (predicted / simulated),
        ``coverage`` (share of intervals holding the pilot's human mean, the population mean of
        the draws), ``mc_se_width``, ``reps``, ``seed``, ``folds``.

    ``show_progress``: a progress bar on standard error, moved per chunk of replications (None:
    on a terminal only, and not under ``STORYEVAL_NO_PROGRESS=1``).
    """
    from storyeval._progress import progress_bar

    if isinstance(reps, bool) or not isinstance(reps, (int, np.integer)) or reps < 2:
        raise InputError(f"reps must be an integer >= 2, got {reps!r}")
    y, f = _pilot(human, judge)
    rng = np.random.default_rng(seed)
    truth = float(y.mean())
    widths: list[np.ndarray] = []
    hits: list[np.ndarray] = []
    chunk = max(1, min(reps, 4_000_000 // max(plan.n_human + plan.n_unlabelled, 1)))
    with progress_bar(total=reps, desc="simulating studies", unit="study",
                      show=show_progress) as bar:
        for start in range(0, reps, chunk):
            _simulate_chunk(plan, y, f, min(chunk, reps - start), rng, truth, folds, seed,
                            widths, hits)
            bar.update(min(chunk, reps - start))
    w, hit = np.concatenate(widths), np.concatenate(hits)
    return {"simulated_width": float(w.mean()),
            "width_ratio": plan.predicted_width / float(w.mean()),
            "coverage": float(hit.mean()), "mc_se_width": float(w.std(ddof=1) / math.sqrt(reps)),
            "reps": int(reps), "seed": int(seed), "folds": int(folds)}


def _simulate_chunk(plan: LabelBudget, y, f, r: int, rng, truth: float, folds: int, seed: int,
                    widths: list, hits: list) -> None:
    """``r`` replications of `simulate_label_budget`: their widths and hits appended."""
    n, big_n = plan.n_human, plan.n_unlabelled
    lab = rng.integers(0, y.size, size=(r, n))
    if plan.method == "classical" or big_n < 2:
        yy = y[lab]
        sd = np.std(yy, axis=1, ddof=1 if plan.interval == "t" else 0)
        half = _quantile(plan.confidence_level, plan.interval, n) * sd / math.sqrt(n)
        low, high = yy.mean(axis=1) - half, yy.mean(axis=1) + half
    else:
        from storyeval.power.ppi import ppi_mean_many

        unl = rng.integers(0, y.size, size=(r, big_n))
        h = np.concatenate([y[lab], np.full((r, big_n), np.nan)], axis=1)
        p = np.concatenate([f[lab], f[unl]], axis=1)
        res = ppi_mean_many(h, p, folds=folds, seed=seed, interval=plan.interval,
                            confidence_level=plan.confidence_level)
        low, high = res["low"].to_numpy(), res["high"].to_numpy()
    widths.append(high - low)
    hits.append((low <= truth) & (truth <= high))
