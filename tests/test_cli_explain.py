"""``storyeval explain`` through main() and once through a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("yake")

from storyeval.cli import main
from storyeval.explain import user_study_explanations


def test_explain_table_with_criterion_codes(tmp_path, capsys):
    # an LLM-rater style table: criterion codes, several tries, extra columns kept
    study = user_study_explanations()
    known = study[study["criterion"] != "unknown"].head(40)
    codes = {"Relevance": "RE", "Coherence": "CH", "Empathy": "EM", "Surprise": "SU",
             "Engagement": "EG", "Complexity": "CX"}
    table = pd.DataFrame({"story_id": known["story_id"], "model": "Beluga-13B",
                          "criterion": known["criterion"].map(codes),
                          "explanation": known["explanation"]})
    # rows of another model (filtered out with --where) and an Eval-Prompt 1 answer without
    # explanation (refused unless --drop-empty, then counted)
    other = table.head(5).assign(model="Other")
    empty = table.head(1).assign(explanation="")
    path = tmp_path / "explanations.csv"
    pd.concat([table, other, empty]).to_csv(path, index=False)
    out = tmp_path / "out"
    args = ["explain", "--input", str(path), "--out", str(out), "--projection", "pca",
            "--n-permutations", "49", "--top", "10", "--format", "json",
            "--where", "model=Beluga-13B"]
    assert main(args) == 2
    assert "line 47: column 'explanation' is empty" in capsys.readouterr().err
    assert main([*args, "--drop-empty"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["n_explanations"] == 40 and summary["n_unknown"] == 0
    assert summary["n_dropped_empty"] == 1
    assert summary["criteria"] == known["criterion"].value_counts().to_dict()
    assert summary["silhouette"]["n_permutations"] == 49
    assert summary["settings"]["projection"] == "pca"
    written = pd.read_csv(out / "explanations.csv")
    assert set(written["criterion"]) <= set(codes)  # codes were normalised to full names
    assert {"x", "y", "story_id", "model"} <= set(written.columns)
    kw = pd.read_csv(out / "keywords.csv")
    assert kw.groupby("criterion").size().max() == 10
    assert (out / "projection.png").stat().st_size > 10_000
    assert json.loads((out / "summary.json").read_text())["outputs"]


def test_explain_user_study_writes_user_study_table(tmp_path, capsys):
    out = tmp_path / "us"
    code = main(["explain", "--user-study", "--out", str(out), "--projection", "pca",
                 "--n-permutations", "19"])
    assert code == 0
    text = capsys.readouterr().out
    assert "unknown 1" in text and "silhouette by criterion" in text
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_unknown"] == 1 and "criterion_rule" in summary
    rows = pd.read_csv(out / "explanations.csv")
    assert len(rows) == 100 and {"basis", "cues", "reason"} <= set(rows.columns)
    if (out / "user_study_errors.csv").exists():  # storyeval.reproduction.user_study present
        assert len(pd.read_csv(out / "user_study_errors.csv")) == 6


def test_explain_bad_input_exit_2(tmp_path, capsys):
    path = tmp_path / "x.csv"
    pd.DataFrame({"criterion": ["RE"], "text": ["hello"]}).to_csv(path, index=False)
    assert main(["explain", "--input", str(path), "--out", str(tmp_path / "o")]) == 2
    assert "no column 'explanation'" in capsys.readouterr().err


def test_explain_subprocess_missing_file(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "storyeval", "explain", "--input", str(tmp_path / "none.csv"),
         "--out", str(tmp_path / "o")], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2
    assert "none.csv: no such file" in proc.stderr
