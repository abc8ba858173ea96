"""`storyeval meta` with the WMT options: --coef acc_eq/tau23/spa, --clusters, --length,
--mteval and --mteval-out."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from storyeval.cli import main

REFERENCE = json.loads((Path(__file__).parent / "data" / "mteval_reference.json")
                       .read_text(encoding="utf-8"))


def _reference(measure: str, criterion: str, variant: str, average_by: str) -> dict:
    return next(r for r in REFERENCE["tie_calibration"]
                if (r["measure"], r["criterion"], r["variant"], r["average_by"])
                == (measure, criterion, variant, average_by))


def test_acc_eq_csv_equals_mt_metrics_eval(capsys):
    assert main(["meta", "--metrics", "BLEU,Beluga-13B 1", "--criteria", "Relevance",
                 "--coef", "acc_eq", "--levels", "global,item", "--format", "csv"]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert list(table["level"].unique()) == ["overall", "prompt"]
    for row in table.itertuples():
        ref = _reference(row.measure, "Relevance", "acc23",
                         "none" if row.level == "overall" else "item")
        assert row.value == pytest.approx(ref["value"], abs=1e-9)
        assert row.epsilon == pytest.approx(ref["epsilon"], abs=1e-12)


def test_tau23_with_bootstrap_interval_table(capsys):
    assert main(["meta", "--metrics", "BERTScore F1", "--criteria", "Coherence",
                 "--coef", "tau23", "--levels", "prompt,system", "--ci", "bootstrap",
                 "--resamples", "50"]) == 0
    out = capsys.readouterr().out
    assert "Kendall tau_23 at the optimal tie epsilon" in out
    notes = re.sub(r"\n#   ", " ", out)  # header lines wrapped at 120 columns, joined
    assert "percentile intervals from 50 prompt resamples" in notes
    assert "7.6e-05" in out  # epsilon in 3 significant digits
    # the interval in the one notation of terminal tables (issue 53), lines within 120 columns
    assert re.search(r"\[-?\d\.\d{3}, -?\d\.\d{3}\]", out)
    assert max(len(line) for line in out.splitlines()) <= 120


def test_spa_and_out_folder(tmp_path, capsys):
    out = tmp_path / "spa"
    assert main(["meta", "--metrics", "BLEU", "--criteria", "RE,CH", "--coef", "spa",
                 "--test-permutations", "200", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "soft pairwise accuracy (Thompson et al. 2024)" in text
    table = pd.read_csv(out / "spa.csv")
    assert table["level"].unique().tolist() == ["system"] and len(table) == 2
    assert table["value"].between(0, 1).all()
    settings = json.loads((out / "settings.json").read_text())
    assert settings["coefficient"] == "spa"
    assert main(["meta", "--metrics", "BLEU", "--criteria", "RE", "--coef", "spa",
                 "--test-permutations", "100", "--ci", "bootstrap", "--resamples", "40",
                 "--format", "csv"]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert (table["ci_low"] <= table["value"]).all() and (table["value"] <= table["ci_high"]).all()


def test_clusters_and_length_beside_the_correlations(tmp_path, capsys):
    out = tmp_path / "res"
    assert main(["meta", "--metrics", "BLEU,BERTScore F1,Beluga-13B 1", "--criteria",
                 "Relevance,Coherence", "--clusters", "--length", "Text length",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Significance clusters: average rank over criteria" in text
    assert "Length: P(prefer longer) on within-prompt pairs" in text
    for name in ("clusters.csv", "clusters_average.csv", "clusters_average.md",
                 "clusters_overall.png", "clusters_system.png", "length_pairs.csv",
                 "length_partial.csv", "correlations.csv"):
        assert (out / name).is_file(), name
    average = pd.read_csv(out / "clusters_average.csv")
    assert "Beluga-13B 1" in set(average["rater"])  # RE and CH ratings averaged as one rater
    pairs = pd.read_csv(out / "length_pairs.csv")
    assert set(pairs["rater"]) >= {"humans", "BLEU Ξ§"}


def test_criterion_weights_of_the_average_rank(tmp_path, capsys):
    argv = ["meta", "--metrics", "BLEU,BERTScore F1,Beluga-13B 1", "--criteria", "RE,CH",
            "--levels", "system", "--clusters", "--no-figures"]
    assert main([*argv, "--out", str(tmp_path / "a")]) == 0
    assert main([*argv, "--criterion-weights", "RE=3,CH=1", "--out", str(tmp_path / "b")]) == 0
    capsys.readouterr()
    equal = pd.read_csv(tmp_path / "a" / "clusters_average.csv").set_index("rater")
    weighted = pd.read_csv(tmp_path / "b" / "clusters_average.csv").set_index("rater")
    expected = 0.75 * weighted["Relevance"] + 0.25 * weighted["Coherence"]
    assert weighted["average_rank"].to_numpy() == pytest.approx(expected.to_numpy())
    assert equal["average_rank"].to_numpy() == pytest.approx(
        (0.5 * equal["Relevance"] + 0.5 * equal["Coherence"]).to_numpy())


def test_mteval_round_trip(tmp_path, capsys):
    folder = tmp_path / "wmt"
    assert main(["meta", "--metrics", "BLEU", "--criteria", "Relevance", "--levels", "system",
                 "--reference", "none", "--mteval-out", str(folder)]) == 0
    capsys.readouterr()
    assert (folder / "metric-scores" / "en-en" / "BLEU_Ξ§-src.seg.score").is_file()
    assert main(["meta", "--mteval", str(folder), "--mteval-lp", "en-en", "--coef", "acc_eq",
                 "--levels", "item", "--format", "csv"]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    ref = _reference("BLEU Ξ§", "Relevance", "acc23", "item")
    assert table["value"].item() == pytest.approx(ref["value"], abs=1e-9)


@pytest.mark.parametrize(("argv", "message"), [
    (["meta", "--coef", "spa", "--clusters"], "use them with --coef kendall_b"),
    (["meta", "--mteval", "x", "--data", "y.csv"], "--mteval replaces --data"),
    (["meta", "--metrics", "BLEU", "--length", "words"], "--length: no measure 'words'"),
    (["meta", "--cluster-alpha", "1.5", "--clusters"], "--cluster-alpha must be a number > 0 and < 1"),
    (["meta", "--criterion-weights", "RE=1"], "--criterion-weights needs --clusters"),
    (["meta", "--clusters", "--criterion-weights", "RE=x"], "expected CRITERION=WEIGHT"),
    (["meta", "--metrics", "BLEU", "--criteria", "RE", "--clusters", "--levels", "overall",
      "--criterion-weights", "fun=1"], "--criterion-weights: unknown criterion 'fun'"),
])
def test_usage_errors_exit_2(capsys, argv, message):
    assert main(argv) == 2
    assert message in capsys.readouterr().err
