"""Agreement and reliability of raters: ICC(2,k), Gwet's AC1, Fleiss' kappa,
Krippendorff's alpha, and the per-criterion annotator agreement table.

Holds: `icc` (ICC(2,k) with its F-based interval, many columns at once), `coefficients` (AC1,
Fleiss, Krippendorff, annotator ICC) and `annotators` (the table `storyeval agreement` prints).

May import: ``storyeval.exceptions``, ``storyeval.data``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from storyeval.agreement.annotators import (
        AGREEMENT_COLUMNS,
        annotator_agreement,
    )
    from storyeval.agreement.coefficients import (
        AgreementResult,
        annotator_icc,
        category_counts,
        cohen_kappa,
        fleiss_kappa,
        gwet_ac1,
        krippendorff_alpha,
    )
    from storyeval.agreement.icc import (
        ICCResult,
        icc2k,
        icc2k_many,
    )

_LAZY = {
    "ICCResult": "icc",
    "icc2k": "icc",
    "icc2k_many": "icc",
    "AgreementResult": "coefficients",
    "cohen_kappa": "coefficients",
    "annotator_icc": "coefficients",
    "category_counts": "coefficients",
    "fleiss_kappa": "coefficients",
    "gwet_ac1": "coefficients",
    "krippendorff_alpha": "coefficients",
    "AGREEMENT_COLUMNS": "annotators",
    "annotator_agreement": "annotators",
}

__all__ = [
    "AGREEMENT_COLUMNS",
    "AgreementResult",
    "ICCResult",
    "annotator_agreement",
    "annotator_icc",
    "category_counts",
    "cohen_kappa",
    "fleiss_kappa",
    "gwet_ac1",
    "icc2k",
    "icc2k_many",
    "krippendorff_alpha",
]


def __getattr__(name: str) -> Any:
    # lazy: importing one module of the package does not import the others
    if name in _LAZY:
        return getattr(importlib.import_module(f"storyeval.agreement.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'storyeval.agreement' has no attribute {name!r}")
