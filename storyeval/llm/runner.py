"""Plan and run LLM ratings: stories x Eval-Prompts x criteria x tries, through the cache.

`rate` renders every request, looks each one up in the `AnswerCache`, sends only the
missing ones through the backend, persists each answer the moment it arrives, and assembles the
tidy ratings table (one row per story, Eval-Prompt, criterion and try).
"""

from __future__ import annotations

import logging
import math
import os
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from storyeval.exceptions import InputError, StoryevalWarning
from storyeval.llm.backends import (
    Answer,
    Backend,
    OpenAIBackend,
    Request,
    SamplingParams,
    pending_requests,
)
from storyeval.llm.cache import AnswerCache, key_from_prefix, key_prefix, messages_digest
from storyeval.llm.cost import usage_columns
from storyeval.llm.extract import PARSER_VERSION, PARSERS, parse_rating, parser_id
from storyeval.llm.prompts import (
    CriterionSpec,
    Guidelines,
    PromptTemplates,
    load_criteria,
    load_guidelines,
    load_templates,
    render_messages,
)
from storyeval.llm.stories import validate_stories

__all__ = ["RATING_COLUMNS", "RatingPlan", "RatingRun", "parse_range", "plan", "rate"]

#: Columns of the tidy ratings table, in order.
RATING_COLUMNS: tuple[str, ...] = (
    "story_id", "system", "prompt_id", "model", "eval_prompt", "criterion", "code", "try",
    "rating", "status", "explanation", "error", "key", "parser", "prompt_tokens",
    "completion_tokens", "usage_note", "wall_s",
)

logger = logging.getLogger("storyeval.llm")

#: Characters per token of the dry-run estimate (a rule of thumb for English with BPE tokenizers).
CHARS_PER_TOKEN = 4.0


def parse_range(text: str | Iterable[int], *, name: str = "eval_prompts") -> tuple[int, ...]:
    """``"1-4"`` / ``"1,3"`` / ``[1, 3]`` -> ``(1, 3)`` sorted unique integers."""
    if not isinstance(text, str):
        try:
            vals = sorted({int(v) for v in text})
        except (TypeError, ValueError):
            raise InputError(f"{name} must be integers, got {text!r}") from None
        if not vals:
            raise InputError(f"{name} is empty")
        return tuple(vals)
    out: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            if "-" in part:
                a, b = part.split("-", 1)
                lo, hi = int(a), int(b)
                if lo > hi:
                    raise ValueError
                out.update(range(lo, hi + 1))
            else:
                out.add(int(part))
        except ValueError:
            raise InputError(f"{name}: cannot read {part!r} (use e.g. '1-4' or '1,3')") from None
    if not out:
        raise InputError(f"{name} is empty")
    return tuple(sorted(out))


@dataclass
class RatingPlan:
    """What a run will do (``storyeval rate --dry-run``)."""

    n_stories: int
    n_requests: int
    n_cached: int
    n_to_send: int
    est_prompt_tokens: int
    max_completion_tokens: int
    eval_prompts: tuple[int, ...]
    criteria: tuple[str, ...]
    tries: int
    model: str
    backend: str

    def summary(self) -> str:
        """A human-readable paragraph."""
        return (
            f"{self.backend} model {self.model}: {self.n_stories} stories x "
            f"{len(self.eval_prompts)} Eval-Prompt(s) {list(self.eval_prompts)} x "
            f"{len(self.criteria)} criteria x {self.tries} tries = {self.n_requests} requests; "
            f"{self.n_cached} answered in the cache, {self.n_to_send} to send.\n"
            f"Estimated prompt tokens to send: {self.est_prompt_tokens:,} "
            f"(characters / {CHARS_PER_TOKEN:g}); completion tokens at most "
            f"{self.max_completion_tokens:,} (max_tokens x requests)."
        )

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class RatingRun:
    """Result of `rate`: the tidy ratings table and run bookkeeping."""

    ratings: pd.DataFrame
    plan: RatingPlan
    n_sent: int = 0
    n_answered: int = 0
    n_request_failures: int = 0
    settings: dict[str, Any] = field(default_factory=dict)

    def scores(self, *, on_unparsed: str = "nan") -> pd.DataFrame:
        """Shortcut for `storyeval.llm.outputs.to_scores`."""
        from storyeval.llm.outputs import to_scores

        return to_scores(self.ratings, on_unparsed=on_unparsed)

    def failure_rates(self) -> pd.DataFrame:
        """Shortcut for `storyeval.llm.outputs.failure_rates`."""
        from storyeval.llm.outputs import failure_rates

        return failure_rates(self.ratings)


