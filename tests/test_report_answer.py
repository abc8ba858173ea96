"""The answer index.html opens with (storyeval.report.answer): the same p-values as the
clusters and the matrices of the run, oriented values of the best measure(s), ties spelled out."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from storyeval.data.load import read_dataset
from storyeval.meta import meta_evaluate
from storyeval.meta.wmt import DECISION_P, cluster_tables
from storyeval.report.answer import answer_notes, answer_table
from storyeval.report.tables import journal_p


def _frame(seed: int = 7, systems: int = 6, prompts: int = 25) -> pd.DataFrame:
    """Criterion 'verdict'; crisp (h + noise), loss = -(h + noise) declared lower-is-better,
    mirror = -loss (oriented, loss and mirror tie exactly), weak, and a mid measure."""
    rng = np.random.default_rng(seed)
    n = systems * prompts
    h = np.repeat(np.linspace(0, 2, systems), prompts) + rng.normal(0, 1, n)
    loss = -(h + rng.normal(0, 0.5, n))
    return pd.DataFrame({"maker": np.repeat([f"m{k}" for k in range(systems)], prompts),
                         "task": np.tile(np.arange(prompts), systems), "verdict": h,
                         "crisp": h + rng.normal(0, 0.9, n), "loss": loss, "mirror": -loss,
                         "middling": h + rng.normal(0, 2.0, n),
                         "weak": 0.1 * h + rng.normal(0, 1.5, n)})


def _run(frame: pd.DataFrame, measures: list[str], **kw):
    data = read_dataset(frame, id="system=maker,prompt_id=task", criteria=["verdict"])
    return meta_evaluate(data, criteria=["verdict"], measures=measures,
                         lower_is_better=["loss"], n_permutations=400, **kw)


@pytest.fixture(scope="module")
def result():
    return _run(_frame(), ["crisp", "loss", "middling", "weak"])


def test_answer_reads_the_same_p_values_as_the_clusters(result):
    answer = answer_table(result)
    clusters, _ = cluster_tables(result)
    assert (clusters["p_column"] == DECISION_P).all()
    for row in answer.itertuples():
        part = clusters[(clusters["level"] == row.level)
                        & (clusters["criterion"] == row.criterion)]
        ranked = part[part["rank"].notna()]
        # top group = cluster 1 of clusters.csv, "p vs next" = its p_vs_next, both read from
        # the same column of the comparison table
        top = ranked.loc[ranked["rank"] == 1, "display_name"].tolist()
        assert row._8.split(", ") == top, (row.level, row._8, top)
        # "p vs next": the adjusted p of each best measure against the next, the largest
        tests = result.comparisons[result.comparisons["level"] == row.level]
        best = [b.split(" (")[0] for b in row._3.removeprefix("tied: ").split(" = ")]
        ps = [tests.loc[((tests["measure_a"] == b) & (tests["measure_b"] == row._5))
                        | ((tests["measure_a"] == row._5) & (tests["measure_b"] == b)),
                        DECISION_P].iloc[0] for b in best]
        assert row._7 == journal_p(max(ps))
        if len(best) == 1:  # clusters.csv's p_vs_next of the best is the same number
            assert row._7 == journal_p(ranked["p_vs_next"].iloc[0])
    note = answer_notes(result)[0]
    assert "BH-adjusted p-values" in note and "clusters.csv" in note


def test_answer_and_clusters_use_unadjusted_p_under_adjust_none():
    res = _run(_frame(), ["crisp", "loss", "middling", "weak"], adjust="none")
    assert np.allclose(res.comparisons["p"], res.comparisons["p_adjusted"], equal_nan=True)
    assert "unadjusted p-values (--adjust none)" in answer_notes(res)[0]


def test_a_lower_is_better_best_is_printed_oriented():
    from storyeval.meta.resampling import add_bootstrap_ci

    res = add_bootstrap_ci(_run(_frame(), ["loss", "middling", "weak"]), n_resamples=100)
    answer = answer_table(res).set_index("level")
    corr = res.correlations.set_index(["level", "measure"])
    for level in ("overall", "system"):
        r, low, high = corr.loc[(level, "loss"), ["value", "ci_low", "ci_high"]]
        assert r < 0
        want = f"{-r:.3f} [{-high:.3f}, {-low:.3f}] (r = {r:.3f}; lower is better)"
        assert answer.loc[level, "correlation"] == want.replace("-0.000", "0.000")
        assert answer.loc[level, "best measure"] == "loss (lower is better)"


def test_a_tie_is_spelled_out_with_each_members_oriented_value():
    res = _run(_frame(), ["crisp", "loss", "mirror", "weak"])
    overall = answer_table(res, extras=False).set_index("level").loc["overall"]
    r = res.correlations.set_index(["level", "measure"]).loc[("overall", "mirror"), "value"]
    assert overall["best measure"] == "tied: loss (lower is better) = mirror"
    assert overall["correlation"] == (f"loss: {r:.3f} (r = {-r:.3f}; lower is better); "
                                      f"mirror: {r:.3f}")
    # by default the answer bootstraps an interval for each member (the run computed none)
    shown = answer_table(res).set_index("level").loc["overall", "correlation"]
    assert shown.count("[") == 2 and shown.startswith(f"loss: {r:.3f} [")
    assert {"loss", "mirror"} <= set(overall["top group"].split(", "))


def _cli(tmp_path, capsys, *extra: str) -> str:
    from storyeval.cli import main

    frame = _frame()
    frame["steady"] = 3.0  # a constant measure: every correlation with it is undefined
    frame.to_csv(tmp_path / "wide.csv", index=False)
    capsys.readouterr()
    assert main(["meta", "--data", str(tmp_path / "wide.csv"), "--id",
                 "system=maker,prompt_id=task", "--criteria", "verdict", "--metrics",
                 "crisp,loss,weak,steady", "--lower-is-better", "loss", "--nan-policy",
                 "propagate", *extra]) == 0
    return capsys.readouterr().out


@pytest.mark.filterwarnings("ignore::storyeval.exceptions.UndefinedStatisticWarning")
def test_meta_prints_the_seed_whenever_a_random_procedure_ran(tmp_path, capsys):
    # no --ci: the system level's default test is a permutation test, seeded by default
    text = _cli(tmp_path, capsys)
    assert "# seed 0: the random procedures of the comparisons (system: permutation-midp " \
           "test)" in text
    assert "seed 5: the random procedures" in _cli(tmp_path, capsys, "--seed", "5")
    # only closed-form tests: no seed line for the tests; the answer's own bootstrap interval
    # (the run computed none) names its seed, the run's
    text = _cli(tmp_path, capsys, "--levels", "overall")
    assert "the random procedures" not in text
    assert "(1000 resamples of prompts, seed 0)" in text
    assert "seed 5)" in _cli(tmp_path, capsys, "--levels", "overall", "--seed", "5")


@pytest.mark.filterwarnings("ignore::storyeval.exceptions.UndefinedStatisticWarning")
def test_comparisons_with_a_constant_measure_say_why_they_have_no_p(tmp_path, capsys):
    out = tmp_path / "res"
    _cli(tmp_path, capsys, "--clusters", "--out", str(out), "--no-figures")
    table = pd.read_csv(out / "comparisons.csv", keep_default_na=False,
                        na_values=[""])
    with_steady = (table["measure_a"] == "steady") | (table["measure_b"] == "steady")
    assert table.loc[with_steady, "p"].isna().all() and with_steady.sum() == 6
    for level in ("overall", "system"):
        reasons = table.loc[with_steady & (table["level"] == level), "reason"]
        assert reasons.str.startswith("correlation undefined (r(h,").all(), reasons
        assert reasons.str.contains("left out of the adjustment family and the clusters").all()
    assert table.loc[~with_steady, "reason"].isna().all()
    # the adjustment family counts the defined comparisons only (m = 3 of 6 per level)
    assert table["family"].str.endswith("(m=3)").all()
    clusters = pd.read_csv(out / "clusters.csv")
    steady = clusters[clusters["measure"] == "steady"]
    assert steady["rank"].isna().all() and steady["reason"].str.contains("undefined").all()


# ---- small things a reader trips over ----

def test_no_negative_zero_and_counts_in_the_right_number():
    from storyeval.report.tables import count, fixed, format_table

    assert [fixed(v, 3) for v in (-0.0002, -0.0, 0.0, -0.0006, 0.25)] == \
        ["0.000", "0.000", "0.000", "-0.001", "0.250"]
    assert fixed(-0.4, 0) == "0" and fixed(-0.6, 0) == "-1"
    table = format_table(pd.DataFrame({"delta": [-0.0001, -0.2]}), "table")
    assert "-0.000" not in table and "-0.200" in table
    assert [count(1, "system"), count(3, "system"), count(1, "story", "stories"),
            count(2, "story", "stories")] == ["1 system", "3 systems", "1 story", "2 stories"]


def test_excluded_comparisons_are_counted_per_matrix(tmp_path):
    from storyeval.report.meta_report import comparison_caption

    frame = _frame()
    frame["calm"] = 2.0  # a constant criterion: every comparison under it is undefined
    data = read_dataset(frame, id="system=maker,prompt_id=task", criteria=["verdict", "calm"])
    with pytest.warns(Warning):
        res = meta_evaluate(data, criteria=["verdict", "calm"], measures=["crisp", "weak", "loss"],
                            nan_policy="propagate", levels=["overall"])
    verdict = comparison_caption(res, "overall", "verdict")
    calm = comparison_caption(res, "overall", "calm")
    assert "without a p-value" not in verdict  # all three defined in this matrix
    assert "3 comparisons of calm without a p-value left out of the adjustment" in calm


def test_undefined_statistic_warnings_point_at_the_users_call():
    from storyeval.exceptions import UndefinedStatisticWarning
    from storyeval.meta.resampling import add_bootstrap_ci

    frame = _frame()
    frame["steady"] = 1.0
    data = read_dataset(frame, id="system=maker,prompt_id=task", criteria=["verdict"])
    with pytest.warns(UndefinedStatisticWarning) as caught:
        res = meta_evaluate(data, criteria=["verdict"], measures=["crisp", "steady"],
                            nan_policy="propagate")
        add_bootstrap_ci(res, n_resamples=20)
    undefined = [w for w in caught if issubclass(w.category, UndefinedStatisticWarning)]
    assert len(undefined) >= 4
    assert {w.filename for w in undefined} == {__file__}, {w.filename for w in undefined}


def test_agreement_out_prints_full_paths_and_a_summary(tmp_path, capsys, monkeypatch):
    from storyeval.cli import main

    rng = np.random.default_rng(8)
    pd.DataFrame({"item": np.repeat(np.arange(20), 3), "rater": np.tile(["ann", "bea", "cal"], 20),
                  "label": rng.choice(["fine", "flawed"], 60)}).to_csv(tmp_path / "l.csv",
                                                                        index=False)
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["agreement", "--labels", "l.csv", "--resamples", "50", "--out", "rel"]) == 0
    got = capsys.readouterr()
    folder = tmp_path / "rel"
    assert got.out.split() == [str(folder / "labels.txt"), str(folder / "index.html")]
    assert f"wrote 2 files to {folder}; open {folder / 'index.html'}" in got.err


@pytest.mark.filterwarnings("ignore::storyeval.exceptions.UndefinedStatisticWarning")
def test_meta_page_shows_the_clusters_and_the_effect_sizes(tmp_path, capsys):
    import io

    out = tmp_path / "res"
    _cli(tmp_path, capsys, "--clusters", "--out", str(out), "--no-figures")
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "Significance clusters: average rank over criteria" in page
    assert "Significance clusters of every measure (clusters.csv" in page
    tables = pd.read_html(io.StringIO(page))
    every = next(t for t in tables if "p_vs_cluster_top" in t.columns)
    clusters = pd.read_csv(out / "clusters.csv")
    assert sorted(every["display_name"]) == sorted(clusters["display_name"])
    # per level, the matrix of "delta [low, high]" beside the matrix of p-values
    assert page.count("difference of correlations with the human criterion") == 2
    effect = pd.read_csv(out / "comparisons_overall_verdict_effect.csv")
    cell = effect.set_index("id").loc["crisp", "weak"]
    assert f"<td>{cell}</td>" in page


def test_interval_text_prints_an_end_beyond_zero_as_open():
    from storyeval.report.tables import interval_text

    tiny = np.nextafter(0.0, 1.0)
    assert interval_text(0.1234, 0.5) == "[0.123, 0.500]"
    assert interval_text(tiny, 0.5) == "(0, 0.500]"
    assert interval_text(0.0004, 0.5) == "(0, 0.500]"  # > 0, prints as 0: still excludes 0
    assert interval_text(0.0, 0.5) == "[0.000, 0.500]"  # closed at 0: covers it
    assert interval_text(-0.5, -tiny) == "[-0.500, 0)"
    assert interval_text(-0.0002, 0.5) == "[0.000, 0.500]"
