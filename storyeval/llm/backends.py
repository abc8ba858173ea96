"""Generation backends: an OpenAI-compatible HTTP client, local Hugging Face transformers, and
the vLLM offline engine.

Every backend takes a list of `Request` and calls ``on_answer(request, answer)`` as soon as
each answer is available (the runner persists it there), and ``on_failure(request, message)``
for a request that could not be answered after the retries. Heavy libraries (httpx, torch,
transformers, vllm) are imported when a backend runs, never at ``import storyeval``.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import email.utils
import ipaddress
import json
import logging
import os
import random
import re
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from storyeval._optional import import_optional
from storyeval.exceptions import InputError, MissingDependencyError, StoryevalError

__all__ = [
    "Answer",
    "Backend",
    "BackendError",
    "HFBackend",
    "OpenAIBackend",
    "Request",
    "SamplingParams",
    "VLLMBackend",
    "check_api_key_env",
    "make_backend",
]

logger = logging.getLogger("storyeval.llm")

OnAnswer = Callable[["Request", "Answer"], None]
OnFailure = Callable[["Request", str], None]


class BackendError(StoryevalError):
    """A backend cannot go on (authentication refused, model missing, server unreachable)."""


@dataclass(frozen=True)
class SamplingParams:
    """Sampling parameters, recorded with every answer and part of its cache key.

    Parameters
    ----------
    temperature : float, default 0.7
    top_p : float, default 1.0
    max_tokens : int, default 256
        Maximum number of generated tokens.
    seed : int or None, default 0
        Base seed; try ``t`` uses ``seed + t`` (distinct seeds per try). Sent to servers that
        support it (OpenAI, vLLM, llama.cpp, Ollama); used to seed local generation. None sends
        no seed.
    """

    temperature: float = 0.7
    top_p: float = 1.0
    max_tokens: int = 256
    seed: int | None = 0

    def __post_init__(self) -> None:
        if not (self.temperature >= 0):
            raise InputError(f"temperature must be >= 0, got {self.temperature}")
        if not (0 < self.top_p <= 1):
            raise InputError(f"top_p must be in (0, 1], got {self.top_p}")
        if int(self.max_tokens) != self.max_tokens or self.max_tokens < 1:
            raise InputError(f"max_tokens must be a positive integer, got {self.max_tokens}")

    def for_key(self) -> dict[str, Any]:
        """The parameters that shape an answer (the seed enters the key separately)."""
        return {"temperature": float(self.temperature), "top_p": float(self.top_p),
                "max_tokens": int(self.max_tokens)}

    def try_seed(self, try_index: int) -> int | None:
        """The seed of try ``try_index``."""
        return None if self.seed is None else int(self.seed) + int(try_index)


@dataclass(frozen=True)
class Request:
    """One generation request."""

    key: str
    messages: tuple[dict[str, str], ...]
    sampling: SamplingParams
    seed: int | None
    try_index: int


def pending_requests(items: Any, messages: Sequence[Any], sampling: SamplingParams,
                     done: Collection[str]) -> list[Request]:
    """The requests still to send: one per row of ``items`` (a frame with columns ``key``,
    ``cell``, ``seed``, ``try``, one row per cache key) whose key is not in ``done``;
    ``messages[cell]`` is the conversation to send."""
    return [Request(key=k, messages=messages[c], sampling=sampling, seed=s, try_index=t)
            for k, c, s, t in zip(items["key"].tolist(), items["cell"].tolist(),
                                  items["seed"].tolist(), items["try"].tolist())
            if k not in done]


@dataclass
class Answer:
    """One generated answer with its bookkeeping."""

    text: str
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float | None = None
    attempts: int = 1


class Backend(abc.ABC):
    """Base class: ``kind`` and ``model`` enter the cache key; `run` generates."""

    kind: str = "base"

    def __init__(self, model: str) -> None:
        if not isinstance(model, str) or not model.strip():
            raise InputError("model must be a non-empty string")
        self.model = model

    def describe(self) -> dict[str, Any]:
        """Settings worth recording (never a secret)."""
        return {"backend": self.kind, "model": self.model}

    @abc.abstractmethod
    def run(self, requests: Sequence[Request], on_answer: OnAnswer, on_failure: OnFailure, *,
            show_progress: bool | None = None) -> None:
        """Generate an answer for every request, calling the callbacks as they complete."""

    @staticmethod
    def _deliver(req: Request, ans: Answer, on_answer: OnAnswer, on_failure: OnFailure) -> None:
        """Hand an answer to the runner; an empty (or blank) answer is a failure of that request,
        not an answer: it is not stored, so the next run asks again."""
        if ans.text.strip():
            on_answer(req, ans)
        else:
            on_failure(req, f"empty answer (finish_reason {ans.finish_reason!r}); not stored, "
                            "a rerun asks again")


# ---------------------------------------------------------------------------------------------
# OpenAI-compatible chat completions over HTTP
# ---------------------------------------------------------------------------------------------

_RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
_FATAL_STATUS = frozenset({401, 403, 404})


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


def _clip(text: str, n: int) -> str:
    """The first ``n`` characters (call it on redacted text only)."""
    return text if len(text) <= n else text[:n] + "\u2026"


class _Redactor:
    """Removes the API key from any text before it is stored, logged or shown.

    The whole key, any fragment of it of 15 characters or more (a server or proxy that cut it),
    and any ``Bearer``/``Basic`` credential are replaced by ``***``. Callers redact first and
    truncate after, so no cut can leave half a key behind.
    """

    # an Authorization value echoed back: the scheme, then a token of 12+ characters with a
    # digit (so that prose such as "a basic structure" is left alone)
    _CREDENTIAL = re.compile(r"\b(Bearer|Basic|BEARER|BASIC|bearer)(\s+)"
                             r"(?=[A-Za-z0-9._~+/=-]*[0-9])[A-Za-z0-9._~+/=-]{12,}")
    _CHUNK = 8

    def __init__(self, secret: str | None) -> None:
        self.secret = secret if secret and len(secret) >= 4 else None
        s = self.secret or ""
        if len(s) >= 2 * self._CHUNK:
            offsets = list(range(0, len(s) - self._CHUNK + 1, self._CHUNK))
            if offsets[-1] != len(s) - self._CHUNK:
                offsets.append(len(s) - self._CHUNK)
            self._anchors = [(o, s[o:o + self._CHUNK]) for o in offsets]
        else:
            self._anchors = []

    def __call__(self, text: object) -> str:
        if text is None:
            return ""
        text = text if isinstance(text, str) else str(text)
        s = self.secret
        if s:
            if s in text:
                text = text.replace(s, "***")
            if self._anchors:
                text = self._fragments(text)
        if "earer" in text or "Basic" in text or "EARER" in text or "BASIC" in text:
            text = self._CREDENTIAL.sub(lambda m: f"{m.group(1)}{m.group(2)}***", text)
        return text

    def _fragments(self, text: str) -> str:
        s = self.secret or ""
        spans = []
        for off, chunk in self._anchors:
            start = text.find(chunk)
            while start >= 0:
                a, b = start, off
                while a > 0 and b > 0 and text[a - 1] == s[b - 1]:
                    a, b = a - 1, b - 1
                c, d = start + self._CHUNK, off + self._CHUNK
                while c < len(text) and d < len(s) and text[c] == s[d]:
                    c, d = c + 1, d + 1
                spans.append((a, c))
                start = text.find(chunk, start + 1)
        if not spans:
            return text
        spans.sort()
        out, pos = [], 0
        for a, c in spans:
            if c <= pos:
                continue
            out.append(text[pos:max(a, pos)])
            if a >= pos:
                out.append("***")
            pos = c
        out.append(text[pos:])
        return "".join(out)

    def clip(self, text: object, n: int) -> str:
        """Redact, then keep the first ``n`` characters (never the other way round)."""
        if isinstance(text, str) and len(text) > 65536:
            text = text[:65536]  # far beyond n: a cut here never reaches the kept part
        return _clip(self(text), n)


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


def _uses_proxy(url: str) -> bool:
    """Whether httpx would send requests to ``url`` through a proxy from the environment."""
    try:
        proxies = urllib.request.getproxies()
        scheme = urllib.parse.urlsplit(url).scheme
        if not (proxies.get(scheme) or proxies.get("all")):
            return False
        return not urllib.request.proxy_bypass(urllib.parse.urlsplit(url).hostname or "")
    except Exception:  # noqa: BLE001 - an odd proxy setting: let httpx handle it
        return True


class _TransportFailure(Exception):
    """A request that got no HTTP response: ``kind`` is "timeout" or "connection"."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _decode_body(body: bytes, headers: dict[str, str]) -> bytes:
    """The body without a gzip/deflate content encoding (storyeval asks for none)."""
    encoding = headers.get("content-encoding", "").strip().lower()
    if encoding in ("gzip", "x-gzip", "deflate"):
        import zlib

        wbits = 31 if "gzip" in encoding else 15
        try:
            return zlib.decompress(body, wbits)
        except zlib.error:
            return zlib.decompress(body, -15) if encoding == "deflate" else body
    return body


