"""The page "May this judge replace my raters?" (docs/judge-report.md): its generated snippets
are current, the page includes all of them, the benchmark behind its error rates meets the
issue's criterion, and what its prose says about the snippets holds."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from _docs_compare import describe, read_markdown, stale_files
from _docs_scripts import load_docs_script

pytestmark = pytest.mark.slow  # the judge report of twenty LLM raters, regenerated

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "judge-report.md"
SNIPPETS = ROOT / "docs" / "generated" / "judge"
SNIPPET = re.compile(r'^--8<-- "generated/judge/([^"]+\.md)"\s*$', re.MULTILINE)


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
    out = tmp_path_factory.mktemp("judge")
    load_docs_script("gen_judge_report").generate(out)
    return out


def test_snippets_are_current(regenerated):
    report = stale_files(read_markdown(regenerated), read_markdown(SNIPPETS),
                         last_digit_units=1, min_decimals=1)
    assert not (report["missing"] or report["extra"] or report["changed"]), (
        f"docs/generated/judge is stale:\n{describe(report)}\n"
        "run `python docs/gen_judge_report.py` and commit docs/generated/judge/")


def test_page_includes_every_snippet(regenerated):
    included = set(SNIPPET.findall(PAGE.read_text(encoding="utf-8")))
    assert included == {p.name for p in regenerated.glob("*.md")}


def test_benchmark_meets_the_issue_criterion():
    # issue 50: a judge worse than the annotators by epsilon passes at most 5% of the time
    payload = json.loads((ROOT / "benchmarks" / "bench_judge_report.json")
                         .read_text(encoding="utf-8"))
    rows = pd.DataFrame(payload["results"])
    assert payload["n_datasets"] >= 2000 and set(rows["n_items"]) == {50, 100, 300, 960}
    bad = rows[rows["gap"] == payload["epsilon"]]
    assert len(bad) == 4 and (bad["pass_rate"] + 2 * bad["mc_se"] <= 0.05).all()
    good = rows[(rows["gap"] <= 0) & (rows["n_items"] == 960)]
    assert (good["pass_rate"] >= 0.8).all()
    assert max(payload["cli_cpu_seconds"]) < 10


def _table(path: Path) -> pd.DataFrame:
    lines = [line for line in path.read_text(encoding="utf-8").splitlines()
             if line.startswith("|")]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines]
    return pd.DataFrame(cells[2:], columns=cells[0])


def test_prose_claims_hold():
    verdicts = _table(SNIPPETS / "verdicts.md").set_index("rater group")
    cells = verdicts.to_numpy().ravel()
    assert len(verdicts) == 20 and not any(c.startswith("replaces") for c in cells)
    passing = sum("(w 1.00)" in c or "(w 0.67)" in c for c in cells)
    assert passing > len(cells) / 2  # "most pass the alt-test"
    # "most raters correlate with the humans and save a few human labels"
    assert sum(c.startswith("PPI") for c in cells) > len(cells) / 2
    sentinel = _table(SNIPPETS / "sentinel_alt_test.md")
    assert len(sentinel) == 6 and (sentinel["winning_rate"].astype(float) == 1).all()
    eps = _table(SNIPPETS / "epsilon.md").set_index("judge").astype(float)
    assert (eps.diff(axis=1).iloc[:, 1:] >= 0).all().all()  # never lower with larger epsilon
    agreement = _table(SNIPPETS / "agreement.md").set_index("judge")
    assert agreement.loc["Sentinel: system identity", "within"].startswith("-1.000")
    assert agreement.loc["Sentinel: system identity", "system"].startswith("1.000")
    # the prompt-mean sentinel is (T_p - h) / (S - 1) within a prompt and (G - H_s) / (S - 1)
    # over a system's prompts: -1 by construction at the prompt and system levels
    assert agreement.loc["Sentinel: prompt mean", "system"].startswith("-1.000")
    assert agreement.loc["Sentinel: prompt mean", "prompt"].startswith("-1.000")
    page = " ".join(PAGE.read_text(encoding="utf-8").split())
    assert "passes far less than 5% of the time at every size" in page
