"""Batch files in the OpenAI batch JSONL format, for runs too large for one server.

`write_requests` writes one line per request still missing from the cache::

    {"custom_id": KEY, "method": "POST", "url": "/v1/chat/completions", "body": {...}}

where ``KEY`` is the request's cache key and ``body`` the exact JSON an online run sends. This is
the input of the OpenAI Batch API and of vLLM's ``vllm run-batch -i FILE -o OUT --model M``.
`read_results` reads their output, one line per request::

    {"id": ..., "custom_id": KEY, "response": {"status_code": 200, "body": {chat completion}},
     "error": null}

and hands each answer to the runner as an online answer would be (same cache key, same
parsing), so export, offline execution and ingestion give the same ratings as an online run.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from storyeval.exceptions import InputError

if TYPE_CHECKING:
    from storyeval.llm.exchange import OnAnswer, OnFailure, Request


class OpenAIBackend(Protocol):
    """What the batch files need of `storyeval.llm.backends.OpenAIBackend` (a protocol: that
    module imports this one when a run goes through batch files)."""

    model: str
    api_key_env: str | None
    base_urls: Sequence[str]

    def payload(self, req: Request) -> dict[str, Any]: ...

    def _parse_body(self, *args: Any, **kwargs: Any) -> Any: ...

    def _deliver(self, *args: Any, **kwargs: Any) -> Any: ...

    def _one_model(self, *args: Any, **kwargs: Any) -> Any: ...


__all__ = ["BATCH_URL", "read_results", "write_requests"]

logger = logging.getLogger("storyeval.llm")

#: The endpoint named in every line (the Batch API and vLLM's run-batch accept it).
BATCH_URL = "/v1/chat/completions"


def request_line(req: Request, backend: OpenAIBackend) -> str:
    """One request as a line of a batch input file (no API key: it is never in a body)."""
    return json.dumps({"custom_id": req.key, "method": "POST", "url": BATCH_URL,
                       "body": backend.payload(req)}, ensure_ascii=False,
                      separators=(",", ":"), allow_nan=False)


def write_requests(path: str | os.PathLike, requests: Sequence[Request],
                   backend: OpenAIBackend) -> int:
    """Write ``requests`` to the batch input file ``path`` (atomically); their number."""
    from storyeval._atomic import atomic_write_text

    text = "".join(request_line(r, backend) + "\n" for r in requests)
    atomic_write_text(Path(path), text)
    logger.warning("wrote %d requests to %s (OpenAI batch JSONL): run them with the OpenAI "
                   "Batch API or `vllm run-batch`, then read the results with --batch-in",
                   len(requests), path)
    return len(requests)


def _error_text(line: dict[str, Any], status: Any, body: Any) -> str:
    err = line.get("error")
    if isinstance(err, dict):
        err = err.get("message") or err.get("code") or json.dumps(err)[:200]
    if not err and isinstance(body, dict) and isinstance(body.get("error"), dict):
        err = body["error"].get("message")
    return f"batch result: HTTP {status}: {str(err or 'no answer')[:300]}"


def _lines(handle, path):
    """``(line number, text)`` of a binary file's lines; a line that is not UTF-8 is one error
    naming the file and the line."""
    for no, raw in enumerate(handle, 1):
        try:
            yield no, raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"--batch-in {os.fspath(path)!r} line {no}: not UTF-8 text "
                             f"({exc.reason} at byte {exc.start}); a batch results file is "
                             "UTF-8 JSON lines") from None


def read_results(path: str | os.PathLike, requests: Sequence[Request],
                 backend: OpenAIBackend, on_answer: OnAnswer, on_failure: OnFailure) -> None:
    """Deliver the answers of the batch output file ``path`` to ``requests`` (matched by
    ``custom_id``); a request absent from the file stays missing (a later run or another
    file may answer it). A line that is not a result, or a duplicated ``custom_id``, is an
    error naming the line."""
    from storyeval.llm.exchange import Answer
    from storyeval.llm.redact import _query_values, _Redactor

    wanted = {r.key: r for r in requests}
    key = os.environ.get(backend.api_key_env or "", "").strip() if backend.api_key_env else ""
    # a key echoed into a result never reaches the cache
    redact = _Redactor(key or None).also([v for u in backend.base_urls
                                          for v in _query_values(u)])
    seen: set[str] = set()
    n_lines = 0
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise InputError(f"--batch-in {os.fspath(path)!r}: {exc.strerror or exc}") from None
    with handle:
        for no, raw in _lines(handle, path):
            if not raw.strip():
                continue
            n_lines += 1
            try:
                line = json.loads(raw)
                cid = line["custom_id"]
            except (ValueError, KeyError, TypeError):
                raise InputError(f"--batch-in {os.fspath(path)!r} line {no}: not a batch result "
                                 "(JSON with custom_id, response, error)") from None
            if not isinstance(cid, str):
                raise InputError(f"--batch-in {os.fspath(path)!r} line {no}: custom_id is "
                                 f"{type(cid).__name__} {json.dumps(cid)[:40]}, not a string "
                                 "(storyeval writes the cache key there)")
            if cid in seen:
                raise InputError(f"--batch-in {os.fspath(path)!r} line {no}: custom_id {cid!r} "
                                 "appears twice")
            seen.add(cid)
            req = wanted.get(cid)
            if req is None:
                continue  # answered already, or another job's line
            response = line.get("response") if isinstance(line.get("response"), dict) else {}
            status, body = response.get("status_code"), response.get("body")
            if status == 200 and body is not None:
                parsed = backend._parse_body(json.dumps(body) if not isinstance(body, str)
                                             else body, redact)
                if isinstance(parsed, Answer) and backend._one_model(parsed) is not None:
                    on_failure(req, f"batch result: {backend._one_model(parsed)}")
                elif isinstance(parsed, Answer):
                    backend._deliver(req, parsed, on_answer, on_failure)
                else:
                    on_failure(req, f"batch result: malformed answer: {parsed}")
            else:
                on_failure(req, redact.clip(_error_text(line, status, body), 400))
    missing = len(wanted) - len(seen & wanted.keys())
    if missing:
        logger.warning("%d of %d requests have no line in %s; they stay missing (run them and "
                       "read another results file)", missing, len(wanted), path)
    logger.info("read %d result lines from %s", n_lines, path)
