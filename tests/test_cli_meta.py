"""`storyeval meta`, `storyeval --help/--version` and `python -m storyeval` through the real entry point."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from storyeval import __version__
from storyeval.cli import main


def test_version_and_help(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"storyeval {__version__}"
    assert main([]) == 2  # no sub-command: help on stdout, usage error
    with pytest.raises(SystemExit):
        main(["meta", "--help"])
    assert "--reference" in capsys.readouterr().out


def test_meta_table_output(capsys):
    assert main(["meta", "--metrics", "paper", "--levels", "system"]) == 0
    out = capsys.readouterr().out
    assert "Kendall tau-b (tie-corrected" in out
    assert "stories of 'Human' excluded (they are the references)" in out
    assert "Human (upper bound)" in out and "Beluga-13B 1" in out
    assert "BH-adjusted Williams p" in out


def test_meta_json_is_pinned(capsys):
    code = main(["meta", "--metrics", "BLEU,Beluga-13B 1", "--criteria", "RE,CH",
                 "--format", "json"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert list(doc) == ["settings", "correlations", "baseline", "comparisons"]
    assert list(doc["correlations"][0]) == ["measure", "criterion", "level", "coefficient",
                                            "value", "n", "n_groups", "display_name", "kind",
                                            "rater", "reason"]
    assert list(doc["comparisons"][0])[:12] == ["level", "criterion", "measure_a", "measure_b",
                                             "r_a", "r_b", "r_ab", "n", "t", "p",
                                             "p_adjusted", "family"]
    assert doc["settings"]["comparisons"]["reference"] == "Beluga-13B 1"
    assert len(doc["correlations"]) == 2 * (2 + 2)  # BLEU x 2 criteria + 2 matched, 2 levels
    bleu = [r for r in doc["correlations"] if r["measure"] == "BLEU Ξ§" and r["level"] == "system"]
    assert {r["n"] for r in bleu} == {10}


def test_meta_out_dir_writes_tables_and_figures(tmp_path, capsys):
    out = tmp_path / "res"
    assert main(["meta", "--metrics", "paper", "--out", str(out), "--format", "csv",
                 "--figure-format", "png,pdf"]) == 0
    corr = pd.read_csv(out / "correlations.csv")
    assert list(corr.columns[:6]) == ["measure", "criterion", "level", "coefficient", "value", "n"]
    will = pd.read_csv(out / "comparisons.csv")
    assert list(will.columns[:12]) == ["level", "criterion", "measure_a", "measure_b", "r_a",
                                       "r_b", "r_ab", "n", "t", "p", "p_adjusted", "family"]
    for name in ("kendall_overall", "kendall_system", "comparisons_overall", "comparisons_system"):
        for suffix in (".png", ".pdf"):
            assert (out / f"{name}{suffix}").stat().st_size > 1000
    assert (out / "correlations_system.tex").read_text().startswith(r"\begin{table}")
    assert "Beluga-13B RE 1" in set(corr["measure"])


def test_figure_formats(tmp_path, capsys):
    out = tmp_path / "png"
    assert main(["meta", "--metrics", "BLEU,chrF", "--levels", "system", "--out", str(out),
                 "--format", "csv"]) == 0
    figures = sorted(p.name for p in out.iterdir() if p.suffix in (".png", ".pdf", ".svg"))
    assert figures == ["comparisons_system.png", "kendall_system.png"]  # PNG only by default
    out = tmp_path / "svg"
    assert main(["meta", "--metrics", "BLEU,chrF", "--levels", "system", "--out", str(out),
                 "--format", "csv", "--figure-format", "SVG"]) == 0
    assert (out / "kendall_system.svg").read_text().lstrip().startswith("<?xml")
    assert not (out / "kendall_system.png").exists()
    assert main(["meta", "--metrics", "BLEU", "--out", str(tmp_path / "x"),
                 "--figure-format", "png,gif"]) == 2
    assert "'gif'" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    (["meta", "--metrics", "BLUE"], "did you mean 'BLEU'"),
    (["meta", "--metrics", "BLEU", "--levels", "story"], "levels must be among"),
    (["meta", "--metrics", "BLEU", "--criteria", "fun"], "unknown criterion 'fun'"),
    (["meta", "--metrics", "BLEU", "--no-figures"], "--no-figures needs --out"),
    (["meta", "--data", "missing.csv"], "no such file"),
])
def test_meta_usage_errors_exit_2(capsys, argv, message):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_meta_with_user_scores_joined_on_story_id(tmp_path, capsys):
    from storyeval.data import load_hanna

    wide = load_hanna().wide(["Text length ¤§"])
    scores = wide.reset_index().rename(columns={"Text length ¤§": "value"})
    scores["story_id"] = scores["system"] + "/" + scores["prompt_id"].astype(str)
    scores["measure"] = "my length"
    path = tmp_path / "scores.csv"
    scores[["story_id", "measure", "value"]].to_csv(path, index=False)
    assert main(["meta", "--scores", str(path), "--metrics", "my length,Text length",
                 "--reference", "my length", "--format", "csv"]) == 0
    table = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))
    mine = table[table["measure"] == "my length"].set_index(["criterion", "level"])["value"]
    theirs = table[table["measure"] == "Text length ¤§"].set_index(["criterion", "level"])["value"]
    pd.testing.assert_series_equal(mine, theirs, check_names=False)


def test_python_dash_m_subprocess():
    proc = subprocess.run([sys.executable, "-m", "storyeval", "meta", "--metrics", "BLEU",
                           "--criteria", "RE", "--levels", "system", "--format", "csv"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].startswith("measure,criterion,level,coefficient,value,n")
    bad = subprocess.run([sys.executable, "-m", "storyeval", "meta", "--metrics", "nope"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "unknown measure 'nope'" in bad.stderr


def test_meta_with_resampling_columns(tmp_path, capsys):
    out = tmp_path / "res"
    argv = ["meta", "--metrics", "BLEU,ChatGPT 1", "--criteria", "RE,SU", "--ci", "bootstrap",
            "--resamples", "50", "--permutations", "50", "--chance", "50", "--seed", "3",
            "--out", str(out), "--no-figures"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "chance: a random measure reaches" in text
    assert "paired permutation p (two-sided, 50 permutations" in text
    corr = pd.read_csv(out / "correlations.csv")
    assert {"ci_low", "ci_high", "se"} <= set(corr.columns)
    assert ((corr["ci_low"] <= corr["value"]) & (corr["value"] <= corr["ci_high"])).all()
    will = pd.read_csv(out / "comparisons.csv")
    assert {"perm_p", "perm_p_adjusted"} <= set(will.columns)
    assert (will["perm_p"] >= 1 / 51).all()  # (1 + extreme) / (1 + B)
    chance = pd.read_csv(out / "chance.csv")
    assert set(chance["level"]) == {"overall", "system"}
    settings = json.loads((out / "settings.json").read_text())
    assert settings["bootstrap"]["resample_by"] == "prompts"
    # same seed, same intervals (a second run into the same folder needs --overwrite)
    assert main(argv + ["--format", "csv", "--overwrite"]) == 0
    again = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))
    pd.testing.assert_series_equal(again["ci_low"], corr["ci_low"])
    assert main(["meta", "--metrics", "BLEU", "--resamples", "-1", "--ci", "bootstrap"]) == 2


def test_bootstrap_intervals_for_the_human_baseline():
    from storyeval.meta.pipeline import meta_evaluate
    from storyeval.meta.resampling import add_bootstrap_ci

    res = add_bootstrap_ci(meta_evaluate(measures="BLEU", criteria="RE,CX", levels="overall"),
                           n_resamples=60, random_state=1)
    base = res.baseline
    assert base[["ci_low", "ci_high"]].notna().all().all()
    assert (base["ci_low"] < base["ci_high"]).all()
    # overall level with 960 stories: the interval brackets the point estimate
    assert ((base["ci_low"] <= base["value"]) & (base["value"] <= base["ci_high"])).all()
    assert set(base["ci_method"]) == {"percentile"}


def test_meta_says_its_steps_and_their_times_on_a_terminal(tmp_path, capsys, monkeypatch):
    """On a terminal each step is a line on standard error with its time; off a terminal
    (pipes, CI, STORYEVAL_NO_PROGRESS=1) nothing is added."""
    import re

    import storyeval._progress as progress

    args = ["meta", "--metrics", "BLEU,Beluga-13B 1", "--criteria", "RE", "--reference", "none",
            "--format", "csv",
            "--out", str(tmp_path / "out"), "--no-figures", "--chance", "20"]
    assert main(args) == 0
    assert "reading the data" not in capsys.readouterr().err
    monkeypatch.setattr(progress, "progress_enabled", lambda show=None: True)
    assert main([*args, "--overwrite"]) == 0
    err = capsys.readouterr().err
    assert re.search(r"^reading the data \.\.\. \d+\.\d s \(1,056 stories read\)$", err, re.M), err
    assert re.search(r"^correlations and comparison tests \.\.\. \d+\.\d s \(\d+ comparisons\)$",
                     err, re.M), err
    assert re.search(r"^chance baselines: done in \d+\.\d s$", err, re.M), err
    assert re.search(r"^writing .*out \.\.\. \d+\.\d s$", err, re.M), err
