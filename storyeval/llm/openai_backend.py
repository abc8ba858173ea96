"""The OpenAI-compatible chat-completions backend (vLLM, llama.cpp, Ollama, OpenAI): requests
over HTTP with retries, answer verification and redaction. The connections themselves are
`storyeval.llm._http`'s."""

from __future__ import annotations

import asyncio
import email.utils
import functools
import hashlib
import ipaddress
import json
import logging
import os
import random
import re
import secrets
import time
import urllib.parse
from collections.abc import Sequence
from typing import Any

from storyeval._optional import import_optional
from storyeval.exceptions import InputError
from storyeval.llm._http import (
    _ConnectionPool,
    _HttpxSender,
    _proxy_for,
    _Reply,
    _TransportFailure,
    make_ssl_context,
)
from storyeval.llm.backend_base import Backend, BackendError
from storyeval.llm.exchange import (
    Answer,
    OnAnswer,
    OnFailure,
    Request,
)
from storyeval.llm.redact import _query_values, _Redactor

__all__ = ["OpenAIBackend", "check_api_key_env", "model_matches"]

logger = logging.getLogger("storyeval.llm")


_RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
#: Statuses about every request (key, permission, URL or model): the run stops at once.
_FATAL_STATUS = frozenset({401, 403, 404})
#: A run stops when its first ``_REFUSED_ALL`` finished requests (at least the requests of the
#: first wave, the concurrency) all failed with a request-level refusal (another 4xx, or an
#: answer from another model) and none was answered: the server refuses the requests
#: themselves, not one of them.
_REFUSED_ALL = 8


