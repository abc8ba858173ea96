"""A tiny GPT-2 trained from scratch on given texts: an offline model with known members.

No causal LM with real weights can be downloaded in offline settings, yet Min-K% needs a model
whose training data is known. `train_tiny_causal_lm` trains a byte-level BPE tokenizer
and a small GPT-2 on the "member" texts in seconds on a CPU; held-out texts are then
non-members by construction. Used by the tests, the benchmark and the documentation demo.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from storyeval._optional import import_optional
from storyeval._progress import progress
from storyeval.exceptions import InputError

__all__ = ["train_tiny_causal_lm"]


def train_tiny_causal_lm(
    texts: Sequence[str],
    *,
    vocab_size: int = 512,
    n_layer: int = 2,
    n_head: int = 2,
    n_embd: int = 64,
    context: int = 128,
    steps: int = 300,
    batch_size: int = 16,
    learning_rate: float = 3e-3,
    tokenizer_texts: Sequence[str] | None = None,
    random_state: int = 0,
    out_dir: str | os.PathLike | None = None,
    num_threads: int | None = 1,
    dtype: str = "float32",
    show_progress: bool | None = None,
) -> tuple[Any, Any]:
    """Train a byte-level BPE tokenizer and a small GPT-2 on ``texts``.

    Parameters
    ----------
    texts : sequence of str
        Training ("member") texts. Each is encoded as ``<|endoftext|> text``; random windows
        of ``context`` tokens from the concatenation form the batches.
    vocab_size, n_layer, n_head, n_embd, context : int
        Tokenizer and model sizes (``context`` is ``n_positions``).
    steps, batch_size : int
        AdamW steps and windows per step.
    learning_rate : float
    tokenizer_texts : sequence of str, optional
        Texts the tokenizer is trained on (default ``texts``). Passing members and
        non-members together keeps the vocabulary from favouring the members.
    random_state : int, default 0
        Seeds torch and the window sampler; with the same inputs the model is the same.
    out_dir : path-like, optional
        If given, the model and tokenizer are saved there (``save_pretrained``), loadable with
        `storyeval.contamination.load_causal_lm`.
    num_threads : int or None, default 1
        torch intra-op threads while training (restored afterwards). The model is so small
        that one thread is as fast as several on an idle machine and several times faster on
        a busy one; None keeps torch's setting.
    dtype : {"float32", "float64"}, default "float32"
        The dtype the model is trained (and saved) in. Training amplifies the last bits in
        which CPUs differ (torch's vectorised kernels, BLAS builds): in float32 two machines
        can end with models whose scores of two texts swap order. In float64 those
        differences stay near 1e-12, far below any printed digit, so a number computed from
        the model is the same on every machine (the documentation demo trains in float64).
    show_progress : bool, optional

    Returns
    -------
    (model, tokenizer)
        ``transformers.GPT2LMHeadModel`` in eval mode on the CPU and a
        ``PreTrainedTokenizerFast`` with ``<|endoftext|>`` as BOS, EOS and padding token.

    Examples
    --------
    >>> model, tok = train_tiny_causal_lm(["once upon a time"] * 4, steps=5)  # doctest: +SKIP
    """
    torch = import_optional("torch", extra="contamination", purpose="training a tiny LM")
    transformers = import_optional("transformers", extra="contamination",
                                   purpose="training a tiny LM")
    tokenizers = import_optional("tokenizers", extra="contamination",
                                 purpose="training a tiny tokenizer")
    if dtype not in ("float32", "float64"):
        raise InputError(f"dtype must be 'float32' or 'float64', got {dtype!r}")
    texts = [t for t in texts]
    if not texts or not all(isinstance(t, str) and t for t in texts):
        raise InputError("texts must be a non-empty sequence of non-empty strings")
    special = "<|endoftext|>"
    bpe = tokenizers.ByteLevelBPETokenizer()
    bpe.train_from_iterator(list(tokenizer_texts) if tokenizer_texts is not None else texts,
                            vocab_size=vocab_size, min_frequency=2, special_tokens=[special],
                            show_progress=False)
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer, bos_token=special, eos_token=special,
        pad_token=special, unk_token=special, model_max_length=context)
    eot = tokenizer.convert_tokens_to_ids(special)
    stream: list[int] = []
    for t in texts:
        stream.append(eot)
        stream.extend(tokenizer(t, add_special_tokens=False, verbose=False)["input_ids"])
    if len(stream) < context + 1:
        stream = stream * ((context + 1) // len(stream) + 1)
    torch.manual_seed(random_state)
    config = transformers.GPT2Config(
        vocab_size=len(tokenizer), n_positions=context, n_embd=n_embd, n_layer=n_layer,
        n_head=n_head, bos_token_id=eot, eos_token_id=eot, pad_token_id=eot,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    # "eager" attention: the default implementation is chosen by the transformers release.
    config._attn_implementation = "eager"
    model = transformers.GPT2LMHeadModel(config).to(getattr(torch, dtype))
    draw_initial_weights(model, n_layer=n_layer, random_state=random_state)
    previous_threads = torch.get_num_threads()
    if num_threads is not None:
        if num_threads < 1:
            raise InputError(f"num_threads must be >= 1, got {num_threads}")
        torch.set_num_threads(num_threads)
    try:
        _train(torch, model, stream, context=context, steps=steps, batch_size=batch_size,
               learning_rate=learning_rate, random_state=random_state,
               show_progress=show_progress)
    finally:
        torch.set_num_threads(previous_threads)
    model.eval()
    if out_dir is not None:
        model.save_pretrained(out_dir)
        tokenizer.save_pretrained(out_dir)
    return model, tokenizer


def draw_initial_weights(model: Any, *, n_layer: int, random_state: int) -> None:
    """Overwrite every parameter of a GPT-2 with values drawn from our own seeded generator.

    transformers' initialisation (and so the trained model and every number computed from it)
    changes between releases; drawing the weights here makes them a function of
    ``random_state`` alone. The scheme is GPT-2's: normal(0, 0.02) for embeddings and linear
    weights, 0.02 / sqrt(2 n_layer) for the residual projections (``c_proj``), ones and zeros for
    the layer norms, zeros for biases. Parameters are visited in name order, so the draw does
    not depend on the order in which a release registers them; tied weights are drawn once.
    """
    import numpy as np
    import torch

    rng = np.random.default_rng(random_state)
    with torch.no_grad():
        for name, param in sorted(model.named_parameters(), key=lambda item: item[0]):
            leaf = name.rsplit(".", 2)
            is_norm = any(part.startswith("ln_") for part in leaf[:-1])
            if is_norm and name.endswith(".weight"):
                values = np.ones(param.shape)
            elif name.endswith(".bias") or is_norm:
                values = np.zeros(param.shape)
            else:
                std = 0.02 / np.sqrt(2 * n_layer) if ".c_proj." in name else 0.02
                values = rng.normal(0.0, std, size=param.shape)
            param.copy_(torch.from_numpy(values).to(param.dtype))


def _train(torch, model, stream, *, context, steps, batch_size, learning_rate, random_state,
           show_progress) -> None:
    model.train()
    data = torch.tensor(stream, dtype=torch.long)
    gen = torch.Generator().manual_seed(random_state)
    opt = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.0)
    for _ in progress(range(steps), total=steps, desc="training tiny LM", unit="step",
                      show=show_progress):
        starts = torch.randint(0, data.numel() - context, (batch_size,), generator=gen)
        batch = torch.stack([data[s: s + context] for s in starts.tolist()])
        loss = model(input_ids=batch, attention_mask=torch.ones_like(batch), labels=batch).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
