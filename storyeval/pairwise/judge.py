"""Side-by-side pairwise judging through the LLM raters' backends, cached and resumable.

[`make_pairs`][] builds every pair of systems within each prompt from a stories table;
[`judge_pairs`][] renders the side-by-side prompt (`storyeval.pairwise.template`) for each
pair in both presentation orders, looks every request up in the LLM raters' answer cache
(`storyeval.llm.cache.AnswerCache`, same key recipe, one commit per answer), sends only
the missing ones through an `storyeval.llm.backends` backend, and parses the answers with
[`parse_side_by_side`][]. An unreadable verdict is a recorded
failure with its raw answer, never a guess.

The result's [`JudgeRun.verdicts`][] is a canonical verdict table
([`validate_verdicts`][]), so win matrices, Bradley-Terry strengths,
position consistency and judge accuracy run on it directly.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from storyeval.exceptions import InputError
from storyeval.pairwise.template import load_dimensions, parse_side_by_side, side_by_side_messages
from storyeval.pairwise.verdicts import validate_verdicts

if TYPE_CHECKING:  # the LLM stack is imported only when judging runs
    from storyeval.llm.backends import Backend, SamplingParams
    from storyeval.llm.cache import AnswerCache

__all__ = [
    "JUDGMENT_COLUMNS",
    "PAIR_COLUMNS",
    "PARSER_VERSION",
    "JudgePlan",
    "JudgeRun",
    "judge_pairs",
    "make_pairs",
    "plan_judging",
]

#: Required columns of a pairs table (``system_a``, ``system_b`` are optional).
PAIR_COLUMNS: tuple[str, ...] = ("prompt_id", "prompt", "story_a", "text_a", "story_b", "text_b")
#: Columns of :attr:`JudgeRun.judgments`, in order (``system_a``/``system_b`` only when the
#: pairs table has them).
JUDGMENT_COLUMNS: tuple[str, ...] = (
    "prompt_id", "story_a", "story_b", "system_a", "system_b", "dimension", "verdict", "order",
    "judge", "try", "status", "raw", "error", "key", "prompt_tokens", "completion_tokens",
    "usage_note", "wall_s",
)
#: Recorded with every answer stored by :func:`judge_pairs` (the raw text is always re-parsed).
PARSER_VERSION = "side_by_side-1"
#: Default sampling: the assessment precedes the verdict block, so allow ~1,000 tokens.
DEFAULT_MAX_TOKENS = 1024
_CHARS_PER_TOKEN = 4.0  # the dry-run rule of thumb of `storyeval rate`


# ---------------------------------------------------------------------------------------------
# pairs
# ---------------------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value (``7``, not ``np.int64(7)``, in messages)."""
    return value.item() if isinstance(value, np.generic) else value


