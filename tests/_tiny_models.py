"""Tiny random seq2seq models with tokenizers trained on the fly, for tests (no download).

Reusable by any test helper: :func:`train_tokenizer` (a byte-level BPE wrapped as a
``PreTrainedTokenizerFast`` that adds ``<s> ... </s>`` like BART's), :func:`tiny_bart` (a
one-layer ``BartForConditionalGeneration``), :func:`train_copy` (a few Adam steps on the copy
task) and :func:`save_tiny_bart` (a folder loadable by ``from_pretrained``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]

CORPUS = [
    "The old sailor told the children a story about the sea.",
    "A dragon slept under the mountain for a thousand years.",
    "She opened the door and found a letter on the floor.",
    "The robot learned to paint sunsets over the quiet city.",
    "Every night the lighthouse keeper counted the passing ships.",
    "The king lost his crown in the river and never found it.",
    "A small fox followed the travellers through the snowy forest.",
    "He wrote a song for his mother and sang it at the wedding.",
    "The train stopped in a village where nobody had ever left.",
    "Two friends built a boat from the wood of an old barn.",
]


def train_tokenizer(texts: Sequence[str] = CORPUS, *, vocab_size: int = 400):
    """A byte-level BPE tokenizer trained on ``texts`` (about 0.1 s)."""
    from tokenizers import ByteLevelBPETokenizer, processors
    from transformers import PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(list(texts), vocab_size=vocab_size, min_frequency=1,
                            special_tokens=SPECIALS, show_progress=False)
    bos, eos = bpe.token_to_id("<s>"), bpe.token_to_id("</s>")
    bpe.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", bos), ("</s>", eos)])
    return PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, bos_token="<s>",
                                   eos_token="</s>", pad_token="<pad>", unk_token="<unk>",
                                   mask_token="<mask>", model_max_length=128)


def tiny_bart(tokenizer, *, seed: int = 0, d_model: int = 32):
    """A random one-layer BART sized for ``tokenizer`` (deterministic given ``seed``)."""
    import torch
    from transformers import BartConfig, BartForConditionalGeneration

    torch.manual_seed(seed)
    config = BartConfig(
        vocab_size=len(tokenizer), d_model=d_model, encoder_layers=1, decoder_layers=1,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=2 * d_model,
        decoder_ffn_dim=2 * d_model, max_position_embeddings=128,
        pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id, decoder_start_token_id=tokenizer.eos_token_id,
        forced_eos_token_id=None, dropout=0.0, attention_dropout=0.0)
    model = BartForConditionalGeneration(config)
    model.eval()
    return model


def train_copy(model, tokenizer, texts: Sequence[str] = CORPUS, *, steps: int = 60,
               lr: float = 3e-3, seed: int = 0):
    """Train ``model`` for ``steps`` Adam steps to copy each text (source = target)."""
    import torch

    torch.manual_seed(seed)
    batch = tokenizer(list(texts), padding=True, return_tensors="pt")
    labels = batch["input_ids"].clone()
    labels[batch["attention_mask"] == 0] = -100
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    for _ in range(steps):
        opt.zero_grad()
        loss = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                     labels=labels).loss
        loss.backward()
        opt.step()
    model.eval()
    return model


def save_tiny_bart(folder: str | Path, *, train_steps: int = 0, seed: int = 0) -> Path:
    """Build (and optionally copy-train) a tiny BART and save model + tokenizer in ``folder``."""
    folder = Path(folder)
    tok = train_tokenizer()
    model = tiny_bart(tok, seed=seed)
    if train_steps:
        train_copy(model, tok, steps=train_steps, seed=seed)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def train_roberta_tokenizer(folder: str | Path, texts: Sequence[str] = CORPUS, *,
                            vocab_size: int = 400, model_max_length: int = 64):
    """A RoBERTa tokenizer (``<s>`` = CLS, ``</s>`` = SEP) on a byte-level BPE trained on
    ``texts``, saved in ``folder`` (vocab.json, merges.txt and the tokenizer files)."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaTokenizer

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(list(texts), vocab_size=vocab_size, min_frequency=1,
                            special_tokens=SPECIALS, show_progress=False)
    bpe.save_model(str(folder))
    tok = RobertaTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"),
                           model_max_length=model_max_length)
    tok.save_pretrained(folder)
    return tok


