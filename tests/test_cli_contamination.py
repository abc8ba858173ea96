"""``storyeval contamination`` through main() and once through a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from storyeval.cli import main
from storyeval.contamination import calibrate_threshold, roc_auc, train_tiny_causal_lm
from storyeval.data import load_hanna_stories


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """A tiny GPT-2 saved to disk, trained briefly on 12 HANNA human stories (the members),
    and CSV files: labelled texts, unlabelled texts and known non-members."""
    root = tmp_path_factory.mktemp("contamination_cli")
    human = load_hanna_stories().query("system == 'Human'")
    texts = [" ".join(t.split()[:30]) for t in human["story"]]
    ids = human["story_id"].tolist()
    train_tiny_causal_lm(texts[:12], steps=60, batch_size=8, context=64, vocab_size=300,
                         tokenizer_texts=texts[:36], out_dir=root / "lm", show_progress=False)
    pd.DataFrame({"story_id": ids[:24], "story": texts[:24],
                  "member": ["true"] * 12 + ["false"] * 12}).to_csv(root / "labelled.csv",
                                                                   index=False)
    pd.DataFrame({"story_id": ids[:12] + ["short/1"], "story": texts[:12] + ["Hi."]}).to_csv(
        root / "unlabelled.csv", index=False)
    pd.DataFrame({"story_id": ids[24:36], "story": texts[24:36]}).to_csv(
        root / "nonmembers.csv", index=False)
    return root


def test_labelled_run_writes_consistent_outputs(setup, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["contamination", "--model", str(setup / "lm"), "--texts",
                 str(setup / "labelled.csv"), "--labels", "member", "--id-column", "story_id",
                 "--n-resamples", "200", "--out", str(out), "--format", "json"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["n_texts"] == 24 and summary["n_unscored"] == 0
    assert [e["score"] for e in summary["evaluation"]] == ["Min-K% Prob", "Min-K%++"]
    scores = pd.read_csv(out / "scores.csv")
    assert list(scores["text_id"]) == pd.read_csv(setup / "labelled.csv")["story_id"].tolist()
    # the reference convention on this GPT-2-style tokenizer: no BOS, first token is context
    assert not scores["bos"].any()
    assert summary["bos"] == "reference" and summary["count_rule"] == "reference"
    assert summary["fpr_comparison"] == "<"
    for e, col in zip(summary["evaluation"], ("min_k", "min_k_pp")):
        # the reported AUC is the AUC of the written scores
        assert e["auc"] == pytest.approx(roc_auc(scores[col], scores["is_member"]), abs=1e-12)
        assert e["auc_ci"][0] <= e["auc"] <= e["auc_ci"][1]
        assert set(e["tpr"]) == {"0.001", "0.01", "0.05"}
    ev = pd.read_csv(out / "evaluation.csv")
    assert len(ev) == 8 and set(ev["n_members"]) == {12}
    assert json.loads((out / "summary.json").read_text()) == summary
    assert (out / "roc.png").stat().st_size > 10_000
    # scores were persisted as they came; the same command again reuses them (resume)
    ckpt = out / "checkpoint" / "texts.jsonl"
    assert len(ckpt.read_text().splitlines()) == 1 + 24
    assert main(["contamination", "--model", str(setup / "lm"), "--texts",
                 str(setup / "labelled.csv"), "--labels", "member", "--id-column", "story_id",
                 "--n-resamples", "200", "--out", str(out), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == summary
    assert len(ckpt.read_text().splitlines()) == 1 + 24
    assert (out / "roc.pdf").read_bytes()[:4] == b"%PDF"


def test_contamination_rate_with_calibrated_threshold(setup, tmp_path, capsys):
    out = tmp_path / "rate"
    code = main(["contamination", "--model", str(setup / "lm"), "--texts",
                 str(setup / "unlabelled.csv"), "--nonmembers", str(setup / "nonmembers.csv"),
                 "--id-column", "story_id", "--fpr", "0.1", "--n-resamples", "100",
                 "--out", str(out)])
    assert code == 0
    captured = capsys.readouterr()
    assert "contamination rate" in captured.out and "calibrated on 12 known non-members" in \
        captured.out
    assert "1 of 13 text(s) have no Min-K% score" in captured.err  # "Hi." is too short
    scores = pd.read_csv(out / "scores.csv", keep_default_na=False)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_unscored"] == 1
    texts = scores[(scores["set"] == "texts") & (scores["reason"] == "")]
    refs = scores[scores["set"] == "nonmembers"]
    for r, col in zip(summary["contamination_rate"], ("min_k", "min_k_pp")):
        tau = calibrate_threshold(refs[col].astype(float), fpr=0.1)
        assert r["threshold"] == pytest.approx(tau)
        flagged = int((texts[col].astype(float) > tau).sum())
        assert r["n_flagged"] == flagged and r["n_texts"] == 12
        assert r["rate"] == pytest.approx(flagged / 12)
        assert r["calibration_fpr"] <= 0.1
    short = scores[scores["text_id"] == "short/1"].iloc[0]
    assert short["min_k"] == "" and "too short" in short["reason"]


def test_usage_errors_exit_2(setup, capsys):
    code = main(["contamination", "--model", "no-such-org/no-such-model", "--texts",
                 str(setup / "labelled.csv")])
    assert code == 2
    assert "could not load a causal LM" in capsys.readouterr().err
    code = main(["contamination", "--model", str(setup / "lm"), "--texts",
                 str(setup / "labelled.csv"), "--k", "0"])
    assert code == 2 and "--k" in capsys.readouterr().err
    code = main(["contamination", "--model", str(setup / "lm"), "--texts",
                 str(setup / "labelled.csv"), "--text-column", "body"])
    assert code == 2 and "no column 'body'" in capsys.readouterr().err


def test_subprocess_bad_labels_column(setup):
    proc = subprocess.run(
        [sys.executable, "-m", "storyeval", "contamination", "--model", str(setup / "lm"),
         "--texts", str(setup / "labelled.csv"), "--labels", "is_member"],
        capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2
    assert "no column 'is_member' (--labels)" in proc.stderr
