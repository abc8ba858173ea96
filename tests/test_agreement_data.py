"""Agreement of the annotators of any dataset: :func:`storyeval.agreement.annotators.annotator_agreement`
and ``storyeval agreement --data``, on a synthetic long ratings table with ragged annotators.

Every statistic is checked against an independent computation from the long table itself
(pingouin, the ``krippendorff`` package, statsmodels, irrCAC), not through storyeval's Dataset.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from storyeval.agreement.annotators import AGREEMENT_COLUMNS, annotator_agreement
from storyeval.cli import main
from storyeval.data import ratings_to_dataset, read_dataset
from storyeval.exceptions import InputError

SYSTEMS = ["alpha", "beta", "gamma", "delta"]
N_PROMPTS = 25
N_STORIES = len(SYSTEMS) * N_PROMPTS
# criterion: (annotators, fewest and most ratings per story)
DESIGN = {"Fun": (5, 3, 5), "Clarity": (3, 3, 3)}


def _criterion_ratings(rng, stories: pd.DataFrame, quality: np.ndarray, criterion: str
                       ) -> pd.DataFrame:
    n_ann, fewest, most = DESIGN[criterion]
    n = len(stories)
    bias = rng.normal(0, 0.4, n_ann)
    values = np.clip(np.rint(quality[:, None] + bias + rng.normal(0, 0.9, (n, n_ann))), 1, 5)
    ranks = rng.random((n, n_ann)).argsort(axis=1).argsort(axis=1)
    rated = ranks < rng.integers(fewest, most + 1, n)[:, None]
    story, ann = np.nonzero(rated)
    return stories.iloc[story].assign(criterion=criterion, annotator=[f"ann{a + 1}" for a in ann],
                                      value=values[story, ann].astype(int))


def make_ratings(seed: int = 12) -> pd.DataFrame:
    """Long ratings: 4 systems x 25 prompts; Fun by 5 annotators, each story rated by 3 to 5
    of them (ragged); Clarity by 3 annotators, every story by all 3; integers 1-5."""
    rng = np.random.default_rng(seed)
    stories = pd.MultiIndex.from_product([SYSTEMS, range(N_PROMPTS)],
                                         names=["system", "prompt_id"]).to_frame(index=False)
    quality = rng.normal(3, 0.9, N_STORIES) + np.repeat(np.linspace(-0.4, 0.4, 4), N_PROMPTS)
    parts = [_criterion_ratings(rng, stories, quality, c) for c in DESIGN]
    long = pd.concat(parts, ignore_index=True)
    order = rng.permutation(len(long))  # file order shuffled within each criterion
    return long.iloc[order].sort_values("criterion", key=lambda c: c.map(
        {name: i for i, name in enumerate(DESIGN)}), kind="stable").reset_index(drop=True)


def matrix(ratings: pd.DataFrame, criterion: str) -> pd.DataFrame:
    """Stories x annotators of one criterion, NaN where a story was not rated."""
    own = ratings[ratings["criterion"] == criterion]
    return own.pivot(index=["system", "prompt_id"], columns="annotator", values="value").astype(
        float)


@pytest.fixture(scope="module")
def ratings() -> pd.DataFrame:
    return make_ratings()


@pytest.fixture(scope="module")
def table(ratings) -> pd.DataFrame:
    return annotator_agreement(ratings_to_dataset(ratings, annotators="ids"))


def row(table: pd.DataFrame, criterion: str) -> pd.Series:
    return table.set_index("criterion").loc[criterion]


def test_synthetic_design(ratings):
    fun, clarity = matrix(ratings, "Fun"), matrix(ratings, "Clarity")
    per_story = fun.notna().sum(axis=1)
    assert (per_story.min(), per_story.max()) == (3, 5)
    assert 10 < (per_story == 5).sum() < N_STORIES and clarity.notna().all().all()
    assert len(fun) == len(clarity) == N_STORIES


# ----------------------------------------------------------------------------- the table
def test_table_layout(table, ratings):
    assert list(table.columns) == AGREEMENT_COLUMNS
    assert table["criterion"].tolist() == ["Fun", "Clarity"]
    assert table["n_items"].tolist() == [N_STORIES, N_STORIES]
    assert table["k"].tolist() == [5, 3]
    assert table["ratings_per_item"].tolist() == ["3-5", "3"]
    for crit in DESIGN:
        observed = sorted(ratings.loc[ratings["criterion"] == crit, "value"].unique())
        assert row(table, crit)["categories"] == ", ".join(map(str, observed))
    assert row(table, "Clarity")["reason"] == ""
    assert row(table, "Fun")["reason"].startswith("fleiss_kappa: stories have 3-5 ratings")


def _pingouin_icc2k(y: pd.DataFrame) -> tuple[float, tuple[float, float]]:
    pg = pytest.importorskip("pingouin")
    long = y.reset_index(drop=True).rename_axis("story").reset_index().melt(
        id_vars="story", var_name="annotator", value_name="rating")
    saved = dict(pg.options)
    try:  # pingouin rounds the interval to 2 decimals unless told otherwise
        for key in ("round.column.CI95", "round.column.CI95%"):
            pg.options.pop(key, None)
        pg.options["round"] = None
        ref = pg.intraclass_corr(long, targets="story", raters="annotator", ratings="rating")
    finally:
        pg.options.clear()
        pg.options.update(saved)
    ref = ref.set_index("Type")
    name = "ICC(A,k)" if "ICC(A,k)" in ref.index else "ICC2k"
    ci = ref.at[name, "CI95" if "CI95" in ref.columns else "CI95%"]
    return float(ref.at[name, "ICC"]), tuple(np.asarray(ci, dtype=float))


@pytest.mark.parametrize("criterion", list(DESIGN))
def test_icc2k_equals_pingouin_on_complete_stories(table, ratings, criterion):
    y = matrix(ratings, criterion)
    complete = y.dropna()
    icc, (low, high) = _pingouin_icc2k(complete)
    got = row(table, criterion)
    assert got["icc2k"] == pytest.approx(icc, abs=1e-10)
    assert (got["icc2k_ci_low"], got["icc2k_ci_high"]) == pytest.approx((low, high), abs=1e-10)
    assert got["n_items_omitted"] == len(y) - len(complete)
    assert got["icc2k"] > 0.3  # the synthetic annotators do agree


@pytest.mark.parametrize("level", ["interval", "ordinal"])
@pytest.mark.parametrize("criterion", list(DESIGN))
def test_krippendorff_alpha_equals_package(table, ratings, criterion, level):
    krippendorff = pytest.importorskip("krippendorff")
    reliability = matrix(ratings, criterion).to_numpy().T  # raters x items, NaN = missing
    ref = krippendorff.alpha(reliability_data=reliability, level_of_measurement=level)
    assert row(table, criterion)[f"alpha_{level}"] == pytest.approx(ref, abs=1e-12)


def _statsmodels_fleiss(y: pd.DataFrame) -> float:
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    counts, _ = aggregate_raters(y.to_numpy(dtype=int))
    return float(fleiss_kappa(counts, method="fleiss"))


def test_fleiss_kappa_equals_statsmodels_when_complete(table, ratings):
    assert row(table, "Clarity")["fleiss_kappa"] == pytest.approx(
        _statsmodels_fleiss(matrix(ratings, "Clarity")), abs=1e-12)


def test_fleiss_kappa_ragged_is_nan_with_reason_never_a_subset(table, ratings):
    fun = row(table, "Fun")
    assert math.isnan(fun["fleiss_kappa"])
    assert "3-5 ratings" in fun["reason"] and "no story is dropped" in fun["reason"]
    # On the stories rated by all five annotators it is defined, and equals statsmodels.
    complete = matrix(ratings, "Fun").dropna()
    keys = pd.MultiIndex.from_frame(ratings[["system", "prompt_id"]])
    subset = ratings[(ratings["criterion"] == "Fun") & keys.isin(complete.index)]
    sub = annotator_agreement(ratings_to_dataset(subset, annotators="ids",
                                                 require_same_prompts=False))
    assert sub.at[0, "n_items"] == len(complete) and sub.at[0, "ratings_per_item"] == "5"
    assert sub.at[0, "fleiss_kappa"] == pytest.approx(_statsmodels_fleiss(complete), abs=1e-12)


@pytest.mark.parametrize("criterion", list(DESIGN))
def test_gwet_ac1_equals_irrcac(table, ratings, criterion):
    # irrCAC (a port of Gwet's R package; test-only reference, installed with --no-deps) counts
    # NaN as a category under pandas 3 unless the categories are given: give them.
    raw = pytest.importorskip("irrCAC.raw")
    y = matrix(ratings, criterion)
    categories = sorted(np.unique(y.to_numpy()[~np.isnan(y.to_numpy())]).tolist())
    ref = raw.CAC(y.reset_index(drop=True), categories=categories, digits=12).gwet()["est"]
    got = row(table, criterion)
    assert got["gwet_ac1"] == pytest.approx(float(ref["coefficient_value"]), abs=1e-10)
    assert (got["gwet_ac1_ci_low"], got["gwet_ac1_ci_high"]) == pytest.approx(
        tuple(map(float, ref["confidence_interval"])), abs=1e-10)


def test_gwet_ac1_equals_irrcac_on_complete_stories(ratings):
    raw = pytest.importorskip("irrCAC.raw")
    complete = matrix(ratings, "Fun").dropna()
    keys = pd.MultiIndex.from_frame(ratings[["system", "prompt_id"]])
    subset = ratings[(ratings["criterion"] == "Fun") & keys.isin(complete.index)]
    got = annotator_agreement(ratings_to_dataset(subset, annotators="ids",
                                                 require_same_prompts=False)).iloc[0]
    categories = sorted(np.unique(complete.to_numpy()).tolist())
    ref = raw.CAC(complete.reset_index(drop=True), categories=categories,
                  digits=12).gwet()["est"]
    assert got["gwet_ac1"] == pytest.approx(float(ref["coefficient_value"]), abs=1e-10)


# ----------------------------------------------------------------------------- options
def test_criteria_exclude_systems_and_level(ratings):
    dataset = ratings_to_dataset(ratings, annotators="ids")
    one = annotator_agreement(dataset, criteria="clarity", exclude_systems=["alpha"],
                              confidence_level=0.5)
    assert one["criterion"].tolist() == ["Clarity"] and one.at[0, "n_items"] == 75
    kept = ratings[ratings["system"] != "alpha"]
    assert one.at[0, "alpha_interval"] == pytest.approx(
        annotator_agreement(ratings_to_dataset(kept, annotators="ids"),
                            criteria=["Clarity"]).at[0, "alpha_interval"], abs=1e-12)
    full = annotator_agreement(dataset, criteria="Clarity", exclude_systems=["alpha"])
    assert one.at[0, "gwet_ac1_ci_high"] - one.at[0, "gwet_ac1_ci_low"] < (
        full.at[0, "gwet_ac1_ci_high"] - full.at[0, "gwet_ac1_ci_low"])
    with pytest.raises(InputError, match="unknown criterion 'Joy'"):
        annotator_agreement(dataset, criteria="Joy")
    with pytest.raises(InputError, match="unknown system"):
        annotator_agreement(dataset, exclude_systems=["omega"])


def test_nan_policy_raise_names_criterion_column_and_story(ratings):
    dataset = ratings_to_dataset(ratings, annotators="ids")
    with pytest.raises(InputError, match=r"criterion 'Fun': annotator column 'Fun \[ann\d\]' has "
                                         r"no rating for story '\w+/\d+'"):
        annotator_agreement(dataset, nan_policy="raise")
    clarity = annotator_agreement(dataset, criteria="Clarity", nan_policy="raise")
    assert clarity.at[0, "n_items_omitted"] == 0


def test_criterion_without_annotators_is_a_row_with_reason(ratings):
    single = pd.DataFrame({"system": SYSTEMS * 2, "prompt_id": [0] * 4 + [1] * 4,
                           "criterion": "Style", "annotator": "solo", "value": range(8)})
    dataset = ratings_to_dataset(pd.concat([ratings, single], ignore_index=True),
                                 annotators="ids", require_same_prompts=False)
    table = annotator_agreement(dataset)
    style = row(table, "Style")
    assert style["k"] == 0 and style["n_items"] == 8
    assert np.isnan(style[["icc2k", "alpha_interval", "fleiss_kappa", "gwet_ac1"]].astype(float)).all()
    assert "fewer than 2 annotator columns" in style["reason"]


def test_undefined_values_have_reasons():
    same = pd.DataFrame({"system": ["A", "A", "B", "B"] * 2, "prompt_id": [0, 0, 0, 0, 1, 1, 1, 1],
                         "criterion": "Fun", "annotator": ["x", "y"] * 4, "value": 3})
    got = annotator_agreement(ratings_to_dataset(same)).iloc[0]
    assert np.isnan(got[["icc2k", "alpha_interval", "alpha_ordinal", "fleiss_kappa",
                         "gwet_ac1"]].astype(float)).all()
    for name in ("icc2k:", "alpha_interval:", "alpha_ordinal:", "fleiss_kappa:", "gwet_ac1:"):
        assert name in got["reason"]
    assert "a single rating value observed" in got["reason"]


def test_bad_dataset_input(ratings):
    no_annotators = ratings[ratings["annotator"] == "ann1"].drop(columns="annotator")
    with pytest.raises(InputError, match="no criterion rated by at least 2 annotators"):
        annotator_agreement(ratings_to_dataset(no_annotators))
    with pytest.raises(InputError, match="storyeval Dataset"):
        annotator_agreement(matrix(ratings, "Fun"))


def test_wide_table_with_annotator_columns(tmp_path, ratings, table):
    fun = matrix(ratings, "Fun")
    wide = fun.set_axis([f"fun_{c}" for c in fun.columns], axis=1).reset_index()
    wide = wide.rename(columns={"system": "model", "prompt_id": "item"})
    path = tmp_path / "wide.csv"
    wide.to_csv(path, index=False)
    dataset = read_dataset(path, id="system=model,prompt_id=item", annotators=["Fun=fun_*"])
    got = annotator_agreement(dataset).iloc[0]
    expected = row(table, "Fun")
    for col in ("icc2k", "alpha_interval", "alpha_ordinal", "gwet_ac1"):
        assert got[col] == pytest.approx(expected[col], abs=1e-12)


# ----------------------------------------------------------------------------- command line
def run_cli(capsys, *args):
    code = main(["agreement", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def ratings_csv(tmp_path, ratings):
    path = tmp_path / "ratings.csv"
    ratings.to_csv(path, index=False)
    return path


def test_cli_table_with_custom_criteria(capsys, ratings_csv):
    code, out, err = run_cli(capsys, "--data", str(ratings_csv))
    assert code == 0, err
    lines = out.splitlines()
    # the answer first (issue 53), then the table under its title
    assert lines[0] == "Answer: how well the annotators agree"
    assert any(line.startswith("ratings: agreement of the human annotators per criterion")
               for line in lines)
    assert "hanna" not in out.lower() and "User study" not in out
    comments = [line for line in lines if line.startswith("# ")]
    # notes wider than the terminal's 120 columns continue on lines "#   ..." (issue 53)
    assert max(len(line) for line in lines) <= 120
    notes = " ".join(line[2:].strip() for line in comments)
    assert "Fun" in notes and "(ragged)" in notes  # the dataset's notes
    assert "left out (n_items_omitted" in notes  # the ICC policy
    body = [line.split()[0] for line in lines if line.split()[:1] in (["Fun"], ["Clarity"])]
    assert body[:2] == ["Fun", "Clarity"]  # (a wide table continues in a block of its own)
    assert any(line.startswith("# undefined for Fun: fleiss_kappa") for line in lines)


def test_cli_json_equals_library(capsys, ratings_csv):
    code, out, err = run_cli(capsys, "--data", str(ratings_csv), "--format", "json",
                             "--what", "annotators")
    assert code == 0, err
    payload = json.loads(out)
    assert payload["dataset"] == "ratings" and payload["nan_policy"] == "omit"
    assert set(payload) == {"annotators", "confidence_level", "dataset", "nan_policy", "notes"}
    expected = annotator_agreement(read_dataset(ratings_csv))
    got = pd.DataFrame(payload["annotators"])
    assert list(got.columns) == AGREEMENT_COLUMNS
    pd.testing.assert_frame_equal(got.fillna(np.nan), expected, check_dtype=False)


def test_cli_md_criteria_and_reference_system(capsys, ratings_csv):
    code, out, err = run_cli(capsys, "--data", str(ratings_csv), "--format", "md",
                             "--criteria", "Clarity", "--reference-system", "alpha",
                             "--exclude-human-stories")
    assert code == 0, err
    assert out.startswith("## Answer: how well the annotators agree")  # issue 53
    assert "\n## ratings: agreement" in out and "stories of 'alpha' left out" in out
    assert "> Fun:" in out  # the dataset's notes, as Markdown quotes
    rows = [line for line in out.splitlines() if line.startswith("| Clarity")
            and "| 75 |" in line]
    assert len(rows) == 1 and "| 75 |" in rows[0]
    assert "| Fun" not in out


def test_cli_out_dir(capsys, ratings_csv, tmp_path):
    code, out, _ = run_cli(capsys, "--data", str(ratings_csv), "--format", "csv", "--out",
                           str(tmp_path / "res"))
    assert code == 0
    assert sorted(p.name for p in (tmp_path / "res").iterdir()) == [".storyeval-run.json",
                                                                    "annotators.csv",
                                                                    "index.html"]
    written = pd.read_csv(tmp_path / "res" / "annotators.csv")
    assert written["criterion"].tolist() == ["Fun", "Clarity"]


def _bad_value(r: pd.DataFrame) -> pd.DataFrame:
    return r.astype({"value": object}).assign(value=lambda d: d["value"].where(d.index != 7,
                                                                                "great"))


@pytest.mark.parametrize(("make", "args", "message"), [
    (lambda r: r.drop(columns="criterion"), (), "ratings.csv: missing column(s) ['criterion']"),
    (_bad_value, (), "ratings.csv, line 9: column 'value' is not a number: 'great'"),
    (lambda r: r, ("--what", "user-study"), "--what user-study"),
    (lambda r: r, ("--exclude-human-stories",), "dataset 'ratings' has no reference system"),
    (lambda r: r, ("--nan-policy", "raise"), "criterion 'Fun': annotator column 'Fun [ann"),
    (lambda r: r, ("--criteria", "Joy"), "unknown criterion 'Joy'"),
])
def test_cli_bad_input_exit_2(capsys, tmp_path, ratings, make, args, message):
    path = tmp_path / "ratings.csv"
    make(ratings).to_csv(path, index=False)
    code, out, err = run_cli(capsys, "--data", str(path), *args)
    assert code == 2 and out == ""
    assert err.startswith("storyeval agreement: error: ") and message in err
