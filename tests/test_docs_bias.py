"""The page "Judge biases" (docs/bias.md): its generated snippets are current, the page includes
all of them, what its prose says about them holds, and its rate-then-bias commands run as
printed against a local fake server."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pandas as pd
import pytest
from _docs_compare import describe, read_markdown, stale_files
from _docs_scripts import load_docs_script

sys.path.insert(0, str(Path(__file__).parent))
from _openai_stub_server import Script, StubServer

from storyeval.cli import main

pytestmark = pytest.mark.slow  # a few seconds of storyeval commands

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "bias.md"
BIAS = ROOT / "docs" / "generated" / "bias"
SNIPPET = re.compile(r'^--8<-- "generated/bias/([^"]+\.md)"\s*$', re.MULTILINE)


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
    out = tmp_path_factory.mktemp("bias")
    load_docs_script("gen_bias").generate(out)
    return out


def test_snippets_are_current(regenerated):
    report = stale_files(read_markdown(regenerated), read_markdown(BIAS), last_digit_units=1,
                         min_decimals=1)
    assert not (report["missing"] or report["extra"] or report["changed"]), (
        "docs/generated/bias/ is stale; run `python docs/gen_bias.py`\n" + describe(report))


def test_page_includes_every_snippet():
    included = set(SNIPPET.findall(PAGE.read_text(encoding="utf-8")))
    assert included == {p.name for p in BIAS.glob("*.md")}


def _rows(name: str) -> list[list[str]]:
    text = (BIAS / name).read_text(encoding="utf-8")
    return [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("| ---")]


def test_prose_claims_hold():
    page = PAGE.read_text(encoding="utf-8")
    # sentinel table: prompt level, system identity beats Beluga-13B on CH, EG, SU
    sentinels = (BIAS / "sentinels_hanna.md").read_text(encoding="utf-8")
    sentinels = sentinels[sentinels.index("> dataset:"):]  # the grids, after the answer
    prompt = sentinels.split("prompt level")[1]
    beluga = next(r for r in _rows_of(prompt) if r[0] == "Beluga-13B 1")
    system = next(r for r in _rows_of(prompt) if r[0] == "Sentinel: system identity")
    assert beluga[1:4] == ["0.275", "0.182", "0.260"] and system[1:4] == ["0.290", "0.223",
                                                                           "0.335"]
    assert ("Coherence (0.290 vs 0.275), Engagement (0.335 vs 0.260) and Surprise\n"
            "(0.223 vs 0.182)") in page
    # prompt-level test against the sentinel: Engagement beyond the noise, the others not;
    # the paired t under-covers, compare_with_system_sentinel holds 0.95 within MC error
    test = {r[0]: r for r in _rows("sentinel_prompt_level.md")[1:]}
    assert float(test["Engagement"][6]) < 0 and float(test["Engagement"][7]) < 0.05
    for crit in ("Coherence", "Surprise"):
        assert float(test[crit][5]) < 0 < float(test[crit][6]) and float(test[crit][7]) > 0.05
    assert [test[c][2:4] for c in ("Coherence", "Engagement", "Surprise")] == [
        ["0.275", "0.290"], ["0.260", "0.335"], ["0.182", "0.223"]]
    coverage = (BIAS / "sentinel_prompt_level.md").read_text(encoding="utf-8")
    boot, paired = coverage.split("this interval:")[1].split("the paired t")
    boot_cov = [float(v) for v in re.findall(r"(0\.\d{3}) at", boot)]
    paired_cov = [float(v) for v in re.findall(r"(0\.\d{3}) at", paired)]
    assert len(boot_cov) == len(paired_cov) == 2 and "(1,000 data sets per cell)" in coverage
    assert all(0.935 <= v <= 0.965 for v in boot_cov)
    assert all(p < min(b, 0.95) for p, b in zip(paired_cov, boot_cov))
    assert ("the paired t over prompts falls short of 95%, while this interval keeps\n"
            "its true-value rejection rate (1 - coverage) within [0.035, 0.065]") in page
    system_level = sentinels.split("system level")[1].split("prompt level")[0]
    assert next(r for r in _rows_of(system_level)
                if r[0] == "Sentinel: system identity")[1:4] == ["1.000"] * 3
    # self-preference demo: Beluga's interval holds the planted 0.5, Mistral's holds 0
    rows = {r[1]: r for r in _rows("self_preference.md") if r[0] == "Relevance"}
    b, m = rows["Beluga-13B RE 1"], rows["Mistral-7B RE 1"]
    assert float(b[6]) <= 0.5 <= float(b[7]) and float(m[6]) <= 0 <= float(m[7])
    # length on HANNA: humans prefer longer; Beluga more than humans on RE and CH; Mistral less
    diff = {(r[0], r[1]): float(r[3]) for r in _rows("length_pairs_hanna.md")
            if r[2] == "difference"}
    assert diff[("Beluga-13B 1", "Relevance")] > 0 and diff[("Beluga-13B 1", "Coherence")] > 0
    assert all(v < 0 for (j, _), v in diff.items() if j == "Mistral-7B 1")
    humans = [float(r[3]) for r in _rows("length_pairs_hanna.md")
              if r[2] == "reference P(prefer longer)"]
    assert min(humans) > 0.5
    residual = {r[0]: float(r[4]) for r in _rows("ratings_hanna.md") if len(r) > 4
                and r[3] == "r(rater - human, length)"}
    assert residual["Beluga-13B RE 1"] > 0 and residual["Mistral-7B CH 1"] < 0

def test_calibration_claims_hold():
    """The page says every test holds [0.035, 0.065] and every interval covers at least 0.93
    of 1,000 data sets per cell: check each cell of the printed table (and that the summary
    line says what the cells say)."""
    page = PAGE.read_text(encoding="utf-8")
    assert "on 1,000 data sets per design cell" in page
    levels = (BIAS / "levels.md").read_text(encoding="utf-8")
    assert "1,000 simulated data sets" in levels
    rows = _rows("levels.md")
    header, cells = rows[0], rows[1:]
    assert header[2:] == ["5 x 20", "10 x 20", "5 x 100", "10 x 100"]
    assert {r[0] for r in cells} == {"ratings", "verdicts"} and len(cells) == 10
    found_levels, found_coverage = [], []
    for row in cells:
        for cell in row[2:]:
            level, coverage = (c.strip() for c in cell.split("/"))
            found_coverage.append(float(coverage))
            if level != "-":
                found_levels.append(float(level))
    assert len(found_levels) == 36 and len(found_coverage) == 40
    assert all(0.035 <= v <= 0.065 for v in found_levels), found_levels
    assert all(v >= 0.93 for v in found_coverage), found_coverage
    assert "(all within [0.035, 0.065])" in levels and "(all at least 0.93)" in levels
    assert "NOT all" not in levels


def _rows_of(text: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("| ---")]


def test_rate_then_bias_commands_run_as_printed(tmp_path, monkeypatch, capsys):
    text = PAGE.read_text(encoding="utf-8")
    block = re.search(r"```bash\n(.*?)```", text, re.DOTALL).group(1)
    lines = [line for line in block.splitlines() if line.strip()]
    llms = lines[0].split("=", 1)[1]
    commands = [line.replace("$LLMS", llms) for line in lines[1:]]
    assert [c.split()[1] for c in commands] == ["rate", "rate", "bias"]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STORYEVAL_NO_PROGRESS", "1")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with StubServer(Script()) as srv:
        for command in commands:
            argv = shlex.split(command.replace("http://localhost:8000/v1", srv.base_url))
            assert main([*argv[1:], *(["--tries", "1"] if argv[1] == "rate" else [])]) == 0
    out = capsys.readouterr().out
    assert "Beluga-13B RE 1" in out and "Mistral-7B RE 1" in out
    scores = pd.read_csv(tmp_path / "runs" / "beluga" / "scores.csv")
    assert len(scores) == 576 and scores["system"].nunique() == 6