def _retry_after_seconds(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


_KEY_PREFIXES = ("sk-", "sk_", "pk-", "pk_", "hf_", "gsk_", "xai-", "ghp_", "gho_", "github_pat_",
                 "glpat-", "AIza", "Bearer ", "bearer ", "eyJ", "r8_", "pplx-", "nvapi-")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _key_shape(value: str) -> str:
    """How a refused value looks, without any of it but a well-known prefix."""
    prefix = next((p.strip() for p in _KEY_PREFIXES if value.startswith(p)), "")
    return f"{len(value)} characters" + (f", starting {prefix!r}\u2026" if prefix else "")


def check_api_key_env(name: str | None) -> str | None:
    """Validate the *name* of the environment variable that holds the API key.

    A value that looks like a key itself (a known key prefix such as ``sk-``, characters that
    no variable name has, or a long mix of lower-case letters and digits) is refused with a
    message that gives only its length and well-known prefix, never the value.
    """
    if name is None:
        return None
    if not isinstance(name, str):
        raise InputError(f"api_key_env must be the name of an environment variable or None, got "
                         f"{type(name).__name__}")
    value = name.strip()
    looks_like_key = (
        (value.startswith(_KEY_PREFIXES) and (len(value) >= 16 or not _ENV_NAME.match(value)))
        or (len(value) >= 20 and any(c.islower() for c in value)
            and any(c.isdigit() for c in value) and "_" not in value)
        or (len(value) >= 32 and any(c.islower() for c in value)
            and any(c.isdigit() for c in value))
    )
    if looks_like_key or not _ENV_NAME.match(value) or len(value) > 128:
        what = ("looks like an API key, not the name of an environment variable"
                if looks_like_key or len(value) >= 20 else
                "is not the name of an environment variable")
        raise InputError(
            f"--api-key-env / api_key_env takes the NAME of the environment variable that holds "
            f"the key; the value given ({_key_shape(value)}) {what}. Put the key in a variable "
            "(export OPENAI_API_KEY=...) and pass its name (--api-key-env OPENAI_API_KEY); if the "
            "value was a real key, consider it exposed (shell history) and rotate it")
    return value


def _is_loopback(url: str) -> bool:
    """True for a server on this machine (localhost, 127.0.0.0/8, ::1)."""
    host = (urllib.parse.urlsplit(url).hostname or "").strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@functools.lru_cache(maxsize=256)  # once per server, not once per request
def _safe_url(url: str) -> str:
    """``url`` without user:password@ and without query values (never a secret in a message or
    settings.json)."""
    parts = urllib.parse.urlsplit(url)
    netloc = parts.hostname or ""
    if ":" in netloc:
        netloc = f"[{netloc}]"
    if parts.port:
        netloc += f":{parts.port}"
    query = "&".join(f"{k}=***" for k, _ in urllib.parse.parse_qsl(parts.query,
                                                                   keep_blank_values=True))
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def _check_base_url(url: object) -> str:
    """A server root as given to ``--base-url``, checked: http(s), a host, no credentials, no
    fragment. A query string is kept (it is sent after ``/chat/completions``)."""
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        shown = _safe_url(url) if isinstance(url, str) else repr(url)
        raise InputError(f"base_url must start with http:// or https://, got {shown!r}")
    parts = urllib.parse.urlsplit(url)
    if "@" in parts.netloc:
        raise InputError(
            f"--base-url {_safe_url(url)} holds a user name or password (user:key@host); "
            "storyeval sends no credentials from a URL: put the key in an environment variable "
            "and pass its name with --api-key-env (if it was a real key, consider it exposed)")
    if parts.fragment:
        raise InputError(f"--base-url {_safe_url(url)} ends with a #fragment, which no server "
                         "receives: remove it")
    if not parts.hostname:
        raise InputError(f"--base-url {_safe_url(url)} has no host name")
    try:
        _ = parts.port  # raises for a port that is not a number in range
    except ValueError:
        raise InputError(f"--base-url {_safe_url(url)} has an invalid port") from None
    return url


def _chat_url(base_url: str) -> str:
    """``{base_url}/chat/completions``, with the path extended before any query string."""
    parts = urllib.parse.urlsplit(base_url)
    path = parts.path.rstrip("/") + "/chat/completions"
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def _token_count(value: object) -> int | None:
    """A token count from a server's ``usage`` as an int, or None if it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value < 2**63 else None
    if isinstance(value, float):
        return int(value) if value.is_integer() and 0 <= value < 2**53 else None
    if isinstance(value, str):
        v = value.strip()
        return int(v) if v.isdigit() and len(v) <= 18 else None
    return None


def _finish_reason(value: object, redact: _Redactor) -> str | None:
    """The server's ``finish_reason`` as a short redacted string, or None if it is not a string."""
    if not isinstance(value, str):
        return None
    return redact.clip(value, 64)


class _Refusal(str):
    """A failure message for a request the server refused by itself (a 4xx other than 401, 403
    and 404, or an answer from another model): recorded, not retried."""


class _RunState:
    """Bookkeeping of one `OpenAIBackend.run`."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.finished = 0
        self.refused = 0
        self.answered = False
        self.errors: list[BaseException] = []


def model_matches(requested: str, served: str | None) -> bool:
    """Whether an answer's ``model`` field may come from the requested model.

    The rule (case-insensitive): a missing or empty field is accepted (some servers omit it);
    otherwise the served name must equal the requested one or start with it (a dated or tagged
    release: ``gpt-4o`` -> ``gpt-4o-2024-08-06``, ``llama3`` -> ``llama3:latest``), or the
    same holds for the last path components (``/models/Llama-3-8B`` served as ``Llama-3-8B``).

    Examples
    --------
    >>> model_matches("gpt-4o", "gpt-4o-2024-08-06"), model_matches("gpt-4o", "llama-3")
    (True, False)
    """
    if not served or not served.strip():
        return True
    r, s = requested.strip().lower(), served.strip().lower()
    if s.startswith(r):
        return True
    rb, sb = r.rstrip("/").rsplit("/", 1)[-1], s.rstrip("/").rsplit("/", 1)[-1]
    return bool(rb) and sb.startswith(rb)


class OpenAIBackend(Backend):
    """Chat completions against any OpenAI-compatible server (vLLM, llama.cpp, Ollama, OpenAI).

    Parameters
    ----------
    model : str
        The served model name (``"model"`` field of the request).
    base_url : str or sequence of str, default "http://localhost:8000/v1"
        Server root; requests go to ``{base_url}/chat/completions`` (a query string stays at the
        end). Several roots (servers of the same model): each has ``concurrency`` workers that
        take the next request when free, so faster servers answer more, and retry ``a`` of a
        request goes to the next server in the list; answers share one cache (the server is
        not part of the cache key). A root with ``user:password@`` or a ``#fragment`` is
        refused ([`InputError`][], without echoing the credentials).
    api_key_env : str or None, default "OPENAI_API_KEY"
        Name of the environment variable holding the API key, read when `run` starts.
        ``None`` declares the server keyless (no ``Authorization`` header; ``--no-api-key``).
        A value that looks like a key rather than a variable name is refused
        ([`InputError`][], without echoing it). If the variable is unset
        or empty, `run` raises [`InputError`][], except for a
        server on this machine (``localhost``, ``127.0.0.0/8``, ``::1``), which gets no key and
        a logged warning. The key is never stored, logged, put in a cache key or an error
        message.
    concurrency : int or sequence of int, default 16
        Requests in flight at once per server (one value for all, or one per ``base_url``). All workers share one HTTP client, one keep-alive
        connection pool of at most ``concurrency`` connections and one SSL context. Raise it to
        keep a multi-GPU vLLM server busy (e.g. 256).
    timeout : float, default 120
        Seconds per HTTP request (sending it, waiting, reading the answer); connecting has
        ``min(timeout, 10)``.
    max_retries : int, default 6
        Retries of one request on 408/409/425/429/5xx, connection errors, timeouts and malformed
        answers.
    backoff_base, backoff_max : float, default 0.5 and 60
        Exponential backoff: before retry ``a`` (1-based) wait ``uniform(0, min(max, base*2^(a-1)))``
        ("full jitter"), or the server's ``Retry-After`` when given (plus up to 10% jitter).
    extra_body : dict, optional
        Extra JSON fields for every request (e.g. ``{"top_k": 50}`` for vLLM).
    random_state : int, optional
        Seeds the jitter (for reproducible tests).
    ca_bundle : path, optional
        CA certificates (PEM file or hashed folder) for https servers; default
        ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` when set, else certifi's bundle
        (`make_ssl_context`).
    batch_out, batch_in : path, optional
        Send nothing: write the requests to, or read their answers from, a batch file in the
        OpenAI batch JSONL format (`storyeval.llm.batch`; OpenAI Batch API, ``vllm run-batch``).
    keep_alive : bool, default True
        Reuse connections (HTTP/1.1 keep-alive) to a server that echoes the request nonce (see
        Notes). False (``--no-keep-alive``): one connection per request for every server
        (slower: a TCP, and TLS, handshake per request).
    check_model : bool, default True
        Refuse an answer whose ``model`` field names another model (`model_matches` states the
        accepted aliases: equal, or starting with the requested name); such a request fails
        with the served name in its error and is not stored.

    Notes
    -----
    Errors no retry can fix and that concern every request stop the run at once with
    `BackendError` and one line saying what to change: a refused TLS certificate, a TLS
    handshake that fails (``https://`` to a plain-HTTP server) or a plain-HTTP request
    answered with TLS, a host name that does not resolve, a redirect (3xx, with its target;
    redirects are not followed), 401, 403 and 404 (key, permission, model or URL). Any other
    4xx (400 for a story longer than the served model's context, 413, 422, a content filter)
    is about one request: it fails that request only, with the server's message (redacted) in
    its error, not retried and not stored, and the run goes on; the first of each status is
    logged as a warning. If the first 8 requests to finish (at least the concurrency: a whole
    first wave) were all refused so and none was
    answered, the server refuses the requests themselves and the run stops.

    No answer is stored under the wrong request. Each attempt carries a nonce of its own (the
    header ``X-Request-Id``, 22 characters, random per run, never a secret), and an answer is
    accepted only when (a) its response ``id`` contains that nonce (vLLM makes its ids
    ``chatcmpl-<X-Request-Id>``), or (b) it came alone on a connection of its own: the request
    said ``Connection: close`` and the server closed the connection right after the response,
    with no byte beyond it; under (b) an answer whose body repeats an earlier response of the
    run to another request (a replay) is refused, as is an answer whose ``id`` repeats an
    earlier one while the server has given unique ids (the first repeat of another body shows
    that the server repeats ids, as Ollama's do: the id is then no evidence and (b) alone
    decides). An answer that carries the nonce of another attempt of the run is refused. A
    server that echoes the nonce gets kept-alive connections, reused with no rest; any other
    server gets one connection per request (`storyeval.llm._http`). A refused answer is asked
    again on a connection of its own; an answer from another model fails (``check_model``).
    An empty answer is a
    failure of its request, not an answer: it is not stored, and the next run asks again. Each
    request carries the header ``X-Storyeval-Cache-Key`` (the cache key, no secret) to ease
    matching server logs.

    Everything a server sends back is redacted before it is stored, logged or shown, and only
    then cut to length: the key (whole or any fragment of 15+ characters) and any ``Bearer``
    credential become ``***`` in answers, ``finish_reason`` (a string of at most 64 characters,
    else None), error bodies and malformed bodies; token counts are kept only as integers.
    Behind an ``http://`` proxy from the environment (``HTTP_PROXY``, ``HTTPS_PROXY``,
    ``ALL_PROXY``; ``NO_PROXY`` honoured) the same client and rule apply (a ``CONNECT`` tunnel
    for https servers); another kind of proxy (SOCKS) goes through httpx, where only answers
    that echo their nonce are accepted.

    Validated against a scripted local server (``tests/_openai_stub_server.py``): 429 with
    ``Retry-After``, 5xx, malformed, empty, slow and hanging answers at random, SIGKILL and
    resume, two concurrent runs, and a canary key echoed in every field
    (``tests/test_llm_reliability.py``).

    Examples
    --------
    >>> b = OpenAIBackend("my-model", base_url="http://localhost:8000/v1", concurrency=64)
    >>> b.describe()["concurrency"]
    64
    """

    kind = "openai"

    def __init__(self, model: str, *, base_url: str | Sequence[str] = "http://localhost:8000/v1",
                 api_key_env: str | None = "OPENAI_API_KEY",
                 concurrency: int | Sequence[int] = 16, timeout: float = 120.0,
                 max_retries: int = 6, backoff_base: float = 0.5, backoff_max: float = 60.0,
                 extra_body: dict[str, Any] | None = None, random_state: int | None = None,
                 ca_bundle: str | os.PathLike | None = None,
                 batch_out: str | os.PathLike | None = None,
                 batch_in: str | os.PathLike | None = None, keep_alive: bool = True,
                 check_model: bool = True) -> None:
        super().__init__(model)
        self.keep_alive = bool(keep_alive)
        self.check_model = bool(check_model)
        urls = [base_url] if isinstance(base_url, str) else list(base_url)
        if not urls:
            raise InputError("base_url: give at least one server")
        self.base_urls = [_check_base_url(u).rstrip("/") for u in urls]
        if len(set(self.base_urls)) < len(self.base_urls):
            raise InputError("base_url: the same server is given twice")
        conc = [concurrency] if isinstance(concurrency, int) else list(concurrency)
        if len(conc) == 1:
            conc = conc * len(self.base_urls)
        if len(conc) != len(self.base_urls):
            raise InputError(f"concurrency: give one value for all servers or one per server "
                             f"({len(self.base_urls)}), got {len(conc)}")
        if any(int(c) < 1 for c in conc):
            raise InputError(f"concurrency must be >= 1, got {concurrency}")
        if not timeout > 0:
            raise InputError(f"timeout must be > 0, got {timeout}")
        if int(max_retries) < 0:
            raise InputError(f"max_retries must be >= 0, got {max_retries}")
        if batch_out is not None and batch_in is not None:
            raise InputError("batch_out and batch_in cannot be combined (write the requests, "
                             "run them, then read the results in a second call)")
        self.base_url = self.base_urls[0]
        self.concurrencies = [int(c) for c in conc]
        self.concurrency = self.concurrencies[0] if len(conc) == 1 else sum(self.concurrencies)
        self.api_key_env = check_api_key_env(api_key_env)
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self.extra_body = dict(extra_body or {})
        self.ca_bundle = None if ca_bundle is None else os.fspath(ca_bundle)
        if self.ca_bundle is not None and not os.path.exists(self.ca_bundle):
            raise InputError(f"--ca-bundle {self.ca_bundle!r} does not exist")
        self.batch_out = None if batch_out is None else os.fspath(batch_out)
        self.batch_in = None if batch_in is None else os.fspath(batch_in)
        self._rng = random.Random(random_state)
        self._reported: set[int] = set()

    def describe(self) -> dict[str, Any]:
        one = len(self.base_urls) == 1
        out = {**super().describe(),
               "base_url": _safe_url(self.base_url) if one else
               [_safe_url(u) for u in self.base_urls],
               "api_key_env": self.api_key_env,
               "concurrency": self.concurrency if one else list(self.concurrencies)}
        if self.batch_out or self.batch_in:
            out["batch_file"] = self.batch_out or self.batch_in
        if not self.keep_alive:
            out["keep_alive"] = False
        if not self.check_model:
            out["check_model"] = False
        return out

    def api_key(self) -> str | None:
        """The key from ``api_key_env`` (None for a keyless server).

        Raises
        ------
        InputError
            The variable is unset or empty and a server is not on this machine.
        """
        if self.api_key_env is None:
            return None
        key = os.environ.get(self.api_key_env, "").strip()
        if key:
            return key
        shown = ", ".join(_safe_url(u) for u in self.base_urls)
        if all(_is_loopback(u) for u in self.base_urls):
            logger.warning("environment variable %s is not set: sending no API key to the local "
                           "server %s (pass --no-api-key, or api_key_env=None, to say so)",
                           self.api_key_env, shown)
            return None
        raise InputError(
            f"environment variable {self.api_key_env} (--api-key-env) is not set or empty: "
            f"export the key in it, or pass --no-api-key (api_key_env=None) for a server "
            f"without authentication ({shown})")

    def payload(self, req: Request) -> dict[str, Any]:
        """The JSON body of a request (online and in a batch file alike)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": list(req.messages),
            "temperature": req.sampling.temperature,
            "top_p": req.sampling.top_p,
            "max_tokens": req.sampling.max_tokens,
        }
        if req.seed is not None:
            body["seed"] = req.seed
        body.update(self.extra_body)
        return body

    _payload = payload  # the former private name

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return retry_after * (1.0 + 0.1 * self._rng.random())
        cap = min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1))
        return self._rng.uniform(0, cap)

    def run(self, requests: Sequence[Request], on_answer: OnAnswer, on_failure: OnFailure, *,
            show_progress: bool | None = None, on_retract: OnFailure | None = None) -> None:
        """Send every request (asyncio, at most ``concurrency`` in flight per server); or, with
        ``batch_out``/``batch_in``, write them to / read their answers from a batch file.

        ``on_retract(request, why)``: an answer delivered earlier turned out to repeat, byte for
        byte, a later response to another request (a replay read before its original): the
        caller removes it (the runner deletes it from the cache); the request is asked again
        and delivered anew. Without it, such an answer is only logged."""
        if not requests:
            return
        if self.batch_out is not None or self.batch_in is not None:
            import storyeval.llm.batch as batch

            if self.batch_out is not None:
                batch.write_requests(self.batch_out, requests, self)
            elif self.batch_in is not None:
                batch.read_results(self.batch_in, requests, self, on_answer, on_failure)
            return
        asyncio.run(self._run_async(list(requests), on_answer, on_failure, show_progress,
                                    on_retract))

    async def _run_async(self, requests: list[Request], on_answer: OnAnswer,
                         on_failure: OnFailure, show_progress: bool | None,
                         on_retract: OnFailure | None = None) -> None:
        from storyeval._progress import progress_bar

        key = self.api_key()
        redact = _Redactor(key).also([v for u in self.base_urls for v in _query_values(u)])
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "Accept-Encoding": "gzip, deflate", "User-Agent": "storyeval"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        urls = [_chat_url(u) for u in self.base_urls]
        ctx = None
        if any(u.startswith("https://") for u in urls):
            ctx = make_ssl_context(self.ca_bundle)  # one context for every connection
        senders = []
        for url, conc in zip(urls, self.concurrencies):
            proxy = _proxy_for(url)
            if proxy is not None and not proxy.startswith("http://"):
                import_optional("httpx", extra="llm", purpose="requests through a proxy")
                logger.warning("requests to %s go through a proxy storyeval does not speak "
                               "(httpx, one connection per request): only answers that echo "
                               "their request's nonce can be verified and stored",
                               _safe_url(url))
                kind: Any = _HttpxSender
            else:
                kind = _ConnectionPool
            senders.append(kind(min(conc, len(requests)), self.timeout,
                                min(self.timeout, 10.0), headers, ctx,
                                keep_alive=self.keep_alive, proxy=proxy))
        #: (server, response id) -> (request key, body digest) of the first answer with it
        self._seen: dict[tuple[str, str], tuple[str, bytes]] = {}
        #: digest of every response body read -> the request on whose connection it came
        self._bodies: dict[bytes, str] = {}
        self._delivered: dict[str, Request] = {}  # key -> request, of the answers delivered
        self._retracted: list[Request] = []  # delivered answers found to be replays
        self._on_retract = on_retract
        self._unique: dict[str, bool] = {}
        self._echoes: set[str] = set()
        self._tag = secrets.token_hex(6)
        self._count = 0
        run = _RunState(n=len(requests))
        # a whole first wave must be refused: at high concurrency a few quick refusals (a story
        # too long) come back before any answer
        refused_all = max(_REFUSED_ALL, sum(min(c, len(requests)) for c in self.concurrencies))
        it = iter(requests)
        try:
            with progress_bar(total=len(requests), desc=f"rate {self.model}", unit="req",
                              show=show_progress) as bar:

                def finish(req: Request, result: Answer | str) -> None:
                    run.finished += 1
                    if isinstance(result, Answer):
                        run.answered = True
                        self._delivered[req.key] = req
                        self._deliver(req, result, on_answer, on_failure)
                    else:
                        run.refused += isinstance(result, _Refusal)
                        on_failure(req, str(result))
                        if (not run.answered and run.refused == run.finished
                                and run.finished >= refused_all):
                            raise BackendError(
                                f"the server refused each of the first {run.finished} requests, "
                                f"none answered (last: {result}); no retry can fix this: check "
                                "--model, the sampling options and the server's limits")
                    bar.update(1)

                async def worker(home: int, source: Any) -> None:
                    for req in source:  # the shared iterator hands each request to one worker
                        if run.errors:
                            return
                        try:
                            # verified answers are delivered (and committed) at once
                            finish(req, await self._one(senders, urls, home, req, redact))
                        except BaseException as exc:  # noqa: BLE001 - stops every worker
                            run.errors.append(exc)
                            return

                # each server's workers take the next request when they are free: faster servers
                # get more of them
                await asyncio.gather(*(worker(i, it) for i, conc in enumerate(self.concurrencies)
                                       for _ in range(min(conc, len(requests)))))
                while self._retracted and not run.errors:  # retracted answers, asked again
                    again, self._retracted = self._retracted, []
                    source = iter(again)
                    await asyncio.gather(*(worker(i, source)
                                           for i, conc in enumerate(self.concurrencies)
                                           for _ in range(min(conc, len(again)))))
        finally:
            for sender in senders:
                await sender.aclose()
        if run.errors:
            raise run.errors[0]

    def _report(self, status: int, message: str) -> None:
        """Print the first failure of each HTTP status (a run may have thousands); status -1:
        an answer from another model."""
        if status not in self._reported:
            self._reported.add(status)
            what = "answers from another model" if status < 0 else f"HTTP {status} answers"
            logger.warning("%s (this request fails; further %s are in the ratings' error "
                           "column)", message, what)

    def _nonce(self) -> str:
        """A nonce for one attempt: the run's random tag and a counter, 22 characters (a fixed
        length, so one nonce is never part of another)."""
        self._count += 1
        return f"{self._tag}{self._count:010x}"

    def _verify(self, ans: Answer, req: Request, reply: _Reply, url: str, nonce: str,
                shared: bool) -> str | None:
        """Why ``ans`` cannot be shown to answer ``req`` (None when it is shown), by the rule of
        the class Notes: the nonce echoed in the response id, or a response alone on its
        connection that is not a replay."""
        rid = ans.response_id or ""
        if nonce in rid:
            if url not in self._echoes:
                self._echoes.add(url)
                logger.info("%s echoes the request nonce in its response ids: answers are "
                            "verified by it, connections kept alive", _safe_url(url))
            return None
        if self._tag in rid:
            return ("the answer carries the nonce of another request of this run (a stray or "
                    "misrouted response); not stored, asked again")
        # bytes are evidence only with an id: without one, two answers of the same text (and
        # usage) to different requests are byte-identical by right
        replay = bool(rid) and not self._claim(reply.body, req)
        for other in reply.others if rid else ():  # a later replay of one of them is refused
            self._claim(other, req)
        if not reply.alone:
            if shared:
                return ("the answer came on a kept-alive connection without this request's "
                        "nonce, so nothing shows it is this request's (a stray response?); not "
                        "stored, asked again on a connection of its own")
            return ("another response came with the answer on its connection of its own (or "
                    "the server did not close it), so nothing shows which one is this "
                    "request's; not stored, asked again")
        if replay:
            return (f"the answer repeats, byte for byte, an earlier response (id {rid[:40]!r}) "
                    "to another request (a replayed response); not stored, asked again")
        digest = hashlib.blake2b(reply.body, digest_size=16).digest()
        first = self._seen.setdefault((url, rid), (req.key, digest)) if rid else None
        if first is None or first[0] == req.key:
            return None
        if first[1] == digest:  # the bytes of a response read before (whose owner changed)
            return (f"the answer repeats, byte for byte, an earlier response (id {rid[:40]!r}) "
                    "to another request (a replayed response); not stored, asked again")
        if self._unique.get(url, True):
            self._unique[url] = False
            logger.warning("%s gave the response id %r to two different answers: it repeats "
                           "ids, so they no longer count as evidence (each answer is verified "
                           "on a connection of its own)", _safe_url(url), rid[:40])
            return (f"the answer repeats the id {rid[:40]!r} of an earlier answer to another "
                    "request (a replay, or a server that repeats ids); not stored, asked again")
        return None

    def _claim(self, body: bytes, req: Request) -> bool:
        """Remember a response body read on the connection of ``req``; False when the same
        bytes came before for another request (a replay). If that other request's answer was
        delivered, it may be the replay, read before its original: it is retracted (removed by
        the caller's ``on_retract``) and asked again. The bytes then count as ``req``'s."""
        digest = hashlib.blake2b(body, digest_size=16).digest()
        owner = self._bodies.setdefault(digest, req.key)
        if owner == req.key:
            return True
        self._bodies[digest] = ""  # nobody's answer from now on
        earlier = self._delivered.pop(owner, None)
        if earlier is not None and self._on_retract is not None:
            logger.warning("request %s...: its stored answer repeats, byte for byte, a response "
                           "read for request %s... (a replay read before its original); it is "
                           "removed and asked again", owner[:12], req.key[:12])
            self._on_retract(earlier, "its answer repeats another request's response")
            self._retracted.append(earlier)
        elif earlier is not None:
            logger.warning("request %s...: its delivered answer repeats, byte for byte, a "
                           "response read for request %s... (a replay read before its "
                           "original?)", owner[:12], req.key[:12])
        return False

    def _one_model(self, ans: Answer) -> str | None:
        """Why the answer's ``model`` field shows another model than the one asked for."""
        if not self.check_model or model_matches(self.model, ans.served_model):
            return None
        return (f"the answer is from model {ans.served_model!r}, not the requested "
                f"{self.model!r}; not stored (see OpenAIBackend's check_model for the accepted "
                "aliases)")

    async def _one(self, senders: list, urls: list[str], home: int, req: Request,
                   redact: _Redactor) -> Answer | str:
        """One request with retries (attempt ``a`` goes to server ``home + a - 1``, so retries
        move across servers): a verified answer (`_verify`), or a failure message (str,
        redacted; a `_Refusal` for a refusal of this request only). Errors no retry can fix
        raise `BackendError`."""
        body = json.dumps(self.payload(req), ensure_ascii=False, separators=(",", ":"),
                          allow_nan=False).encode("utf-8")
        last = "no attempt"
        alone = False  # after an unverified answer, the next attempt has a connection alone
        for attempt in range(1, self.max_retries + 2):
            server = (home + attempt - 1) % len(urls)
            sender, url = senders[server], urls[server]
            shown_url = _safe_url(url)
            retry_after = None
            nonce = self._nonce()
            extra = {"X-Storyeval-Cache-Key": req.key, "X-Request-Id": nonce}
            t0 = time.perf_counter()
            try:
                shared = self.keep_alive and url in self._echoes and not alone
                reply = await sender.post(url, body, extra, reuse=shared)
            except _TransportFailure as exc:
                if exc.kind in ("tls", "dns"):
                    raise BackendError(f"{exc} ({shown_url}; no retry can fix this)") from None
                if exc.kind == "timeout":
                    last = f"timeout after {self.timeout:g} s ({exc})"
                else:
                    last = f"connection error: {redact.clip(str(exc), 300)}"
            else:
                status, headers, data = reply.status, reply.headers, reply.body
                if status == 200:
                    parsed = self._parse_body(data, redact)
                    if isinstance(parsed, Answer):
                        why = self._verify(parsed, req, reply, url, nonce, shared)
                        if why is None:
                            wrong = self._one_model(parsed)
                            if wrong is not None:
                                self._report(-1, wrong)
                                return _Refusal(wrong)
                            parsed.latency_s = time.perf_counter() - t0
                            parsed.attempts = attempt
                            return parsed
                        logger.info("request %s...: %s", req.key[:12], why)
                        last, alone = why, True
                        if attempt <= self.max_retries and not reply.alone:
                            continue  # asked again at once, alone: the server did answer
                        if not self._unique.get(url, True):
                            # a replay from a server that repeats ids: asked again after a
                            # second, when even constant ids (and `created` in seconds) come
                            # with other bytes than the replayed answer
                            retry_after = 1.0
                    else:
                        last = f"malformed answer: {parsed}"
                else:
                    text = data.decode("utf-8", errors="replace")
                    last = f"HTTP {status} from {shown_url}: " + \
                        redact.clip(text, 300).replace("\n", " ")
                    if 300 <= status < 400:
                        where = _safe_url(redact(headers.get("location", ""))) or "nowhere"
                        raise BackendError(
                            f"HTTP {status} from {shown_url}: the server redirects to {where}; "
                            "storyeval does not follow redirects (the request and the key would "
                            "go elsewhere): give the final address as --base-url")
                    if status in _FATAL_STATUS:
                        hint = {401: "check the API key variable " + repr(self.api_key_env),
                                403: "the key is not allowed to use this model",
                                404: "check --base-url and --model"}[status]
                        raise BackendError(f"{last} ({hint}; no retry can fix this)")
                    if status not in _RETRY_STATUS:
                        self._report(status, last)
                        # e.g. 400 (a story longer than the context), 413, 422, a content
                        # filter: this request only; retrying cannot help
                        return _Refusal(last)
                    retry_after = _retry_after_seconds(headers.get("retry-after"))
            if attempt > self.max_retries:
                break
            delay = self._backoff(attempt, retry_after)
            logger.info("request %s... attempt %d failed (%s); retrying in %.2f s",
                        req.key[:12], attempt, last, delay)
            await asyncio.sleep(delay)
        logger.warning("request %s... failed after %d attempts: %s", req.key[:12],
                       self.max_retries + 1, last)
        return f"failed after {self.max_retries + 1} attempts: {last}"

    @staticmethod
    def _parse_body(body: bytes | str, redact: _Redactor | None = None) -> Answer | str:
        """The answer of a 200 response, every string redacted; or why it is malformed."""
        redact = redact or _Redactor(None)
        raw = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
        try:
            data = json.loads(raw)
        except ValueError:
            return f"body is not JSON: {redact.clip(raw, 80)!r}"
        try:
            choice = data["choices"][0]
            text = choice["message"]["content"]
        except (KeyError, IndexError, TypeError):
            return f"no choices[0].message.content in {redact.clip(str(data), 80)!r}"
        if not isinstance(text, str):
            return f"message content is {type(text).__name__}, not a string"
        usage = data.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        rid, served = data.get("id"), data.get("model")
        return Answer(text=redact(text),
                      finish_reason=_finish_reason(choice.get("finish_reason"), redact),
                      prompt_tokens=_token_count(usage.get("prompt_tokens")),
                      completion_tokens=_token_count(usage.get("completion_tokens")),
                      response_id=rid if isinstance(rid, str) and rid else None,
                      served_model=redact.clip(served, 200) if isinstance(served, str) else None)
