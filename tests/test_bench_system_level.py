"""benchmarks/bench_system_level.py and bench_defaults.py: the edge cells' data are what their
docs say (only-pearson keeps the systems' expected order), a tiny run fills its page markers
with no disagreement between p and interval, and the defaults benchmark finds the previous
release in the changelog and writes data with the stated shape."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _bench import load_bench


@pytest.fixture(scope="module")
def bench():
    yield from load_bench("bench_system_level")


@pytest.fixture(scope="module")
def defaults():
    yield from load_bench("bench_defaults")


def test_only_pearson_keeps_the_order_of_expected_scores(bench):
    # E[b | s] = q_s + offset(q_s) is increasing in q_s (the order of E[a | s] = q_s: equal
    # tau-b) but not linear in it (unequal Pearson)
    q = np.linspace(-1, 1, 41)
    expected_b = q + bench.only_pearson_offset(q)
    assert np.all(np.diff(expected_b) > 0)
    assert abs(np.corrcoef(q, expected_b)[0, 1]) < 0.999
    rng = np.random.default_rng(0)
    h, m = bench.simulate("only-pearson", 50, 5, rng)
    assert h.shape == (50, 5, bench.PROMPTS) and m.shape == (50, 5, bench.PROMPTS, 2)


def test_same_order_ranks_the_systems_identically_in_every_sample(bench):
    # b's observed system means are an increasing function of a's: the same order on every
    # data set (tau-b's difference exactly 0), while the Pearson correlations differ
    rng = np.random.default_rng(1)
    _, m = bench.simulate("same-order", 40, 6, rng)
    means = m.mean(axis=2)  # (reps, systems, 2)
    order_a = np.argsort(means[..., 0], axis=1)
    order_b = np.argsort(means[..., 1], axis=1)
    assert np.array_equal(order_a, order_b)
    r = [np.corrcoef(means[i, :, 0], means[i, :, 1])[0, 1] for i in range(40)]
    assert min(r) < 0.999
    cell = bench.run_cell("same-order", 5, "kendall_b", 30, seed=0)
    assert cell["delta_0_share"] == 1.0 and cell["rate"] == 0.0 and cell["null"] == "sample"


def test_tiny_run_fills_the_page(bench, tmp_path):
    page = tmp_path / "page.md"
    page.write_text("before\n<!-- system-edges:start -->\nold\n<!-- system-edges:end -->\nafter\n")
    assert bench.main(["--reps", "20", "--sizes", "4", "--dgps", "exchangeable,only-pearson",
                       "--methods", "kendall_b", "--page", str(page)]) == 0
    text = page.read_text()
    assert "old" not in text and "only-pearson | 4 | tau-b" in text
    rows = [line for line in text.splitlines() if line.startswith(("| exch", "| only"))]
    assert all("| 0 | 0 of 20 |" in line for line in rows), rows  # no delta-0 rejection, agree


def test_defaults_previous_release_and_data(defaults, tmp_path):
    if (defaults.ROOT / ".git").exists():
        rev = defaults.last_release()
        assert len(rev) == 40 or rev == "HEAD"
    else:  # an unpacked sdist has no history: a one-line refusal
        with pytest.raises(SystemExit, match="git history"):
            defaults.last_release()
    ratings, scores = defaults.make_data(tmp_path, 3, 4, 2, 2)
    r, s = pd.read_csv(ratings), pd.read_csv(scores)
    assert len(r) == 3 * 4 * 2 * 3 and set(r["criterion"]) == {"Aspect 1", "Aspect 2"}
    assert len(s) == 3 * 4 * 2 and s["system"].nunique() == 3
    assert Path(ratings).name == "ratings_3x4.csv"


def test_defaults_run_measures_each_process_alone(defaults, tmp_path):
    env = {"PATH": "/usr/bin:/bin"}
    big = "import numpy as np; a = np.ones(40_000_000); print(a.sum())"  # 320 MB touched
    small = "pass"
    wall, cpu, rss_big = defaults.run([defaults.sys.executable, "-c", big], env, tmp_path)
    assert wall > 0 and cpu > 0 and rss_big > 0.3
    # the next, small process reports its own peak, not the largest child's so far
    _, _, rss_small = defaults.run([defaults.sys.executable, "-c", small], env, tmp_path)
    assert rss_small < 0.1  # not the pytest process that started it
    with pytest.raises(SystemExit, match="boom"):
        defaults.run([defaults.sys.executable, "-c", "import sys; sys.exit('boom')"], env,
                     tmp_path)
    row = defaults.summary("w", "c", "v", [(1.0, 2.0, 0.5), (3.0, 1.0, 0.7), (2.0, 4.0, 0.1)])
    assert row == ("w", "c", "v", 2.0, 2.0, 0.7)


def test_defaults_floor_reads_the_benchmark_files(defaults, tmp_path):
    ratings, scores = defaults.make_data(tmp_path, 3, 4, 2, 1)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(defaults.ROOT)}
    wall, _, _ = defaults.run([defaults.sys.executable, "-c", defaults.READ_ONLY, str(ratings),
                               str(scores)], env, tmp_path)
    assert wall > 0


def test_recorded_releases_are_commits_of_their_version(defaults):
    if not (defaults.ROOT / ".git").exists():
        pytest.skip("an unpacked sdist has no history")
    shallow = defaults.subprocess.run(["git", "rev-parse", "--is-shallow-repository"],
                                      cwd=defaults.ROOT, capture_output=True, text=True)
    if shallow.stdout.strip() != "false":
        pytest.skip("a shallow clone (or no git) holds no older commits")
    recorded = defaults.recorded_releases()
    assert recorded, "benchmarks/releases.txt lists no release"
    for version, commit in recorded.items():
        shown = defaults.subprocess.run(["git", "show", f"{commit}:storyeval/_version.py"],
                                        cwd=defaults.ROOT, capture_output=True, text=True)
        assert shown.returncode == 0, f"release {version}: commit {commit} is not in history"
        assert f'"{version}"' in shown.stdout
