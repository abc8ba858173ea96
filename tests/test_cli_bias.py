"""``storyeval bias`` and ``storyeval pairwise bias`` through storyeval.cli.main; the
self-preference analysis end to end from two ``storyeval rate`` runs on a local fake server."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _openai_stub_server import Script, StubServer

from storyeval.bias.simulate import simulate_verdicts
from storyeval.cli import main

SYSTEMS = ("Beluga-13b", "Mistral-7b", "GPT-2", "HINT")
OWN = {"beluga": "Beluga-13b", "mistral": "Mistral-7b"}


def _rating(payload, key):
    """A rating from the key's hash (2 or 3), +1 when the rating model rates its own story."""
    base = int(hashlib.sha256(key.encode()).hexdigest(), 16) % 2 + 2
    text = payload["messages"][-1]["content"]
    mine = f"written by {OWN[payload['model']]}." in text
    return f" {base + int(mine)} - rated."


@pytest.fixture
def stories_csv(tmp_path):
    rows = [{"story_id": f"{s}/{p}", "system": s, "prompt_id": p, "prompt": f"Prompt {p}.",
             "story": f"Story {p} written by {s}. It ends.", "reference": f"Human {p}."}
            for s in SYSTEMS for p in range(16)]
    path = tmp_path / "stories.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_self_preference_end_to_end_from_two_rate_runs(tmp_path, stories_csv, capsys):
    with StubServer(Script(answer=_rating)) as srv:
        for model, name in (("beluga", "Beluga-13B"), ("mistral", "Mistral-7B")):
            code = main(["rate", "--backend", "openai", "--base-url", srv.base_url, "--model",
                         model, "--model-name", name, "--stories", str(stories_csv),
                         "--cache", str(tmp_path / f"{model}.sqlite"), "--no-progress",
                         "--no-api-key", "--eval-prompts", "1", "--criteria", "RE,CH",
                         "--tries", "1", "--out", str(tmp_path / model)])
            assert code == 0
    capsys.readouterr()
    argv = ["bias", "--raters-only", "--scores", str(tmp_path / "beluga" / "scores.csv"),
            "--scores", str(tmp_path / "mistral" / "scores.csv"), "--own",
            "Beluga-13B=Beluga-13b", "--own", "Mistral-7B=Mistral-7b", "--reference", "other"]
    assert main([*argv, "--format", "json"]) == 0
    table = pd.DataFrame(json.loads(capsys.readouterr().out)["self_preference"])
    assert set(table["criterion"]) == {"Relevance", "Coherence"} and len(table) == 4
    # the difference-in-differences by hand from the two score files
    scores = pd.concat([pd.read_csv(tmp_path / m / "scores.csv") for m in OWN])
    wide = scores.pivot(index="story_id", columns="measure", values="value")
    system = wide.index.str.rsplit("/", n=1).str[0]
    comp = system.isin(["GPT-2", "HINT"])
    for _, row in table.iterrows():
        code = {"Relevance": "RE", "Coherence": "CH"}[row["criterion"]]
        me, other = (("Beluga-13B", "Mistral-7B") if row["rater"].startswith("Beluga")
                     else ("Mistral-7B", "Beluga-13B"))
        e = wide[f"{me} {code} 1"] - wide[f"{other} {code} 1"]
        own = system == OWN[me.split("-")[0].lower()]
        assert row["estimate"] == pytest.approx(e[own].mean() - e[comp].mean(), abs=1e-12)
        assert row["reference"] == f"{other} {code} 1" and row["n_clusters"] == 16
        # the planted +1: both raters favour their own stories (interval above 0)
        assert row["ci_low"] > 0
    # the text table names the assumption; --out writes the CSV and the page
    assert main([*argv, "--out", str(tmp_path / "report")]) == 0
    printed = capsys.readouterr().out
    assert "difference-in-differences" in printed and "one discrimination" in printed
    assert (tmp_path / "report" / "self_preference.csv").is_file()
    assert (tmp_path / "report" / "index.html").is_file()
    # one rater, no reference (--reference none): its own-minus-comparison gap, named as such
    one = ["bias", "--raters-only", "--scores", str(tmp_path / "beluga" / "scores.csv"),
           "--own", "Beluga-13B=Beluga-13b", "--reference", "none"]
    assert main([*one, "--format", "json"]) == 0
    raw = pd.DataFrame(json.loads(capsys.readouterr().out)["self_preference"])
    for _, row in raw.iterrows():
        code = {"Relevance": "RE", "Coherence": "CH"}[row["criterion"]]
        r = wide[f"Beluga-13B {code} 1"]
        own, comp1 = system == "Beluga-13b", system != "Beluga-13b"
        assert row["estimate"] == pytest.approx(r[own].mean() - r[comp1].mean(), abs=1e-12)
        assert row["reference"] == "none" and row["n_comparison_systems"] == 3
    assert main(one) == 0
    printed = capsys.readouterr().out
    assert "own-minus-other gap" in printed and "real difference in quality" in printed


