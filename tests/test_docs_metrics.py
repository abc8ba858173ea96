"""docs/metrics.md: its generated blocks (agreement with HANNA's released surface measures, the
end-to-end example's output) equal what the code produces now."""

from __future__ import annotations

import warnings
from pathlib import Path

from _docs_compare import markdown_differences
from _docs_scripts import load_docs_script

from storyeval.exceptions import DroppedStoriesWarning

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _generator():
    return load_docs_script("gen_metrics_agreement")


def test_metrics_page_blocks_are_current():
    # Exact: no torch-derived number (surface measures, scipy correlations and numpy means);
    # tests/_docs_compare.py only names what differs.
    gen = _generator()
    page = (DOCS / "metrics.md").read_text(encoding="utf-8")
    with warnings.catch_warnings():
        # the example scores the 96 human stories only: the join warns that it drops the rest
        warnings.simplefilter("ignore", DroppedStoriesWarning)
        blocks = gen.blocks()
    differences, _ = markdown_differences(gen.render_page(page, blocks), page)
    assert not differences, (
        "docs/metrics.md is stale:\n" + "\n".join(differences)
        + "\nrun python docs/gen_metrics_agreement.py --write")
