"""docs/litbench.md: its generated snippets are current (``docs/gen_litbench.py``) and the page
includes each of them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _docs_compare import describe, read_markdown, stale_files
from _docs_scripts import load_docs_script

ROOT = Path(__file__).resolve().parents[1]
SNIPPETS = ROOT / "docs" / "generated" / "litbench"
PAGE = ROOT / "docs" / "litbench.md"
SNIPPET = re.compile(r'^--8<-- "generated/litbench/([^"]+\.md)"\s*$', re.MULTILINE)


@pytest.fixture(scope="module")
def gen():
    return load_docs_script("gen_litbench")


def test_snippets_are_current(gen, tmp_path):
    gen.generate(tmp_path)
    report = stale_files(read_markdown(tmp_path), read_markdown(SNIPPETS))
    assert not (report["missing"] or report["extra"] or report["changed"]), (
        f"docs/generated/litbench is stale:\n{describe(report)}\n"
        "run `python docs/gen_litbench.py` and commit docs/generated/litbench/")


def test_page_includes_every_snippet():
    included = set(SNIPPET.findall(PAGE.read_text(encoding="utf-8")))
    assert included == {p.name for p in SNIPPETS.glob("*.md")}


def test_the_default_was_chosen_by_the_simulation():
    # the page's claim: naive under-covers, max-t covers with narrower intervals than split
    text = (SNIPPETS / "selection_simulation.md").read_text(encoding="utf-8")
    rows = {r.split("|")[1].strip(): [float(x) for x in r.split("|")[2:4]]
            for r in text.splitlines()[2:]}
    assert rows["naive"][0] < 0.92 <= rows["max-t"][0]
    assert rows["max-t"][1] < rows["split"][1]
    assert "The default is **max-t**" in PAGE.read_text(encoding="utf-8")