def save_tiny_roberta(folder: str | Path, *, tokenizer: str = "roberta", layers: int = 3,
                      hidden: int = 32, max_tokens: int = 64, seed: int = 0) -> Path:
    """A random RobertaModel saved with its tokenizer in ``folder``.

    ``tokenizer="roberta"``: a RobertaTokenizer (CLS/SEP defined); ``"bare"``: the byte-level
    BPE of `train_tokenizer` saved as a plain fast tokenizer that names only BOS/EOS (no
    CLS/SEP token). The weights are drawn by NumPy's seeded generator (normal, sd 0.2; layer
    norms at 1/0), so no number depends on the transformers release. ``max_tokens``: the
    tokenizer's model_max_length; the model has ``max_tokens + 2`` positions as RoBERTa.
    """
    import numpy as np
    import torch
    from transformers import RobertaConfig, RobertaModel

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if tokenizer == "roberta":
        tok = train_roberta_tokenizer(folder, list(CORPUS) * 3, model_max_length=max_tokens)
    else:
        tok = train_tokenizer(list(CORPUS) * 3)
        tok.model_max_length = max_tokens
        tok.save_pretrained(folder)
    config = RobertaConfig(
        vocab_size=len(tok), hidden_size=hidden, num_hidden_layers=layers,
        num_attention_heads=2, intermediate_size=2 * hidden,
        max_position_embeddings=max_tokens + 2, type_vocab_size=1,
        pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id)
    model = RobertaModel(config)
    rng = np.random.default_rng(seed)
    state = model.state_dict()
    for name, value in state.items():
        if "LayerNorm" not in name:
            state[name] = torch.tensor(rng.normal(0.0, 0.2, tuple(value.shape)),
                                       dtype=torch.float32)
    model.load_state_dict(state)
    model.save_pretrained(folder)
    return folder


#: A minimal chat template (role tags), as instruct checkpoints ship one.
CHAT_TEMPLATE = ("{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}</s>{% endfor %}"
                 "{% if add_generation_prompt %}<assistant>{% endif %}")


def _numpy_weights(model, seed: int) -> None:
    """Overwrite every weight with NumPy's seeded normal draws (sd 0.2; norms at 1), so no
    number depends on how a transformers release initialises a model."""
    import numpy as np
    import torch

    rng = np.random.default_rng(seed)
    state = model.state_dict()
    for name, value in state.items():
        if "norm" in name.lower():
            state[name] = torch.ones_like(value)
        else:
            state[name] = torch.tensor(rng.normal(0.0, 0.2, tuple(value.shape)),
                                       dtype=torch.float32)
    model.load_state_dict(state)


def save_tiny_llama(folder: str | Path, *, head: str = "classifier", chat: bool = True,
                    seed: int = 0, hidden: int = 32, layers: int = 2) -> Path:
    """A random two-layer Llama saved with a byte-level BPE tokenizer in ``folder``.

    ``head="classifier"``: ``LlamaForSequenceClassification`` with one logit (a
    Bradley-Terry reward model); ``"causal"``: ``LlamaForCausalLM`` (a generative RM).
    ``chat``: give the tokenizer `CHAT_TEMPLATE`."""
    from transformers import LlamaConfig, LlamaForCausalLM, LlamaForSequenceClassification

    folder = Path(folder)
    tok = train_tokenizer(list(CORPUS) * 3 + ["A B A B Answer: A Answer: B"] * 5)
    tok.model_max_length = 512
    if chat:
        tok.chat_template = CHAT_TEMPLATE
    config = LlamaConfig(vocab_size=len(tok), hidden_size=hidden, intermediate_size=2 * hidden,
                         num_hidden_layers=layers, num_attention_heads=2, num_key_value_heads=2,
                         max_position_embeddings=512, num_labels=1,
                         pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id,
                         eos_token_id=tok.eos_token_id, tie_word_embeddings=False)
    cls = LlamaForSequenceClassification if head == "classifier" else LlamaForCausalLM
    model = cls(config)
    _numpy_weights(model, seed)
    model.eval()
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder
