"""HANNA's LLM ratings below the 1-5 scale (failed-extraction codes): counted on load, shown by
`storyeval describe`, kept by default, made missing on request.

Every expected count is computed here from the raw CSV with the standard library (``csv`` and
``json``), independently of storyeval's reader.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from storyeval.cli import main
from storyeval.data import load_hanna
from storyeval.data.hanna import hanna_out_of_scale, hanna_path, read_hanna_wide
from storyeval.exceptions import InputError

_LLM = re.compile(r"^(?P<model>Beluga-13B|OrcaPlatypus|Mistral-7B|Llama-13B|ChatGPT) "
                  r"(?P<crit>RE|CH|EM|SU|EG|CX|AVG) (?P<ep>[1-4])$")


def _raw():
    """``{column: {system: [96 values]}}`` for the LLM columns of the released CSV."""
    csv.field_size_limit(2**31 - 1)
    with open(hanna_path("hanna_metric_scores_llm.csv"), encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    return {col: {row["Model"]: json.loads(row[col]) for row in rows}
            for col in rows[0] if _LLM.match(col)}


RAW = _raw()


def _below(values):
    return [i for i, v in enumerate(values) if v < 1]


def test_counts_match_the_raw_csv():
    per_column = {col: sum(len(_below(v)) for v in by_sys.values())
                  for col, by_sys in RAW.items()}
    # the figures: 1,174 values below 1, minimum -1.0, Mistral-7B SU 1: 80 of the 960
    # stories of the generation systems
    assert sum(per_column.values()) == 1174
    assert min(x for by_sys in RAW.values() for v in by_sys.values() for x in v) == -1.0
    assert sum(len(_below(v)) for s, v in RAW["Mistral-7B SU 1"].items() if s != "Human") == 80
    counts = hanna_out_of_scale(load_hanna()).set_index("measure")
    assert len(counts) == len(RAW) == 140
    assert counts["n_below"].to_dict() == per_column
    assert (counts["n_above"] == 0).all() and (counts["n_values"] == 1056).all()
    assert counts.at["Mistral-7B SU 1", "rater"] == "Mistral-7B 1"


def _per_rater():
    out = Counter()
    for col, by_sys in RAW.items():
        m = _LLM.match(col)
        out[f"{m['model']} {m['ep']}"] += sum(len(_below(v)) for v in by_sys.values())
    return {k: v for k, v in out.items() if v}


def test_notes_and_describe_count_per_rater(capsys):
    per_rater = _per_rater()
    note = next(n for n in load_hanna().notes if "1-5 scale" in n)
    assert "1,174 values" in note and "kept as released" in note
    for rater, n in per_rater.items():
        assert f"{rater}: {n}" in note
    assert main(["describe", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["out_of_scale"]["total"] == 1174
    assert doc["out_of_scale"]["per_rater"] == per_rater
    assert main(["describe"]) == 0
    out = capsys.readouterr().out
    assert "LLM ratings outside the 1-5 scale: 1174; per rater: Mistral-7B 1 (283)" in out


def test_default_keeps_the_release_and_missing_drops_the_codes():
    keep = load_hanna().table
    gone = load_hanna(out_of_scale="missing").table
    for col, by_sys in RAW.items():
        raw = np.concatenate([by_sys[s] for s in keep.index.get_level_values(0).unique()])
        np.testing.assert_array_equal(keep[col].to_numpy(), raw)  # bit for bit as released
    expected_nan = {}
    for col, by_sys in RAW.items():
        m = _LLM.match(col)
        bad = {(s, i) for s, v in by_sys.items() for i in _below(v)}
        if m["crit"] == "AVG":  # AVG is the mean of the six criteria: a code in one taints it
            for c in ("RE", "CH", "EM", "SU", "EG", "CX"):
                crit_col = RAW[f"{m['model']} {c} {m['ep']}"]
                bad |= {(s, i) for s, v in crit_col.items() for i in _below(v)}
        expected_nan[col] = bad
    for col, bad in expected_nan.items():
        got = {(s, int(p)) for s, p in gone.index[gone[col].isna().to_numpy()]}
        assert got == bad, col
        ok = ~gone[col].isna().to_numpy()
        np.testing.assert_array_equal(gone[col].to_numpy()[ok], keep[col].to_numpy()[ok])
    assert gone["Mistral-7B SU 1"].isna().sum() == 80
    assert (gone[list(RAW)].min() >= 1).all()
    assert keep.drop(columns=list(RAW)).equals(gone.drop(columns=list(RAW)))
    note = next(n for n in load_hanna(out_of_scale="missing").notes if "1-5 scale" in n)
    assert "treated as missing" in note


def test_missing_system_level_correlation_by_hand():
    from storyeval.meta import meta_evaluate

    res = meta_evaluate(load_hanna(out_of_scale="missing"), measures="Mistral-7B 1",
                        criteria="Surprise", levels="system", nan_policy="omit",
                        reference="none")
    got = float(res.correlation_grid("system").loc["Mistral-7B 1", "Surprise"])
    # by hand: per system, the mean of the in-scale ratings against the mean human Surprise
    gen = [s for s in RAW["Mistral-7B SU 1"] if s != "Human"]
    with open(hanna_path("hanna_metric_scores_llm.csv"), encoding="utf-8", newline="") as f:
        human = {r["Model"]: json.loads(r["Surprise"]) for r in csv.DictReader(f)}
    llm_means = [np.mean([v for v in RAW["Mistral-7B SU 1"][s] if v >= 1]) for s in gen]
    human_means = [np.mean(human[s]) for s in gen]
    assert got == pytest.approx(stats.kendalltau(llm_means, human_means).statistic, abs=1e-12)
    kept = meta_evaluate(load_hanna(), measures="Mistral-7B 1", criteria="Surprise",
                         levels="system", reference="none")
    assert not math.isclose(got, float(kept.correlation_grid("system").loc[
        "Mistral-7B 1", "Surprise"]))


def test_cli_flag_and_wide_file(tmp_path, capsys):
    assert main(["describe", "--json", "--hanna-out-of-scale", "missing"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["out_of_scale"]["total"] == 0
    assert doc["missing_cells"]["Mistral-7B SU 1"] == 80
    path = tmp_path / "hanna.csv"
    path.write_bytes(hanna_path("hanna_metric_scores_llm.csv").read_bytes())
    assert main(["describe", "--json", "--data", str(path),
                 "--hanna-out-of-scale", "missing"]) == 0
    assert json.loads(capsys.readouterr().out)["missing_cells"]["Mistral-7B SU 1"] == 80
    assert main(["meta", "--metrics", "Mistral-7B 1", "--levels", "system",
                 "--hanna-out-of-scale", "missing"]) == 2  # NaN needs --nan-policy omit
    assert "nan_policy='omit'" in capsys.readouterr().err
    with pytest.raises(InputError, match="out_of_scale"):
        read_hanna_wide(path, out_of_scale="drop")
    with pytest.raises(InputError, match="out_of_scale"):
        load_hanna(out_of_scale="drop")
