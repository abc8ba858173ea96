"""Perturbation suites: determinism, invariances, discrimination of synthetic judges."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from storyeval.data.hanna import load_hanna_stories
from storyeval.exceptions import InputError
from storyeval.generation import set_distinct_n
from storyeval.llm.stories import validate_stories
from storyeval.perturb import KINDS, perturb_stories, perturb_text
from storyeval.perturb.robustness import (
    clustered_mean,
    robustness_table,
    score_outcomes,
    verdict_outcomes,
)


@pytest.fixture(scope="module")
def stories() -> pd.DataFrame:
    st = load_hanna_stories()
    return st[st.prompt_id < 8].reset_index(drop=True)


def test_byte_identical_across_runs(stories, tmp_path):
    files = []
    for run in range(2):
        out, man = perturb_stories(stories, list(KINDS), seed=0)
        f = tmp_path / f"run{run}.csv"
        out.to_csv(f, index=False, lineterminator="\n")
        man.to_csv(tmp_path / f"man{run}.csv", index=False, lineterminator="\n")
        files.append((f.read_bytes(), (tmp_path / f"man{run}.csv").read_bytes()))
    assert files[0] == files[1]
    other, _ = perturb_stories(stories, list(KINDS), seed=1)
    assert not other.equals(perturb_stories(stories, list(KINDS), seed=0)[0])


def test_variant_independent_of_other_kinds_and_stories(stories):
    all_k, _ = perturb_stories(stories, list(KINDS), seed=0)
    one, _ = perturb_stories(stories.iloc[[5]], ["typo"], seed=0, include_originals=False)
    row = all_k.set_index("story_id").loc[one.story_id.iloc[0], "story"]
    assert row == one.story.iloc[0]


def test_output_is_a_valid_stories_table(stories):
    out, man = perturb_stories(stories, ["shuffle", "negate"], seed=0)
    validate_stories(out)
    assert len(out) == 3 * len(stories)
    assert set(man.kind) == {"shuffle", "negate"} and man.changed.all()
    assert all(isinstance(json.loads(p), dict) for p in man.parameters)


def test_shuffle_exact_invariances(stories):
    from storyeval.metrics.rouge import RougeMetric

    out, man = perturb_stories(stories, ["shuffle"], seed=0, include_originals=False)
    llm = (stories.system != "Human").to_numpy()
    for orig, new in zip(stories.story, out.story):
        assert set_distinct_n([new], 1) == set_distinct_n([orig], 1)
    m = RougeMetric(rouge_types=("rouge1",))
    measures = [x for x in m.measures() if x.name == "ROUGE-1 Recall"]
    refs = stories.reference[llm].tolist()
    prompts = stories.prompt[llm].tolist()
    a = m.score_batch(stories.story[llm].tolist(), refs, prompts, measures)
    b = m.score_batch(out.story[llm].tolist(), refs, prompts, measures)
    ok = ~np.isnan(a[:, 0])
    assert ok.sum() > 40
    assert np.array_equal(a[ok], b[ok])


def test_repeat_lowers_distinct2_everywhere(stories):
    out, _ = perturb_stories(stories, ["repeat"], seed=0, include_originals=False)
    for orig, new in zip(stories.story, out.story):
        assert set_distinct_n([new], 2) < set_distinct_n([orig], 2)


def test_kinds_toy():
    rng = np.random.default_rng(0)
    assert perturb_text("A b. C d e. F.", "truncate", rng)[0] == "A b."
    assert perturb_text("He was late.", "negate", rng)[0] == "He was not late."
    assert perturb_text("The big house.", "synonym", rng)[0] == "The large home."
    typo, params = perturb_text("Something happened", "typo", rng)
    assert typo != "Something happened" and sorted(typo) == sorted("Something happened")
    with pytest.raises(InputError, match="unknown kind"):
        perturb_text("x", "nope", rng)


def test_synonym_names_its_fixed_table(stories):
    from storyeval.perturb.kinds import SYNONYMS

    assert len(SYNONYMS) == 36  # the table the output names ("fixed table of 36 words")
    _, params = perturb_text("Nothing to replace here.", "synonym", np.random.default_rng(0))
    assert params == {"replaced": [],
                      "synonyms": "fixed table of 36 words (storyeval.perturb.kinds.SYNONYMS)"}
    _, man = perturb_stories(stories, ["synonym"], seed=0)
    assert all(json.loads(p)["synonyms"].startswith("fixed table of 36 words")
               for p in man["parameters"])


def test_position_only_judge_scores_half(stories):
    _, man = perturb_stories(stories, ["shuffle", "truncate"], seed=0)
    prompt = {s: p for s, p in zip(stories.story_id, stories.prompt_id)}
    rows = []
    for o, v in zip(man.original_id, man.story_id):
        for order in ("AB", "BA"):  # each pair shown in both orders; judge picks the first shown
            rows.append({"prompt_id": prompt[o], "story_a": o, "story_b": v,
                         "verdict": "A" if order == "AB" else "B", "order": order,
                         "judge": "first"})
    res = robustness_table(verdict_outcomes(pd.DataFrame(rows), man))
    assert (res.discrimination == 0.5).all()
    assert ((res.disc_low <= 0.5) & (res.disc_high >= 0.5)).all()


def test_length_judge_discriminates_truncation(stories):
    _, man = perturb_stories(stories, ["truncate"], seed=0)
    out, _ = perturb_stories(stories, ["truncate"], seed=0)
    scores = pd.DataFrame({"story_id": out.story_id, "prompt_id": out.prompt_id,
                           "measure": "length", "value": out.story.str.len().astype(float)})
    res = robustness_table(score_outcomes(scores, man))
    assert res.discrimination.iloc[0] == 1.0 and res.mean_change.iloc[0] < 0
    assert res.change_p.iloc[0] < 0.001


def test_ties_count_half():
    man = pd.DataFrame({"story_id": ["a~x", "b~x"], "original_id": ["a", "b"], "kind": "x"})
    scores = pd.DataFrame({"story_id": ["a", "a~x", "b", "b~x"], "prompt_id": [1, 1, 2, 2],
                           "measure": "m", "value": [1.0, 1.0, 2.0, 1.0]})
    res = robustness_table(score_outcomes(scores, man))
    assert res.discrimination.iloc[0] == 0.75 and res.unchanged.iloc[0] == 0.5


def test_clustered_mean_equals_statsmodels():
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(3)
    x = rng.normal(size=40)
    cl = np.repeat(np.arange(10), 4)
    mean, se, _, _, p = clustered_mean(x, cl)
    fit = sm.OLS(x, np.ones(40)).fit(cov_type="cluster", cov_kwds={"groups": cl},
                                     use_t=True)
    assert mean == pytest.approx(fit.params[0], abs=1e-12)
    assert se == pytest.approx(fit.bse[0], rel=1e-10)
    assert p == pytest.approx(fit.pvalues[0], rel=1e-8)


def test_nan_pairs_left_out_and_counted():
    man = pd.DataFrame({"story_id": ["a~x", "b~x", "c~x"], "original_id": ["a", "b", "c"],
                        "kind": "x"})
    scores = pd.DataFrame({"story_id": ["a", "a~x", "b", "b~x", "c", "c~x"],
                           "prompt_id": [1, 1, 2, 2, 3, 3], "measure": "m",
                           "value": [2.0, 1.0, np.nan, 1.0, 1.0, 2.0]})
    res = robustness_table(score_outcomes(scores, man)).iloc[0]
    assert res.n_missing == 1 and res.n_pairs == 2
    assert res.discrimination == 0.5 and res.mean_change == 0.0
    assert 0.0 <= res.disc_low <= res.disc_high <= 1.0


def test_cli_perturb_and_robustness(tmp_path, stories):
    from storyeval.cli import main

    src = tmp_path / "st.csv"
    stories.head(14).to_csv(src, index=False)
    for run in ("a", "b"):
        assert main(["perturb", "--stories", str(src), "--kinds", "shuffle,truncate",
                     "--seed", "0", "--out", str(tmp_path / run)]) == 0
    for name in ("stories.csv", "manifest.csv"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    out = pd.read_csv(tmp_path / "a" / "stories.csv")
    scores = pd.DataFrame({"story_id": out.story_id, "prompt_id": out.prompt_id,
                           "measure": "chars", "value": out.story.str.len()})
    scores.to_csv(tmp_path / "scores.csv", index=False)
    assert main(["robustness", "--scores", str(tmp_path / "scores.csv"), "--manifest",
                 str(tmp_path / "a" / "manifest.csv"), "--out", str(tmp_path / "r")]) == 0
    tab = pd.read_csv(tmp_path / "r" / "robustness.csv").set_index("kind")
    assert tab.loc["truncate", "discrimination"] == 1.0
    assert tab.loc["shuffle", "unchanged"] < 1.0  # one space joins sentences: length may move
    assert "<table>" in (tmp_path / "r" / "robustness.html").read_text()
