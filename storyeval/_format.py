"""How a number reads in text: p-values as a journal prints them, fixed decimals without a
negative zero, intervals as ``[low, high]``. The kernel of `storyeval.report.present` (which
re-exports these names), kept at the bottom layer so that every package may format a number
the one way (the answer of `storyeval.meta.answer` among them)."""

from __future__ import annotations

import pandas as pd

__all__ = ["fixed", "interval_text", "is_p_column", "p_clause", "p_text"]


def _missing(value: object) -> bool:
    if value is None or value is pd.NA:
        return True
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def p_text(p: object) -> str:
    """A p-value as a journal prints it: ``"< 0.001"`` below 0.001, else three significant
    digits with their trailing zeros (``0.0498``, ``0.500``, ``1.00``): never ``0.000`` and never
    an exponent, and a 0.0498 is never rounded to ``0.050``. Missing: empty. Text that is not a
    number (an already formatted cell) is returned as it is."""
    if _missing(p):
        return ""
    if isinstance(p, str):
        return p
    value = float(p)  # type: ignore[arg-type]
    if value < 0.001:
        return "< 0.001"
    return f"{value:#.3g}"


def p_clause(p: object) -> str:
    """``"p = 0.0132"`` or ``"p < 0.001"`` (`p_text`) for a sentence; missing: ``"p undefined"``."""
    text = p_text(p)
    if not text:
        return "p undefined"
    return f"p {text}" if text.startswith("<") else f"p = {text}"


def is_p_column(name: object) -> bool:
    """``p``, ``pvalue``, ``p_value``, ``p_adjusted``, ``pvalue_bh``, ``perm_p``,
    ``perm_p_adjusted``, ``p_vs_next``, ``change_p``: a column of p-values (by its name; an
    LLM's ``top_p`` is not one)."""
    text = str(name).lower().replace("-", "_")
    parts = text.split("_")
    if text == "top_p":
        return False
    return (parts[0] in ("p", "pvalue") or parts[-1] in ("p", "pvalue")
            or (parts[0] == "perm" and "p" in parts[1:2]) or text == "p_value")


def fixed(value: float, digits: int = 3) -> str:
    """``value`` with ``digits`` decimals, a negative zero printed as zero: -0.0002 at three
    decimals is ``0.000``, never ``-0.000`` (a sign without a digit to carry it)."""
    text = f"{value:.{digits}f}"
    if text.startswith("-") and not text.strip("-0."):
        return text[1:]
    return text


def interval_text(low: float, high: float, digits: int = 3) -> str:
    """``"[low, high]"`` with `fixed` ends; an end that lies strictly beyond 0 but prints as
    zero is printed as an open 0: ``"(0, 0.412]"``, ``"[-0.412, 0)"`` (a test-compatible
    interval cut at 0 where its test rejects ends there: `storyeval.compare.procedures.
    compatible_interval`), so that an interval that excludes 0 never reads as touching it.
    A missing end: empty text."""
    if _missing(low) or _missing(high):
        return ""
    lo, hi = fixed(low, digits), fixed(high, digits)
    zero = fixed(0.0, digits)
    left = "(0" if low > 0 and lo == zero else f"[{lo}"
    right = "0)" if high < 0 and hi == zero else f"{hi}]"
    return f"{left}, {right}"
