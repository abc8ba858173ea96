"""Local generation backends: Hugging Face transformers (batched, left padding) and the vLLM
offline engine. torch, transformers and vllm are imported when a backend runs, never at
``import storyeval``."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from storyeval._optional import import_optional
from storyeval.exceptions import InputError, MissingDependencyError
from storyeval.llm.backend_base import Backend
from storyeval.llm.exchange import (
    Answer,
    OnAnswer,
    OnFailure,
    Request,
)

__all__ = ["HFBackend", "VLLMBackend"]



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
        known = [v for v in sizes if isinstance(v, int) and v > 0]
        return min(known) if known else None

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
