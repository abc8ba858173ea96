"""May a judge replace the human annotators? The judge report and its verdict rule.

Holds: `report` (`judge_report`: the alternative-annotator test, agreement at four levels
beside the human baseline and the sentinels, biases, PPI, and one verdict per criterion and
judge), `page` (its HTML page) and `simulate` (the verdict rule's false-pass rate and power by
simulation).

May import every package below the command line (it composes `compare`, `meta`, `bias`,
`power` and the HTML of `report`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from storyeval.judge.page import write_report
    from storyeval.judge.report import (
        VERDICT_RULE,
        JudgeReport,
        judge_report,
    )

_LAZY = {"VERDICT_RULE": "report", "JudgeReport": "report", "judge_report": "report",
         "write_report": "page"}

__all__ = ["VERDICT_RULE", "JudgeReport", "judge_report", "write_report"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"storyeval.judge.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'storyeval.judge' has no attribute {name!r}")