@dataclass
class _Job:
    stories: pd.DataFrame
    items: pd.DataFrame          # one row per (story, eval_prompt, criterion, try)
    messages: list[tuple[dict[str, str], ...]]  # per (story, ep, criterion) cell
    backend: Backend
    model_label: str
    sampling: SamplingParams
    eval_prompts: tuple[int, ...]
    criteria: dict[str, CriterionSpec]
    tries: int
    scale: tuple[int, int]
    #: `messages_digest` of each cell's messages (computed once, for the keys and the cache)
    digests: list[str] = field(default_factory=list)


def _model_label(backend: Backend, model_name: str | None) -> str:
    label = model_name if model_name is not None else backend.model
    if model_name is None and os.sep in label and Path(label).exists():
        label = Path(label.rstrip(os.sep)).name
    label = str(label).strip()
    if not label:
        raise InputError("model_name must not be empty")
    return label


def _build(stories: pd.DataFrame, backend: Backend, *, model_name: str | None,
           eval_prompts, criteria, tries: int, sampling: SamplingParams,
           templates: PromptTemplates | str | Path | None,
           guidelines: Guidelines | str | Path | None,
           criteria_file: str | Path | None) -> _Job:
    if not isinstance(backend, Backend):
        raise InputError(f"backend must be a storyeval.llm Backend, got {type(backend).__name__}")
    if isinstance(tries, bool) or int(tries) != tries or tries < 1:
        raise InputError(f"tries must be a positive integer, got {tries!r}")
    tries = int(tries)
    if not isinstance(sampling, SamplingParams):
        raise InputError("sampling must be a SamplingParams")
    tpl = templates if isinstance(templates, PromptTemplates) else load_templates(templates)
    eps = parse_range(eval_prompts, name="eval_prompts")
    unknown = [e for e in eps if e not in tpl.eval_prompts]
    if unknown:
        raise InputError(f"eval_prompts {unknown} are not defined in the templates "
                         f"({tpl.source}); available: {sorted(tpl.eval_prompts)}")
    all_crit = load_criteria(criteria_file)
    if criteria is None or (isinstance(criteria, str) and criteria.lower() == "all"):
        chosen = list(all_crit)
    else:
        names = criteria.split(",") if isinstance(criteria, str) else list(criteria)
        chosen = []
        for n in names:
            n = str(n).strip()
            match = [c for c, s in all_crit.items() if n.lower() in (c.lower(), s.code.lower())]
            if not match:
                raise InputError(f"criteria: unknown criterion {n!r}; available: "
                                 + ", ".join(f"{c} ({s.code})" for c, s in all_crit.items()))
            if match[0] not in chosen:
                chosen.append(match[0])
    crits = {c: all_crit[c] for c in chosen}
    need_guidelines = any("guidelines" in tpl.fields(e) for e in eps)
    gl = None
    if need_guidelines:
        gl = guidelines if isinstance(guidelines, Guidelines) else load_guidelines(guidelines)
        missing = [c for c in crits if c not in gl.criteria]
        if missing:
            raise InputError(f"guidelines {gl.source} have no descriptors for {missing}")
    need_ref = any("reference" in tpl.fields(e) for e in eps)
    st = validate_stories(stories, need_reference=need_ref)

    label = _model_label(backend, model_name)
    skey = sampling.for_key()
    seeds = [sampling.try_seed(t) for t in range(tries)]
    prefix = key_prefix(backend=backend.kind, model=backend.model, sampling=skey)
    cols: dict[str, list] = {k: [] for k in ("cell", "story_row", "eval_prompt", "criterion",
                                             "try", "seed", "key")}
    messages: list[tuple[dict[str, str], ...]] = []
    digests: list[str] = []
    refs = ([r if isinstance(r, str) else None for r in st["reference"].tolist()]
            if "reference" in st.columns else [None] * len(st))
    uses_ref = {ep: "reference" in tpl.fields(ep) for ep in eps}
    for i, (prompt, story, ref) in enumerate(zip(st["prompt"].tolist(), st["story"].tolist(), refs)):
        for ep in eps:
            for cname, spec in crits.items():
                if uses_ref[ep] and ref is None:
                    for t in range(tries):  # nothing to send: no human story to show
                        cols["cell"].append(-1)
                        cols["story_row"].append(i)
                        cols["eval_prompt"].append(ep)
                        cols["criterion"].append(cname)
                        cols["try"].append(t)
                        cols["seed"].append(seeds[t])
                        cols["key"].append("")
                    continue
                msgs = tuple(render_messages(prompt=prompt, story=story, criterion=spec,
                                             eval_prompt=ep, templates=tpl, guidelines=gl,
                                             reference=ref))
                cell = len(messages)
                messages.append(msgs)
                digest = messages_digest(msgs)
                digests.append(digest)
                for t in range(tries):
                    cols["cell"].append(cell)
                    cols["story_row"].append(i)
                    cols["eval_prompt"].append(ep)
                    cols["criterion"].append(cname)
                    cols["try"].append(t)
                    cols["seed"].append(seeds[t])
                    cols["key"].append(key_from_prefix(prefix, digest, t, seeds[t]))
    items = pd.DataFrame(cols)
    n_noref = int((items["cell"] < 0).sum())
    if n_noref:
        warnings.warn(f"{n_noref // tries} story x criterion cell(s) of Eval-Prompt(s) that show the "
                      "human story have no 'reference' (e.g. the human stories themselves); they get "
                      "status 'no_reference' and are not sent", StoryevalWarning, stacklevel=3)
    return _Job(stories=st, items=items, messages=messages, backend=backend, model_label=label,
                sampling=sampling, eval_prompts=eps, criteria=crits, tries=tries,
                scale=tpl.scale, digests=digests)


