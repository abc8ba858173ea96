"""Agreement on verdict and label tables (statsmodels, krippendorff, irrCAC to 1e-12), the
bootstrap kernels, judge-vs-human ranking agreement (scipy), and preference-only input."""

from __future__ import annotations

import itertools
import json

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.inter_rater import aggregate_raters, cohens_kappa
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from storyeval.agreement.coefficients import category_counts
from storyeval.cli import main
from storyeval.exceptions import InputError
from storyeval.pairwise.from_scores import verdicts_from_scores
from storyeval.pairwise.ranking import (
    _table_correlations,
    item_correlation,
    ranking_agreement,
    system_strengths,
)
from storyeval.pairwise.verdict_agreement import (
    _coefficient_draws,
    cohen_kappa,
    label_agreement,
    label_file_agreement,
    verdict_agreement,
    verdict_labels,
)


@pytest.fixture(scope="module")
def hanna():
    from storyeval.data import load_hanna

    return load_hanna().select_systems(exclude=["Human"]).wide()


@pytest.fixture(scope="module")
def annotator_verdicts(hanna):
    """A real multi-expert verdict table: HANNA's three annotators' ratings of Coherence turned
    into verdicts on the 4,320 pairs of systems within prompts."""
    return pd.concat([verdicts_from_scores(hanna, f"Human {i} CH", judge=f"annotator {i}",
                                           dimension="Coherence") for i in (1, 2, 3)],
                     ignore_index=True)


def _row(result, coefficient, dimension=None):
    sel = result["coefficient"] == coefficient
    if dimension is not None:
        sel &= result["dimension"] == dimension
    return result[sel].iloc[0]


def _references(labels: pd.DataFrame, cats):
    """Fleiss (statsmodels), alpha (krippendorff), AC1/Fleiss/alpha (irrCAC) of an items x
    raters table of labels."""
    codes = labels.apply(lambda c: c.map({k: i for i, k in enumerate(cats)})).to_numpy(float)
    observed = np.unique(codes[~np.isnan(codes)])
    out = {"alpha": krippendorff.alpha(reliability_data=codes.T,
                                       level_of_measurement="nominal")
           if len(observed) > 1 else np.nan}
    complete = codes[~np.isnan(codes).any(axis=1)]
    if len(complete) == len(codes):
        out["fleiss"] = sm_fleiss(aggregate_raters(complete.astype(int),
                                                   n_cat=len(cats))[0])
    raw = pytest.importorskip("irrCAC.raw")
    cac = raw.CAC(labels.reset_index(drop=True), categories=list(cats), digits=14)
    out["irr_ac1"] = float(cac.gwet()["est"]["coefficient_value"])
    out["irr_ac1_se"] = float(cac.gwet()["est"]["se"])
    out["irr_alpha"] = float(cac.krippendorff()["est"]["coefficient_value"])
    return out


def test_verdict_table_of_real_annotators_equals_references(annotator_verdicts):
    table = verdict_labels(annotator_verdicts)
    assert table.shape == (4320, 3)
    res = verdict_agreement(annotator_verdicts, n_resamples=200, random_state=0)
    ref = _references(table, ("A", "B", "same"))
    assert _row(res, "fleiss_kappa")["statistic"] == pytest.approx(ref["fleiss"], abs=1e-12)
    assert _row(res, "krippendorff_alpha_nominal")["statistic"] == pytest.approx(
        ref["alpha"], abs=1e-12)
    assert _row(res, "krippendorff_alpha_nominal")["statistic"] == pytest.approx(
        ref["irr_alpha"], abs=1e-12)
    assert _row(res, "gwet_ac1")["statistic"] == pytest.approx(ref["irr_ac1"], abs=1e-12)
    assert _row(res, "gwet_ac1")["standard_error"] == pytest.approx(ref["irr_ac1_se"],
                                                                    abs=1e-12)
    for coef in ("fleiss_kappa", "gwet_ac1", "krippendorff_alpha_nominal"):
        r = _row(res, coef)
        assert r["ci_low"] < r["statistic"] < r["ci_high"] and r["n_items"] == 4320


