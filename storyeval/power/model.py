"""The data the power planner (`storyeval.power.planner`) simulates: the human score's scale
(ties of Likert means), and the latent correlations of a Gaussian copula chosen so that the
population coefficients equal the targets (Greiner's relations, or a calibration where the human
score is discrete)."""

from __future__ import annotations

import math

import numpy as np
from scipy import special, stats

from storyeval.exceptions import InputError
from storyeval.power.batch import _coef

_CAL_DRAWS = 60_000  # common random numbers of the calibration

def _ratings_scale() -> tuple[np.ndarray, np.ndarray]:
    """Values and probabilities of the mean of three 1-5 ratings (bench_calibration's model:
    ``clip(round(3 + q + N(0, 0.8^2)), 1, 5)``, ``q ~ N(0, 1)``), by a fixed-seed draw."""
    rng = np.random.default_rng(20240917)
    q = rng.normal(size=400_000)
    r = np.clip(np.rint(3 + q[:, None] + rng.normal(0, 0.8, (q.size, 3))), 1, 5).mean(1)
    values, counts = np.unique(r, return_counts=True)
    return values, counts / counts.sum()


def _scale_from_values(values: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The empirical distribution of a pilot criterion (None: continuous, > 64 values)."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    uniq, counts = np.unique(values, return_counts=True)
    if len(uniq) > 64:
        return None
    return uniq, counts / counts.sum()


class _Human:
    """Maps a latent standard normal to the observed human score (identity if continuous)."""

    def __init__(self, scale: tuple[np.ndarray, np.ndarray] | None):
        self.scale = scale
        if scale is not None:
            values, probs = scale
            self.values = np.asarray(values, dtype=float)
            self.cuts = special.ndtri(np.cumsum(probs)[:-1].clip(1e-300, 1 - 1e-16))

    @property
    def discrete(self) -> bool:
        return self.scale is not None

    def __call__(self, z: np.ndarray) -> np.ndarray:
        if self.scale is None:
            return z
        return self.values[np.searchsorted(self.cuts, z)]


def _greiner(r: float, coef: str) -> float:
    """Latent Pearson correlation of a bivariate normal whose coefficient is ``r``."""
    if coef == "kendall_b":
        return math.sin(math.pi * r / 2)
    if coef == "spearman":
        return 2 * math.sin(math.pi * r / 6)
    return r


def _calibrate(targets: tuple[float, ...], coef: str, human: _Human) -> list[float]:
    """Latent rho(h, x) giving population coefficient ``target`` between the discrete human
    score and a continuous measure (common random numbers: the differences are precise)."""
    from scipy.optimize import brentq

    rng = np.random.default_rng(12345)
    z, e = rng.normal(size=(2, _CAL_DRAWS))
    h = human(z)
    top = float(_coef(h[None], z[None], coef)[0])  # largest reachable: x = latent h itself
    out = []
    for target in targets:
        if abs(target) >= abs(top) - 1e-6:
            raise InputError(f"a correlation of {target:g} with the human score is not "
                             f"reachable with its ties (at most {abs(top):.3f} for {coef})")
        if coef == "pearson":  # x = rho z + noise: corr(D(z), x) = rho corr(D(z), z) exactly
            values, probs = human.scale
            cuts = np.concatenate([[-np.inf], human.cuts, [np.inf]])
            mean = float(values @ probs)
            sd = math.sqrt(float((values - mean) ** 2 @ probs))
            e_dz = float(values @ (stats.norm.pdf(cuts[:-1]) - stats.norm.pdf(cuts[1:])))
            out.append(target * sd / e_dz)
            continue
        if target == 0:
            out.append(0.0)
            continue

        def f(rho, target=target):
            x = rho * z + math.sqrt(max(1 - rho * rho, 0.0)) * e
            return float(_coef(h[None], x[None], coef)[0]) - target

        out.append(brentq(f, -0.999999, 0.999999, xtol=1e-5))
    return out


def _latent_matrix(r_h1: float, r_h2: float, r_12: float, coef: str,
                   human: _Human) -> np.ndarray:
    if human.discrete:
        l1, l2 = _calibrate((r_h1, r_h2), coef, human)
    else:
        l1, l2 = _greiner(r_h1, coef), _greiner(r_h2, coef)
    R = np.array([[1.0, l1, l2], [l1, 1.0, _greiner(r_12, coef)],
                  [l2, _greiner(r_12, coef), 1.0]])
    if np.linalg.eigvalsh(R).min() <= 1e-9:
        raise InputError(f"the correlations r(h,a) = {r_h1:g}, r(h,b) = {r_h2:g} and r(a,b) = "
                         f"{r_12:g} (--r-human/--delta, --r-between) are not jointly possible "
                         "(not a valid correlation matrix); raise or lower r(a,b)")
    return R


def _draw(rng, shape, L) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    z = rng.standard_normal(shape + (3,)) @ L.T
    return z[..., 0], z[..., 1], z[..., 2]
