"""Generative reward models (GenRM): a causal LM judges two stories side by side, and its
verdict is read from the log-probabilities of the single tokens ``A`` and ``B``.

Each pair is shown in both orders (story_a first, then story_b first); the probability that
story_a is better is the mean over the two orders of P(its letter | the letters), which cancels
a constant preference for one position. With ``reasoning=True`` the model first writes its
reasoning (greedy, up to ``max_new_tokens``), then the cue ``"\\nAnswer:"`` is appended and the
letter log-probabilities are read at the next token, as for the direct verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from storyeval._optional import import_optional
from storyeval.exceptions import InputError

__all__ = ["DIRECT_TEMPLATE", "REASONING_TEMPLATE", "GenerativeRewardModel", "genrm_accuracy"]

#: The judging request without reasoning (placeholders {prompt}, {first}, {second}).
DIRECT_TEMPLATE = (
    "Below are a writing prompt and two stories written for it.\n\nPrompt:\n{prompt}\n\n"
    "Story A:\n{first}\n\nStory B:\n{second}\n\nWhich story is better written and more "
    "engaging? Answer with a single letter, A or B.")
#: The judging request with reasoning: the model explains, then the cue asks for the letter.
REASONING_TEMPLATE = (
    "Below are a writing prompt and two stories written for it.\n\nPrompt:\n{prompt}\n\n"
    "Story A:\n{first}\n\nStory B:\n{second}\n\nWhich story is better written and more "
    "engaging? Explain your reasoning in a few sentences, then end with 'Answer: A' or "
    "'Answer: B'.")
#: Appended after the reasoning; the letter is the next token.
ANSWER_CUE = "\nAnswer:"


def _single_token(tok, text: str) -> int:
    ids = tok(text, add_special_tokens=False)["input_ids"]
    if len(ids) != 1:
        raise InputError(f"genrm: the choice {text!r} is {len(ids)} tokens for this tokenizer; "
                         "a verdict is read from single tokens: pass choices that are one "
                         "token each (e.g. 'A,B' or ' A, B')")
    return int(ids[0])


@dataclass
class GenerativeRewardModel:
    """A causal LM as a pairwise judge, read through two single-token log-probabilities.

    Parameters
    ----------
    model : str
        Local folder of a causal LM and its tokenizer (a hub name only when online).
    device : str, optional
        ``"cpu"``, ``"cuda"``...; default CUDA when available.
    batch_size : int, default 8
        Requests per forward pass (left padding with explicit positions).
    dtype : {"float32", "bfloat16", "float16"}, optional
        Precision of the weights (default: the checkpoint's); the log-softmax is in float64.
    reasoning : bool, default False
        Let the model reason first (greedy decoding, ``max_new_tokens``), then read the letter
        after ``"\\nAnswer:"``.
    max_new_tokens : int, default 256
        Reasoning length limit.
    choices : (str, str), optional
        The two verdict tokens; default ``("A", "B")`` without reasoning and ``(" A", " B")``
        after the cue. Each must be one token.
    template : str, optional
        Replacement request with ``{prompt}``, ``{first}``, ``{second}``.
    answer_cue : str, default ``"\\nAnswer:"``
        Appended after the reasoning (e.g. ``"\\nPreferred:"`` for LitBench's GenRM-CoT
        prompt).

    Notes
    -----
    For request text q (the template through the tokenizer's chat template with the generation
    prompt when it has one, else q itself with the tokenizer's special tokens) and next-token
    log-probabilities l_A, l_B of the two choice tokens, P(first better) = exp(l_A) /
    (exp(l_A) + exp(l_B)). For a pair (a, b): p_a = (P_AB(first) + (1 - P_BA(first))) / 2
    over the two orders (one order: that order's value). The verdict is ``A`` when
    p_a > 0.5, ``B`` below, ``same`` at exactly 0.5.

    Validated against a plain transformers loop (one request at a time, no padding,
    ``model.generate`` for the reasoning) on a random-initialised Llama, to 1e-5
    (tests/test_pairwise_genrm.py).
    """

    model: str = ""
    device: str | None = None
    batch_size: int = 8
    dtype: str | None = None
    reasoning: bool = False
    max_new_tokens: int = 256
    choices: tuple[str, str] | None = None
    template: str | None = None
    answer_cue: str = ANSWER_CUE

    def __post_init__(self) -> None:
        if not str(self.model).strip():
            raise InputError("genrm: give the model's folder")
        if int(self.batch_size) < 1:
            raise InputError(f"batch_size: must be >= 1, got {self.batch_size!r}")
        if int(self.max_new_tokens) < 1:
            raise InputError(f"max_new_tokens: must be >= 1, got {self.max_new_tokens!r}")
        if self.choices is not None and len(self.choices) != 2:
            raise InputError(f"choices: give two tokens, got {self.choices!r}")
        text = self.template or (REASONING_TEMPLATE if self.reasoning else DIRECT_TEMPLATE)
        for key in ("{prompt}", "{first}", "{second}"):
            if key not in text:
                raise InputError(f"genrm template: placeholder {key} is missing")

    def label(self) -> str:
        from pathlib import Path

        return Path(str(self.model).rstrip("/")).name or str(self.model)

    def request_text(self, prompt: str, first: str, second: str) -> tuple[str, bool]:
        """The text of one request and whether the tokenizer's special tokens are added."""
        from storyeval.metrics.reward import load_reward_model

        tok, _, _ = load_reward_model(self.model, kind="causal", device=self.device,
                                      dtype=self.dtype)
        body = (self.template or (REASONING_TEMPLATE if self.reasoning else DIRECT_TEMPLATE)
                ).format(prompt=prompt, first=first, second=second)
        if getattr(tok, "chat_template", None):
            return tok.apply_chat_template([{"role": "user", "content": body}], tokenize=False,
                                           add_generation_prompt=True), False
        return body + "\n", True

    def _forward_last(self, torch, model, dev, seqs: list[list[int]], pad: int) -> np.ndarray:
        """float64 log-softmax of the next token after each sequence; (n, vocab)."""
        from storyeval.metrics.reward import pad_batch

        x, mask = pad_batch(torch, seqs, pad, left=True)
        # left padding with positions counted from each row's first real token, so a row's
        # numbers are those of the row alone
        pos = (mask.cumsum(dim=1) - 1).clamp(min=0)
        kwargs = {"input_ids": x.to(dev), "attention_mask": mask.to(dev),
                  "position_ids": pos.to(dev)}
        try:
            logits = model(**kwargs, logits_to_keep=1).logits[:, -1]
        except TypeError:  # an older model class without logits_to_keep
            logits = model(**kwargs).logits[:, -1]
        return torch.log_softmax(logits.double(), dim=-1).cpu().numpy()

    def _reason(self, torch, tok, model, dev, seqs: list[list[int]]) -> list[str]:
        """Greedy reasoning text of each request (cut at the end token and before any
        answer cue the model wrote itself)."""
        from storyeval.metrics.reward import pad_batch

        x, mask = pad_batch(torch, seqs, tok.pad_token_id, left=True)
        out = model.generate(input_ids=x.to(dev), attention_mask=mask.to(dev),
                             max_new_tokens=int(self.max_new_tokens), do_sample=False,
                             pad_token_id=tok.pad_token_id)
        texts = []
        for row in out[:, x.shape[1]:].cpu().tolist():
            if tok.eos_token_id in row:
                row = row[:row.index(tok.eos_token_id)]
            text = tok.decode(row, skip_special_tokens=True)
            cue = self.answer_cue.strip()
            texts.append(text.split(cue)[0].rstrip() if cue else text)
        return texts

    def choice_logprobs(self, prompts: Sequence[str], firsts: Sequence[str],
                        seconds: Sequence[str]) -> tuple[np.ndarray, list[str]]:
        """Log-probabilities (n, 2) of the two choice tokens for each request (story
        ``firsts[i]`` shown as A), and the reasoning texts (empty without reasoning)."""
        torch = import_optional("torch", extra="metrics", purpose="generative reward models")
        from storyeval.metrics.reward import load_reward_model

        tok, model, dev = load_reward_model(self.model, kind="causal", device=self.device,
                                            dtype=self.dtype)
        default = (" A", " B") if self.reasoning else ("A", "B")
        ids = [_single_token(tok, c) for c in (self.choices or default)]
        reqs = [self.request_text(p, f, s) for p, f, s in zip(prompts, firsts, seconds)]
        out = np.full((len(reqs), 2), np.nan)
        reasons = [""] * len(reqs)
        size = int(self.batch_size)
        with torch.inference_mode():
            for b in range(0, len(reqs), size):
                rows = list(range(b, min(b + size, len(reqs))))
                seqs = [tok(reqs[r][0], add_special_tokens=reqs[r][1])["input_ids"] for r in rows]
                if self.reasoning:
                    texts = self._reason(torch, tok, model, dev, seqs)
                    for r, t in zip(rows, texts):
                        reasons[r] = t
                    seqs = [tok(reqs[r][0] + t + self.answer_cue, add_special_tokens=reqs[r][1])
                            ["input_ids"] for r, t in zip(rows, texts)]
                logp = self._forward_last(torch, model, dev, seqs, tok.pad_token_id)
                out[rows] = logp[:, ids]
        return out, reasons

    def judge(self, pairs: pd.DataFrame, *, both_orders: bool = True) -> pd.DataFrame:
        """Verdicts for pairs of stories, in the verdict-table format (`read_verdicts`).

        Parameters
        ----------
        pairs : DataFrame
            ``story_a, story_b, prompt, text_a, text_b`` and optionally ``prompt_id``.
        both_orders : bool, default True

        Returns
        -------
        DataFrame
            One row per pair and order: ``prompt_id, story_a, story_b, dimension``
            (``"preference"``), ``verdict`` (which story, ``A``/``B``), ``order``, ``judge``,
            ``logp_first, logp_second`` (the two choice tokens), ``p_first`` and
            ``p_story_a`` (of this order), ``p_story_a_pair`` (mean over the orders: the
            pair's verdict) and ``reasoning``.
        """
        need = ["story_a", "story_b", "prompt", "text_a", "text_b"]
        missing = [c for c in need if c not in pairs.columns]
        if missing:
            raise InputError(f"genrm pairs: missing column(s) {missing}")
        n = len(pairs)
        orders = ["AB", "BA"] if both_orders else ["AB"]
        a, b = pairs["text_a"].tolist(), pairs["text_b"].tolist()
        firsts = a + (b if both_orders else [])
        seconds = b + (a if both_orders else [])
        logp, reasons = self.choice_logprobs(pairs["prompt"].tolist() * len(orders), firsts,
                                             seconds)
        p_first = 1.0 / (1.0 + np.exp(logp[:, 1] - logp[:, 0]))
        is_ab = np.repeat(np.array([o == "AB" for o in orders]), n)
        p_a = np.where(is_ab, p_first, 1.0 - p_first)
        p_pair = p_a.reshape(len(orders), n).mean(axis=0)
        verdict = np.where(p_a > 0.5, "A", np.where(p_a < 0.5, "B", "same"))
        prompt_id = pairs["prompt_id"] if "prompt_id" in pairs.columns else pd.Series(
            np.arange(n))
        return pd.DataFrame({
            "prompt_id": np.tile(prompt_id.astype(str).to_numpy(), len(orders)),
            "story_a": np.tile(pairs["story_a"].astype(str).to_numpy(), len(orders)),
            "story_b": np.tile(pairs["story_b"].astype(str).to_numpy(), len(orders)),
            "dimension": "preference", "verdict": verdict, "order": np.repeat(orders, n),
            "judge": f"genrm {self.label()}" + (" (reasoning)" if self.reasoning else ""),
            "logp_first": logp[:, 0], "logp_second": logp[:, 1], "p_first": p_first,
            "p_story_a": p_a, "p_story_a_pair": np.tile(p_pair, len(orders)),
            "reasoning": reasons})


def genrm_accuracy(verdicts: pd.DataFrame, winners: pd.Series | np.ndarray, *,
                   interval: str = "auto", confidence_level: float = 0.95,
                   n_resamples: int = 2000, random_state: int | None = 0):
    """Accuracy of a GenRM's pair verdicts (``p_story_a_pair``, one per pair) against the
    human winners (``a``/``b`` per pair, in the order of the pairs judged): a pair counts as
    correct when the human-preferred story has p > 0.5 (a GenRM tie at 0.5 counts wrong, as
    r_chosen > r_rejected for a reward model), clustered by ``prompt_id`` when prompts hold
    several pairs (`storyeval.pairwise.accuracy_inference`)."""
    from storyeval.pairwise.inference import accuracy_inference

    first = verdicts[verdicts["order"] == "AB"].reset_index(drop=True)
    w = np.asarray(winners, dtype=object)
    if len(w) != len(first):
        raise InputError(f"genrm accuracy: {len(w)} winners for {len(first)} pairs")
    p = first["p_story_a_pair"].to_numpy(float)
    correct = np.where(w == "a", p > 0.5, np.where(w == "b", p < 0.5, False)).astype(float)
    decided = np.isin(w, ["a", "b"])
    return accuracy_inference(correct[decided],
                              clusters=first["prompt_id"].to_numpy()[decided],
                              method=interval, confidence_level=confidence_level,
                              n_resamples=n_resamples, random_state=random_state)
