"""storyeval.judge: the judge report repeats the toolkit's validated numbers, applies its
stated verdict rule, and ``storyeval judge-report`` writes a page that opens with the verdicts."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from storyeval.cli import main
from storyeval.compare.alt_test import alt_test
from storyeval.correlation.levels import correlate
from storyeval.judge.report import VERDICTS, judge_report, verdict


@pytest.fixture(scope="module")
def report():
    # criteria without the dataset's first one (Relevance): sentinels resolve all the same
    return judge_report(judges="Beluga-13B 1,ChatGPT 1", criteria="Coherence,Engagement",
                        n_resamples=50, ppi_repeats=5)


def test_verdict_rule_hand_cases():
    assert verdict(True, False, True, 50, 100) == VERDICTS[0]
    assert verdict(True, True, True, 50, 100) == "use with PPI and 50 human labels"
    assert verdict(False, False, True, 99, 100) == "use with PPI and 99 human labels"
    assert verdict(False, False, True, 100, 100) == VERDICTS[2]
    assert verdict(False, False, False, 10, 100) == VERDICTS[2]


def test_report_repeats_alt_test_and_correlations(report, hanna_generation_wide):
    wide = hanna_generation_wide
    v = report.verdicts.set_index(["criterion", "judge"])
    assert len(v) == 4 and set(v["n_items"]) == {960}
    for (crit, judge), row in v.iterrows():
        code = {"Engagement": "EG", "Coherence": "CH"}[crit]
        res = alt_test(wide[row["measure"]], wide[[f"Human {i} {code}" for i in (1, 2, 3)]])
        assert row["winning_rate"] == res.winning_rate
        assert row["advantage_probability"] == pytest.approx(res.advantage_probability,
                                                             abs=1e-15)
        per = report.alt_test.query("criterion == @crit and judge == @judge")
        np.testing.assert_allclose(per["pvalue"], res.annotators["pvalue"], rtol=1e-12)
        within = report.agreement.query(
            "criterion == @crit and judge == @judge and level == 'within'")["value"].item()
        expected = correlate(wide, row["measure"], crit, level="within")["value"].item()
        assert within == pytest.approx(expected, abs=1e-12)
        overall = correlate(wide, row["measure"], crit, level="overall")["value"].item()
        assert row["overall_corr"] == pytest.approx(overall, abs=1e-12)
        rule = verdict(row["alt_test_passed"], row["sentinel_passed"],
                       row["overall_ci_low"] > 0, row["labels_needed"], 100)
        assert row["verdict"] == rule


def test_one_judge_gets_the_same_row_as_in_a_larger_report(report):
    alone = judge_report(judges="ChatGPT 1", criteria="Engagement", n_resamples=50,
                         ppi_repeats=5)
    row = alone.verdicts.iloc[0]
    same = report.verdicts.set_index(["criterion", "judge"]).loc[("Engagement", "ChatGPT 1")]
    for name in ("verdict", "winning_rate", "overall_ci_low", "labels_needed", "ppi_gain"):
        assert row[name] == same[name], name


def test_report_has_every_section(report):
    a = report.agreement
    assert {"overall", "system", "prompt", "within"} <= set(a["level"])
    assert "human (leave-one-out)" in set(a["judge"])
    assert a["judge"].str.startswith("Sentinel").any()
    assert report.alt_test["judge"].str.startswith("Sentinel").any()
    assert set(report.biases["estimand"]) >= {"offset", "MAE", "r(rater - human, length)"}
    assert (report.ppi["n_eff"] > 0).all()
    tests = report.sentinel_tests
    # 2 judges x 2 criteria against the sentinels at their levels (SENTINEL_LEVELS: system 2,
    # length 3, prompt mean 2), and the system one at the prompt level
    assert len(tests) == 4 * (2 + 3 + 2 + 1) and set(tests["level"]) == {
        "overall", "system", "prompt", "within"}
    within = tests[tests["level"] == "within"]
    assert set(within["sentinel"]) == {"Sentinel: length only", "Sentinel: prompt mean"}
    assert (within["test"] == "prompt-jackknife").all()
    # the jackknife t interval is the test's inversion: excludes 0 exactly when p < 0.05
    assert ((within["ci_low"] > 0) | (within["ci_high"] < 0)).eq(within["p"] < 0.05).all()
    assert np.allclose(tests["delta"], tests["judge_corr"] - tests["sentinel_corr"], atol=1e-12)
    assert not report.to_frame().empty and report.settings["epsilon"] == 0.2


def test_cli_writes_page_opening_with_verdicts(tmp_path, capsys):
    out = tmp_path / "judge"
    code = main(["judge-report", "--judges", "Beluga-13B 1", "--criteria", "Relevance",
                 "--n-resamples", "20", "--json", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    payload = json.loads(captured.out)
    assert set(payload) == {"settings", "verdicts"}  # the JSON output, pinned
    assert list(payload["verdicts"][0]) == [
        "criterion", "judge", "verdict", "winning_rate", "advantage_probability",
        "sentinel_winning_rate", "overall_corr", "overall_ci_low", "human_loo_overall",
        "ppi_gain", "items_to_pass"]
    assert payload["verdicts"][0]["judge"] == "Beluga-13B 1"
    assert payload["settings"]["epsilon"] == 0.2
    page = (out / "index.html").read_text(encoding="utf-8")
    assert page.index("id='answer'") < page.index("class='facts'")
    assert "Verdict per criterion and judge" in page and "Verdict rule" in page
    table = pd.read_csv(out / "judge_report.csv")
    assert {"verdicts", "alt_test", "agreement", "ppi"} <= set(table["table"])


def test_cli_damaged_input_is_one_line(tmp_path, capsys):
    code = main(["judge-report", "--epsilon", "2"])
    err = capsys.readouterr().err
    assert code == 2 and "--epsilon" in err and err.count("\n") == 1
    rows = [{"system": s, "prompt_id": p, "r1": (p + i) % 5 + 1, "judge": p % 5 + 1.5}
            for i, s in enumerate("ABC") for p in range(12)]
    path = tmp_path / "one.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    code = main(["judge-report", "--data", str(path), "--annotators", "Overall=r1",
                 "--judges", "judge", "--n-resamples", "20"])
    err = capsys.readouterr().err
    assert code == 2 and "at least two" in err and err.count("\n") == 1


def test_self_preference_with_own(hanna_generation_wide):
    from storyeval.bias.self_preference import self_preference
    from storyeval.exceptions import InputError

    rep = judge_report(judges="Beluga-13B 1", criteria="Relevance", n_resamples=20,
                       ppi_repeats=2, own={"Beluga-13B 1": ["GPT-2"]})
    row = rep.biases[rep.biases["estimand"] == "self-preference"].iloc[0]
    direct = self_preference(hanna_generation_wide, {"Beluga-13B RE 1": ["GPT-2"]},
                             reference="Relevance").iloc[0]
    assert row["judge"] == "Beluga-13B 1" and row["estimate"] == direct["estimate"]
    assert row["pvalue"] == direct["pvalue"]
    with pytest.raises(InputError, match="not among the judges"):
        judge_report(judges="Beluga-13B 1", criteria="Relevance", n_resamples=20,
                     ppi_repeats=2, own={"ChatGPT 1": ["GPT-2"]})


def test_missing_judge_ratings_raise_or_drop_their_prompts():
    from dataclasses import replace

    from storyeval.data import load_hanna
    from storyeval.exceptions import DroppedStoriesWarning, InputError

    data = load_hanna(include_human_stories=False)
    table = data.table.copy()
    col = table.columns.get_loc("Beluga-13B EG 1")
    table.iloc[[3, 100], col] = np.nan  # two stories on two prompts
    damaged = replace(data, table=table)
    with pytest.raises(InputError) as e:
        judge_report(damaged, judges="Beluga-13B 1", criteria="Engagement", n_resamples=20,
                     ppi_repeats=2)
    assert "2 stories lack a judge rating" in str(e.value) and "\n" not in str(e.value)
    with pytest.warns(DroppedStoriesWarning, match="2 prompt"):
        rep = judge_report(damaged, judges="Beluga-13B 1", criteria="Engagement",
                           n_resamples=20, ppi_repeats=2, nan_policy="omit")
    assert rep.verdicts["n_items"].item() == 960 - 2 * 10
