"""benchmarks/bench_calibration.py --coverage runs on a tiny configuration: coverages in [0, 1]
for every stated estimand, the system-level targets behave as the DGPs imply, and the exact
E[h | q_s] it uses agrees with simulated human scores."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _bench import load_bench

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_calibration.py"


@pytest.fixture(scope="module")
def bench():
    yield from load_bench("bench_calibration")


def test_coverage_mode_runs_small(bench, tmp_path, monkeypatch):
    # a small population sample for the overall-level target (the real run: 8 x 250,000 stories)
    monkeypatch.setattr(bench, "POPULATION_STORIES", 4000)
    monkeypatch.setattr(bench, "_POPULATION", {})
    out, csv = tmp_path / "coverage.md", tmp_path / "coverage.csv"
    page = tmp_path / "page.md"
    page.write_text("intro\n<!-- coverage:start -->\nold\n<!-- coverage:end -->\nafter\n",
                    encoding="utf-8")
    assert bench.main(["--coverage", "--reps", "6", "--inner", "4",
                       "--dgps", "alt-base,alt-system-bias", "--overall-sizes", "30",
                       "--system-sizes", "5", "--markdown", str(out), "--csv", str(csv),
                       "--page", str(page)]) == 0
    rows = pd.read_csv(csv)
    # alt-base: overall 30 and system 5; alt-system-bias: system 5 only; two methods each
    assert len(rows) == 6
    assert set(rows["method"]) == {"kendall_b", "pearson"}
    overall, system = rows[rows["level"] == "overall"], rows[rows["level"] == "system"]
    assert set(overall["dgp"]) == {"alt-base"} and len(system) == 4
    cover = ["cover_population"]
    assert overall[cover].notna().all().all()
    cols = ["cover_infinite", "cover_at_prompts", "cover_mean_at_prompts"]
    assert system[cols].notna().all().all()
    values = np.concatenate([overall[cover].to_numpy().ravel(), system[cols].to_numpy().ravel()])
    assert ((values >= 0) & (values <= 1)).all()
    assert (rows["reps"] == 6).all() and (rows["width"] > 0).all()
    assert (rows["undefined"] == 0).all()
    assert (system["normal_width"] > 0).all() and overall["normal_width"].isna().all()
    # a correlates more strongly with quality than b: a positive population difference
    assert (overall["target_population"] > 0.05).all()
    # with infinitely many prompts both measures of alt-base are increasing functions of the
    # system quality: equal coefficients, a target of 0; alt-system-bias's b is not (tau-b: >= 0)
    base = system[system["dgp"] == "alt-base"]
    assert np.allclose(base["target_infinite"], 0.0, atol=1e-12)
    bias = system[(system["dgp"] == "alt-system-bias") & (system["method"] == "kendall_b")]
    assert (bias["target_infinite"] > 0).all()
    text = out.read_text(encoding="utf-8")
    for label in ("expected scores, infinitely many prompts",
                  "E[delta \\| these systems], 50 prompts", "E[delta], 50 prompts, systems drawn",
                  "mean width (3.92 sd of delta \\| these systems)",
                  "coverage of the population difference"):
        assert label in text
    written = page.read_text(encoding="utf-8")
    assert written.startswith("intro\n<!-- coverage:start -->\n**kendall_b, overall level**")
    assert written.endswith("<!-- coverage:end -->\nafter\n") and "old" not in written


def test_expected_human_matches_simulated_ratings(bench):
    q = np.array([-2.0, -0.5, 0.0, 0.7, 2.5])
    n = 200_000
    rng = np.random.default_rng(5)
    for kind in ("likert-3", "likert-1"):
        dgp = dict(bench.COVERAGE_DGPS["alt-base"], human=kind)
        h, _, _ = bench.simulate_full(dgp, 1, len(q), n, 2, rng, True,
                                      {"quality": q.reshape(1, -1, 1)})
        simulated = h[0].mean(-1)
        se = h[0].std(-1) / math.sqrt(n)
        assert np.all(np.abs(simulated - bench.expected_human(q)) < 5 * se), kind
    # symmetric around 3 (the scale's midpoint) and increasing
    e = bench.expected_human(np.array([-1.0, 0.0, 1.0]))
    assert e[1] == pytest.approx(3.0, abs=1e-12) and e[0] + e[2] == pytest.approx(6.0, abs=1e-12)


def test_seed_stability_mode_runs_small(bench, tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "STABILITY_DGPS", ("base",))
    monkeypatch.setattr(bench, "SYSTEM_SIZES", (5,))
    csv, page = tmp_path / "stability.csv", tmp_path / "page.md"
    page.write_text("a\n<!-- seed-stability:start -->\nold\n<!-- seed-stability:end -->\nb\n",
                    encoding="utf-8")
    rows = bench.run_seed_stability(12, 0, ("pearson",), sizes=(5,))
    assert len(rows) == 1 and rows[0]["reps"] == 12
    # the p-values and intervals do not depend on the names or the column order
    assert rows[0]["rename_p"] == 0.0 and rows[0]["rename_ci"] == 0.0
    assert 0.0 <= rows[0]["flips"] <= 1.0
    assert bench.main(["--seed-stability", "--reps", "8", "--methods", "kendall_b",
                       "--csv", str(csv), "--page", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    assert "old" not in text and "seed changes decision 5" in text
    assert "--seed-stability --reps 8" in text and len(pd.read_csv(csv)) == 1


def test_renamed_table_keeps_every_value(bench):
    rng = np.random.default_rng(0)
    h, m = bench.simulate(bench.DGPS["base"], 3, 5, 4, 2, rng, True)
    wide, crit, meas = bench.wide_table(h, m)
    other, crit2, meas2, names = bench._renamed(wide, crit, meas)
    assert list(other.columns) == list(reversed([names[c] for c in wide.columns]))
    assert crit2 == ["Overall-0", "Overall-1", "Overall-2"]
    assert meas2[1] == ["METEOR-1", "my-metric-1"]
    for old, new in names.items():
        assert (other[new].to_numpy() == wide[old].to_numpy()).all()
