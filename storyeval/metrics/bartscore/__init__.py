"""BARTScore: mean token log-likelihood of a target given a source under a seq2seq LM
(metric card: ``README.md`` here)."""

from __future__ import annotations

import hashlib
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

__all__ = ["COMBINATIONS", "DEFAULT_MODEL", "DIRECTIONS", "BartScoreMetric"]

DEFAULT_MODEL = "facebook/bart-large-cnn"
#: direction -> (source input, target input); HANNA's names in brackets in the docs.
DIRECTIONS = {
    "ref->story": ("reference", "story"),
    "story->ref": ("story", "reference"),
    "prompt->story": ("prompt", "story"),
    "story->prompt": ("story", "prompt"),
}
#: combination -> the two directions averaged (BARTScore's F score: mean of both directions).
COMBINATIONS = {
    "ref<->story": ("ref->story", "story->ref"),
    "prompt<->story": ("prompt->story", "story->prompt"),
}
_LOADED: dict[tuple, tuple] = {}


def _folder_fingerprint(path: Path) -> str:
    """Hash of a local model folder's file names, sizes and modification times."""
    h = hashlib.sha256()
    for f in sorted(path.rglob("*")):
        if f.is_file():
            st = f.stat()
            h.update(f"{f.relative_to(path)}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()[:16]


def _target_logprobs(torch, logits, labels, elements: int = 1 << 22):
    """log p(label) at each of the given positions (``logits``: positions x vocabulary).

    log p(y) = x_y - m - log sum_v exp(x_v - m) with m the row maximum: the exponentials are
    taken in float32 and summed in float64, so the log-normaliser is accurate to about 1e-7
    (a float32 log-softmax over a large vocabulary is off by up to ~1e-6 per token, more than
    the 1e-6 agreement with the reference formula allows) without a float64 copy of the
    logits. Done in slices of about ``elements`` values to bound the temporary memory."""
    rows = max(1, elements // max(1, logits.shape[-1]))
    parts = []
    for k in range(0, logits.shape[0], rows):
        x = logits[k:k + rows].float()
        top = x.max(dim=-1, keepdim=True).values
        shifted = x - top
        target = shifted.gather(-1, labels[k:k + rows, None])[:, 0].double()
        total = shifted.exp_().sum(dim=-1, dtype=torch.float64)
        parts.append(target - torch.log(total))
    return torch.cat(parts) if parts else logits.new_zeros(0, dtype=torch.float64)


def _token_batches(order: Sequence[int], length, budget: int) -> list[list[int]]:
    """Consecutive groups of ``order`` (sorted longest first) whose count times their
    longest ``length`` stays within ``budget`` tokens (at least one item each)."""
    batches: list[list[int]] = []
    for k in order:
        if batches and (len(batches[-1]) + 1) * length(batches[-1][0]) <= budget:
            batches[-1].append(k)
        else:
            batches.append([k])
    return batches


def _pad(torch, seqs: Sequence[Sequence[int]], pad: int):
    """Right-padded ids and their attention mask."""
    width = max(len(x) for x in seqs)
    ids = torch.full((len(seqs), width), pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for r, x in enumerate(seqs):
        ids[r, :len(x)] = torch.tensor(x, dtype=torch.long)
        mask[r, :len(x)] = 1
    return ids, mask


def _decoder_logits(model, src, src_mask, labels):
    """Teacher-forced logits: decoder inputs are the labels shifted right after the decoder
    start token. Given as decoder inputs (not as labels) so the model computes no loss of
    its own over the whole vocabulary."""
    prepare = getattr(model, "prepare_decoder_input_ids_from_labels", None)
    if prepare is None:
        return model(input_ids=src, attention_mask=src_mask, labels=labels).logits
    return model(input_ids=src, attention_mask=src_mask,
                 decoder_input_ids=prepare(labels=labels)).logits


@dataclass
class BartScoreMetric(Metric):
    """BARTScore (Yuan et al., 2021) in the directions HANNA reports, and their combinations.

    Parameters
    ----------
    model : str
        Seq2seq model name or local folder (default ``facebook/bart-large-cnn``, which needs the
        network once; offline, pass a local folder holding a tokenizer and weights).
    directions : sequence of str
        Any of ``ref->story``, ``story->ref``, ``prompt->story``, ``story->prompt`` and the
        combinations ``ref<->story``, ``prompt<->story`` (default: all; those whose inputs are
        absent from the data are left out).
    max_length : int, optional
        Token limit of source and target (default: the model's, 1024 for BART); longer texts
        are truncated with a `TruncationWarning` and a count.
    device : str, optional
        ``"cpu"``, ``"cuda"``, ...; default cuda when available.
    batch_size : int
        Size of a forward pass (default 4): pairs sorted by length share a batch of at most
        ``batch_size`` x ``max_length`` padded tokens (``batch_size`` pairs at the full
        length, more shorter ones).
    dtype : {"float32", "bfloat16", "float16"}, optional
        Precision of the model's weights (default float32, the checkpoint as loaded); the
        log-softmax is always taken in float64. The deviation from float32 is measured on
        ``docs/metric-fidelity.md``.

    Notes
    -----
    For a source x and a target y = (y_1..y_m) (tokenised with the model's special tokens):
    BARTScore(x -> y) = (1/m) sum_t log p(y_t | y_<t, x), the mean token log-likelihood
    (higher is better, always <= 0), with teacher forcing as in Yuan et al.'s
    ``BARTScorer.score``; the log-softmax is taken in float64. A combination is the arithmetic
    mean of its two directions: Yuan et al.'s F score (r <-> h), the mean of precision
    (r -> h) and recall (h -> r). Equal to the formula evaluated pair by pair to 1e-6
    (``docs/metric-fidelity.md``).

    References
    ----------
    1. Yuan, W., Neubig, G., Liu, P. (2021). BARTScore: Evaluating generated text as text
       generation. NeurIPS.

    Validated against the formula computed pair by pair from the model's logits in float64
    (to 1e-6, batched with padding), and by the property that after training on copies a
    copied target outscores a shuffled one (``tests/test_metrics_bartscore.py``).

    Examples
    --------
    >>> [m.name for m in BartScoreMetric(directions=["ref->story"]).measures()]
    ['BARTScore ref->story (bart-large-cnn)']
    """

    model: str = DEFAULT_MODEL
    directions: Sequence[str] = tuple(DIRECTIONS) + tuple(COMBINATIONS)
    max_length: int | None = None
    device: str | None = None
    batch_size: int = 4
    dtype: str | None = None
    n_truncated_: int = field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        self.name = "bartscore"
        self.directions = tuple(self.directions)
        bad = [d for d in self.directions if d not in DIRECTIONS and d not in COMBINATIONS]
        if bad or not self.directions:
            raise InputError(f"directions: unknown {bad}; choose from "
                             f"{list(DIRECTIONS) + list(COMBINATIONS)}")
        if int(self.batch_size) < 1:
            raise InputError(f"batch_size: must be >= 1, got {self.batch_size!r}")
        if self.dtype not in (None, "float32", "bfloat16", "float16"):
            raise InputError(f"dtype: expected float32, bfloat16 or float16, got {self.dtype!r}")
        if self.dtype == "float32":
            self.dtype = None  # the same numbers, the same cache entries
        self._objects: tuple | None = None
        self._label: str | None = None

    @classmethod
    def from_model(cls, model, tokenizer, *, label: str, **options) -> BartScoreMetric:
        """A metric over an already loaded model and tokenizer (not cached on disk, since the
        weights are not identified by a name)."""
        self = cls(model=f"<in-memory {label}>", **options)
        self._objects = (tokenizer, model)
        self._label = label
        self.cacheable = False
        return self

    # -- configuration ------------------------------------------------------------------------
    def label(self) -> str:
        if self._label:
            return self._label
        return Path(str(self.model).rstrip("/")).name or str(self.model)

    def _needed(self) -> list[str]:
        """The plain directions to compute (those listed and those combinations need)."""
        need: list[str] = []
        for d in self.directions:
            for x in COMBINATIONS.get(d, (d,)):
                if x not in need:
                    need.append(x)
        return need

    def measures(self, *, has_reference: bool = True, has_prompt: bool = True) -> list[Measure]:
        out = []
        for d in self.directions:
            inputs = {i for x in (COMBINATIONS.get(d) or (d,)) for i in DIRECTIONS[x]}
            inputs.discard("story")
            if ("reference" in inputs and not has_reference) or (
                    "prompt" in inputs and not has_prompt):
                continue
            kind = "reference-based" if "reference" in inputs else "reference-free"
            how = ("F: mean of the two directions" if d in COMBINATIONS
                   else f"source {DIRECTIONS[d][0]}, target {DIRECTIONS[d][1]}")
            out.append(Measure(f"BARTScore {d} ({self.label()})", f"BARTScore {d}", kind,
                               "model-based", tuple(sorted(inputs)),
                               implementation="BARTScorer.score of Yuan et al. (2021): mean "
                               "token log-likelihood of the target given the source",
                               variant=f"model {self.label()}, {how}"
                               + (f", model in {self.dtype}" if self.dtype else "")))
        return out

    def config(self) -> dict:
        path = Path(str(self.model))
        finger = _folder_fingerprint(path) if path.is_dir() else None
        out = {"model": str(self.model), "local_files": finger,
               "max_length": self.max_length, "version": 1}
        if self.dtype:  # float32 keeps the keys (and cache entries) it always had
            out["dtype"] = self.dtype
        return out

    # -- model --------------------------------------------------------------------------------
    def _load(self):
        if self._objects is not None:
            return self._objects
        torch = import_optional("torch", extra="metrics", purpose="BARTScore")
        transformers = import_optional("transformers", extra="metrics", purpose="BARTScore")
        device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
        key = (str(self.model), device, self.config()["local_files"], self.dtype)
        if key not in _LOADED:
            try:
                tok = transformers.AutoTokenizer.from_pretrained(str(self.model))
                mod = transformers.AutoModelForSeq2SeqLM.from_pretrained(str(self.model))
            except (OSError, ValueError) as exc:
                offline = any(os.environ.get(v) == "1" for v in
                              ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))
                raise InputError(
                    f"BARTScore: could not load the seq2seq model {self.model!r}"
                    f"{' (offline mode is on)' if offline else ''}: {type(exc).__name__}: "
                    f"{str(exc).splitlines()[0].rstrip('.') if str(exc) else ''}. A hub model such as "
                    f"{DEFAULT_MODEL} must be downloaded once with network access; otherwise "
                    "pass --bartscore-model PATH (options={'bartscore': {'model': PATH}}) with a "
                    "local folder holding a tokenizer and a seq2seq model (save_pretrained)."
                ) from exc
            mod.eval()
            if self.dtype:
                mod = mod.to(getattr(torch, self.dtype))
            _LOADED[key] = (tok, mod.to(device))
        return _LOADED[key]

    def _limit(self, tokenizer, model) -> int:
        if self.max_length is not None:
            return int(self.max_length)
        lim = min(int(tokenizer.model_max_length),
                  int(getattr(model.config, "max_position_embeddings", 10 ** 6)))
        return lim

    def _token_ids(self, tokenizer, texts: Sequence[str], limit: int) -> dict[str, list[int]]:
        """Ids of each distinct text, with the tokenizer's special tokens, cut to ``limit``
        by the tokenizer's own truncation (special tokens kept); counts and reports the cuts
        (a `TruncationWarning` with the count, the limit and the start of the first text cut;
        the count is added to ``n_truncated_``)."""
        unique = list(dict.fromkeys(texts))
        full = tokenizer(unique, verbose=False)["input_ids"]
        cut = tokenizer(unique, max_length=limit, truncation=True)["input_ids"]
        long = [t for t, ids in zip(unique, full) if len(ids) > limit]
        long_set = set(long)
        n_cut = sum(t in long_set for t in texts)
        if n_cut:
            self.n_truncated_ += n_cut
            start = " ".join(long[0].split()[:8])
            warnings.warn(f"BARTScore: {n_cut} text(s) longer than {limit} tokens were truncated "
                          f"to their first tokens (max_length), e.g. the text starting "
                          f"{start!r}", TruncationWarning, stacklevel=4)
        return {t: list(ids) for t, ids in zip(unique, cut)}

    def loglik(self, sources: Sequence[str], targets: Sequence[str]) -> np.ndarray:
        """Mean token log-likelihood of each target given its source; shape ``(n,)``.

        Each distinct (source, target) pair is computed once; pairs are sorted by length and
        batched by a token budget (``batch_size`` pairs of the model's maximum length), the
        log-likelihoods stay on the device until one transfer at the end, and only the
        target positions (no padding) enter the log-softmax (float64 sums). Scores do not depend on
        the batching (to float rounding)."""
        torch = import_optional("torch", extra="metrics", purpose="BARTScore")
        tokenizer, model = self._load()
        limit = self._limit(tokenizer, model)
        sources, targets = list(sources), list(targets)
        ids = self._token_ids(tokenizer, sources + targets, limit)
        pairs = list(dict.fromkeys(zip(sources, targets)))
        order = sorted(range(len(pairs)), key=lambda k: -(len(ids[pairs[k][0]])
                                                        + len(ids[pairs[k][1]])))
        device = next(model.parameters()).device
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        budget = int(self.batch_size) * limit
        means = []
        with torch.inference_mode():
            for batch in _token_batches(order, lambda k: max(len(ids[pairs[k][0]]),
                                                             len(ids[pairs[k][1]])), budget):
                src, src_mask = _pad(torch, [ids[pairs[k][0]] for k in batch], pad)
                labels, mask = _pad(torch, [ids[pairs[k][1]] for k in batch], pad)
                src, src_mask, labels, mask = (t.to(device) for t in (src, src_mask, labels,
                                                                       mask))
                logits = _decoder_logits(model, src, src_mask, labels)
                for r, k in enumerate(batch):  # each target's own positions: views, no copy
                    n_tgt = len(ids[pairs[k][1]])
                    means.append(_target_logprobs(torch, logits[r, :n_tgt],
                                                  labels[r, :n_tgt]).mean().reshape(1))
        flat = torch.cat(means).cpu().numpy() if means else np.zeros(0)
        by_pair = dict(zip((pairs[k] for k in order), flat))
        return np.array([by_pair[p] for p in zip(sources, targets)], dtype=float)

    def score_batch(self, stories, references, prompts, measures) -> np.ndarray:
        texts = {"story": stories, "reference": references, "prompt": prompts}
        plain: dict[str, np.ndarray] = {}
        for d in self._needed():
            src_name, tgt_name = DIRECTIONS[d]
            rows = [i for i in range(len(stories))
                    if texts[src_name][i] is not None and texts[tgt_name][i] is not None]
            col = np.full(len(stories), np.nan)
            if rows:
                col[rows] = self.loglik([texts[src_name][i] for i in rows],
                                        [texts[tgt_name][i] for i in rows])
            plain[d] = col
        out = np.full((len(stories), len(measures)), np.nan)
        by_name = {f"BARTScore {d} ({self.label()})": d for d in self.directions}
        for j, m in enumerate(measures):
            d = by_name[m.name]
            if d in COMBINATIONS:
                a, b = COMBINATIONS[d]
                out[:, j] = (plain[a] + plain[b]) / 2
            else:
                out[:, j] = plain[d]
        return out
