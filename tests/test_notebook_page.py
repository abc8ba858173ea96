"""The notebook-style tutorial (docs/notebook.md): its cells run in order and print what the
page shows; the MetaResult views and the DataFrame inputs it presents."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _docs_scripts import load_docs_script

import storyeval
from storyeval.exceptions import InputError


@pytest.fixture(scope="module")
def notebook():
    return load_docs_script("gen_notebook")


def test_every_cell_prints_what_the_page_shows(notebook):
    cells = notebook.page_cells(notebook.PAGE.read_text(encoding="utf-8"))
    assert len(cells) == len(notebook.CELLS) >= 6
    outputs = notebook.run_cells([code for code, _ in cells])
    for (code, shown), out in zip(cells, outputs):
        assert out == shown.rstrip(), f"cell\n{code}\nprints\n{out}\nbut the page shows\n{shown}"


def _data():
    ratings = pd.DataFrame([{"story_id": f"s{k}/p{p}", "annotator": f"w{a}",
                             "criterion": "Q", "value": 1 + (k + p + a * p) % 5}
                            for k in range(4) for p in range(6) for a in range(2)])
    scores = pd.DataFrame([{"story_id": f"s{k}/p{p}", "measure": m, "value": k * w + p / 10}
                           for k in range(4) for p in range(6) for m, w in (("a", 1), ("b", -1))])
    return ratings, scores


def test_meta_evaluate_and_views_on_dataframes():
    ratings, scores = _data()
    result = storyeval.meta_evaluate(storyeval.data.read_dataset(ratings, scores=scores),
                                     levels="overall,system")
    assert result.settings["levels"] == ["overall", "system"]
    text = repr(result)
    assert text.startswith("<MetaResult") and "\n" not in text and len(text) < 300
    tidy = result.to_frame()
    assert list(tidy.columns) == ["table", "level", "criterion", "measure", "other",
                                  "quantity", "value", "n", "reason", "measure_name",
                                  "other_name"]
    corr = result.correlations.set_index(["measure", "level"])["value"]
    got = tidy[tidy["table"] == "correlation"].set_index(["measure", "level"])["value"]
    pd.testing.assert_series_equal(got.sort_index(), corr.sort_index(), check_names=False)
    assert set(tidy["table"]) == {"correlation", "baseline", "comparisons"}
    assert "<table" in result._repr_html_() and "human baseline" in result._repr_html_()
    assert "system level:" in result.summary()
    # a DataFrame straight into meta_evaluate is read as read_dataset reads a file
    with pytest.raises(InputError, match="no human criteria"):
        storyeval.meta_evaluate(scores)


def test_common_wrong_calls_are_helpful():
    with pytest.raises(InputError, match="expected a file path or a pandas DataFrame, got int"):
        storyeval.data.read_dataset(3)
    with pytest.raises(InputError, match="expected a Dataset or a wide DataFrame"):
        storyeval.correlate([1, 2])
    with pytest.raises(InputError, match="name the measures"):
        storyeval.correlate(pd.DataFrame({"x": [1.0]}))
    with pytest.raises(InputError, match="levels must be among"):
        storyeval.meta_evaluate(levels="overall,story")


def test_the_typed_public_api_script_runs():
    """tests/typecheck/public_api.py (checked by `mypy --strict` in .ci/run) also works."""
    import importlib.util

    path = Path(__file__).parent / "typecheck" / "public_api.py"
    spec = importlib.util.spec_from_file_location("storyeval_public_api", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    ratings, scores = _data()
    text = module.evaluate(ratings, scores)
    assert "numbers; " in text and "system level:" in text


def test_to_frame_names_hanna_measures_by_display_name():
    # identifiers stay in `measure` / `other` (the key of the data); the names the tables print
    # (HANNA's `BLEU Ξ§` is `BLEU`) are in `measure_name` / `other_name`
    result = storyeval.meta_evaluate(storyeval.load_hanna(), levels="overall")
    tidy = result.to_frame()
    bleu = tidy[tidy["measure"] == "BLEU Ξ§"]
    assert len(bleu) and set(bleu["measure_name"]) == {"BLEU"}
    tests = tidy[(tidy["table"] == "comparisons") & (tidy["other"] == "BLEU Ξ§")]
    assert len(tests) and set(tests["other_name"]) == {"BLEU"}
    baseline = tidy[tidy["table"] == "baseline"]
    assert set(baseline["measure_name"]) == {"human baseline"}
