"""docs/leaderboards.md: its generated snippets are current (``docs/gen_leaderboards.py``), the
page includes them and the benchmark tables, and it is in the navigation."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _docs_compare import describe, read_markdown, stale_files
from _docs_scripts import load_docs_script

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGE = DOCS / "leaderboards.md"


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
    out = tmp_path_factory.mktemp("leaderboards")
    load_docs_script("gen_leaderboards").generate(out)
    return out


def test_snippets_are_current(regenerated):
    foreign = load_docs_script("gen_leaderboards").FOREIGN
    committed = {k: v for k, v in read_markdown(DOCS / "generated" / "leaderboards").items()
                 if k not in foreign}
    # bootstrap quantiles may move by a unit of the last printed digit between BLAS builds
    report = stale_files(read_markdown(regenerated), committed, last_digit_units=1,
                         min_decimals=2)
    assert not (report["missing"] or report["extra"] or report["changed"]), (
        f"docs/generated/leaderboards is stale:\n{describe(report)}\n"
        "regenerate with: python docs/gen_leaderboards.py")


def test_page_includes_snippets_and_benchmarks():
    page = PAGE.read_text(encoding="utf-8")
    included = set(re.findall(r'^--8<-- "generated/([^"]+)"\s*$', page, re.MULTILINE))
    assert included == {"leaderboards/leaderboard.md", "leaderboards/matrix.md",
                        "leaderboards/bench.md", "leaderboards/coverage.md",
                        "leaderboards/ppr.md", "leaderboards/ppr_win_rate.md",
                        "leaderboards/ppr_coverage.md", "leaderboards/panel.md"}
    for name in included:
        assert (DOCS / "generated" / name).is_file()
    bench = (DOCS / "generated" / "leaderboards" / "bench.md").read_text(encoding="utf-8")
    assert "| 1,000,000 | 100 | storyeval |" in bench
    assert "leaderboards.md" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")


def test_matrix_snippet_shows_the_issue_values():
    text = (DOCS / "generated" / "leaderboards" / "matrix.md").read_text(encoding="utf-8")
    for value in ("0.8751", "-0.2209", "-0.6542", "0.1544", "0.1368", "0.1450"):
        assert value in text
