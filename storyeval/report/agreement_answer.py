"""The answer that ``storyeval agreement`` opens with: per criterion, how well the annotators
agree (ICC(2,k) and Gwet's AC1 with their intervals) and the reading of each on a published
scale, the reading taken over the whole interval ("poor to moderate" when the interval spans
two bands): Koo and Li (2016) for the ICC, Landis and Koch (1977) for AC1.

References
----------
1. Koo, T. K. and Li, M. Y. (2016). A guideline of selecting and reporting intraclass
   correlation coefficients for reliability research. J. Chiropr. Med. 15(2), 155-163.
2. Landis, J. R. and Koch, G. G. (1977). The measurement of observer agreement for
   categorical data. Biometrics 33(1), 159-174.
"""

from __future__ import annotations

import math

import pandas as pd

from storyeval.report.present import fixed, interval_text

__all__ = ["AC1_BANDS", "ICC_BANDS", "agreement_answer", "agreement_answer_caption",
           "agreement_lead", "reading"]

#: Koo and Li (2016): below 0.5 poor, 0.5-0.75 moderate, 0.75-0.9 good, above 0.9 excellent
#: (a negative ICC: less agreement than chance, "none").
ICC_BANDS = ((0.0, "none"), (0.5, "poor"), (0.75, "moderate"), (0.9, "good"),
             (math.inf, "excellent"))
#: Landis and Koch (1977), for chance-corrected agreement of categories.
AC1_BANDS = ((0.0, "poor"), (0.2, "slight"), (0.4, "fair"), (0.6, "moderate"),
             (0.8, "substantial"), (math.inf, "almost perfect"))


def _band(value: float, bands: tuple[tuple[float, str], ...]) -> str:
    return next(name for upper, name in bands if value < upper)


def reading(value: float, low: float, high: float,
            bands: tuple[tuple[float, str], ...]) -> str:
    """The band of ``value``, or of the whole interval ``[low, high]`` ("poor to moderate")
    when the run computed one; empty for an undefined value."""
    if value is None or not math.isfinite(value):
        return ""
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return _band(value, bands)
    a, b = _band(low, bands), _band(high, bands)
    return a if a == b else f"{a} to {b}"


def agreement_answer(table: pd.DataFrame, *, digits: int = 3) -> pd.DataFrame:
    """One row per criterion of the annotators table: ICC(2,k) and Gwet's AC1, each with its
    interval and its reading (`reading`)."""
    rows = []
    for r in table.to_dict("records"):
        icc, ac1 = float(r["icc2k"]), float(r["gwet_ac1"])
        rows.append({
            "criterion": r["criterion"],
            "ICC(2,k)": (f"{fixed(icc, digits)} "
                         f"{interval_text(r['icc2k_ci_low'], r['icc2k_ci_high'], digits)}"
                         ).strip() if math.isfinite(icc) else "",
            "ICC reading": reading(icc, r["icc2k_ci_low"], r["icc2k_ci_high"], ICC_BANDS),
            "Gwet's AC1": (f"{fixed(ac1, digits)} "
                           f"{interval_text(r['gwet_ac1_ci_low'], r['gwet_ac1_ci_high'], digits)}"
                           ).strip() if math.isfinite(ac1) else "",
            "AC1 reading": reading(ac1, r["gwet_ac1_ci_low"], r["gwet_ac1_ci_high"], AC1_BANDS),
        })
    return pd.DataFrame(rows, columns=["criterion", "ICC(2,k)", "ICC reading", "Gwet's AC1",
                                       "AC1 reading"])


def agreement_lead(table: pd.DataFrame, *, digits: int = 3) -> str:
    """One sentence: the criterion the annotators agree on most and least (by ICC(2,k))."""
    defined = table[table["icc2k"].map(lambda v: math.isfinite(float(v)))]
    if defined.empty:
        return "ICC(2,k) is undefined for every criterion (see the table's reasons)"
    ordered = defined.sort_values("icc2k", ascending=False, kind="stable")

    def said(r) -> str:
        return (f"{r['criterion']} (ICC(2,k) {fixed(r['icc2k'], digits)} "
                f"{interval_text(r['icc2k_ci_low'], r['icc2k_ci_high'], digits)}, "
                f"{reading(r['icc2k'], r['icc2k_ci_low'], r['icc2k_ci_high'], ICC_BANDS)})"
                ).replace("  ", " ")

    top, low = ordered.iloc[0], ordered.iloc[-1]
    if len(ordered) == 1:
        return f"Annotator agreement on {said(top)}"
    return f"Annotators agree most on {said(top)} and least on {said(low)}"


def agreement_answer_caption(confidence_level: float) -> str:
    return (f"per criterion, the agreement of the annotators with its {confidence_level:g} "
            "interval and its reading over the whole interval: ICC(2,k) on Koo and Li's (2016) "
            "scale (below 0.5 poor, 0.5-0.75 moderate, 0.75-0.9 good, above excellent; "
            "negative: none), Gwet's AC1 on Landis and Koch's (1977) (below 0 poor, to 0.2 "
            "slight, 0.4 fair, 0.6 moderate, 0.8 substantial, above almost perfect)")