def make_pairs(
    stories: pd.DataFrame,
    *,
    systems: Sequence[str] | None = None,
    limit: int | None = None,
) -> pd.DataFrame:
    """Every pair of systems within each prompt of a stories table.

    Parameters
    ----------
    stories : DataFrame
        Columns ``story_id, system, prompt_id, prompt, story`` (e.g.
        [`storyeval.data.load_hanna_stories`][]); one story per (system, prompt).
    systems : sequence of str, optional
        Keep only these systems (default: all).
    limit : int, optional
        Keep only the first ``limit`` prompts (in order of first appearance) with all their
        pairs: whole prompts keep each prompt a complete round robin, which the prompt bootstrap
        of [`bradley_terry`][storyeval.pairwise.bradley_terry.bradley_terry] resamples.

    Returns
    -------
    DataFrame
        One row per unordered pair: ``prompt_id, prompt, story_a, system_a, text_a, story_b,
        system_b, text_b``; ``system_a`` is the system listed first in ``stories``. ``k``
        systems give ``k (k - 1) / 2`` pairs per prompt (HANNA's 7 systems with texts: 21).

    Raises
    ------
    InputError
        Missing columns, an unknown system, a system with two stories for one prompt, or no
        prompt with two stories.

    Examples
    --------
    >>> import pandas as pd
    >>> st = pd.DataFrame({"story_id": ["X/0", "Y/0", "Z/0"], "system": ["X", "Y", "Z"],
    ...                    "prompt_id": 0, "prompt": "p", "story": ["a", "b", "c"]})
    >>> make_pairs(st)[["story_a", "story_b"]].values.tolist()
    [['X/0', 'Y/0'], ['X/0', 'Z/0'], ['Y/0', 'Z/0']]
    """
    from storyeval.llm.stories import validate_stories

    st = validate_stories(stories)
    if systems is not None:
        systems = [str(s) for s in systems]
        if not systems:
            raise InputError("systems is empty")
        unknown = sorted(set(systems) - set(st["system"]))
        if unknown:
            raise InputError(f"systems: unknown system(s) {unknown}; available: "
                             f"{sorted(st['system'].unique())}")
        st = st[st["system"].isin(systems)]
    dup = st.duplicated(["system", "prompt_id"]).to_numpy()
    if dup.any():
        i = int(np.argmax(dup))
        raise InputError(f"stories: system {st['system'].iloc[i]!r} has several stories for "
                         f"prompt {_plain(st['prompt_id'].iloc[i])!r}")
    if limit is not None:
        if isinstance(limit, bool) or int(limit) != limit or limit < 1:
            raise InputError(f"limit must be a positive integer, got {limit!r}")
        keep = pd.unique(st["prompt_id"])[: int(limit)]
        st = st[st["prompt_id"].isin(keep)]
    sys_rank = {s: r for r, s in enumerate(pd.unique(st["system"]))}
    prompt_rank = {p: r for r, p in enumerate(pd.unique(st["prompt_id"]))}
    base = pd.DataFrame({"prompt_id": st["prompt_id"].to_numpy(),
                         "prompt": st["prompt"].to_numpy(),
                         "story": st["story_id"].to_numpy(), "system": st["system"].to_numpy(),
                         "text": st["story"].to_numpy(),
                         "r": st["system"].map(sys_rank).to_numpy()})
    both = base.merge(base.drop(columns="prompt"), on="prompt_id", suffixes=("_a", "_b"))
    both = both[both["r_a"] < both["r_b"]]
    if both.empty:
        raise InputError("stories: no prompt has stories of two systems, so there is no pair")
    both = both.assign(_p=both["prompt_id"].map(prompt_rank)).sort_values(
        ["_p", "r_a", "r_b"], kind="stable")
    return both[["prompt_id", "prompt", "story_a", "system_a", "text_a", "story_b", "system_b",
                 "text_b"]].reset_index(drop=True)


def _validate_pairs(pairs: pd.DataFrame) -> pd.DataFrame:
    if not isinstance(pairs, pd.DataFrame):
        raise InputError(f"pairs: expected a pandas DataFrame, got {type(pairs).__name__}")
    missing = [c for c in PAIR_COLUMNS if c not in pairs.columns]
    if missing:
        raise InputError(f"pairs: missing column(s) {missing}; required: {list(PAIR_COLUMNS)} "
                         "(optional: system_a, system_b); see make_pairs")
    if len(pairs) == 0:
        raise InputError("pairs: no pair")
    cols = [*PAIR_COLUMNS, *[c for c in ("system_a", "system_b") if c in pairs.columns]]
    p = pairs[cols].reset_index(drop=True).copy()
    for col in cols:
        na = p[col].isna().to_numpy()
        if na.any():
            raise InputError(f"pairs: missing value in column {col!r} at row {int(np.argmax(na))}")
    for col in ("prompt", "text_a", "text_b"):
        bad = ~p[col].map(lambda x: isinstance(x, str) and bool(x.strip())).to_numpy()
        if bad.any():
            raise InputError(f"pairs: column {col!r} must hold non-empty text; row "
                             f"{int(np.argmax(bad))} does not")
    for col in ("story_a", "story_b", *[c for c in ("system_a", "system_b") if c in p.columns]):
        p[col] = p[col].astype(str)
    same = (p["story_a"] == p["story_b"]).to_numpy()
    if same.any():
        i = int(np.argmax(same))
        raise InputError(f"pairs: row {i} compares story {p['story_a'].iloc[i]!r} with itself")
    a_first = (p["story_a"] <= p["story_b"]).to_numpy()
    lo = np.where(a_first, p["story_a"], p["story_b"])
    hi = np.where(a_first, p["story_b"], p["story_a"])
    dup = pd.DataFrame({"p": p["prompt_id"], "lo": lo, "hi": hi}).duplicated().to_numpy()
    if dup.any():
        i = int(np.argmax(dup))
        raise InputError(f"pairs: row {i} repeats the pair {lo[i]!r} / {hi[i]!r} of prompt "
                         f"{_plain(p['prompt_id'].iloc[i])!r} (each pair is judged in both orders "
                         "already)")
    return p


