"""Eval-Prompt templates, guidelines and rendering (storyeval.llm.prompts)."""

from __future__ import annotations

import json

import pytest

from storyeval.data.criteria import CRITERIA, CRITERION_CODES, CRITERION_DEFINITIONS
from storyeval.exceptions import InputError
from storyeval.llm.prompts import (
    format_guidelines,
    load_criteria,
    load_guidelines,
    load_templates,
    render_messages,
)

SURPRISE = "Rate the story on a scale from 1 to 5 on Surprise (how surprising the end of the story was)"


@pytest.fixture(scope="module")
def tpl():
    return load_templates()


@pytest.fixture(scope="module")
def gl():
    return load_guidelines()


def _user(ep, tpl, gl, **kw):
    crit = load_criteria()["Surprise"]
    msgs = render_messages(prompt="PROMPT", story="STORY", criterion=crit, eval_prompt=ep,
                           templates=tpl, guidelines=gl, **kw)
    assert [m["role"] for m in msgs] == ["user"]
    return msgs[0]["content"]


def test_eval_prompts_match_the_paper_figure(tpl, gl):
    # Wording of the paper's figure "Example Eval-Prompts for the Surprise criterion"
    # (papers/004, "Eval-Prompt 1Prompt" ...) and METHODS.md "LLM raters".
    assert _user(1, tpl, gl) == f"Prompt: PROMPT\n\nStory: STORY\n\n{SURPRISE}. Rating:"
    assert _user(2, tpl, gl) == (f"Prompt: PROMPT\n\nStory: STORY\n\n{SURPRISE} and explain your "
                                 "answer. Rating:")
    ep3 = _user(3, tpl, gl)
    assert ep3.endswith(f"{SURPRISE} and explain your answer. Use the provided guidelines. Rating:")
    assert "Guidelines:\n1 \u2014 The ending seemed completely obvious from the start, or doesn't " \
           "make any sense at all.\n2 \u2014 The ending was easily predictable after a few " \
           "sentences.\n3 \u2014 The ending was predictable after half of the story.\n" in ep3
    ep4 = _user(4, tpl, gl, reference="HUMAN")
    assert ep4 == ("Prompt: PROMPT\n\nTarget Story: STORY\n\nHuman Story: HUMAN\n\nRate the target "
                   "story on a scale from 1 to 5 on Surprise (how surprising the end of the story "
                   "was) and explain your answer. Do not rate the human story; it is here only "
                   "for reference. Rating:")


def test_criteria_come_from_storyeval_data():
    crits = load_criteria()
    assert tuple(crits) == CRITERIA
    for name, spec in crits.items():
        assert spec.code == CRITERION_CODES[name]
        assert spec.definition == CRITERION_DEFINITIONS[name]


def test_guidelines_cover_every_criterion_and_mark_their_source(gl):
    assert set(gl.criteria) == set(CRITERIA)
    for crit in CRITERIA:
        assert sorted(gl.criteria[crit]) == [1, 2, 3, 4, 5]
        assert set(gl.sources[crit].values()) <= {"paper", "user_study", "storyeval"}
    assert set(gl.sources["Surprise"].values()) == {"paper"}
    # descriptors quoted by the user study's answers, verbatim
    assert gl.criteria["Relevance"][2] == "The story only has a weak relationship with the prompt."
    assert gl.criteria["Coherence"][4] == ("The story almost makes sense overall, except for one or "
                                           "two small incoherences.")
    assert gl.criteria["Engagement"][3] == "The story was mildly interesting."
    assert gl.sources["Coherence"][5] == "storyeval"
    assert format_guidelines(gl, "Relevance").splitlines()[0] == (
        "1 \u2014 The story has no relationship with the prompt at all.")


def test_user_files(tmp_path, tpl):
    t = {"name": "mine", "version": "7", "scale": [0, 10],
         "eval_prompts": {"1": {"system": "You judge {criterion} ({code}).",
                                "user": "{story}\nScore {scale_min}-{scale_max}, {{json}}:"}}}
    p = tmp_path / "t.json"
    p.write_text(json.dumps(t))
    mine = load_templates(p)
    assert mine.scale == (0, 10) and mine.version == "7"
    crit = load_criteria()["Empathy"]
    msgs = render_messages(prompt="P", story="S {x}", criterion=crit, eval_prompt=1,
                           templates=mine)
    assert msgs == [{"role": "system", "content": "You judge Empathy (EM)."},
                    {"role": "user", "content": "S {x}\nScore 0-10, {json}:"}]
    c = tmp_path / "c.json"
    c.write_text(json.dumps({"Humour": {"code": "HU", "definition": "how funny the story is"}}))
    assert load_criteria(c)["Humour"].code == "HU"
    g = tmp_path / "g.json"
    g.write_text(json.dumps({"criteria": {"Humour": {"1": "Not funny.", "2": {"text": "Funny."}}}}))
    assert format_guidelines(load_guidelines(g), "Humour") == "1 \u2014 Not funny.\n2 \u2014 Funny."


@pytest.mark.parametrize("content, match", [
    ({"name": "x", "version": "1", "eval_prompts": {"1": {"user": "{storyy}"}}}, "storyy"),
    ({"name": "x", "version": "1", "eval_prompts": {"1": {"user": "{}"}}}, "placeholder"),
    ({"name": "x", "version": "1", "eval_prompts": {"one": {"user": "x"}}}, "not an integer"),
    ({"name": "x", "eval_prompts": {"1": {"user": "x"}}}, "version"),
    ({"name": "x", "version": "1", "scale": [5, 1], "eval_prompts": {"1": {"user": "x"}}}, "scale"),
    ({"name": "x", "version": "1", "eval_prompts": {"1": {"user": "{story"}}}, "eval_prompts"),
])
def test_bad_templates(tmp_path, content, match):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(content))
    with pytest.raises(InputError, match=match):
        load_templates(p)


def test_bad_inputs(tmp_path, tpl, gl):
    with pytest.raises(InputError, match="does not exist"):
        load_templates(tmp_path / "missing.json")
    (tmp_path / "x.json").write_text("{not json")
    with pytest.raises(InputError, match="not valid JSON"):
        load_guidelines(tmp_path / "x.json")
    with pytest.raises(InputError, match="reference"):
        _user(4, tpl, gl)
    with pytest.raises(InputError, match="eval_prompt 9"):
        _user(9, tpl, gl)
    with pytest.raises(InputError, match="guidelines"):
        render_messages(prompt="P", story="S", criterion=load_criteria()["Surprise"],
                        eval_prompt=3, templates=tpl)
    (tmp_path / "c.json").write_text(json.dumps({"A": {"code": "X", "definition": "a"},
                                                 "B": {"code": "X", "definition": "b"}}))
    with pytest.raises(InputError, match="repeated"):
        load_criteria(tmp_path / "c.json")