def test_user_study_labels_equal_references():
    # HANNA's user study: 3 workers label each of 100 explanations Yes/No per error category
    from storyeval.reproduction.user_study import user_study_labels

    errors, _ = user_study_labels()
    checked = 0
    for k in range(errors.shape[2]):
        labels = pd.DataFrame(np.where(errors[:, :, k] == 1, "Yes", "No"))
        if len(np.unique(labels.to_numpy())) < 2:  # nobody flagged it: nothing to compare
            continue
        checked += 1
        res = label_agreement(labels, categories=("No", "Yes"), n_resamples=0)
        ref = _references(labels, ("No", "Yes"))
        assert _row(res, "fleiss_kappa")["statistic"] == pytest.approx(ref["fleiss"],
                                                                       abs=1e-12)
        assert _row(res, "gwet_ac1")["statistic"] == pytest.approx(ref["irr_ac1"], abs=1e-12)
        assert _row(res, "krippendorff_alpha_nominal")["statistic"] == pytest.approx(
            ref["alpha"], abs=1e-12)
    assert checked >= 4


def test_cohen_kappa_equals_statsmodels(annotator_verdicts):
    table = verdict_labels(annotator_verdicts)
    a, b = table.iloc[:, 0].to_numpy(object), table.iloc[:, 1].to_numpy(object)
    res = cohen_kappa(a, b, categories=("A", "B", "same"))
    cross = pd.crosstab(pd.Categorical(a, ["A", "B", "same"]),
                        pd.Categorical(b, ["A", "B", "same"]), dropna=False).to_numpy()
    ref = cohens_kappa(cross)
    assert res["statistic"] == pytest.approx(ref.kappa, abs=1e-12)
    assert res["standard_error"] == pytest.approx(ref.std_kappa, abs=1e-12)
    assert res["standard_error_null"] == pytest.approx(ref.std_kappa0, abs=1e-12)
    two = label_agreement(table.iloc[:, :2], n_resamples=100, random_state=0)
    assert _row(two, "cohen_kappa")["statistic"] == pytest.approx(ref.kappa, abs=1e-12)


def test_bootstrap_kernel_at_unit_weights_equals_point_estimates():
    rng = np.random.default_rng(0)
    labels = pd.DataFrame(rng.choice(["x", "y", "z"], size=(50, 4)))
    labels = labels.mask(rng.random((50, 4)) < 0.2)
    counts, cats = category_counts(labels)
    counts = counts[counts.sum(axis=1) >= 2]
    draws = _coefficient_draws(counts, np.ones((1, len(counts))), 3)
    res = label_agreement(labels, n_resamples=0)
    for name in ("gwet_ac1", "krippendorff_alpha_nominal"):
        assert draws[name][0] == pytest.approx(_row(res, name)["statistic"], abs=1e-12)
    # Fleiss needs equal ratings per item: NaN with the reason
    assert np.isnan(_row(res, "fleiss_kappa")["statistic"])
    assert "same number of ratings" in _row(res, "fleiss_kappa")["reason"]
    # a resample equals the coefficient of the explicitly duplicated items
    w = np.zeros((1, len(counts)))
    w[0, [0, 0, 3, 5, 5, 5, 7, 9]] = [1, 1, 1, 1, 1, 1, 1, 1]
    w[0, 0], w[0, 5] = 2, 3
    expanded = np.repeat(counts, w[0].astype(int), axis=0)
    from storyeval.agreement.coefficients import gwet_ac1, krippendorff_alpha

    draws = _coefficient_draws(counts, w, 3)
    assert draws["gwet_ac1"][0] == pytest.approx(
        gwet_ac1(expanded, data_format="counts", categories=cats).statistic, abs=1e-12)
    assert draws["krippendorff_alpha_nominal"][0] == pytest.approx(
        krippendorff_alpha(expanded, data_format="counts").statistic, abs=1e-12)


