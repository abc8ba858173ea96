"""The page "Do LLMs prefer their own stories?" (docs/title-question.md): its snippets come
from SmolLM2's answers kept in the committed answer cache; regenerating runs the same code path
(`write_stories`, `rate`, `storyeval bias --reference none`) without loading the model, and the
page includes every snippet and shows an interval."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from _docs_compare import describe, read_markdown, stale_files
from _docs_scripts import load_docs_script

pytestmark = pytest.mark.slow  # a few seconds of storyeval calls on the cached answers

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "title-question.md"
OUT = ROOT / "docs" / "generated" / "title_question"
SNIPPET = re.compile(r'^--8<-- "generated/title_question/([^"]+\.md)"\s*$', re.MULTILINE)


@pytest.fixture(scope="module")
def gen():
    return load_docs_script("gen_title_question")


@pytest.fixture(scope="module")
def regenerated(gen, tmp_path_factory):
    out = tmp_path_factory.mktemp("title_question")
    gen.generate(out, cache_only=True)  # a missing answer fails; the model is never loaded
    return out


def test_snippets_are_current(regenerated):
    report = stale_files(read_markdown(regenerated), read_markdown(OUT))
    assert not (report["missing"] or report["extra"] or report["changed"]), (
        "docs/generated/title_question/ is stale; run `python docs/gen_title_question.py`\n"
        + describe(report))


def test_page_includes_every_snippet():
    included = set(SNIPPET.findall(PAGE.read_text(encoding="utf-8")))
    assert included == {p.name for p in OUT.glob("*.md")}


def test_answer_has_an_interval_and_the_design_is_as_stated(gen):
    answer = (OUT / "answer.md").read_text(encoding="utf-8")
    assert "--reference none" in answer and "own-minus-other gap" in answer
    # the one-sentence answer quotes the table's estimate and interval, per criterion
    verdict = (OUT / "verdict.md").read_text(encoding="utf-8")
    rows = [line.split("|")[1:-1] for line in answer.splitlines()
            if line.startswith("| ") and "SmolLM2-135M" in line]
    assert len(rows) == 2
    for cells in rows:
        crit, est, low, high = (cells[0].strip(), float(cells[5]), float(cells[6]),
                                float(cells[7]))
        m = re.search(rf"\*\*{crit}\*\*: own-minus-other gap (-?\d+\.\d+), 95% interval "
                      r"\[(-?\d+\.\d+), (-?\d+\.\d+)\]", verdict)
        assert m, verdict
        assert [float(v) for v in m.groups()] == pytest.approx([est, low, high], abs=0.006)
        assert ("includes 0" in verdict.split(crit)[1].split("\n")[0]) == (low <= 0 <= high)
    stories = pd.read_csv(ROOT / "docs" / "title_question" / "stories.csv")
    assert stories["prompt_id"].nunique() == gen.N_PROMPTS
    assert sorted(stories["system"].unique()) == sorted([*gen.LLM_SYSTEMS, gen.LABEL])
    assert (stories.groupby("system").size() == gen.N_PROMPTS).all()
    # the six LLMs' stories are HANNA's own texts
    from storyeval.llm import load_stories

    hanna = load_stories("hanna").set_index("story_id")["story"]
    theirs = stories[stories["system"] != gen.LABEL].set_index("story_id")["story"]
    assert (hanna.loc[theirs.index] == theirs).all()
    page = PAGE.read_text(encoding="utf-8")
    assert "135M" in page and "not the paper's raters" in page
