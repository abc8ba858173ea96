"""Tests of ``storyeval agreement``: exit codes, formats, pinned JSON output."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from storyeval.cli import main


def run_cli(capsys, *args):
    code = main(["agreement", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_json_output_pinned(capsys):
    code, out, err = run_cli(capsys, "--format", "json")
    assert code == 0, err
    payload = json.loads(out)
    assert set(payload) == {"annotators", "user_study", "confidence_level", "dataset",
                            "nan_policy", "notes"}
    assert payload["confidence_level"] == 0.95
    assert (payload["dataset"], payload["nan_policy"]) == ("hanna", "omit")
    ann = payload["annotators"]
    assert [r["criterion"] for r in ann] == ["Relevance", "Coherence", "Empathy", "Surprise",
                                            "Engagement", "Complexity"]
    assert list(ann[0])[:7] == ["criterion", "n_items", "k", "ratings_per_item", "icc2k",
                                "icc2k_ci_low", "icc2k_ci_high"]
    assert all(r["n_items"] == 1056 and r["k"] == 3 for r in ann)
    # Pinned: ICC(2,k) of the three HANNA annotators over the 1,056 stories (computed by
    # storyeval, cross-checked against pingouin in tests/test_agreement.py).
    icc = {r["criterion"]: round(r["icc2k"], 3) for r in ann}
    assert icc == {"Relevance": 0.325, "Coherence": -0.179, "Empathy": 0.282, "Surprise": 0.139,
                   "Engagement": 0.397, "Complexity": 0.536}
    us = payload["user_study"]
    assert list(us[0]) == ["category", "error_rate", "error_rate_majority", "gwet_ac1",
                           "standard_error", "ci_low", "ci_high", "n_explanations"]
    # The paper's AC1 (Chhun et al. 2024): 0.90, 0.97, 0.66, 0.60, 0.81; Incorrectness is not
    # in the paper (no worker flagged it: AC1 = 1).
    assert {r["category"]: round(r["gwet_ac1"], 2) for r in us} == {
        "Wrong Guideline": 0.90, "Poor Syntax": 0.97, "Superfluous Text": 0.66,
        "Incorrectness": 1.0, "Unsubstantiated Claims": 0.60, "Incoherence": 0.81}


def test_annotators_exclude_human_stories(capsys):
    code, out, _ = run_cli(capsys, "--what", "annotators", "--format", "json",
                           "--exclude-human-stories")
    assert code == 0
    payload = json.loads(out)
    assert set(payload) == {"annotators", "confidence_level", "dataset", "nan_policy", "notes"}
    assert all(r["n_items"] == 960 for r in payload["annotators"])


@pytest.mark.parametrize("fmt,marker", [("table", "Wrong Guideline"), ("md", "| --- |"),
                                        ("csv", "category,error_rate"), ("latex", "\\toprule")])
def test_formats(capsys, fmt, marker):
    code, out, _ = run_cli(capsys, "--what", "user-study", "--format", fmt)
    assert code == 0
    assert marker in out
    assert "Superfluous Text" in out


def test_out_dir_writes_files(capsys, tmp_path):
    code, out, _ = run_cli(capsys, "--format", "csv", "--out", str(tmp_path / "res"))
    assert code == 0
    files = sorted(p.name for p in (tmp_path / "res").iterdir())
    assert files == [".storyeval-run.json", "annotators.csv", "index.html",
                     "user_study.csv"]  # + manifest
    text = (tmp_path / "res" / "user_study.csv").read_text()
    assert text.splitlines()[0].startswith("category,error_rate,error_rate_majority,gwet_ac1")
    assert str(tmp_path / "res" / "annotators.csv") in out


def test_confidence_level_option(capsys):
    code, out, _ = run_cli(capsys, "--what", "user-study", "--format", "json",
                           "--confidence-level", "0.5")
    assert code == 0
    narrow = json.loads(out)["user_study"]
    code, out, _ = run_cli(capsys, "--what", "user-study", "--format", "json")
    wide = json.loads(out)["user_study"]
    assert narrow[2]["ci_high"] - narrow[2]["ci_low"] < wide[2]["ci_high"] - wide[2]["ci_low"]


def test_usage_errors_exit_2(capsys):
    code, _, err = run_cli(capsys, "--confidence-level", "1.5")
    assert code == 2 and "confidence-level" in err
    with pytest.raises(SystemExit) as exc:
        main(["agreement", "--what", "everything"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main(["agreement", "--format", "xml"])
    assert exc.value.code == 2


def test_subprocess_entry_point():
    env = {**os.environ, "STORYEVAL_NO_PROGRESS": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "storyeval", "agreement", "--what", "user-study", "--format",
         "json"],
        check=False, capture_output=True, text=True, env=env, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert round(json.loads(proc.stdout)["user_study"][1]["gwet_ac1"], 2) == 0.97
    bad = subprocess.run(
        [sys.executable, "-m", "storyeval", "agreement", "--confidence-level", "0"],
        check=False, capture_output=True, text=True, env=env, timeout=120,
    )
    assert bad.returncode == 2 and "error" in bad.stderr
