"""Bradley-Terry reward models as a storyeval metric: ``storyeval score --metrics rm:PATH``
(metric card: ``README.md`` here)."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from storyeval._optional import import_optional
from storyeval.exceptions import InputError
from storyeval.metrics.base import Measure, Metric
from storyeval.metrics.bertscore import TruncationWarning

__all__ = ["RewardModelMetric", "chat_text", "load_reward_model", "pad_batch"]

_LOADED: dict[tuple, tuple] = {}


def chat_text(tokenizer, prompt: str | None, story: str) -> tuple[str, bool]:
    """The text a reward model scores for (prompt, story), and whether the tokenizer's special
    tokens are still to be added.

    With a chat template: the template applied to the conversation ``user: prompt``,
    ``assistant: story`` (the story alone as the assistant turn when there is no prompt); the
    template writes the special tokens itself. Without one: ``prompt + "\\n\\n" + story`` (or
    the story) with the tokenizer's own special tokens."""
    if getattr(tokenizer, "chat_template", None):
        messages = ([] if prompt is None else [{"role": "user", "content": prompt}]) + [
            {"role": "assistant", "content": story}]
        return tokenizer.apply_chat_template(messages, tokenize=False), False
    return (story if prompt is None else f"{prompt}\n\n{story}"), True


def pad_batch(torch, seqs: Sequence[Sequence[int]], pad: int, *, left: bool = False):
    """Padded ids and attention mask (right padding, or left padding for generation)."""
    width = max(len(x) for x in seqs)
    ids = torch.full((len(seqs), width), pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for r, x in enumerate(seqs):
        if not len(x):
            continue
        sl = slice(width - len(x), width) if left else slice(0, len(x))
        ids[r, sl] = torch.tensor(list(x), dtype=torch.long)
        mask[r, sl] = 1
    return ids, mask


def model_limit(tokenizer, model, max_length: int | None) -> int:
    """Token limit: ``max_length`` when given, else the smaller of the tokenizer's
    ``model_max_length`` and the model's positions (when either says)."""
    if max_length is not None:
        return int(max_length)
    cfg = model.config
    sizes = [getattr(cfg, a, None) for a in ("max_position_embeddings", "n_positions")]
    tok_max = getattr(tokenizer, "model_max_length", None)
    sizes.append(tok_max if isinstance(tok_max, int) and tok_max < 10 ** 8 else None)
    known = [int(v) for v in sizes if isinstance(v, int) and v > 0]
    return min(known) if known else 10 ** 9


def load_reward_model(path: str, *, kind: str, device: str | None, dtype: str | None):
    """(tokenizer, model, device) for a local folder (or a hub name when online); ``kind``
    ``"classifier"`` (AutoModelForSequenceClassification) or ``"causal"``. Loaded once per
    process and configuration."""
    torch = import_optional("torch", extra="metrics", purpose="reward models")
    tr = import_optional("transformers", extra="metrics", purpose="reward models")
    dev = device or ("cuda" if torch.cuda.is_available() else "cpu")
    key = (str(path), kind, dev, dtype)
    if key in _LOADED:
        return _LOADED[key]
    auto = (tr.AutoModelForSequenceClassification if kind == "classifier"
            else tr.AutoModelForCausalLM)
    kwargs = {"dtype": getattr(torch, dtype)} if dtype else {}
    try:
        tok = tr.AutoTokenizer.from_pretrained(str(path))
        model = auto.from_pretrained(str(path), **kwargs)
    except (OSError, ValueError) as exc:
        offline = any(os.environ.get(v) == "1" for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise InputError(f"could not load the {'reward' if kind == 'classifier' else 'causal'} "
                         f"model {str(path)!r}{' (offline mode is on)' if offline else ''}: "
                         f"{type(exc).__name__}: {first}. Pass a local folder holding a "
                         "tokenizer and the model (save_pretrained).") from exc
    model.eval()
    if tok.pad_token_id is None:  # decoder-only checkpoints often define no pad token
        tok.pad_token = tok.eos_token
    if getattr(model.config, "pad_token_id", None) is None:
        # sequence classifiers find each row's last real token through pad_token_id
        model.config.pad_token_id = tok.pad_token_id
    _LOADED[key] = (tok, model.to(dev), dev)
    return _LOADED[key]


@dataclass
class RewardModelMetric(Metric):
    """A Bradley-Terry reward model: the single logit of a sequence classifier for prompt and
    story.

    Parameters
    ----------
    model : str
        Local folder of an ``AutoModelForSequenceClassification`` with one output
        (``num_labels=1``) and its tokenizer (or a hub name when online).
    device : str, optional
        ``"cpu"``, ``"cuda"``...; default CUDA when available.
    batch_size : int, default 8
        Stories per forward pass (sorted by length, right padding).
    max_length : int, optional
        Token limit (default: the model's); longer inputs keep their first tokens, with a
        `TruncationWarning` and a count.
    dtype : {"float32", "bfloat16", "float16"}, optional
        Precision of the weights (default: the checkpoint's).

    Notes
    -----
    The score of story y for prompt x is r(x, y), the logit the model outputs for the text of
    `chat_text`: the tokenizer's chat template over ``user: x`` / ``assistant: y`` when it has
    one, else ``x + "\\n\\n" + y`` with the tokenizer's special tokens. Under the
    Bradley-Terry model P(y1 preferred to y2 | x) = sigmoid(r(x, y1) - r(x, y2)), so RM
    accuracy on preference pairs is the share with r(chosen) > r(rejected)
    (``storyeval pairwise pointwise --preferences P --scores S --tie-credit 0``).

    Validated against a plain transformers loop (one story at a time, no padding) on a
    random-initialised Llama classifier, to 1e-5 (tests/test_metrics_reward.py).

    Examples
    --------
    >>> [m.name for m in RewardModelMetric(model="models/my-rm").measures()]
    ['RM (my-rm)']
    """

    model: str = ""
    device: str | None = None
    batch_size: int = 8
    max_length: int | None = None
    dtype: str | None = None
    n_truncated_: int = field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        self.name = "rm"
        if not str(self.model).strip():
            raise InputError("rm: give the reward model's folder, e.g. --metrics rm:PATH")
        if int(self.batch_size) < 1:
            raise InputError(f"batch_size: must be >= 1, got {self.batch_size!r}")
        if self.dtype not in (None, "float32", "bfloat16", "float16"):
            raise InputError(f"dtype: expected float32, bfloat16 or float16, got {self.dtype!r}")

    def label(self) -> str:
        return Path(str(self.model).rstrip("/")).name or str(self.model)

    def measures(self, *, has_reference: bool = True, has_prompt: bool = True) -> list[Measure]:
        return [Measure(f"RM ({self.label()})", "RM", "reference-free", "model-based",
                        implementation="Bradley-Terry reward model: the one logit of a "
                        "sequence classifier",
                        variant=f"model {self.label()}, prompt and story through the chat "
                        "template when the tokenizer has one"
                        + (f", model in {self.dtype}" if self.dtype else ""))]

    def uses(self) -> tuple[str, ...]:
        return ("prompt",)  # the prompt changes the score when given, so it keys the cache

    def config(self) -> dict:
        from storyeval.metrics.bartscore import _folder_fingerprint

        path = Path(str(self.model))
        return {"model": str(self.model),
                "local_files": _folder_fingerprint(path) if path.is_dir() else None,
                "max_length": self.max_length, "dtype": self.dtype, "version": 1}

    def _ids(self, tok, prompts, stories, limit: int) -> list[list[int]]:
        out, cut = [], 0
        for p, s in zip(prompts, stories):
            text, special = chat_text(tok, p, s)
            ids = tok(text, add_special_tokens=special)["input_ids"]
            if len(ids) > limit:
                cut += 1
                ids = ids[:limit]
            out.append(list(ids))
        if cut:
            self.n_truncated_ += cut
            warnings.warn(f"rm: {cut} input(s) longer than {limit} tokens keep their first "
                          f"{limit} tokens (max_length)", TruncationWarning, stacklevel=4)
        return out

    def rewards(self, prompts: Sequence[str | None], stories: Sequence[str]) -> np.ndarray:
        """r(prompt, story) for each story; shape ``(n,)``."""
        torch = import_optional("torch", extra="metrics", purpose="reward models")
        tok, model, dev = load_reward_model(self.model, kind="classifier", device=self.device,
                                            dtype=self.dtype)
        n_labels = int(getattr(model.config, "num_labels", 1))
        if n_labels != 1:
            raise InputError(f"rm: {self.model!r} has {n_labels} outputs; a Bradley-Terry reward "
                             "model has one (num_labels=1)")
        ids = self._ids(tok, list(prompts), list(stories), model_limit(tok, model,
                                                                       self.max_length))
        order = sorted(range(len(ids)), key=lambda k: -len(ids[k]))  # similar lengths share
        out = np.full(len(ids), np.nan)
        size = int(self.batch_size)
        with torch.inference_mode():
            for b in range(0, len(order), size):
                rows = order[b:b + size]
                x, mask = pad_batch(torch, [ids[k] for k in rows], tok.pad_token_id)
                logits = model(input_ids=x.to(dev), attention_mask=mask.to(dev)).logits
                out[rows] = logits[:, 0].float().cpu().numpy()
        return out

    def score_batch(self, stories, references, prompts, measures) -> np.ndarray:
        rows = [i for i, s in enumerate(stories) if s is not None]
        out = np.full((len(stories), 1), np.nan)
        if rows:
            out[rows, 0] = self.rewards([prompts[i] for i in rows], [stories[i] for i in rows])
        return out