class _ProtocolError(Exception):
    """The server's answer is not HTTP/1.1 as storyeval reads it."""


#: Largest response body read (a chat completion is a few kB).
_MAX_BODY = 64 * 2**20


class _Connection:
    __slots__ = ("reader", "writer")

    def __init__(self, reader, writer) -> None:
        self.reader, self.writer = reader, writer

    def usable(self) -> bool:
        return not (self.writer.is_closing() or self.reader.at_eof())

    def close(self) -> None:
        with contextlib.suppress(Exception):  # closing a broken transport
            self.writer.close()


class _ConnectionPool:
    """One keep-alive HTTP/1.1 connection pool shared by every worker, on asyncio streams.

    The requests are always the same shape (a JSON POST to one URL), so the client is small: it
    writes the request in one piece and reads the status line, the headers and a body framed by
    ``Content-Length``, chunked transfer coding or the end of the connection (gzip/deflate
    decoded). At most ``max_connections`` connections are open; an idle one is taken from a stack
    in O(1). A request costs about a tenth of the CPU of an ``httpx.AsyncClient`` request
    (whose pool also scans every connection on every request, encode/httpx#3215), which is what
    lets one process keep hundreds of requests in flight. One SSL context is built, once, for
    https servers and shared by all connections. ``timeout`` bounds each whole request
    (sending, waiting, reading); a connection that timed out or failed is closed, never reused.
    """

    def __init__(self, max_connections: int, timeout: float, connect_timeout: float,
                 headers: dict[str, str]) -> None:
        import asyncio

        for k, v in headers.items():
            if any(c in f"{k}{v}" for c in "\r\n\0"):
                raise InputError(f"HTTP header {k} holds a line break or NUL character")
        self._slots = asyncio.Semaphore(max_connections)
        self._idle: dict[tuple, list[_Connection]] = {}
        self._open: set[_Connection] = set()
        self._ssl = None
        self._timeout = timeout
        self._connect_timeout = connect_timeout
        self._fixed = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self._targets: dict[str, tuple[tuple, str]] = {}

    def _target(self, url: str) -> tuple[tuple, str]:
        got = self._targets.get(url)
        if got is None:
            parts = urllib.parse.urlsplit(url)
            host = parts.hostname or ""
            port = parts.port or (443 if parts.scheme == "https" else 80)
            path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            netloc = parts.netloc.rsplit("@", 1)[-1]
            prefix = (f"POST {urllib.parse.quote(path, safe='/?&=%:@!$,;+*()~')} HTTP/1.1\r\n"
                      f"Host: {netloc.encode('idna').decode('ascii')}\r\n{self._fixed}")
            got = ((parts.scheme, host, port), prefix)
            self._targets[url] = got
        return got

    def _ssl_context(self):
        if self._ssl is None:
            import httpx  # its context: certifi's CA bundle, SSL_CERT_FILE/SSL_CERT_DIR

            self._ssl = httpx.create_ssl_context()
        return self._ssl

    async def _connect(self, origin: tuple) -> _Connection:
        import asyncio

        scheme, host, port = origin
        ctx = self._ssl_context() if scheme == "https" else None
        reader, writer = await asyncio.open_connection(
            host, port, ssl=ctx, server_hostname=host if ctx else None, limit=2**18)
        conn = _Connection(reader, writer)
        self._open.add(conn)
        return conn

    def _discard(self, conn: _Connection) -> None:
        self._open.discard(conn)
        conn.close()

    async def post(self, url: str, body: bytes, extra: dict[str, str]
                   ) -> tuple[int, dict[str, str], bytes]:
        import asyncio

        origin, prefix = self._target(url)
        head = prefix + "".join(f"{k}: {v}\r\n" for k, v in extra.items()) + \
            f"Content-Length: {len(body)}\r\n\r\n"
        message = head.encode("latin-1") + body
        await self._slots.acquire()
        conn = None
        stage = "connect"
        try:
            idle = self._idle.setdefault(origin, [])
            reused = False
            while idle:
                c = idle.pop()
                if c.usable():
                    conn, reused = c, True
                    break
                self._discard(c)
            if conn is None:
                conn = await asyncio.wait_for(self._connect(origin), self._connect_timeout)
            stage = "read"
            try:
                status, headers, data, keep = await asyncio.wait_for(
                    self._exchange(conn, message), self._timeout)
            except _NoResponse:
                if not reused:
                    raise
                # a kept-alive connection the server closed as we sent: the request never
                # reached it, so it is sent once more on a new connection
                self._discard(conn)
                conn = None
                stage = "connect"
                conn = await asyncio.wait_for(self._connect(origin), self._connect_timeout)
                stage = "read"
                status, headers, data, keep = await asyncio.wait_for(
                    self._exchange(conn, message), self._timeout)
            if keep:
                idle.append(conn)
            else:
                self._discard(conn)
            conn = None
        except asyncio.TimeoutError:
            what = ("ConnectTimeout" if stage == "connect" else "ReadTimeout")
            raise _TransportFailure("timeout", what) from None
        except (OSError, EOFError, ValueError, _ProtocolError, asyncio.IncompleteReadError,
                asyncio.LimitOverrunError) as exc:
            raise _TransportFailure("connection", f"{type(exc).__name__}: {exc}") from None
        finally:
            if conn is not None:  # failed or cancelled mid-request: never reused
                self._discard(conn)
            self._slots.release()
        return status, headers, _decode_body(data, headers)

    async def _exchange(self, conn: _Connection, message: bytes
                        ) -> tuple[int, dict[str, str], bytes, bool]:
        reader, writer = conn.reader, conn.writer
        try:
            writer.write(message)
            await writer.drain()
            line = await reader.readline()
        except (ConnectionResetError, BrokenPipeError) as exc:
            raise _NoResponse(str(exc)) from None
        if not line:
            raise _NoResponse("the server closed the connection without a response")
        while True:
            parts = line.split(None, 2)
            if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
                raise _ProtocolError(f"not an HTTP/1.x status line: {line[:40]!r}")
            version, status = parts[0], int(parts[1])
            headers: dict[str, str] = {}
            for _ in range(256):
                h = await reader.readline()
                if h in (b"\r\n", b"\n"):
                    break
                if not h.endswith(b"\n"):
                    raise _ProtocolError("the connection closed in the response headers")
                k, sep, v = h.partition(b":")
                if not sep:
                    raise _ProtocolError(f"malformed header line {h[:40]!r}")
                key = k.strip().decode("latin-1").lower()
                val = v.strip().decode("latin-1")
                headers[key] = f"{headers[key]}, {val}" if key in headers else val
            else:
                raise _ProtocolError("more than 256 response headers")
            if 100 <= status < 200:  # informational; the response follows
                line = await reader.readline()
                if not line:
                    raise _ProtocolError("the connection closed after a 1xx response")
                continue
            break
        keep = version == b"HTTP/1.1" and "close" not in headers.get("connection", "").lower()
        if status in (204, 304):
            return status, headers, b"", keep
        if "chunked" in headers.get("transfer-encoding", "").lower():
            return status, headers, await self._read_chunked(reader), keep
        if "content-length" in headers:
            n = int(headers["content-length"])
            if not 0 <= n <= _MAX_BODY:
                raise _ProtocolError(f"Content-Length {n} out of range")
            return status, headers, await reader.readexactly(n), keep
        chunks, total = [], 0  # delimited by the end of the connection
        while True:
            part = await reader.read(2**16)
            if not part:
                break
            total += len(part)
            if total > _MAX_BODY:
                raise _ProtocolError("response body too large")
            chunks.append(part)
        return status, headers, b"".join(chunks), False

    @staticmethod
    async def _read_chunked(reader) -> bytes:
        chunks, total = [], 0
        while True:
            line = await reader.readline()
            if not line.endswith(b"\n"):
                raise _ProtocolError("the connection closed in a chunked body")
            size = int(line.split(b";", 1)[0].strip(), 16)
            if size == 0:
                for _ in range(256):  # trailers up to the blank line
                    t = await reader.readline()
                    if t in (b"\r\n", b"\n", b""):
                        break
                return b"".join(chunks)
            total += size
            if total > _MAX_BODY:
                raise _ProtocolError("response body too large")
            chunks.append(await reader.readexactly(size))
            if (await reader.readline()).strip():
                raise _ProtocolError("malformed chunk end")

    async def aclose(self) -> None:
        conns, self._open = list(self._open), set()
        self._idle.clear()
        for c in conns:
            c.close()