# ---------------------------------------------------------------------------------------------
# plan and run
# ---------------------------------------------------------------------------------------------

@dataclass
class JudgePlan:
    """What a [`judge_pairs`][] call will send (``storyeval pairwise judge --dry-run``)."""

    n_pairs: int
    n_orders: int
    tries: int
    n_requests: int
    n_cached: int
    n_to_send: int
    est_prompt_tokens: int
    max_completion_tokens: int
    dimensions: tuple[str, ...]
    model: str
    backend: str

    def summary(self) -> str:
        """A human-readable paragraph."""
        return (
            f"{self.backend} model {self.model}: {self.n_pairs} pairs x {self.n_orders} "
            f"order(s) x {self.tries} tries = {self.n_requests} requests on "
            f"{len(self.dimensions)} dimension(s) {list(self.dimensions)}; {self.n_cached} "
            f"answered in the cache, {self.n_to_send} to send.\n"
            f"Estimated prompt tokens to send: {self.est_prompt_tokens:,} "
            f"(characters / {_CHARS_PER_TOKEN:g}); completion tokens at most "
            f"{self.max_completion_tokens:,} (max_tokens x requests)."
        )

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class JudgeRun:
    """Result of [`judge_pairs`][].

    Attributes
    ----------
    judgments : DataFrame
        Every (pair, order, try, dimension) asked (`JUDGMENT_COLUMNS`), failures included:
        ``status`` is ``"ok"`` (a verdict), ``"unparsed"`` (an answer arrived but its line for
        this dimension is missing or unreadable; ``verdict`` empty), ``"error"`` (the request
        failed after its retries; message in ``error``) or ``"missing"`` (``cache_only`` and
        not stored). ``raw`` is the answer text; ``verdict`` names a story (``"A"`` =
        ``story_a``) whatever the order shown. ``prompt_tokens``, ``completion_tokens``,
        ``usage_note``, ``wall_s``: what the row's request cost (the dimensions of one answer
        share them; `storyeval.llm.cost.cost_table` counts each request once).
    plan : JudgePlan
    n_sent, n_answered, n_request_failures : int
    settings : dict
        Backend, model, judge label, sampling, dimensions, parser version (never a secret).
    """

    judgments: pd.DataFrame
    plan: JudgePlan
    n_sent: int = 0
    n_answered: int = 0
    n_request_failures: int = 0
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def verdicts(self) -> pd.DataFrame:
        """The ``"ok"`` judgments as a canonical verdict table ([`validate_verdicts`][]), with
        the extra ``try, status, raw, error, key`` columns kept."""
        ok = self.judgments[self.judgments["status"] == "ok"]
        if ok.empty:
            raise InputError("judge_pairs: no usable verdict (every judgment failed; see "
                             "JudgeRun.failures())")
        return validate_verdicts(ok, source="judge_pairs verdicts")

    def failures(self) -> pd.DataFrame:
        """Failure counts per judge and dimension: ``n, n_ok, n_unparsed, n_error, n_missing,
        failure_rate``."""
        j = self.judgments
        counts = pd.crosstab([j["judge"], j["dimension"]], j["status"])
        out = pd.DataFrame(index=counts.index)
        out["n"] = counts.sum(axis=1)
        for s in ("ok", "unparsed", "error", "missing"):
            out[f"n_{s}"] = counts[s] if s in counts.columns else 0
        out["failure_rate"] = 1.0 - out["n_ok"] / out["n"]
        return out.reset_index()


@dataclass
class _Job:
    pairs: pd.DataFrame
    items: pd.DataFrame               # one row per (pair, order, try)
    messages: list[tuple[dict[str, str], ...]]  # per (pair, order) cell
    dimensions: tuple[str, ...]       # the answer lines asked (dimensions + overall)
    backend: Any
    label: str
    sampling: Any
    tries: int
    n_orders: int


