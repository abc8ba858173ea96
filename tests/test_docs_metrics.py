"""docs/metrics.md: its generated blocks (agreement with HANNA's released surface measures, the
end-to-end example's output) equal what the code produces now."""

from __future__ import annotations

import importlib.util
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _generator():
    spec = importlib.util.spec_from_file_location("gen_metrics_agreement",
                                                  DOCS / "gen_metrics_agreement.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_metrics_page_blocks_are_current():
    gen = _generator()
    page = (DOCS / "metrics.md").read_text(encoding="utf-8")
    assert gen.render_page(page, gen.blocks()) == page, (
        "docs/metrics.md is stale: run python docs/gen_metrics_agreement.py --write")
