"""benchmarks/bench_within.py: a tiny run of its cells through the public functions, and the
docs section "Within-system comparisons" of docs/which-test.md holds every row of
benchmarks/bench_within.json (failing cells included)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))


def test_a_tiny_cell_runs_and_the_jackknife_agrees_with_its_interval():
    import bench_within

    rows = bench_within.run_cell("shared-noise", 3, 8, "kendall_b", 20, 0, 30, 20,
                                 ("prompt-jackknife", "bootstrap", "permutation"))
    assert [r["test"] for r in rows] == ["prompt-jackknife", "bootstrap", "permutation"]
    jack = rows[0]
    assert jack["null"] and jack["disagree"] == 0 and 0 <= jack["coverage"] <= 1
    assert all(0 <= r["rate"] <= 1 for r in rows)
    table = bench_within.markdown(rows, "python benchmarks/bench_within.py --quick", 1.0)
    assert table.count("\n| shared-noise | 3 x 8 |") == 3


def test_docs_section_holds_every_benchmark_row():
    payload = json.loads((ROOT / "benchmarks" / "bench_within.json").read_text())
    page = (ROOT / "docs" / "which-test.md").read_text(encoding="utf-8")
    section = page.split("<!-- within:start -->")[1].split("<!-- within:end -->")[0]
    names = {"kendall_b": "tau-b", "pearson": "Pearson"}
    assert len(payload["rows"]) >= 40
    for r in payload["rows"]:
        head = (f"| {r['dgp']} | {r['systems']} x {r['prompts']} | {names[r['method']]} | "
                f"{r['test']} |")
        line = next((x for x in section.splitlines() if x.startswith(head)), None)
        assert line is not None, head
        assert f"{r['rate']:.3f} ({r['se']:.3f})" in line
        if r["disagree"] is not None:
            assert f"{r['disagree']} of {r['reps']}" in line


@pytest.mark.parametrize("method", ["kendall_b", "pearson"])
def test_default_within_test_claims_match_the_benchmark(method):
    """The levels the library prints for the within-system default are the benchmark's ranges:
    over the null cells with at least `FEW_PROMPTS` prompts (per coefficient), and below it
    (the few-prompts note)."""
    from storyeval.compare.procedures import CALIBRATED_LEVEL
    from storyeval.compare.within import FEW_PROMPTS, FEW_PROMPTS_LEVEL

    payload = json.loads((ROOT / "benchmarks" / "bench_within.json").read_text())
    rows = [r for r in payload["rows"] if r["test"] == "prompt-jackknife" and r["null"]]
    rates = [r["rate"] for r in rows if r["method"] == method and r["prompts"] >= FEW_PROMPTS]
    low, high, _ = CALIBRATED_LEVEL[method]["within"]
    assert low == pytest.approx(min(rates), abs=5e-4)
    assert high == pytest.approx(max(rates), abs=5e-4)
    few = [r["rate"] for r in rows if r["prompts"] < FEW_PROMPTS]
    assert FEW_PROMPTS_LEVEL == pytest.approx((min(few), max(few)), abs=5e-4)


def test_docs_section_holds_every_single_interval_row():
    payload = json.loads((ROOT / "benchmarks" / "bench_within_single.json").read_text())
    page = (ROOT / "docs" / "which-test.md").read_text(encoding="utf-8")
    section = page.split("<!-- within-single:start -->")[1].split("<!-- within-single:end -->")[0]
    names = {"kendall_b": "tau-b", "pearson": "Pearson"}
    assert len(payload["rows"]) == 12
    for r in payload["rows"]:
        line = (f"| {r['dgp']} | {r['systems']} x {r['prompts']} | {names[r['method']]} | "
                f"{r['target']:.3f} | {r['percentile']:.3f} | {r['expanded']:.3f} |")
        assert line in section, line


def test_a_tiny_single_interval_cell():
    import bench_within

    row = bench_within.run_single("exchangeable", 3, 8, "kendall_b", 20, 0, 40)
    # the expanded interval holds the percentile one (same resamples, wider quantiles)
    assert 0 <= row["percentile"] <= row["expanded"] <= 1
    assert -1 <= row["target"] <= 1