def _label(backend, judge: str | None) -> str:
    label = judge if judge is not None else backend.model
    if judge is None and os.sep in label and Path(label).exists():
        label = Path(label.rstrip(os.sep)).name
    label = str(label).strip()
    if not label:
        raise InputError("judge must not be empty")
    return label


def _build(pairs, backend, *, dimensions, overall, both_orders, tries, sampling, judge,
           template, dimensions_file) -> _Job:
    from storyeval.llm.backends import Backend, SamplingParams
    from storyeval.llm.cache import key_from_prefix, key_prefix, messages_digest

    if not isinstance(backend, Backend):
        raise InputError(f"backend must be a storyeval.llm Backend, got {type(backend).__name__}")
    if isinstance(tries, bool) or not isinstance(tries, (int, np.integer)) or tries < 1:
        raise InputError(f"tries must be a positive integer, got {tries!r}")
    tries = int(tries)
    if sampling is None:
        sampling = SamplingParams(max_tokens=DEFAULT_MAX_TOKENS)
    if not isinstance(sampling, SamplingParams):
        raise InputError("sampling must be a storyeval.llm SamplingParams")
    table = load_dimensions(dimensions_file)
    overall_name = table.pop("__overall__", None)
    if isinstance(dimensions, str):
        dimensions = [d.strip() for d in dimensions.split(",") if d.strip()]
    names = list(table) if dimensions is None else [str(d) for d in dimensions]
    if not names:
        raise InputError("dimensions is empty")
    unknown = [d for d in names if d not in table]
    if unknown:
        raise InputError(f"dimensions: unknown dimension(s) {unknown}; available: {list(table)}"
                         + (f" (the {overall_name!r} line is asked unless overall=False)"
                            if overall_name in unknown else ""))
    if len(set(names)) != len(names):
        raise InputError(f"dimensions repeats a name: {names}")
    asked = (*names, *([overall_name] if overall and overall_name else []))
    p = _validate_pairs(pairs)
    label = _label(backend, judge)

    orders = ("AB", "BA") if both_orders else ("AB",)
    seeds = [sampling.try_seed(t) for t in range(tries)]
    prefix = key_prefix(backend=backend.kind, model=backend.model, sampling=sampling.for_key())
    messages: list[tuple[dict[str, str], ...]] = []
    keys: list[str] = []
    for prompt, ta, tb in zip(p["prompt"].tolist(), p["text_a"].tolist(), p["text_b"].tolist()):
        for order in orders:
            first, second = (ta, tb) if order == "AB" else (tb, ta)
            msgs = side_by_side_messages(prompt, first, second, dimensions=names,
                                         overall=overall, template=template,
                                         dimensions_file=dimensions_file)
            messages.append(msgs)
            digest = messages_digest(msgs)
            keys.extend(key_from_prefix(prefix, digest, t, seeds[t]) for t in range(tries))
    n_o = len(orders)
    cell = np.repeat(np.arange(len(p) * n_o), tries)
    items = pd.DataFrame({
        "cell": cell,
        "pair_row": cell // n_o,
        "order": np.asarray(orders, dtype=object)[cell % n_o],
        "try": np.tile(np.arange(tries), len(p) * n_o),
        "seed": np.tile(np.asarray(seeds, dtype=object), len(p) * n_o),
        "key": keys,
    })
    return _Job(pairs=p, items=items, messages=messages, dimensions=asked, backend=backend,
                label=label, sampling=sampling, tries=tries, n_orders=n_o)


def _make_plan(job: _Job, cached: set[str]) -> JudgePlan:
    keys = job.items["key"].to_numpy()
    is_cached = np.fromiter((k in cached for k in keys), dtype=bool, count=len(keys))
    to_send = ~is_cached & ~job.items["key"].duplicated().to_numpy()
    chars = np.array([sum(len(m["content"]) for m in msgs) for msgs in job.messages], dtype=float)
    est = math.ceil(chars[job.items["cell"].to_numpy()[to_send]].sum() / _CHARS_PER_TOKEN)
    return JudgePlan(n_pairs=len(job.pairs), n_orders=job.n_orders, tries=job.tries,
                     n_requests=len(keys), n_cached=int(is_cached.sum()),
                     n_to_send=int(to_send.sum()), est_prompt_tokens=est,
                     max_completion_tokens=int(to_send.sum()) * job.sampling.max_tokens,
                     dimensions=job.dimensions, model=job.label, backend=job.backend.kind)