def test_bias_on_hanna(capsys):
    assert main(["bias", "--metrics", "Beluga-13B 1", "--criteria", "RE", "--length",
                 "Text length", "--own", "Beluga-13B 1=GPT-2", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"self_preference", "leniency", "scale_use", "residual_length"}
    offset = next(r for r in out["leniency"] if r["estimand"] == "offset")
    assert offset["n"] == 960 and offset["n_clusters"] == 96 and offset["estimate"] < 0
    assert out["self_preference"][0]["reference"] == "Relevance"
    shares = [r["share"] for r in out["scale_use"] if r["label"].startswith("humans")]
    assert sum(shares) == pytest.approx(1.0)


@pytest.mark.parametrize("argv, message", [
    (["bias", "--own", "Beluga-13B 1"], "expected RATER=SYSTEM"),
    (["bias", "--raters-only"], "--raters-only reads the --scores files"),
    (["bias", "--own", "Beluga-13B 1=GPT-2", "--reference", "other"], "exactly two raters"),
    (["bias", "--own", "Beluga-13B=GPT-2"], "name a rater group"),
])
def test_usage_errors(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_pairwise_bias_cli(tmp_path, capsys):
    jv, hv, lengths = simulate_verdicts(5, 20, position_bias=1.0, self_preference=0.5, seed=1)
    jv.to_csv(tmp_path / "judge.csv", index=False)
    hv.to_csv(tmp_path / "human.csv", index=False)
    lengths.rename("length").rename_axis("story_id").reset_index().to_csv(
        tmp_path / "lengths.csv", index=False)
    assert main(["pairwise", "bias", str(tmp_path / "judge.csv"), "--reference",
                 str(tmp_path / "human.csv"), "--own", "Judge-A=sys-2", "--lengths",
                 str(tmp_path / "lengths.csv"), "--length-controlled", "--seed", "3",
                 "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"position", "self_preference", "length", "lc_win_rate",
                        "length_balanced"}
    first = next(r for r in out["position"] if r["estimand"] == "first-position rate")
    assert first["estimate"] > 0.5 and first["pvalue"] < 0.01
    assert out["length_balanced"][0]["seed"] == 3
    assert len(out["lc_win_rate"]) == 5
    assert main(["pairwise", "bias", str(tmp_path / "judge.csv"), "--length-controlled"]) == 2
    assert "--lengths" in capsys.readouterr().err
    assert main(["pairwise", "bias", str(tmp_path / "judge.csv"), "--own", "Judge-A=sys-2"]) == 2
    assert "needs a reference" in capsys.readouterr().err
    assert not np.isnan(first["se"])


def test_bias_on_own_data_declares_the_human_column_with_criteria(tmp_path, capsys):
    """`bias --data human.csv --criteria NAME` reads NAME as the human score column of a
    per-story table, as `meta --criteria` does (it was an error: no human criteria)."""
    rng = np.random.default_rng(5)
    systems, prompts = [f"model-{c}" for c in "ABCDEF"], [f"p{k:02d}" for k in range(20)]
    grid = pd.MultiIndex.from_product([systems, prompts], names=["system", "prompt_id"])
    human = pd.DataFrame(index=grid).reset_index()
    human["fluency"] = rng.integers(1, 6, len(human)).astype(float)
    own = (human["system"] == "model-C").to_numpy()
    judge = human[["system", "prompt_id"]].assign(
        measure="judgeX", value=np.clip(np.rint(human["fluency"] + rng.normal(0, 0.5, len(human))
                                                + 1.0 * own), 1, 5))
    human.to_csv(tmp_path / "human.csv", index=False)
    judge.to_csv(tmp_path / "judge.csv", index=False)
    assert main(["bias", "--data", str(tmp_path / "human.csv"), "--scores",
                 str(tmp_path / "judge.csv"), "--criteria", "fluency",
                 "--own", "judgeX=model-C", "--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert "judgeX" in out and "model-C" in out
