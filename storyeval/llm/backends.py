"""Generation backends: an OpenAI-compatible HTTP client, local Hugging Face transformers, and
the vLLM offline engine.

Every backend takes a list of :class:`Request` and calls ``on_answer(request, answer)`` as soon as
each answer is available (the runner persists it there), and ``on_failure(request, message)``
for a request that could not be answered after the retries. Heavy libraries (httpx, torch,
transformers, vllm) are imported when a backend runs, never at ``import storyeval``.
"""

from __future__ import annotations

import abc
import asyncio
import email.utils
import logging
import os
import random
import time
from collections.abc import Callable, Sequence
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
    """Base class: ``kind`` and ``model`` enter the cache key; :meth:`run` generates."""

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


class _Redactor:
    def __init__(self, secret: str | None) -> None:
        self.secret = secret

    def __call__(self, text: str) -> str:
        if self.secret and len(self.secret) >= 4:
            text = text.replace(self.secret, "***")
        return text


class OpenAIBackend(Backend):
    """Chat completions against any OpenAI-compatible server (vLLM, llama.cpp, Ollama, OpenAI).

    Parameters
    ----------
    model : str
        The served model name (``"model"`` field of the request).
    base_url : str, default "http://localhost:8000/v1"
        Server root; requests go to ``{base_url}/chat/completions``.
    api_key_env : str or None, default "OPENAI_API_KEY"
        Name of the environment variable holding the API key, read when :meth:`run` starts. If it
        is unset or empty, no ``Authorization`` header is sent (local servers). The key is never
        stored, logged, put in a cache key or an error message.
    concurrency : int, default 16
        Requests in flight at once (one HTTP connection each). Raise it to keep a multi-GPU vLLM
        server busy (e.g. 256).
    timeout : float, default 120
        Seconds per HTTP request (read timeout); connection timeout is ``min(timeout, 10)``.
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
    401, 403 and 404 stop the run with :class:`BackendError` (wrong key, model or URL); other
    4xx fail only that request (e.g. a prompt longer than the context). Each request carries the
    header ``X-Storyeval-Cache-Key`` (the cache key, no secret) to ease matching server logs.

    Validated against a scripted local server (``tests/_openai_stub_server.py``): 429 with
    ``Retry-After``, 5xx, malformed and slow answers, SIGKILL and resume, a canary key.

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
        self.api_key_env = api_key_env
        self.concurrency = int(concurrency)
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self.extra_body = dict(extra_body or {})
        self._rng = random.Random(random_state)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "base_url": self.base_url, "api_key_env": self.api_key_env,
                "concurrency": self.concurrency}

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
        import httpx

        from storyeval._progress import progress_bar

        key = os.environ.get(self.api_key_env, "") if self.api_key_env else ""
        redact = _Redactor(key or None)
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        # One client with one keep-alive connection per worker: httpx's shared pool costs CPU
        # that grows with the number of connections (encode/httpx#3215); per-worker pools keep
        # the client cheap at high concurrency.
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        timeout = httpx.Timeout(self.timeout, connect=min(self.timeout, 10.0))
        url = f"{self.base_url}/chat/completions"
        fatal: list[str] = []
        it = iter(requests)
        with progress_bar(total=len(requests), desc=f"rate {self.model}", unit="req",
                          show=show_progress) as bar:

            async def worker() -> None:
                async with httpx.AsyncClient(headers=headers, limits=limits,
                                             timeout=timeout) as client:
                    for req in it:  # the shared iterator hands each request to one worker
                        if fatal:
                            return
                        try:
                            ans = await self._one(client, url, req, redact)
                        except BackendError as exc:
                            fatal.append(str(exc))
                            return
                        if isinstance(ans, Answer):
                            on_answer(req, ans)
                        else:
                            on_failure(req, ans)
                        bar.update(1)

            await asyncio.gather(*(worker() for _ in range(min(self.concurrency, len(requests)))))
        if fatal:
            raise BackendError(fatal[0])

    async def _one(self, client, url: str, req: Request, redact: _Redactor) -> Answer | str:
        """One request with retries: an Answer, or a failure message (str)."""
        import httpx

        payload = self._payload(req)
        last = "no attempt"
        for attempt in range(1, self.max_retries + 2):
            retry_after = None
            t0 = time.perf_counter()
            try:
                resp = await client.post(url, json=payload,
                                         headers={"X-Storyeval-Cache-Key": req.key})
            except httpx.TimeoutException as exc:
                last = f"timeout after {self.timeout:g} s ({type(exc).__name__})"
            except httpx.TransportError as exc:
                last = f"connection error: {type(exc).__name__}: {redact(str(exc))}"
            else:
                status = resp.status_code
                if status == 200:
                    parsed = self._parse_body(resp)
                    if isinstance(parsed, Answer):
                        parsed.text = redact(parsed.text)  # a server echoing the key
                        parsed.latency_s = time.perf_counter() - t0
                        parsed.attempts = attempt
                        return parsed
                    last = f"malformed answer: {redact(parsed)}"
                else:
                    body = redact(resp.text[:300].replace("\n", " "))
                    last = f"HTTP {status} from {url}: {body}"
                    if status in _FATAL_STATUS:
                        hint = {401: "check the API key variable " + repr(self.api_key_env),
                                403: "the key is not allowed to use this model",
                                404: "check --base-url and --model"}[status]
                        raise BackendError(f"{last} ({hint})")
                    if status not in _RETRY_STATUS:
                        return last  # e.g. 400: prompt too long; retrying cannot help
                    retry_after = _retry_after_seconds(resp.headers.get("retry-after"))
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
    def _parse_body(resp) -> Answer | str:
        try:
            data = resp.json()
        except ValueError:
            return f"body is not JSON: {resp.text[:80]!r}"
        try:
            choice = data["choices"][0]
            text = choice["message"]["content"]
        except (KeyError, IndexError, TypeError):
            return f"no choices[0].message.content in {str(data)[:80]!r}"
        if not isinstance(text, str):
            return f"message content is {type(text).__name__}, not a string"
        usage = data.get("usage") or {}
        return Answer(text=text, finish_reason=choice.get("finish_reason"),
                      prompt_tokens=usage.get("prompt_tokens"),
                      completion_tokens=usage.get("completion_tokens"))


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
    one seed: before batch ``b`` (counted from 0 over all batches of one :meth:`run` call, in
    order) it calls ``torch.manual_seed(s * 1_000_003 + b)``, where ``s`` is the try's seed
    (``sampling.seed + try_index``); the factor keeps the seeds of different tries apart.
    Results are reproducible for the same requests (so the same set of answers still missing
    from the cache), batch size and hardware, not per request.
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
        torch = import_optional("torch", extra="llm", purpose="the transformers backend")
        tr = import_optional("transformers", extra="llm", purpose="the transformers backend")
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
                        on_answer(r, Answer(text=text, finish_reason=finish,
                                            prompt_tokens=int(enc["attention_mask"][i].sum()),
                                            completion_tokens=n_gen, latency_s=dt))
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
    :class:`OpenAIBackend` with a high ``concurrency``.
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
                    on_answer(r, Answer(text=comp.text, finish_reason=comp.finish_reason,
                                        prompt_tokens=len(o.prompt_token_ids or []),
                                        completion_tokens=len(comp.token_ids), latency_s=dt))
                bar.update(len(chunk))


def make_backend(kind: str, model: str, **options: Any) -> Backend:
    """Build a backend by name: ``"openai"``, ``"hf"`` or ``"vllm"``."""
    classes = {"openai": OpenAIBackend, "hf": HFBackend, "vllm": VLLMBackend}
    if kind not in classes:
        raise InputError(f"backend must be one of {sorted(classes)}, got {kind!r}")
    return classes[kind](model, **options)