def _open_cache(cache):
    from storyeval.llm.cache import AnswerCache

    if isinstance(cache, AnswerCache):
        return cache, False
    return AnswerCache(":memory:" if cache is None else cache), True


def plan_judging(pairs: pd.DataFrame, backend: Backend, *,
                 dimensions: Sequence[str] | str | None = None, overall: bool = True,
                 both_orders: bool = True, tries: int = 1,
                 sampling: SamplingParams | None = None, judge: str | None = None,
                 template: str | Path | None = None, dimensions_file: str | Path | None = None,
                 cache: str | Path | AnswerCache | None = None) -> JudgePlan:
    """Count the requests a [`judge_pairs`][] call would send, without sending any.

    Parameters
    ----------
    pairs, backend, dimensions, overall, both_orders, tries, sampling, judge, template,
    dimensions_file, cache
        As in [`judge_pairs`][].

    Returns
    -------
    JudgePlan
        A missing cache file is not created.
    """
    job = _build(pairs, backend, dimensions=dimensions, overall=overall,
                 both_orders=both_orders, tries=tries, sampling=sampling, judge=judge,
                 template=template, dimensions_file=dimensions_file)
    from storyeval.llm.cache import AnswerCache

    if cache is not None and not isinstance(cache, AnswerCache) and not Path(cache).exists():
        return _make_plan(job, set())
    store, owned = _open_cache(cache)
    try:
        cached = set(store.get_many(job.items["key"].tolist(), columns=("try_index",)))
    finally:
        if owned:
            store.close()
    return _make_plan(job, cached)