def _open_cache(cache) -> tuple[AnswerCache, bool]:
    if isinstance(cache, AnswerCache):
        return cache, False
    return AnswerCache(":memory:" if cache is None else cache), True


def _make_plan(job: _Job, cached: set[str]) -> RatingPlan:
    real = job.items["cell"].to_numpy() >= 0
    keys = job.items["key"].to_numpy()
    # a request is sent once even if two items render to identical messages
    to_send = (np.array([k not in cached for k in keys], dtype=bool)
               & ~job.items["key"].duplicated().to_numpy() & real)
    chars = np.array([sum(len(m["content"]) for m in msgs) for msgs in job.messages], dtype=float)
    est = math.ceil(chars[job.items["cell"].to_numpy()[to_send]].sum() / CHARS_PER_TOKEN)
    n_cached = int(np.fromiter((k in cached for k in keys), dtype=bool, count=len(keys)).sum())
    return RatingPlan(n_stories=len(job.stories), n_requests=int(real.sum()),
                      n_cached=n_cached, n_to_send=int(to_send.sum()),
                      est_prompt_tokens=est,
                      max_completion_tokens=int(to_send.sum()) * job.sampling.max_tokens,
                      eval_prompts=job.eval_prompts, criteria=tuple(job.criteria),
                      tries=job.tries, model=job.model_label, backend=job.backend.kind)


_BUILD_DOC_PARAMS = """
    stories : DataFrame
        Columns ``story_id``, ``system``, ``prompt_id``, ``prompt``, ``story`` (+ ``reference``
        for Eval-Prompt 4); see :func:`storyeval.llm.stories.load_stories`.
    backend : Backend
        :class:`~storyeval.llm.backends.OpenAIBackend`, ``HFBackend`` or ``VLLMBackend``.
    model_name : str, optional
        Label used in the ratings table and measure names (default: the backend's model, or the
        folder name of a local model path).
    eval_prompts : str or sequence of int, default (1, 2, 3, 4)
    criteria : str or sequence of str, optional
        Names or codes (``"RE,CH"``); default all criteria.
    tries : int, default 3
    sampling : SamplingParams, optional
    templates, guidelines, criteria_file : path or object, optional
        Custom Eval-Prompt templates, guidelines and criteria (default: the packaged HANNA ones).
    cache : str, Path or AnswerCache, optional
        The answer cache (SQLite file); default an in-memory cache (nothing persists)."""


