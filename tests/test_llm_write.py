"""storyeval.llm.write.write_stories: one story per prompt through any backend, stored in the
answer cache (a rerun sends nothing), a failed prompt an error naming it, cache-only runs."""

from __future__ import annotations

import pandas as pd
import pytest

from storyeval.exceptions import InputError
from storyeval.llm import Answer, AnswerCache, SamplingParams
from storyeval.llm.backends import Backend
from storyeval.llm.write import WRITING_INSTRUCTION, write_stories


class Echo(Backend):
    """Answers with the prompt's last line reversed; fails on prompts containing 'FAIL'."""

    kind = "echo"

    def __init__(self) -> None:
        super().__init__("echo-model")
        self.sent: list[str] = []

    def run(self, requests, on_answer, on_failure, *, show_progress=None):
        for r in requests:
            text = r.messages[-1]["content"]
            self.sent.append(text)
            if "FAIL" in text:
                on_failure(r, "server error 500")
            else:
                self._deliver(r, Answer(text=f" Once upon {text.splitlines()[2][::-1]} "),
                              on_answer, on_failure)


PROMPTS = pd.DataFrame({"prompt_id": [3, 1], "prompt": ["a dragon", "a ghost"]})


def test_writes_and_caches(tmp_path):
    backend = Echo()
    cache = tmp_path / "a.sqlite"
    out = write_stories(PROMPTS, backend, system="Echo", cache=cache)
    assert out["story_id"].tolist() == ["Echo/3", "Echo/1"]
    assert out["system"].tolist() == ["Echo", "Echo"]
    assert out["story"].tolist() == ["Once upon nogard a :tpmorP", "Once upon tsohg a :tpmorP"]
    assert len(backend.sent) == 2
    assert backend.sent[0] == WRITING_INSTRUCTION.replace("{prompt}", "a dragon")
    again = write_stories(PROMPTS, backend, system="Echo", cache=cache)
    assert len(backend.sent) == 2  # nothing sent the second time
    pd.testing.assert_frame_equal(out, again)
    # the stored rows carry the sampling of the key
    with AnswerCache(cache) as store:
        frame = store.to_frame()
    assert len(frame) == 2 and set(frame["status"]) == {"story"}
    # other sampling: other keys, asked again
    write_stories(PROMPTS, backend, system="Echo", cache=cache,
                  sampling=SamplingParams(temperature=0.0, max_tokens=64, seed=0))
    assert len(backend.sent) == 4


def test_failures_and_cache_only(tmp_path):
    backend = Echo()
    prompts = pd.DataFrame({"prompt_id": [0, 1], "prompt": ["fine", "FAIL here"]})
    with pytest.raises(InputError, match=r"prompt_id 1: no story written \(server error 500\)"):
        write_stories(prompts, backend, system="Echo", cache=tmp_path / "b.sqlite")
    n = len(backend.sent)
    with pytest.raises(InputError, match="prompt_id 1: .*cache_only"):
        write_stories(prompts, backend, system="Echo", cache=tmp_path / "b.sqlite",
                      cache_only=True)
    assert len(backend.sent) == n  # cache-only sends nothing
    # the story that was written is stored
    ok = write_stories(prompts.iloc[:1], backend, system="Echo", cache=tmp_path / "b.sqlite",
                       cache_only=True)
    assert ok["story"].iloc[0].startswith("Once upon")


@pytest.mark.parametrize("prompts, message", [
    (pd.DataFrame({"prompt_id": [0, 0], "prompt": ["a", "b"]}), "repeats 0 \\(row 1\\)"),
    (pd.DataFrame({"prompt_id": [0, 1], "prompt": ["a", " "]}), "empty prompt in row 1"),
    (pd.DataFrame({"id": [0], "prompt": ["a"]}), "missing column 'prompt_id'"),
])
def test_bad_prompts(tmp_path, prompts, message):
    with pytest.raises(InputError, match=message):
        write_stories(prompts, Echo(), system="Echo", cache=tmp_path / "c.sqlite")


def test_bad_options(tmp_path):
    with pytest.raises(InputError, match="must contain"):
        write_stories(PROMPTS, Echo(), system="Echo", cache=tmp_path / "d.sqlite",
                      instruction="Write a story.")
    with pytest.raises(InputError, match="system"):
        write_stories(PROMPTS, Echo(), system=" ", cache=tmp_path / "d.sqlite")
