"""Load a causal language model and compute per-token log-probability statistics.

Everything heavy (torch, transformers) is imported inside the functions.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from storyeval._optional import import_optional
from storyeval._progress import progress_bar
from storyeval.exceptions import InputError

BosPolicy = Literal["reference", "auto", "always", "never"]
BOS_POLICIES: tuple[str, ...] = ("reference", "auto", "always", "never")

__all__ = ["TokenStatistics", "load_causal_lm", "resolve_device", "token_statistics"]


@dataclass(frozen=True)
class TokenStatistics:
    """Per-token statistics of one text under a causal LM.

    Attributes
    ----------
    token_ids : numpy.ndarray of int, shape (n,)
        The scored (predicted) tokens ``x_1..x_n``.
    logprob : numpy.ndarray of float, shape (n,)
        ``log p(x_t | x_<t)`` (natural log).
    mu : numpy.ndarray of float, shape (n,)
        Mean of ``log p(v | x_<t)`` under the next-token distribution:
        ``sum_v p_v log p_v``.
    sigma : numpy.ndarray of float, shape (n,)
        Standard deviation of ``log p(v | x_<t)`` under the same distribution.
    bos_prepended : bool
        Whether a BOS token stands in front of the text (put there by the policy, or by the
        tokenizer under ``bos="reference"``), so that the text's first token is scored.
    """

    token_ids: np.ndarray
    logprob: np.ndarray
    mu: np.ndarray
    sigma: np.ndarray
    bos_prepended: bool

    @property
    def n_tokens(self) -> int:
        """Number of scored tokens."""
        return int(self.logprob.shape[0])


def resolve_device(device: str = "auto") -> str:
    """``"auto"`` -> ``"cuda"`` if available, else ``"mps"`` if available, else ``"cpu"``.

    Any other value is checked to be usable and returned unchanged.
    """
    torch = import_optional("torch", extra="contamination", purpose="Min-K% scoring")
    if device == "auto":
        if torch.cuda.is_available():
            return "cuda"
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            return "mps"
        return "cpu"
    try:
        torch.empty(0, device=device)
    except (RuntimeError, AssertionError, ValueError) as exc:
        raise InputError(f"device {device!r} is not usable here: {exc}") from exc
    return device


def load_causal_lm(name_or_path: str | os.PathLike, *, device: str = "auto",
                   dtype: str | None = None) -> tuple[Any, Any]:
    """Load a causal LM and its tokenizer with ``transformers`` (a local folder or a hub name).

    Parameters
    ----------
    name_or_path : str or path-like
        A local folder holding ``config.json`` and the weights, or a model name on the
        Hugging Face hub (needs the network unless it is already in the local cache).
    device : str, default "auto"
        See `resolve_device`.
    dtype : str, optional
        A torch dtype name (``"float64"``, ``"float32"``, ``"bfloat16"``, ``"float16"``);
        default: the checkpoint's own dtype as chosen by transformers.

    Returns
    -------
    (model, tokenizer)
        The model in eval mode on ``device``.

    Raises
    ------
    InputError
        If the model cannot be loaded; the message says whether the path does not exist
        locally and whether the hub is switched off (``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE``).
    """
    transformers = import_optional("transformers", extra="contamination",
                                   purpose="loading a causal LM")
    torch = import_optional("torch", extra="contamination", purpose="loading a causal LM")
    name = str(name_or_path)
    dev = resolve_device(device)
    kwargs: dict[str, Any] = {}
    if dtype is not None:
        if not hasattr(torch, dtype):
            raise InputError(f"dtype {dtype!r} is not a torch dtype")
        # transformers renamed torch_dtype to dtype in 4.56
        major_minor = tuple(int(x) for x in transformers.__version__.split(".")[:2])
        kwargs["dtype" if major_minor >= (4, 56) else "torch_dtype"] = getattr(torch, dtype)
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(name)
        model = transformers.AutoModelForCausalLM.from_pretrained(name, **kwargs)
    except (OSError, ValueError) as exc:
        local = Path(name).exists()
        offline = any(os.environ.get(v, "") not in ("", "0") for v in
                      ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))
        where = ("the local folder exists but could not be read as a causal LM"
                 if local else
                 "it is not a local folder, so it was looked up on the Hugging Face hub"
                 + (" but the hub is switched off (HF_HUB_OFFLINE/TRANSFORMERS_OFFLINE set)"
                    if offline else " and the look-up failed (no network or unknown name)"))
        raise InputError(f"--model {name!r}: could not load a causal LM: {where}. "
                         f"Pass a local folder saved with save_pretrained(). "
                         f"Cause: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}") from exc
    model.to(dev)
    model.eval()
    return model, tokenizer


def _context_length(model: Any, tokenizer: Any) -> int:
    cfg = model.config
    for attr in ("n_positions", "max_position_embeddings", "n_ctx", "seq_length"):
        value = getattr(cfg, attr, None)
        if isinstance(value, int) and value > 0:
            ctx = value
            break
    else:
        ctx = None
    tok_max = getattr(tokenizer, "model_max_length", None)
    if isinstance(tok_max, int) and 0 < tok_max < 10**8:
        ctx = tok_max if ctx is None else min(ctx, tok_max)
    if ctx is None:
        raise InputError("cannot tell the model's context length from its config; "
                         "pass max_length")
    return ctx


def _encode(text: str, tokenizer: Any, bos: BosPolicy) -> tuple[list[int], bool]:
    """Token ids of ``text`` with the BOS policy applied; position 0 is never scored."""
    ids = list(tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])
    bos_id = getattr(tokenizer, "bos_token_id", None)
    if bos == "reference":
        # as the reference code: tokenizer.encode(text) with the tokenizer's own special
        # tokens (LLaMA-style tokenizers add BOS, GPT-2/GPT-NeoX-style ones add nothing)
        full = [int(t) for t in tokenizer(text, verbose=False)["input_ids"]]
        added = (bos_id is not None and len(full) > len(ids) and len(full) > 0
                 and full[0] == int(bos_id))
        return full, added
    if bos == "never":
        return ids, False
    if bos_id is None:
        if bos == "always":
            raise InputError("bos='always' but the tokenizer defines no BOS token "
                             "(bos_token_id is None); use bos='never' or 'auto'")
        return ids, False
    return [int(bos_id)] + ids, True


def _windows(n_ids: int, max_length: int, stride: int) -> list[tuple[int, int, int]]:
    """Windows ``(begin, end, first_target)`` covering targets ``1..n_ids-1`` exactly once.

    A target t is scored in the first window that reaches it, so every target sees at least
    ``max_length - stride`` tokens of context once the first window is full.
    """
    if n_ids <= max_length:
        return [(0, n_ids, 1)]
    out = []
    prev_end = 1  # targets < prev_end already scored; target 0 is never scored
    begin = 0
    while True:
        end = min(begin + max_length, n_ids)
        out.append((begin, end, prev_end))
        if end == n_ids:
            return out
        prev_end = end
        begin += stride


def _next_token_moments(torch: Any, logits: Any, target: Any, elements: int = 1 << 22):
    """Per scored position: ``log p(target)``, ``mu = sum_v p_v log p_v`` and
    ``sigma = sqrt(sum_v p_v (log p_v - mu)^2)``; shape ``(n, 3)``, float32 (float64 for a
    float64 model), on the device.

    With y = x - max(x) (x the logits), e = exp(y) and s = sum(e): ``log p_v = y_v - log s``,
    so ``mu`` is the e-weighted mean of y minus ``log s`` and ``sigma`` is the e-weighted
    spread of y, taken around its mean (no cancellation). Two temporaries of the chunk's size
    and nine passes over the vocabulary, without materialising ``log p``; rows go in chunks of
    about ``elements`` values to bound the memory.
    """
    rows = max(1, elements // max(1, logits.shape[-1]))
    out = []
    for k in range(0, logits.shape[0], rows):
        x = logits[k:k + rows]
        # half precisions are upcast; a float64 model keeps its precision (machine-independent
        # digits, see train_tiny_causal_lm)
        x = x if x.dtype == torch.float64 else x.float()
        y = x - x.max(dim=-1, keepdim=True).values
        chosen = y.gather(-1, target[k:k + rows, None])[:, 0]
        e = torch.exp(y)
        s = e.sum(dim=-1)
        mean_y = torch.linalg.vecdot(e, y) / s
        y.sub_(mean_y[:, None]).square_()
        var = torch.linalg.vecdot(e, y) / s
        log_s = torch.log(s)
        out.append(torch.stack([chosen - log_s, mean_y - log_s, var.clamp_min(0).sqrt()],
                               dim=1))
    if not out:
        return logits.new_zeros((0, 3), dtype=torch.float32)
    return torch.cat(out)


def token_statistics(
    texts: Sequence[str],
    model: Any,
    tokenizer: Any,
    *,
    bos: BosPolicy = "reference",
    max_length: int | None = None,
    stride: int | None = None,
    batch_size: int = 8,
    show_progress: bool | None = None,
) -> list[TokenStatistics]:
    """Per-token log-probabilities and next-token distribution moments for each text.

    Parameters
    ----------
    texts : sequence of str
        The texts.
    model, tokenizer
        A ``transformers`` causal LM (in eval mode, on its device) and its tokenizer.
    bos : {"reference", "auto", "always", "never"}, default "reference"
        BOS policy. The first position of the input is never scored (it has no context).
        ``"reference"`` (default) does what the reference code of Shi et al. (2024) and
        Min-K%++ does (``tokenizer.encode(text)``, then score positions ``1..``): the text
        is tokenized *with* the tokenizer's own special tokens, so a LLaMA-style tokenizer
        that adds BOS gets every text token scored, and a GPT-2/GPT-NeoX-style tokenizer that
        adds nothing gets its first text token used as context only (``N - 1`` scored).
        The other policies tokenize without special tokens: ``"auto"`` and ``"always"`` put
        the tokenizer's BOS token in front, so every text token ``x_1..x_N`` is predicted
        (the first from BOS alone; storyeval's default before ``"reference"``); ``"auto"``
        silently skips this when the tokenizer has no BOS token, ``"always"`` then raises.
        ``"never"`` feeds the text alone (``N - 1`` tokens scored).
    max_length : int, optional
        Window length in tokens; default the model's context length (``n_positions`` /
        ``max_position_embeddings``, capped by ``tokenizer.model_max_length``).
    stride : int, optional
        Shift between consecutive windows for texts longer than ``max_length``; default
        ``max_length // 2``. Each token is scored once, in the first window that holds it,
        with at least ``max_length - stride`` tokens of context.
    batch_size : int, default 8
        Windows per forward pass. Windows are right-padded; padded positions are masked in
        attention and never scored, so results do not depend on the batch size.
    show_progress : bool, optional
        Progress bar (default: only on a terminal).

    Returns
    -------
    list of TokenStatistics
        One per text, in order.

    Notes
    -----
    With ``p = softmax(logits_t)`` over the vocabulary V:
    ``logprob_t = log p(x_t)``, ``mu_t = sum_v p_v log p_v`` and
    ``sigma_t = sqrt(sum_v p_v (log p_v)^2 - mu_t^2)``, computed in float32 (float64 for a
    float64 model) on the model's device from the logits (``log p_v = x_v - logsumexp(x)``;
    the spread is taken around its mean), a whole batch at a time; the results come to the host in one transfer.

    Examples
    --------
    >>> stats = token_statistics(["Once upon a time."], model, tokenizer)  # doctest: +SKIP
    >>> stats[0].logprob.shape  # doctest: +SKIP
    (5,)

    Validated against a direct forward pass and ``torch.log_softmax`` on the same model
    (``tests/test_contamination.py``), for single windows, sliding windows and batches.
    """
    torch = import_optional("torch", extra="contamination", purpose="Min-K% scoring")
    if bos not in BOS_POLICIES:
        raise InputError(f"bos must be one of {BOS_POLICIES}, got {bos!r}")
    if isinstance(texts, str):
        raise InputError("texts must be a sequence of strings, not a single string")
    if batch_size < 1:
        raise InputError(f"batch_size must be >= 1, got {batch_size}")
    ctx = _context_length(model, tokenizer) if max_length is None else int(max_length)
    if ctx < 2:
        raise InputError(f"max_length must be >= 2, got {ctx}")
    stride = ctx // 2 if stride is None else int(stride)
    if not 1 <= stride <= ctx - 1:
        raise InputError(f"stride must be between 1 and max_length - 1 = {ctx - 1}, got {stride}")

    encoded: list[tuple[list[int], bool]] = []
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise InputError(f"texts[{i}] is {type(text).__name__}, not str")
        encoded.append(_encode(text, tokenizer, bos))

    # Every window of every text: (text index, begin, end, first_target)
    jobs = [(i, b, e, f) for i, (ids, _) in enumerate(encoded) for (b, e, f) in
            _windows(len(ids), ctx, stride) if e - b >= 2]
    # Longest first: similar lengths share a batch, so little padding is computed.
    jobs.sort(key=lambda j: -(j[2] - j[1]))
    device = next(model.parameters()).device
    n_targets = sum(e - max(f, b + 1) for _, b, e, f in jobs)
    # Per window, on the device until the end (one transfer, no per-text synchronisation):
    # the scored targets and their three statistics, concatenated over all windows.
    targets, stats = [], []
    with torch.inference_mode(), progress_bar(total=n_targets, desc="scoring tokens",
                                              unit="tok", show=show_progress) as bar:
        for start in range(0, len(jobs), batch_size):
            batch = jobs[start:start + batch_size]
            width = max(e - b for _, b, e, _ in batch)
            ids = torch.zeros((len(batch), width), dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for r, (i, b, e, f) in enumerate(batch):
                ids[r, : e - b] = torch.tensor(encoded[i][0][b:e], dtype=torch.long)
                mask[r, : e - b] = 1
            ids, mask = ids.to(device), mask.to(device)
            logits = model(input_ids=ids, attention_mask=mask).logits
            for r, (i, b, e, f) in enumerate(batch):
                first = max(f, b + 1)
                # logits at window position p predict the token at p + 1 (a view, no copy)
                target = ids[r, first - b: e - b]
                stats.append(_next_token_moments(torch, logits[r, first - b - 1: e - b - 1],
                                                 target))
                targets.append(target)
                bar.update(e - first)
    if jobs:
        flat_tok = torch.cat(targets).cpu().numpy()
        flat = torch.cat(stats).double().cpu().numpy()
    pieces: list[list[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]] = [
        [] for _ in texts]
    pos = 0
    for i, b, e, f in jobs:
        first = max(f, b + 1)
        n = e - first
        block = flat[pos:pos + n]
        pieces[i].append((first, flat_tok[pos:pos + n], block[:, 0], block[:, 1], block[:, 2]))
        pos += n
    out = []
    for i, (ids_i, bos_used) in enumerate(encoded):
        parts = sorted(pieces[i], key=lambda p: p[0])
        if parts:
            tok, lp, mu, sd = (np.concatenate([p[k] for p in parts]) for k in range(1, 5))
        else:
            tok = np.zeros(0, dtype=np.int64)
            lp = mu = sd = np.zeros(0)
        out.append(TokenStatistics(token_ids=tok, logprob=lp, mu=mu, sigma=sd,
                                   bos_prepended=bos_used))
    return out