def judge_pairs(pairs: pd.DataFrame, backend: Backend, *,
                dimensions: Sequence[str] | str | None = None, overall: bool = True,
                both_orders: bool = True, tries: int = 1,
                sampling: SamplingParams | None = None, judge: str | None = None,
                template: str | Path | None = None, dimensions_file: str | Path | None = None,
                cache: str | Path | AnswerCache | None = None, cache_only: bool = False,
                show_progress: bool | None = None) -> JudgeRun:
    """Judge story pairs side by side with an LLM, in both orders, through the answer cache.

    Parameters
    ----------
    pairs : DataFrame
        Columns ``prompt_id, prompt, story_a, text_a, story_b, text_b`` (ids and texts),
        optionally ``system_a, system_b``; one row per unordered pair (see [`make_pairs`][]).
    backend : Backend
        A `storyeval.llm.backends` backend (``OpenAIBackend``, ``HFBackend``,
        ``VLLMBackend``, or `make_backend`).
    dimensions : sequence of str or str, optional
        Dimension names of the dimensions file (default: all four of paper 000: Plot,
        Creativity, Development, Language Use); a comma-separated string is accepted.
    overall : bool, default True
        Also ask for (and parse) the overall line (dimension ``"Overall"``).
    both_orders : bool, default True
        Judge each pair as (A, B) and as (B, A); False: only ``story_a`` first.
    tries : int, default 1
        Answers per (pair, order); try ``t`` uses seed ``sampling.seed + t`` and the judge label
        ``"{judge} try{t}"`` when ``tries > 1`` (so the tries stay distinct judgments).
    sampling : SamplingParams, optional
        Default ``SamplingParams(max_tokens=1024)`` (temperature 0.7, seed 0): the assessment
        precedes the verdict block, so a short budget cuts the verdicts off.
    judge : str, optional
        The judge label of the verdicts (default: the backend's model, or the folder name of a
        local model path).
    template, dimensions_file : path, optional
        Replacement template / dimension files (see
        [`render_side_by_side`][]).
    cache : str, Path or AnswerCache, optional
        The LLM raters' answer cache (SQLite); default an in-memory cache (nothing persists).
        The same file can hold ratings and side-by-side answers (their keys differ).
    cache_only : bool, default False
        Send nothing; requests without a stored answer get status ``"missing"``.
    show_progress : bool, optional
        Progress bar (default: only on a terminal).

    Returns
    -------
    JudgeRun
        ``.verdicts``: the usable verdicts as a verdict table (feed it to
        [`win_matrix`][],
        [`bradley_terry`][storyeval.pairwise.bradley_terry.bradley_terry],
        [`position_consistency`][],
        [`judge_accuracy`][]); ``.judgments``: every judgment
        with its status and raw answer; ``.failures()``: failure rates.

    Raises
    ------
    InputError
        Bad pairs, dimensions, tries or sampling.
    storyeval.llm.BackendError
        The backend cannot go on (401/403/404, model missing); answers received before are
        already in the cache, so a rerun resumes.

    Notes
    -----
    Request ``(pair, order, try)`` has the key of `storyeval.llm.cache.request_key`
    (backend kind, model, SHA-256 of the rendered messages, sampling, seed ``sampling.seed +
    t``, try index): exactly the raters' recipe, so a rerun sends only the requests whose key
    is not stored, and each answer is committed the moment it arrives. The model's answer names
    a *position* ("Story A" = the story shown first); for order ``"BA"`` it is converted to the
    story convention of `storyeval.pairwise.verdicts` (``"A"`` = ``story_a``). A dimension
    whose line is missing or unreadable gets status ``"unparsed"`` with the raw answer kept;
    nothing is guessed. The raw text is re-parsed on every run, so a newer parser applies to
    old answers without a request.

    Validated against a local OpenAI-compatible server with scripted answers (both orders
    sent, cache hits on a rerun, malformed answers as failures, verdicts fed to the win matrix,
    Bradley-Terry and position consistency) in tests/test_pairwise_judge.py.

    Examples
    --------
    >>> from storyeval.data import load_hanna_stories  # doctest: +SKIP
    >>> from storyeval.llm import OpenAIBackend  # doctest: +SKIP
    >>> pairs = make_pairs(load_hanna_stories(), limit=5)  # doctest: +SKIP
    >>> run = judge_pairs(pairs, OpenAIBackend("my-model"), cache="answers.sqlite")  # doctest: +SKIP
    >>> bradley_terry(run.verdicts, dimension="Overall")  # doctest: +SKIP
    """
    from storyeval.llm.backends import Request, pending_requests
    from storyeval.llm.cache import messages_digest
    from storyeval.llm.cost import usage_columns

    job = _build(pairs, backend, dimensions=dimensions, overall=overall,
                 both_orders=both_orders, tries=tries, sampling=sampling, judge=judge,
                 template=template, dimensions_file=dimensions_file)
    store, owned = _open_cache(cache)
    try:
        items = job.items
        keys = items["key"].tolist()
        def stored_answers() -> dict[str, str]:  # empty answers are asked again
            return {k: r["raw"] for k, r in store.get_many(keys, columns=("raw",)).items()
                    if isinstance(r["raw"], str) and r["raw"].strip()}

        raw_by_key = stored_answers()
        the_plan = _make_plan(job, set(raw_by_key))
        failures: dict[str, str] = {}
        n_sent = n_answered = 0
        if not cache_only and the_plan.n_to_send:
            # the cache's writer lock: a concurrent run on the same cache waits, then sends
            # only what is still missing
            with store.writer_lock(on_wait=logging.getLogger("storyeval.llm").warning):
                raw_by_key = stored_answers()
                the_plan = _make_plan(job, set(raw_by_key))
                firsts = items.drop_duplicates("key")
                todo = pending_requests(firsts, job.messages, job.sampling, raw_by_key)
                n_sent = len(todo)
                skey = job.sampling.for_key()
                be = job.backend

                def on_answer(req: Request, ans) -> None:
                    nonlocal n_answered
                    parsed = parse_side_by_side(ans.text, job.dimensions)
                    n_ok = sum(v is not None for v in parsed.values())
                    status = ("ok" if n_ok == len(parsed) else "partial" if n_ok else "unparsed")
                    if store.put(key=req.key, backend=be.kind, model=be.model,
                                 messages_sha=messages_digest(req.messages), sampling=skey,
                                 try_index=req.try_index, seed=req.seed, raw=ans.text,
                                 finish_reason=ans.finish_reason,
                                 prompt_tokens=ans.prompt_tokens,
                                 completion_tokens=ans.completion_tokens,
                                 latency_s=ans.latency_s, attempts=ans.attempts,
                                 parser_version=PARSER_VERSION, status=status):
                        raw_by_key[req.key] = ans.text
                    else:  # stored by another run first: the stored answer wins
                        raw_by_key[req.key] = store.get_many([req.key],
                                                             columns=("raw",))[req.key]["raw"]
                    n_answered += 1

                def on_failure(req: Request, message: str) -> None:
                    failures[req.key] = message

                if todo:
                    be.run(todo, on_answer, on_failure, show_progress=show_progress)
        usage = usage_columns(store, keys)  # what each request cost (NaN with the reason)
    finally:
        if owned:
            store.close()
    judgments = _assemble(job, raw_by_key, failures)
    judgments = pd.concat([judgments, usage.loc[usage.index.repeat(len(job.dimensions))]
                           .reset_index(drop=True)], axis=1)
    settings = {**job.backend.describe(), "judge": job.label,
                **{f"sampling_{k}": v for k, v in job.sampling.__dict__.items()},
                "tries": job.tries, "orders": job.n_orders, "dimensions": list(job.dimensions),
                "parser_version": PARSER_VERSION}
    return JudgeRun(judgments=judgments, plan=the_plan, n_sent=n_sent, n_answered=n_answered,
                    n_request_failures=len(failures), settings=settings)


