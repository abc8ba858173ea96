"""Interchange with mt-metrics-eval's score-file layout and level-name aliases."""

import numpy as np
import pandas as pd
import pytest

from storyeval.data.mteval import (
    level_vocabulary,
    read_mteval,
    read_score_file,
    resolve_level,
    write_mteval,
)
from storyeval.exceptions import InputError


def _wide():
    idx = pd.MultiIndex.from_product([["sys A", "sysB"], [0, 1, 2]],
                                     names=["system", "prompt_id"])
    return pd.DataFrame({"Overall quality": [1.0, 2.0, np.nan, 4.0, 5.0, 3.0],
                         "my metric": [0.1, 0.25, 1 / 3, 0.4, 0.5, 0.6]}, index=idx)


def test_write_then_read_round_trip(tmp_path):
    paths = write_mteval(_wide(), tmp_path, "en-en", criteria=["Overall quality"],
                         measures=["my metric"])
    names = sorted(str(p.relative_to(tmp_path)) for p in paths)
    assert names == ["human-scores/en-en.Overall_quality.seg.score",
                     "human-scores/en-en.Overall_quality.sys.score",
                     "metric-scores/en-en/my_metric-src.seg.score",
                     "metric-scores/en-en/my_metric-src.sys.score", "storyeval-names.tsv"]
    seg = (tmp_path / "human-scores/en-en.Overall_quality.seg.score").read_text().splitlines()
    assert seg == ["sys_A 1.0", "sys_A 2.0", "sys_A None", "sysB 4.0", "sysB 5.0", "sysB 3.0"]
    sys_lines = (tmp_path / "metric-scores/en-en/my_metric-src.sys.score").read_text()
    assert sys_lines.splitlines()[1] == f"sysB {0.5!r}"
    mapping = (tmp_path / "storyeval-names.tsv").read_text()
    assert "sys_A\tsystem\tsys A" in mapping and "my_metric-src\tmetric\tmy metric" in mapping
    ds = read_mteval(tmp_path, "en-en")
    assert ds.criteria == ["Overall_quality"]
    wide = ds.wide()
    assert wide["my_metric-src"].tolist() == pytest.approx(_wide()["my metric"].tolist(),
                                                            abs=0)  # repr round-trips floats
    assert np.isnan(wide.loc[("sys_A", 2), "Overall_quality"])


def test_read_score_file_blocks(tmp_path):
    path = tmp_path / "x.seg.score"
    path.write_text("a 1\na 2\nb None\nb 0.5\n")
    table = read_score_file(path)
    assert table["item"].tolist() == [0, 1, 0, 1]
    assert np.isnan(table["score"][2])
    path.write_text("a 1\nb two\n")
    with pytest.raises(InputError, match="line 2"):
        read_score_file(path)
    path.write_text("dom a 1\n")
    with pytest.raises(InputError, match="SYSNAME SCORE"):
        read_score_file(path)


def test_write_errors(tmp_path):
    wide = _wide()
    wide.iloc[0, 1] = np.nan
    with pytest.raises(InputError, match="no missing score: measure 'my metric'"):
        write_mteval(wide, tmp_path, "en-en", criteria=[], measures=["my metric"])
    with pytest.raises(InputError, match="SRC-TGT"):
        write_mteval(_wide(), tmp_path, "english", criteria=[], measures=["my metric"])
    with pytest.raises(InputError, match="no human score files"):
        read_mteval(tmp_path / "nothing", "en-en")


@pytest.mark.parametrize("name, level", [
    ("global", "overall"), ("Segment-level", "overall"), ("flattened", "overall"),
    ("item", "prompt"), ("input", "prompt"), ("summary_level", "prompt"),
    ("sys", "system"), ("system-level", "system"), ("prompt", "prompt")])
def test_level_aliases(name, level):
    assert resolve_level(name) == level


def test_unknown_level_and_vocabulary_table():
    with pytest.raises(InputError, match="unknown level 'document'"):
        resolve_level("document")
    table = level_vocabulary()
    assert table["storyeval level"].tolist() == ["overall", "prompt", "system"]
    assert "summary-level" in table.loc[1, "accepted aliases"]


def test_aliases_accepted_by_meta_evaluate():
    from storyeval.meta import meta_evaluate

    res = meta_evaluate(measures="BLEU", levels=["global", "item"], reference="none")
    assert sorted(res.correlations["level"].unique()) == ["overall", "prompt"]
    from storyeval.correlation.levels import level_data

    idx = pd.MultiIndex.from_product([["A", "B"], [0, 1]], names=["system", "prompt_id"])
    wide = pd.DataFrame({"m": [1.0, 3.0, 2.0, 6.0]}, index=idx)
    assert level_data(wide, level="sys")["m"].tolist() == [2.0, 4.0]