class _NoResponse(_ProtocolError):
    """Nothing came back on a connection (the server closed it as the request was sent)."""


class _HttpxSender:
    """Requests through ``httpx.AsyncClient`` and its pool (used behind a proxy from the
    environment, which httpx knows how to reach)."""

    def __init__(self, max_connections: int, timeout: float, connect_timeout: float,
                 headers: dict[str, str]) -> None:
        import httpx

        self._client = httpx.AsyncClient(
            headers=headers, timeout=httpx.Timeout(timeout, connect=connect_timeout),
            limits=httpx.Limits(max_connections=max_connections,
                                max_keepalive_connections=max_connections))

    async def post(self, url: str, body: bytes, extra: dict[str, str]
                   ) -> tuple[int, dict[str, str], bytes]:
        import httpx

        try:
            resp = await self._client.post(url, content=body, headers=extra)
        except httpx.TimeoutException as exc:
            raise _TransportFailure("timeout", type(exc).__name__) from None
        except httpx.TransportError as exc:
            raise _TransportFailure("connection", f"{type(exc).__name__}: {exc}") from None
        return resp.status_code, {k.lower(): v for k, v in resp.headers.items()}, resp.content

    async def aclose(self) -> None:
        await self._client.aclose()


class OpenAIBackend(Backend):
    """Chat completions against any OpenAI-compatible server (vLLM, llama.cpp, Ollama, OpenAI).

    Parameters
    ----------
    model : str
        The served model name (``"model"`` field of the request).
    base_url : str, default "http://localhost:8000/v1"
        Server root; requests go to ``{base_url}/chat/completions``.
    api_key_env : str or None, default "OPENAI_API_KEY"
        Name of the environment variable holding the API key, read when `run` starts.
        ``None`` declares the server keyless (no ``Authorization`` header; ``--no-api-key``).
        A value that looks like a key rather than a variable name is refused
        ([`InputError`][], without echoing it). If the variable is unset
        or empty, `run` raises [`InputError`][], except for a
        server on this machine (``localhost``, ``127.0.0.0/8``, ``::1``), which gets no key and
        a logged warning. The key is never stored, logged, put in a cache key or an error
        message.
    concurrency : int, default 16
        Requests in flight at once. All workers share one HTTP client, one keep-alive
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

    Notes
    -----
    401, 403 and 404 stop the run with `BackendError` (wrong key, model or URL); other
    4xx fail only that request (e.g. a prompt longer than the context). An empty answer is a
    failure of its request, not an answer: it is not stored, and the next run asks again. Each
    request carries the header ``X-Storyeval-Cache-Key`` (the cache key, no secret) to ease
    matching server logs.

    Everything a server sends back is redacted before it is stored, logged or shown, and only
    then cut to length: the key (whole or any fragment of 15+ characters) and any ``Bearer``
    credential become ``***`` in answers, ``finish_reason`` (a string of at most 64 characters,
    else None), error bodies and malformed bodies; token counts are kept only as integers.
    Behind a proxy from the environment (``HTTPS_PROXY``...), httpx's own pool is used.

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

    def __init__(self, model: str, *, base_url: str = "http://localhost:8000/v1",
                 api_key_env: str | None = "OPENAI_API_KEY", concurrency: int = 16,
                 timeout: float = 120.0, max_retries: int = 6, backoff_base: float = 0.5,
                 backoff_max: float = 60.0, extra_body: dict[str, Any] | None = None,
                 random_state: int | None = None) -> None:
        super().__init__(model)
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise InputError(f"base_url must start with http:// or https://, got {base_url!r}")
        if int(concurrency) < 1:
            raise InputError(f"concurrency must be >= 1, got {concurrency}")
        if not timeout > 0:
            raise InputError(f"timeout must be > 0, got {timeout}")
        if int(max_retries) < 0:
            raise InputError(f"max_retries must be >= 0, got {max_retries}")
        self.base_url = base_url.rstrip("/")
        self.api_key_env = check_api_key_env(api_key_env)
        self.concurrency = int(concurrency)
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self.extra_body = dict(extra_body or {})
        self._rng = random.Random(random_state)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "base_url": _safe_url(self.base_url),
                "api_key_env": self.api_key_env, "concurrency": self.concurrency}

    def api_key(self) -> str | None:
        """The key from ``api_key_env`` (None for a keyless server).

        Raises
        ------
        InputError
            The variable is unset or empty and the server is not on this machine.
        """
        if self.api_key_env is None:
            return None
        key = os.environ.get(self.api_key_env, "").strip()
        if key:
            return key
        if _is_loopback(self.base_url):
            logger.warning("environment variable %s is not set: sending no API key to the local "
                           "server %s (pass --no-api-key, or api_key_env=None, to say so)",
                           self.api_key_env, _safe_url(self.base_url))
            return None
        raise InputError(
            f"environment variable {self.api_key_env} (--api-key-env) is not set or empty: "
            f"export the key in it, or pass --no-api-key (api_key_env=None) for a server "
            f"without authentication ({_safe_url(self.base_url)})")

    def _payload(self, req: Request) -> dict[str, Any]:
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

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return retry_after * (1.0 + 0.1 * self._rng.random())
        cap = min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1))
        return self._rng.uniform(0, cap)

    def run(self, requests: Sequence[Request], on_answer: OnAnswer, on_failure: OnFailure, *,
            show_progress: bool | None = None) -> None:
        """Send every request (asyncio, at most ``concurrency`` in flight)."""
        if not requests:
            return
        import_optional("httpx", extra="llm", purpose="the OpenAI-compatible backend")
        asyncio.run(self._run_async(list(requests), on_answer, on_failure, show_progress))

    async def _run_async(self, requests: list[Request], on_answer: OnAnswer,
                         on_failure: OnFailure, show_progress: bool | None) -> None:
        from storyeval._progress import progress_bar

        key = self.api_key()
        redact = _Redactor(key)
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "Accept-Encoding": "gzip, deflate", "User-Agent": "storyeval"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        n_workers = min(self.concurrency, len(requests))
        url = f"{self.base_url}/chat/completions"
        kind = _HttpxSender if _uses_proxy(url) else _ConnectionPool
        if kind is _HttpxSender:
            logger.info("requests go through the proxy of the environment (httpx's pool)")
        sender = kind(n_workers, self.timeout, min(self.timeout, 10.0), headers)
        fatal: list[str] = []
        it = iter(requests)
        try:
            with progress_bar(total=len(requests), desc=f"rate {self.model}", unit="req",
                              show=show_progress) as bar:

                async def worker() -> None:
                    for req in it:  # the shared iterator hands each request to one worker
                        if fatal:
                            return
                        try:
                            ans = await self._one(sender, url, req, redact)
                        except BackendError as exc:
                            fatal.append(str(exc))
                            return
                        if isinstance(ans, Answer):
                            self._deliver(req, ans, on_answer, on_failure)
                        else:
                            on_failure(req, ans)
                        bar.update(1)

                await asyncio.gather(*(worker() for _ in range(n_workers)))
        finally:
            await sender.aclose()
        if fatal:
            raise BackendError(fatal[0])

    async def _one(self, sender, url: str, req: Request, redact: _Redactor) -> Answer | str:
        """One request with retries: an Answer, or a failure message (str, redacted)."""
        body = json.dumps(self._payload(req), ensure_ascii=False, separators=(",", ":"),
                          allow_nan=False).encode("utf-8")
        extra = {"X-Storyeval-Cache-Key": req.key}
        shown_url = _safe_url(url)
        last = "no attempt"
        for attempt in range(1, self.max_retries + 2):
            retry_after = None
            t0 = time.perf_counter()
            try:
                status, headers, data = await sender.post(url, body, extra)
            except _TransportFailure as exc:
                if exc.kind == "timeout":
                    last = f"timeout after {self.timeout:g} s ({exc})"
                else:
                    last = f"connection error: {redact.clip(str(exc), 300)}"
            else:
                if status == 200:
                    parsed = self._parse_body(data, redact)
                    if isinstance(parsed, Answer):
                        parsed.latency_s = time.perf_counter() - t0
                        parsed.attempts = attempt
                        return parsed
                    last = f"malformed answer: {parsed}"
                else:
                    text = data.decode("utf-8", errors="replace")
                    last = f"HTTP {status} from {shown_url}: " + \
                        redact.clip(text, 300).replace("\n", " ")
                    if status in _FATAL_STATUS:
                        hint = {401: "check the API key variable " + repr(self.api_key_env),
                                403: "the key is not allowed to use this model",
                                404: "check --base-url and --model"}[status]
                        raise BackendError(f"{last} ({hint})")
                    if status not in _RETRY_STATUS:
                        return last  # e.g. 400: prompt too long; retrying cannot help
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
        return Answer(text=redact(text),
                      finish_reason=_finish_reason(choice.get("finish_reason"), redact),
                      prompt_tokens=_token_count(usage.get("prompt_tokens")),
                      completion_tokens=_token_count(usage.get("completion_tokens")))


# ---------------------------------------------------------------------------------------------
# Hugging Face transformers, local generation
# ---------------------------------------------------------------------------------------------

def _plain_prompt(messages: Sequence[dict[str, str]]) -> str:
    return "\n\n".join(m["content"] for m in messages)


class HFBackend(Backend):
    """Local generation with Hugging Face transformers (batched, left padding).

    Parameters
    ----------
    model : str
        A local folder (or a hub name when online) of a causal LM.
    batch_size : int, default 8
    device : str, optional
        ``"cuda"``, ``"cpu"``...; default CUDA when available.
    dtype : str, optional
        ``"float16"``, ``"bfloat16"``, ``"float32"``; default the checkpoint's.
    model_obj, tokenizer_obj : optional
        Already loaded objects (skip loading ``model``).

    Notes
    -----
    The chat template of the tokenizer is used when it has one; otherwise the messages'
    contents are joined with blank lines. Requests are grouped by try index, so a batch shares
    one seed: before batch ``b`` (counted from 0 over all batches of one `run` call, in
    order) it calls ``torch.manual_seed(s * 1_000_003 + b)``, where ``s`` is the try's seed
    (``sampling.seed + try_index``); the factor keeps the seeds of different tries apart.
    Results are reproducible for the same requests (so the same set of answers still missing
    from the cache), batch size and hardware, not per request.

    Context rule: a prompt whose tokens plus ``max_tokens`` exceed the model's context
    (`context_length`) is not generated; that request fails with a message giving both
    numbers, recorded as status ``error`` on its row (``rate``, ``pairwise judge``).
    """

    kind = "hf"

    def __init__(self, model: str, *, batch_size: int = 8, device: str | None = None,
                 dtype: str | None = None, model_obj: Any = None,
                 tokenizer_obj: Any = None) -> None:
        super().__init__(model)
        if dtype is not None and dtype not in ("float16", "bfloat16", "float32"):
            raise InputError(f"dtype must be float16, bfloat16 or float32, got {dtype!r}")
        if int(batch_size) < 1:
            raise InputError(f"batch_size must be >= 1, got {batch_size}")
        self.batch_size = int(batch_size)
        self.device = device
        self.dtype = dtype
        self._model = model_obj
        self._tok = tokenizer_obj

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "batch_size": self.batch_size, "device": self.device}

    def _load(self):
        torch = import_optional("torch", extra="llm-hf", purpose="the transformers backend")
        tr = import_optional("transformers", extra="llm-hf", purpose="the transformers backend")
        device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
        if self._tok is None:
            self._tok = tr.AutoTokenizer.from_pretrained(self.model)
        if self._model is None:
            kwargs = {}
            if self.dtype:
                kwargs["dtype"] = getattr(torch, self.dtype)
            self._model = tr.AutoModelForCausalLM.from_pretrained(self.model, **kwargs)
        self._model.to(device).eval()
        tok = self._tok
        tok.padding_side = "left"
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        return torch, device

    def _prompt_text(self, messages: Sequence[dict[str, str]]) -> str:
        tok = self._tok
        if getattr(tok, "chat_template", None):
            return tok.apply_chat_template(list(messages), tokenize=False,
                                           add_generation_prompt=True)
        return _plain_prompt(messages)

    def context_length(self) -> int | None:
        """Positions the model can attend to (``n_positions`` / ``max_position_embeddings`` /
        ``n_ctx`` of its config, capped by the tokenizer's ``model_max_length``); None when
        neither says."""
        cfg = getattr(self._model, "config", None)
        sizes = [getattr(cfg, a, None) for a in ("n_positions", "max_position_embeddings",
                                                  "n_ctx")]
        tok_max = getattr(self._tok, "model_max_length", None)
        sizes.append(tok_max if isinstance(tok_max, int) and tok_max < 10 ** 8 else None)
        sizes = [v for v in sizes if isinstance(v, int) and v > 0]
        return min(sizes) if sizes else None

    def _refuse_too_long(self, reqs: list[Request], max_tokens: int, on_failure: OnFailure,
                         bar: Any) -> list[Request]:
        """The stated rule for prompts longer than the model's context: a request whose prompt
        tokens plus ``max_tokens`` exceed the context length is not generated; it fails with a
        message naming both numbers (the runner records it as status ``error`` with that
        message in the ``error`` column of its row). The other requests go on."""
        limit = self.context_length()
        if limit is None or not reqs:
            return reqs
        texts = [self._prompt_text(r.messages) for r in reqs]
        special = not getattr(self._tok, "chat_template", None)
        lengths = [len(ids) for ids in self._tok(texts, add_special_tokens=special)["input_ids"]]
        keep = []
        for r, n in zip(reqs, lengths):
            if n + int(max_tokens) > limit:
                on_failure(r, f"prompt too long for the model: {n} prompt tokens + max_tokens "
                              f"{int(max_tokens)} > its context of {limit} positions; not "
                              "generated (shorten the prompt or lower max_tokens)")
                bar.update(1)
            else:
                keep.append(r)
        return keep

    def run(self, requests: Sequence[Request], on_answer: OnAnswer, on_failure: OnFailure, *,
            show_progress: bool | None = None) -> None:
        if not requests:
            return
        torch, device = self._load()
        from storyeval._progress import progress_bar

        groups: dict[tuple, list[Request]] = {}
        for r in requests:
            groups.setdefault((r.try_index, r.seed, r.sampling), []).append(r)
        batch_no = 0
        with progress_bar(total=len(requests), desc=f"rate {self.model}", unit="req",
                          show=show_progress) as bar:
            for (_, seed, sp), reqs in groups.items():
                reqs = self._refuse_too_long(reqs, sp.max_tokens, on_failure, bar)
                for start in range(0, len(reqs), self.batch_size):
                    chunk = reqs[start:start + self.batch_size]
                    texts = [self._prompt_text(r.messages) for r in chunk]
                    enc = self._tok(texts, return_tensors="pt", padding=True,
                                    add_special_tokens=not getattr(self._tok, "chat_template", None))
                    enc = {k: v.to(device) for k, v in enc.items()}
                    if seed is not None:
                        torch.manual_seed(int(seed) * 1_000_003 + batch_no)
                    gen_kwargs: dict[str, Any] = {"max_new_tokens": sp.max_tokens,
                                                  "pad_token_id": self._tok.pad_token_id}
                    if sp.temperature > 0:
                        gen_kwargs.update(do_sample=True, temperature=sp.temperature,
                                          top_p=sp.top_p)
                    else:
                        gen_kwargs.update(do_sample=False)
                    t0 = time.perf_counter()
                    with torch.no_grad():
                        out = self._model.generate(**enc, **gen_kwargs)
                    dt = (time.perf_counter() - t0) / len(chunk)
                    n_in = enc["input_ids"].shape[1]
                    new = out[:, n_in:]
                    eos = self._tok.eos_token_id
                    for i, r in enumerate(chunk):
                        toks = new[i]
                        stops = (toks == eos).nonzero() if eos is not None else None
                        if stops is not None and len(stops):
                            n_gen, finish = int(stops[0, 0]) + 1, "stop"
                        else:
                            n_gen, finish = int(toks.shape[0]), "length"
                        text = self._tok.decode(toks[:n_gen], skip_special_tokens=True)
                        self._deliver(r, Answer(text=text, finish_reason=finish,
                                                prompt_tokens=int(enc["attention_mask"][i].sum()),
                                                completion_tokens=n_gen, latency_s=dt),
                                      on_answer, on_failure)
                    bar.update(len(chunk))
                    batch_no += 1


# ---------------------------------------------------------------------------------------------
# vLLM offline engine
# ---------------------------------------------------------------------------------------------

class VLLMBackend(Backend):
    """The vLLM offline engine (``vllm.LLM.chat``), when vLLM is installed (GPU nodes).

    Parameters
    ----------
    model : str
        Model folder or name.
    chunk_size : int, default 512
        Requests handed to the engine at once; answers are persisted after each chunk, so a
        crash loses at most one chunk of work.
    engine_kwargs : dict, optional
        Passed to ``vllm.LLM`` (``tensor_parallel_size``, ``gpu_memory_utilization``,
        ``max_model_len``...).

    Notes
    -----
    Per-request seeds are passed to ``vllm.SamplingParams(seed=...)``. Serving one model on many
    GPUs or nodes is better done with vLLM's OpenAI-compatible server and
    `OpenAIBackend` with a high ``concurrency``.
    """

    kind = "vllm"

    def __init__(self, model: str, *, chunk_size: int = 512,
                 engine_kwargs: dict[str, Any] | None = None) -> None:
        super().__init__(model)
        if int(chunk_size) < 1:
            raise InputError(f"chunk_size must be >= 1, got {chunk_size}")
        self.chunk_size = int(chunk_size)
        self.engine_kwargs = dict(engine_kwargs or {})
        self._llm = None

    def run(self, requests: Sequence[Request], on_answer: OnAnswer, on_failure: OnFailure, *,
            show_progress: bool | None = None) -> None:
        if not requests:
            return
        try:
            import vllm
        except ImportError as exc:
            raise MissingDependencyError(
                "the vLLM backend needs vLLM on a GPU machine: pip install vllm (it pins its own "
                "torch); or serve the model with `vllm serve` and use --backend openai") from exc
        from storyeval._progress import progress_bar

        if self._llm is None:
            self._llm = vllm.LLM(model=self.model, **self.engine_kwargs)
        with progress_bar(total=len(requests), desc=f"rate {self.model}", unit="req",
                          show=show_progress) as bar:
            for start in range(0, len(requests), self.chunk_size):
                chunk = list(requests[start:start + self.chunk_size])
                params = [vllm.SamplingParams(temperature=r.sampling.temperature,
                                              top_p=r.sampling.top_p,
                                              max_tokens=r.sampling.max_tokens, seed=r.seed)
                          for r in chunk]
                t0 = time.perf_counter()
                outs = self._llm.chat([list(r.messages) for r in chunk], params, use_tqdm=False)
                dt = (time.perf_counter() - t0) / len(chunk)
                for r, o in zip(chunk, outs):
                    comp = o.outputs[0]
                    self._deliver(r, Answer(text=comp.text, finish_reason=comp.finish_reason,
                                            prompt_tokens=len(o.prompt_token_ids or []),
                                            completion_tokens=len(comp.token_ids),
                                            latency_s=dt), on_answer, on_failure)
                bar.update(len(chunk))


def make_backend(kind: str, model: str, **options: Any) -> Backend:
    """Build a backend by name: ``"openai"``, ``"hf"`` or ``"vllm"``."""
    classes = {"openai": OpenAIBackend, "hf": HFBackend, "vllm": VLLMBackend}
    if kind not in classes:
        raise InputError(f"backend must be one of {sorted(classes)}, got {kind!r}")
    return classes[kind](model, **options)