_FLIP = {"A": "B", "B": "A", "same": "same"}


def _assemble(job: _Job, raw_by_key: dict[str, str], failures: dict[str, str]) -> pd.DataFrame:
    items, p, dims = job.items, job.pairs, job.dimensions
    n_dim = len(dims)
    keys = items["key"].tolist()
    parsed_cache: dict[str, dict[str, str | None]] = {}
    verdict = np.empty(len(keys) * n_dim, dtype=object)
    status = np.empty(len(keys) * n_dim, dtype=object)
    raw = np.empty(len(keys) * n_dim, dtype=object)
    error = np.full(len(keys) * n_dim, "", dtype=object)
    orders = items["order"].tolist()
    for i, (k, order) in enumerate(zip(keys, orders)):  # one regex parse per answer
        sl = slice(i * n_dim, (i + 1) * n_dim)
        text = raw_by_key.get(k)
        if text is None:
            verdict[sl] = None
            raw[sl] = None
            if k in failures:
                status[sl], error[sl] = "error", failures[k]
            else:
                status[sl] = "missing"
            continue
        got = parsed_cache.get(k)
        if got is None:
            got = parsed_cache[k] = parse_side_by_side(text, dims)
        vals = [got[d] for d in dims]
        if order == "BA":  # the answer names positions; story_b was shown as "Story A"
            vals = [None if v is None else _FLIP[v] for v in vals]
        verdict[sl] = vals
        status[sl] = ["ok" if v is not None else "unparsed" for v in vals]
        raw[sl] = text
    rows = np.repeat(items["pair_row"].to_numpy(), n_dim)
    tries = np.repeat(items["try"].to_numpy(), n_dim)
    judge = (np.full(len(rows), job.label, dtype=object) if job.tries == 1
             else np.array([f"{job.label} try{t}" for t in tries], dtype=object))
    out = {
        "prompt_id": p["prompt_id"].to_numpy()[rows],
        "story_a": p["story_a"].to_numpy()[rows],
        "story_b": p["story_b"].to_numpy()[rows],
    }
    if "system_a" in p.columns and "system_b" in p.columns:
        out["system_a"] = p["system_a"].to_numpy()[rows]
        out["system_b"] = p["system_b"].to_numpy()[rows]
    out.update({
        "dimension": np.tile(np.asarray(dims, dtype=object), len(keys)),
        "verdict": verdict, "order": np.repeat(np.asarray(orders, dtype=object), n_dim),
        "judge": judge, "try": tries, "status": status, "raw": raw, "error": error,
        "key": np.repeat(np.asarray(keys, dtype=object), n_dim),
    })
    return pd.DataFrame(out)