def _pair_verdicts(n_pairs, rng):
    """Human verdicts on n_pairs pairs of 8 systems (one pair per prompt), each pair shown in
    a random order; the better system (by a latent strength) wins more often."""
    systems = np.array([f"sys{k}" for k in range(8)])
    strength = np.linspace(-1, 1, 8)
    combos = np.array(list(itertools.combinations(range(8), 2)))   # 28 pairs of systems
    n_prompts = -(-n_pairs // 4)
    pick = np.argsort(rng.random((n_prompts, len(combos))), axis=1)[:, :4].ravel()[:n_pairs]
    i, j = combos[pick, 0], combos[pick, 1]
    p_a = 1 / (1 + np.exp(-(strength[i] - strength[j])))
    u = rng.random(n_pairs)
    verdict = np.where(u < 0.1, "same", np.where(rng.random(n_pairs) < p_a, "A", "B"))
    prompts = np.arange(n_pairs) // 4  # 4 pairs per prompt
    return pd.DataFrame({
        "prompt_id": prompts, "story_a": [f"{s}/{p}" for s, p in zip(systems[i], prompts)],
        "story_b": [f"{s}/{p}" for s, p in zip(systems[j], prompts)], "dimension": "Overall",
        "verdict": verdict, "order": rng.choice(["AB", "BA"], n_pairs), "judge": "human"})


def test_copying_judge_agrees_perfectly_and_position_judge_does_not():
    rng = np.random.default_rng(11)
    human = _pair_verdicts(10_000, rng)
    copy = human.assign(judge="copy")
    res = verdict_agreement(pd.concat([human, copy]), n_resamples=0)
    for coef in ("cohen_kappa", "fleiss_kappa", "gwet_ac1", "krippendorff_alpha_nominal"):
        assert _row(res, coef)["statistic"] == pytest.approx(1.0, abs=1e-12)
    rank = ranking_agreement(copy, human, n_resamples=50, random_state=0)
    assert np.allclose(rank["statistic"], 1.0)
    # a judge that always names the story shown first: random labels relative to the pair
    first = human.assign(judge="first", verdict=np.where(human["order"] == "AB", "A", "B"))
    res = verdict_agreement(pd.concat([human, first]), n_resamples=0)
    assert abs(_row(res, "cohen_kappa")["statistic"]) < 0.05
    assert abs(_row(res, "fleiss_kappa")["statistic"]) < 0.05


def test_verdict_labels_both_orders_and_errors():
    rng = np.random.default_rng(2)
    human = _pair_verdicts(40, rng)
    both = pd.concat([human, human.assign(order=np.where(human["order"] == "AB", "BA",
                                                         "AB"))])
    with pytest.raises(InputError, match="pair-order"):
        verdict_labels(both)
    assert verdict_labels(both, item="pair-order").shape == (80, 1)
    with pytest.raises(InputError, match="judge"):
        verdict_agreement(human, judges=["nobody"])


def test_label_file_errors_name_rows():
    frame = pd.DataFrame({"item": [1, 1, 2], "rater": ["u", "u", "v"], "label": ["y", "n", "y"]})
    with pytest.raises(InputError, match="rows 0 and 1: rater 'u' labelled item"):
        label_file_agreement(frame)
    with pytest.raises(InputError, match="missing column"):
        label_file_agreement(frame.drop(columns="rater"))
    with pytest.raises(InputError, match="row 2: empty value in column 'label'"):
        label_file_agreement(frame.assign(rater=["u", "v", "u"], label=["y", "n", None]))


# ------------------------------------------------------------------ ranking (item 4)
def test_table_correlations_equal_scipy_on_repeated_items():
    rng = np.random.default_rng(4)
    x = rng.choice([-1.0, -0.5, 0.0, 1.0], 300)
    y = np.clip(x + rng.choice([-1.0, 0.0, 1.0], 300), -1, 1)
    vx, cx = np.unique(x, return_inverse=True)
    vy, cy = np.unique(y, return_inverse=True)
    mult = rng.integers(0, 3, 300)
    table = np.zeros((1, len(vx), len(vy)))
    np.add.at(table[0], (cx, cy), mult)
    rho, tau = _table_correlations(table, vx, vy)
    xr, yr = np.repeat(x, mult), np.repeat(y, mult)
    assert rho[0] == pytest.approx(stats.spearmanr(xr, yr).statistic, abs=1e-12)
    assert tau[0] == pytest.approx(stats.kendalltau(xr, yr).statistic, abs=1e-12)


def test_ranking_agreement_point_estimates_equal_scipy(hanna):
    human = pd.concat([verdicts_from_scores(hanna, f"Human {i} {c}", judge=f"a{i}",
                                            dimension=c)
                       for i in (1, 2, 3) for c in ("RE", "CH")])
    judge = pd.concat([verdicts_from_scores(hanna, f"Beluga-13B {c} 1", judge="Beluga",
                                            dimension=c) for c in ("RE", "CH")])
    res = ranking_agreement(judge, human, n_resamples=100, random_state=0)
    hs, js = system_strengths(human), system_strengths(judge)
    sel = res.set_index(["level", "coefficient"])["statistic"]
    x, y = js.to_numpy().ravel(), hs.to_numpy().ravel()
    assert sel["systems x dimensions", "spearman"] == pytest.approx(
        stats.spearmanr(x, y).statistic, abs=1e-12)
    assert sel["systems x dimensions", "kendall_tau_b"] == pytest.approx(
        stats.kendalltau(x, y).statistic, abs=1e-12)
    assert sel["systems: RE", "spearman"] == pytest.approx(
        stats.spearmanr(js["RE"], hs["RE"]).statistic, abs=1e-12)
    # items: the judge's verdict against the mean of the three annotators' outcomes, both
    # from the side of the story whose id sorts first
    items = item_correlation(judge, human)

    def oriented(v):
        o = v["verdict"].map({"A": 1.0, "B": -1.0, "same": 0.0})
        flip = v["story_a"] > v["story_b"]
        lo = v["story_a"].where(~flip, v["story_b"])
        hi = v["story_b"].where(~flip, v["story_a"])
        return v.assign(o=o.where(~flip, -o), lo=lo, hi=hi).groupby(
            ["dimension", "lo", "hi"])["o"].mean()

    j_by = oriented(judge)
    h_by = oriented(human).loc[j_by.index]
    assert items["spearman"] == pytest.approx(stats.spearmanr(j_by, h_by).statistic,
                                              abs=1e-12)
    assert items["kendall_tau_b"] == pytest.approx(stats.kendalltau(j_by, h_by).statistic,
                                                   abs=1e-12)
    ok = res["n_resamples"] == 100
    assert ok.all() and (res["ci_low"] <= res["statistic"] + 1e-12).all()


def test_ranking_bradley_terry_and_errors(hanna):
    human = verdicts_from_scores(hanna, "Human 1 RE", judge="a1", dimension="RE")
    judge = verdicts_from_scores(hanna, "Beluga-13B RE 1", judge="Beluga", dimension="RE")
    res = ranking_agreement(judge, human, strength="bradley-terry", n_resamples=5,
                            random_state=0)
    bt_h = system_strengths(human, strength="bradley-terry")["RE"]
    bt_j = system_strengths(judge, strength="bradley-terry")["RE"]
    assert res.iloc[0]["statistic"] == pytest.approx(stats.spearmanr(bt_j, bt_h).statistic,
                                                     abs=1e-12)
    with pytest.raises(InputError, match="several judges"):
        ranking_agreement(pd.concat([judge, judge.assign(judge="x")]), human)
    with pytest.raises(InputError, match="no dimension"):
        ranking_agreement(judge.assign(dimension="Other"), human)


def test_cli_ranking_and_agreement(tmp_path, capsys, annotator_verdicts, hanna):
    hp, jp = tmp_path / "humans.csv", tmp_path / "judge.csv"
    annotator_verdicts.to_csv(hp, index=False)
    verdicts_from_scores(hanna, "Beluga-13B CH 1", judge="Beluga",
                         dimension="Coherence").to_csv(jp, index=False)
    assert main(["pairwise", "ranking", str(jp), "--reference", str(hp), "--resamples", "50",
                 "--seed", "0", "--format", "json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert {r["level"] for r in rec} == {"systems x dimensions", "items"}
    assert main(["agreement", "--verdicts", str(hp), "--resamples", "50", "--seed", "0"]) == 0
    out = capsys.readouterr().out
    assert "fleiss_kappa" in out and "item bootstrap" in out
    labels = tmp_path / "labels.csv"
    pd.DataFrame({"item": [1, 1, 2, 2, 3, 3], "rater": list("uvuvuv"),
                  "label": ["Yes", "Yes", "No", "Yes", "No", "No"]}).to_csv(labels,
                                                                           index=False)
    assert main(["agreement", "--labels", str(labels), "--resamples", "0", "--format",
                 "json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec[0]["coefficient"] == "cohen_kappa"
    assert rec[0]["statistic"] == pytest.approx(cohens_kappa(np.array([[1, 0], [1, 1]])).kappa)
    assert main(["agreement", "--labels", str(labels), "--data", str(labels)]) == 2
    capsys.readouterr()
    out = tmp_path / "agreement"
    assert main(["agreement", "--labels", str(labels), "--resamples", "0", "--format", "csv",
                 "--out", str(out)]) == 0
    written = pd.read_csv(out / "labels.csv")
    assert written.loc[0, "coefficient"] == "cohen_kappa"


# ------------------------------------------------------------------ preference only (item 5)
def _prefs_files(tmp_path):
    prefs = pd.DataFrame({
        "prompt_id": ["p1", "p1", "p1", "p2", "p3", "p3"],
        "story_a": ["s1", "s1", "s1", "s3", "s5", "s6"],
        "story_b": ["s2", "s2", "s2", "s4", "s6", "s7"],
        "winner": ["a", "b", "a", "s4", "tie", "b"],
        "annotator": ["u1", "u2", "u3", "u1", "u1", "u1"]})
    scores = pd.DataFrame({"story_id": [f"s{k}" for k in range(1, 8)] * 2,
                           "measure": ["rm"] * 7 + ["len"] * 7,
                           "value": [0.9, 0.1, 0.5, 0.7, 0.3, 0.2, 0.4,
                                     10, 12, 3, 3, 4, 5, 6]})
    pp, sp = tmp_path / "prefs.csv", tmp_path / "scores.csv"
    prefs.to_csv(pp, index=False)
    scores.to_csv(sp, index=False)
    return prefs, scores, pp, sp


def test_preference_only_cli_end_to_end(tmp_path, capsys):
    _, _, pp, sp = _prefs_files(tmp_path)
    assert main(["pairwise", "pointwise", "--preferences", str(pp), "--scores", str(sp),
                 "--format", "json"]) == 0
    rec = {r["measure"]: r for r in json.loads(capsys.readouterr().out)}
    # majority s1 > s2 (2 of 3), s4 > s3, s5 ~ s6 tie (left out), s7 > s6
    assert rec["rm"]["accuracy"] == 1.0 and rec["rm"]["n_pairs"] == 3
    assert rec["rm"]["n_human_ties"] == 1
    # len: s1 < s2 wrong, s3 = s4 measure tie (0.5), s7 > s6 right
    assert rec["len"]["accuracy"] == pytest.approx(0.5)
    assert main(["pairwise", "pointwise", "--preferences", str(pp), "--scores", str(sp),
                 "--metrics", "rm"]) == 0
    assert "len" not in capsys.readouterr().out


@pytest.mark.parametrize("change,message", [
    (lambda p, s: (p, s[s["story_id"] != "s4"]),
     "line 5: column 'story_b': story 's4' is not in the data"),
    (lambda p, s: (p.assign(story_b=p["story_b"].where(p.index != 3, "s3")), s),
     "line 5: story_a and story_b are the same story 's3'"),
    (lambda p, s: (p.assign(winner=p["winner"].where(p.index != 2, "left")), s),
     "line 4: column 'winner' has 'left'"),
])
def test_preference_only_errors_name_rows(tmp_path, capsys, change, message):
    prefs, scores, pp, sp = _prefs_files(tmp_path)
    prefs, scores = change(prefs, scores)
    prefs.to_csv(pp, index=False)
    scores.to_csv(sp, index=False)
    assert main(["pairwise", "pointwise", "--preferences", str(pp), "--scores",
                 str(sp)]) == 2
    assert message in capsys.readouterr().err


def test_preference_only_needs_scores(tmp_path, capsys):
    _, _, pp, _ = _prefs_files(tmp_path)
    assert main(["pairwise", "pointwise", "--preferences", str(pp)]) == 2
    assert "--scores FILE" in capsys.readouterr().err
