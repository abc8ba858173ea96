"""Stories written by a model: one story per prompt, through any backend, cached like ratings.

The self-preference question ("does a model rate its own stories higher?") needs stories that
the rater wrote itself. `write_stories` asks a backend for one story per story-prompt and
returns a stories table (`storyeval.llm.stories.STORY_COLUMNS`) that `storyeval.llm.rate`
rates beside other systems' stories. Each answer is stored in an `AnswerCache` under the same
kind of key as a rating (backend kind, model, messages, sampling, seed), so a rerun sends
nothing.
"""

from __future__ import annotations

import pandas as pd

from storyeval.exceptions import InputError
from storyeval.llm.backends import Answer, Backend, Request, SamplingParams
from storyeval.llm.cache import AnswerCache, key_from_prefix, key_prefix, messages_digest

__all__ = ["WRITING_INSTRUCTION", "write_stories"]

#: The default instruction; ``{prompt}`` is replaced by the story-prompt.
WRITING_INSTRUCTION = ("Write a short story (about 300 words) for the following writing "
                       "prompt.\n\nPrompt: {prompt}\n\nStory:")


def _prompts(prompts: pd.DataFrame) -> pd.DataFrame:
    if not isinstance(prompts, pd.DataFrame):
        raise InputError(f"prompts: expected a DataFrame, got {type(prompts).__name__}")
    for col in ("prompt_id", "prompt"):
        if col not in prompts.columns:
            raise InputError(f"prompts: missing column {col!r} (need prompt_id, prompt)")
    df = prompts[["prompt_id", "prompt"]].reset_index(drop=True)
    dup = df["prompt_id"].duplicated()
    if dup.any():
        i = int(dup.to_numpy().nonzero()[0][0])
        value = df["prompt_id"].tolist()[i]
        raise InputError(f"prompts: column 'prompt_id' repeats {value!r} (row {i})")
    bad = ~df["prompt"].map(lambda t: isinstance(t, str) and bool(t.strip()))
    if bad.any():
        raise InputError(f"prompts: empty prompt in row {int(bad.to_numpy().nonzero()[0][0])}")
    return df


def write_stories(prompts: pd.DataFrame, backend: Backend, *, system: str,
                  cache: AnswerCache | str, sampling: SamplingParams | None = None,
                  instruction: str = WRITING_INSTRUCTION, cache_only: bool = False,
                  show_progress: bool | None = None) -> pd.DataFrame:
    """One story per prompt written by ``backend``'s model, cached.

    Parameters
    ----------
    prompts : DataFrame
        Columns ``prompt_id`` (unique) and ``prompt``.
    backend : Backend
        Any storyeval backend (transformers, a ``.gguf`` file, an OpenAI-compatible server).
    system : str
        The system name of the written stories (``story_id`` is ``"{system}/{prompt_id}"``).
    cache : AnswerCache or path
        Where answers are stored; a story already stored is not asked again.
    sampling : SamplingParams, optional
        Default ``SamplingParams(temperature=0.7, max_tokens=512, seed=0)``; the seed is the
        seed of every prompt's request (one try per prompt).
    instruction : str
        The user message; ``{prompt}`` is replaced by the story-prompt.
    cache_only : bool, default False
        Send nothing: a story not in the cache is an error naming its prompt.

    Returns
    -------
    DataFrame
        ``story_id, system, prompt_id, prompt, story, finish_reason``; a prompt whose request
        failed or came back empty raises (nothing is silently dropped).

    Examples
    --------
    >>> from storyeval.llm.gguf import GGUFBackend, gguf_in_package  # doctest: +SKIP
    >>> stories = write_stories(prompts, GGUFBackend(gguf_in_package()), system="SmolLM2",
    ...                         cache="answers.sqlite")  # doctest: +SKIP
    """
    if "{prompt}" not in instruction:
        raise InputError("instruction must contain '{prompt}'")
    if not str(system).strip():
        raise InputError("system must be a non-empty name")
    sampling = sampling or SamplingParams(temperature=0.7, max_tokens=512, seed=0)
    df = _prompts(prompts)
    store = cache if isinstance(cache, AnswerCache) else AnswerCache(cache)
    try:
        return _write(df, backend, system=str(system), store=store, sampling=sampling,
                      instruction=instruction, cache_only=cache_only,
                      show_progress=show_progress)
    finally:
        if store is not cache:
            store.close()


def _write(df: pd.DataFrame, backend: Backend, *, system: str, store: AnswerCache,
           sampling: SamplingParams, instruction: str, cache_only: bool,
           show_progress: bool | None) -> pd.DataFrame:
    skey = sampling.for_key()
    prefix = key_prefix(backend=backend.kind, model=backend.model, sampling=skey)
    seed = sampling.try_seed(0)
    messages = [({"role": "user", "content": instruction.replace("{prompt}", p)},)
                for p in df["prompt"].tolist()]
    keys = [key_from_prefix(prefix, messages_digest(m), 0, seed) for m in messages]
    stored = {k: r for k, r in store.get_many(keys).items()
              if isinstance(r.get("raw"), str) and r["raw"].strip()}
    todo = [Request(key=k, messages=m, sampling=sampling, seed=seed, try_index=0)
            for k, m in zip(keys, messages) if k not in stored]
    failures: dict[str, str] = {k: "not in the cache (cache_only)" for k in
                                ([r.key for r in todo] if cache_only else [])}

    def on_answer(req: Request, ans: Answer) -> None:
        store.put(key=req.key, backend=backend.kind, model=backend.model,
                  messages_sha=messages_digest(req.messages), sampling=skey, try_index=0,
                  seed=seed, raw=ans.text, finish_reason=ans.finish_reason,
                  prompt_tokens=ans.prompt_tokens, completion_tokens=ans.completion_tokens,
                  latency_s=ans.latency_s, attempts=ans.attempts, status="story")

    def on_failure(req: Request, message: str) -> None:
        failures[req.key] = message

    if todo and not cache_only:
        with store.writer_lock():
            backend.run(todo, on_answer, on_failure, show_progress=show_progress)
    rows = store.get_many(keys)
    texts, finish = [], []
    for i, k in enumerate(keys):
        raw = rows.get(k, {}).get("raw")
        if not (isinstance(raw, str) and raw.strip()):
            why = failures.get(k, "empty answer")
            value = df["prompt_id"].tolist()[i]
            raise InputError(f"prompt_id {value!r}: no story written ({why})")
        texts.append(raw.strip())
        finish.append(rows[k].get("finish_reason"))
    out = pd.DataFrame({"story_id": [f"{system}/{p}" for p in df["prompt_id"].tolist()],
                        "system": system, "prompt_id": df["prompt_id"].to_numpy(),
                        "prompt": df["prompt"].to_numpy(), "story": texts,
                        "finish_reason": finish})
    return out
