"""docs/metrics.md: its generated blocks (agreement with HANNA's released surface measures, the
end-to-end example's output) equal what the code produces now."""

from __future__ import annotations

from pathlib import Path

from _docs_scripts import load_docs_script

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _generator():
    return load_docs_script("gen_metrics_agreement")


def test_metrics_page_blocks_are_current():
    gen = _generator()
    page = (DOCS / "metrics.md").read_text(encoding="utf-8")
    assert gen.render_page(page, gen.blocks()) == page, (
        "docs/metrics.md is stale: run python docs/gen_metrics_agreement.py --write")
