"""`storyeval pairwise` through the real entry point: the same estimand prints the same
interval in `accuracy` and `compare`; a position-only judge in `ranking` gets a row that says
why it has no correlation; messages name the command line's options."""

from __future__ import annotations

import io
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_reproducible_outputs import _verdicts

from storyeval.cli import main


def _renamed(frame: pd.DataFrame) -> pd.DataFrame:
    """Systems bot0..bot3 (not the s0..s3 of other tests)."""
    out = frame.copy()
    for col in ("system_a", "system_b", "story_a", "story_b"):
        out[col] = out[col].str.replace("s", "bot", n=1, regex=False)
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pairwise-cli")
    human = _renamed(_verdicts("people", 1.0, None, 21))
    owl = _renamed(_verdicts("owl", 0.78, human, 22))
    lark = _renamed(_verdicts("lark", 0.62, human, 23))
    human.to_csv(folder / "humans.csv", index=False)
    pd.concat([owl, lark]).to_csv(folder / "judges.csv", index=False)
    owl.assign(judge="firstie", verdict="A").to_csv(folder / "firstie.csv", index=False)
    return folder


def _csv(argv: list[str], capsys) -> pd.DataFrame:
    capsys.readouterr()
    assert main([*argv, "--format", "csv"]) == 0
    return pd.read_csv(io.StringIO(capsys.readouterr().out))


@pytest.mark.parametrize("cluster", ["auto", "none"])
def test_accuracy_and_compare_print_the_same_interval_for_the_same_estimand(files, capsys,
                                                                            cluster):
    common = ["--reference", str(files / "humans.csv"), "--cluster", cluster,
              "--resamples", "300"]
    acc = _csv(["pairwise", "accuracy", str(files / "judges.csv"), *common], capsys)
    capsys.readouterr()
    assert main(["pairwise", "compare", str(files / "judges.csv"), *common,
                 "--format", "json"]) == 0
    import json

    groups = pd.DataFrame(json.loads(capsys.readouterr().out)["groups"])
    merged = acc.merge(groups, on=["judge", "dimension"], suffixes=("", "_compare"))
    assert len(merged) == 2
    # k/n, its interval and the method that computed it: identical in both commands
    assert np.array_equal(merged["accuracy"], merged["accuracy_compare"])
    assert np.array_equal(merged["ci_low"], merged["ci_low_compare"])
    assert np.array_equal(merged["ci_high"], merged["ci_high_compare"])
    assert (merged["method"] == merged["interval"]).all()
    clustered = {"cluster-t", "cluster-bootstrap"}  # auto: cluster t below 30 prompts
    assert set(merged["interval"]) <= (clustered if cluster == "auto" else {"wilson"})


def test_ranking_of_a_position_only_judge_says_why_in_the_row(files, capsys):
    argv = ["pairwise", "ranking", str(files / "firstie.csv"), "--reference",
            str(files / "humans.csv"), "--resamples", "200"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no raw NumPy warning (All-NaN slice), no other
        table = _csv(argv, capsys)
        capsys.readouterr()
        assert main(argv) == 0
    text = capsys.readouterr()
    assert "RuntimeWarning" not in text.err and "All-NaN" not in text.err
    items = table[table["level"] == "items"]
    assert items[["statistic", "ci_low", "ci_high"]].isna().all().all()
    assert items["reason"].str.startswith("the judge's item verdicts are all equal").all()
    assert "story shown first" in items["reason"].iloc[0]
    systems = table[table["level"] != "items"]
    assert systems["statistic"].notna().all() and systems["reason"].isna().all()


def test_ranking_library_warns_with_a_named_class_pointing_at_the_caller(files):
    from storyeval.exceptions import UndefinedStatisticWarning
    from storyeval.pairwise import read_verdicts
    from storyeval.pairwise.ranking import ranking_agreement

    judge = read_verdicts(files / "firstie.csv")
    human = read_verdicts(files / "humans.csv")
    with pytest.warns(UndefinedStatisticWarning, match="item verdicts are all equal") as got:
        ranking_agreement(judge, human, n_resamples=50)
    assert got[0].filename == __file__


def test_ranking_with_several_judges_names_the_option(files, capsys):
    assert main(["pairwise", "ranking", str(files / "judges.csv"), "--reference",
                 str(files / "humans.csv")]) == 2
    err = capsys.readouterr().err
    assert "judges.csv holds several judges ['lark', 'owl']; choose one with --judge NAME" \
        in err
    assert "judge=" not in err