def _shared_params(func):
    """Insert the parameters shared by `plan` and `rate` into the docstring (a
    docstring cannot be an expression, so the text is filled in after definition)."""
    if func.__doc__:  # None under python -OO
        func.__doc__ = func.__doc__.replace("\n    __BUILD_PARAMS__", _BUILD_DOC_PARAMS)
    return func


@_shared_params
def plan(stories: pd.DataFrame, backend: Backend, *, model_name: str | None = None,
         eval_prompts="1-4", criteria=None, tries: int = 3,
         sampling: SamplingParams | None = None, templates=None, guidelines=None,
         criteria_file=None, cache=None) -> RatingPlan:
    """Count the requests a `rate` call would send, without sending any.

    Parameters
    ----------
    __BUILD_PARAMS__

    Returns
    -------
    RatingPlan
    """
    job = _build(stories, backend, model_name=model_name, eval_prompts=eval_prompts,
                 criteria=criteria, tries=tries, sampling=sampling or SamplingParams(),
                 templates=templates, guidelines=guidelines, criteria_file=criteria_file)
    if cache is not None and not isinstance(cache, AnswerCache) and not Path(cache).exists():
        return _make_plan(job, set())  # a dry run creates no cache file
    store, owned = _open_cache(cache)
    try:
        cached = set(_stored_answers(store, job.items["key"].tolist()))
    finally:
        if owned:
            store.close()
    return _make_plan(job, cached)


@_shared_params
def rate(stories: pd.DataFrame, backend: Backend, *, model_name: str | None = None,
         eval_prompts="1-4", criteria=None, tries: int = 3,
         sampling: SamplingParams | None = None, templates=None, guidelines=None,
         criteria_file=None, cache=None, cache_only: bool = False, parser: str = "strict",
         show_progress: bool | None = None) -> RatingRun:
    """Rate stories with an LLM: every (story, Eval-Prompt, criterion) asked ``tries`` times.

    Parameters
    ----------
    __BUILD_PARAMS__
    cache_only : bool, default False
        Send nothing; requests without a stored answer get status ``"missing"``.
    parser : {"strict", "first_number"}, default "strict"
        The rating extraction method of `storyeval.llm.extract.parse_rating`.
        ``"first_number"`` with ``on_unparsed="midpoint"`` in
        `to_scores` is the paper's rule (the first number; none or
        off the scale: 3). Recorded in the ``parser`` column and ``settings``.
    show_progress : bool, optional
        Progress bar (default: only on a terminal).

    Returns
    -------
    RatingRun
        ``.ratings``: the tidy ratings table (:data:`RATING_COLUMNS`): one row per story,
        Eval-Prompt, criterion and try, with ``rating`` NaN unless ``status == "ok"``.
        Statuses are the parser's (``ok``, ``no_number``, ``out_of_range``, ``ambiguous``) plus
        ``error`` (the request failed after its retries, or its answer was empty; message in
        ``error``; not cached, so a later run asks again), ``missing``
        (``cache_only`` and not stored) and ``no_reference`` (an Eval-Prompt showing the human
        story, for a story without one, e.g. HANNA's human stories; not sent, with a
        :class:`~storyeval.exceptions.StoryevalWarning`). Nothing is imputed. The ``parser``
        column holds the tag of the parser that read the answer (:func:`parser_id`, e.g.
        ``"strict-3"``), empty for answers that were not parsed. ``prompt_tokens``,
        ``completion_tokens``, ``usage_note`` and ``wall_s``: what the row's request cost
        (`storyeval.llm.cost.usage_columns`: the server's usage field, NaN with the reason in
        ``usage_note`` where unknown; the request's wall seconds, NaN for batch results); rows
        sharing a request share its values (`storyeval.llm.cost.cost_table` counts each
        request once).

    Notes
    -----
    Each answer is committed to the cache as soon as it arrives, with its raw text and the tag
    of the parser that read it (method and version, :func:`parser_id`); answers stored under
    another tag (an older version, or the other method) are re-parsed from the raw text
    without any request, and the cache keeps the latest parse. Try ``t`` uses seed
    ``sampling.seed + t``. While it sends requests a run holds the cache's writer lock
    (:meth:`AnswerCache.writer_lock`): a concurrent run on the same cache waits, then sends only
    what is still missing, so no answer is paid twice and the ratings equal what the cache
    holds (an answer stored by someone else first wins).

    Validated against a local OpenAI-compatible test server with scripted answers, rate limits,
    server errors and malformed answers, runs killed with SIGKILL and resumed, and two identical
    concurrent runs (``tests/test_llm_openai.py``, ``tests/test_llm_reliability.py``).

    Examples
    --------
    >>> from storyeval.llm import OpenAIBackend, rate, load_stories  # doctest: +SKIP
    >>> run = rate(load_stories("hanna"), OpenAIBackend("my-model"), cache="answers.sqlite")  # doctest: +SKIP
    >>> scores = run.scores()  # doctest: +SKIP
    """
    if parser not in PARSERS:
        raise InputError(f"parser must be one of {', '.join(map(repr, PARSERS))}, got {parser!r}")
    sampling = sampling or SamplingParams()
    job = _build(stories, backend, model_name=model_name, eval_prompts=eval_prompts,
                 criteria=criteria, tries=tries, sampling=sampling, templates=templates,
                 guidelines=guidelines, criteria_file=criteria_file)
    store, owned = _open_cache(cache)
    try:
        return _execute(job, store, cache_only=cache_only, parser=parser,
                        show_progress=show_progress)
    finally:
        if owned:
            store.close()


