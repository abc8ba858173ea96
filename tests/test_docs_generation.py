"""docs/generation.md: its generated snippets are current (``docs/gen_generation.py``) and the
page includes each of them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _docs_compare import describe, read_markdown, stale_files
from _docs_scripts import load_docs_script

ROOT = Path(__file__).resolve().parents[1]
SNIPPETS = ROOT / "docs" / "generated" / "generation"
PAGE = ROOT / "docs" / "generation.md"
SNIPPET = re.compile(r'^--8<-- "generated/generation/([^"]+\.md)"\s*$', re.MULTILINE)


@pytest.fixture(scope="module")
def gen():
    return load_docs_script("gen_generation")


def test_snippets_are_current(gen, tmp_path):
    gen.generate(tmp_path)
    report = stale_files(read_markdown(tmp_path), read_markdown(SNIPPETS))
    assert not (report["missing"] or report["extra"] or report["changed"]), (
        f"docs/generated/generation is stale:\n{describe(report)}\n"
        "run `python docs/gen_generation.py` and commit docs/generated/generation/")


def test_page_includes_every_snippet(gen):
    included = set(SNIPPET.findall(PAGE.read_text(encoding="utf-8")))
    assert included == {f"{name}.md" for name in gen.COMMANDS}
