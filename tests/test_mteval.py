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
    assert seg == ["sys_A 1", "sys_A 2", "sys_A None", "sysB 4", "sysB 5", "sysB 3"]
    sys_lines = (tmp_path / "metric-scores/en-en/my_metric-src.sys.score").read_text()
    assert sys_lines.splitlines()[1] == "sysB 0.5"
    mapping = (tmp_path / "storyeval-names.tsv").read_text()
    assert "sys_A\tsystem\tsys A" in mapping and "my_metric-src\tmetric\tmy metric" in mapping
    # the round trip restores storyeval's names: criteria, measures (not "my_metric-src")
    # and systems
    ds = read_mteval(tmp_path, "en-en")
    assert ds.criteria == ["Overall quality"]
    wide = ds.wide()
    assert "my metric" in wide.columns and "my_metric-src" not in wide.columns
    assert set(wide.index.get_level_values("system")) == {"sys A", "sysB"}
    assert wide["my metric"].tolist() == pytest.approx(_wide()["my metric"].tolist(),
                                                        rel=1e-14)
    assert np.isnan(wide.loc[("sys A", 2), "Overall quality"])


def test_written_scores_carry_no_float_artifacts(tmp_path):
    """0.1 + 0.2-like noise (3.3000000000000003, a mean 0.23333333333333336) is not written;
    15 significant digits keep every decimal input as given."""
    idx = pd.MultiIndex.from_product([["a", "b"], [0, 1, 2]], names=["system", "prompt_id"])
    wide = pd.DataFrame({"h": [1.0, 2.0, 3.0, 1.0, 2.0, 3.0],
                         "m": [1.1 + 2.2, 0.1, 0.4, 2.331, 2.331, 2.331]}, index=idx)
    write_mteval(wide, tmp_path, "en-en", criteria=["h"], measures=["m"])
    text = "".join(p.read_text() for p in (tmp_path / "metric-scores" / "en-en").iterdir())
    assert "3.3000000000000003" not in text and "a 3.3\n" in text
    assert not any(len(line.split()[1]) > 17 for line in text.splitlines())
    assert "b 2.331\n" in text


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