def _stored_answers(store: AnswerCache, keys: list[str]) -> dict[str, dict[str, Any]]:
    """Stored rows for ``keys``, without empty answers (older versions stored those; they are
    asked again and replaced)."""
    rows = store.get_many([k for k in keys if k])
    return {k: r for k, r in rows.items() if isinstance(r.get("raw"), str) and r["raw"].strip()}


def _execute(job: _Job, store: AnswerCache, *, cache_only: bool, parser: str,
             show_progress: bool | None) -> RatingRun:
    tag = parser_id(parser)
    items = job.items
    keys = items["key"].tolist()
    stored = _stored_answers(store, keys)
    the_plan = _make_plan(job, set(stored))
    failures: dict[str, str] = {}
    fresh: dict[str, dict[str, Any]] = {}
    skey = job.sampling.for_key()
    n_sent = 0
    if not cache_only and the_plan.n_to_send:
        with store.writer_lock(on_wait=lambda msg: logger.warning("%s", msg)):
            # another run may have stored answers while this one waited for the lock
            stored = _stored_answers(store, keys)
            the_plan = _make_plan(job, set(stored))
            firsts = items[items["cell"] >= 0].drop_duplicates("key")
            todo = pending_requests(firsts, job.messages, job.sampling, stored)
            n_sent = len(todo)
            backend = job.backend

            # the digests of _build, by the identity of the cells' message tuples (alive in
            # job.messages for the whole run, so no other object can take their ids)
            sha_of = {id(m): d for m, d in zip(job.messages, job.digests)}

            def on_answer(req: Request, ans: Answer) -> None:
                if broken:  # the cache cannot be written: stop, counting what is lost
                    broken.append(req.key)
                    raise broken[0]
                p = parse_rating(ans.text, scale=job.scale, method=parser)
                rating = None if math.isnan(p.rating) else p.rating
                try:
                    inserted = _put(req, ans, rating, p)
                except InputError as exc:
                    broken.extend([exc, req.key])
                    raise
                failures.pop(req.key, None)  # a retracted answer asked again
                if inserted:
                    fresh[req.key] = {"raw": ans.text, "parser_version": tag, "rating": rating,
                                      "status": p.status, "explanation": p.explanation}
                else:  # stored by someone else first: the stored answer wins
                    fresh[req.key] = store.get_many([req.key])[req.key]

            def _put(req: Request, ans: Answer, rating, p) -> bool:
                sha = sha_of.get(id(req.messages)) or messages_digest(req.messages)
                return store.put(
                    key=req.key, backend=backend.kind, model=backend.model,
                    messages_sha=sha, sampling=skey,
                    try_index=req.try_index, seed=req.seed, raw=ans.text,
                    finish_reason=ans.finish_reason, prompt_tokens=ans.prompt_tokens,
                    completion_tokens=ans.completion_tokens, latency_s=ans.latency_s,
                    attempts=ans.attempts, parser_version=tag, rating=rating, status=p.status,
                    explanation=p.explanation)

            def on_failure(req: Request, message: str) -> None:
                failures[req.key] = message

            def on_retract(req: Request, message: str) -> None:
                """An answer stored by this run turned out to be another request's: removed
                from the cache at once; the backend asks again."""
                if fresh.pop(req.key, None) is not None:
                    store.discard(req.key)
                failures[req.key] = message

            broken: list[Any] = []
            if todo:
                try:
                    if isinstance(backend, OpenAIBackend):
                        backend.run(todo, on_answer, on_failure, show_progress=show_progress,
                                    on_retract=on_retract)
                    else:
                        backend.run(todo, on_answer, on_failure, show_progress=show_progress)
                except Exception:
                    if not broken:
                        raise
                if broken:
                    lost = len(broken) - 1
                    raise InputError(
                        f"{broken[0]}; the run stopped: {lost} answer(s) received (paid) but "
                        f"not stored, {len(fresh)} stored by this run are kept; a rerun sends "
                        "only what is missing") from None
    stored.update(fresh)

    # Re-parse answers stored under another parser tag (method or version; no request needed).
    reparsed = []
    for k, row in stored.items():
        if row.get("parser_version") != tag or row.get("status") is None:
            p = parse_rating(row["raw"], scale=job.scale, method=parser)
            row.update(rating=None if math.isnan(p.rating) else p.rating, status=p.status,
                       explanation=p.explanation, parser_version=tag)
            reparsed.append((k, row["rating"], p.status, p.explanation))
    if reparsed:
        store.update_parsed(reparsed, tag)

    n = len(keys)
    rating = np.full(n, np.nan)
    status = np.empty(n, dtype=object)
    explanation = np.empty(n, dtype=object)
    error = np.empty(n, dtype=object)
    parsed_by = np.full(n, "", dtype=object)
    for i, k in enumerate(keys):
        row = stored.get(k)
        if row is not None:
            r = row["rating"]
            rating[i] = np.nan if r is None else r
            status[i] = row["status"]
            explanation[i] = row["explanation"] or ""
            error[i] = ""
            parsed_by[i] = tag
        elif not k:
            status[i], explanation[i], error[i] = "no_reference", "", ""
        elif k in failures:
            status[i], explanation[i], error[i] = "error", "", failures[k]
        else:
            status[i], explanation[i], error[i] = "missing", "", ""
    st = job.stories
    srow = items["story_row"].to_numpy()
    ratings = pd.DataFrame({
        "story_id": st["story_id"].to_numpy()[srow],
        "system": st["system"].to_numpy()[srow],
        "prompt_id": st["prompt_id"].to_numpy()[srow],
        "model": job.model_label,
        "eval_prompt": items["eval_prompt"].to_numpy(),
        "criterion": items["criterion"].to_numpy(),
        "code": items["criterion"].map({c: s.code for c, s in job.criteria.items()}).to_numpy(),
        "try": items["try"].to_numpy(),
        "rating": rating,
        "status": status,
        "explanation": explanation,
        "error": error,
        "key": [k or None for k in keys],
        "parser": parsed_by,
    })
    # what each answer cost: the cache's token counts and wall time (NaN with the reason)
    ratings = pd.concat([ratings, usage_columns(store, keys)], axis=1)
    settings = {**job.backend.describe(), "model_name": job.model_label,
                **{f"sampling_{k}": v for k, v in job.sampling.__dict__.items()},
                "tries": job.tries, "parser": parser, "parser_version": PARSER_VERSION,
                "parser_id": tag}
    return RatingRun(ratings=ratings, plan=the_plan, n_sent=n_sent, n_answered=len(fresh),
                     n_request_failures=len(failures), settings=settings)


