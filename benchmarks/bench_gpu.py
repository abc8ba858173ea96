"""Speed and fidelity of storyeval's torch metrics on the device it finds (GPU or CPU).

One run, offline: a byte-level BPE tokenizer is trained on HANNA's stories, and three
random-initialised models are built from configs and saved to a temporary folder:

- ``--size large`` (default on a GPU): a RoBERTa-large-sized encoder (24 layers, 1024 wide,
  514 positions), a BART-large-sized seq2seq model (12 + 12 layers, 1024 wide, 1024
  positions) and a GPT-2-medium-sized causal LM (24 layers, 1024 wide, 1024 positions),
  each with a 50k-row vocabulary as the originals;
- ``--size tiny`` (default on a CPU): the same shapes with 2 layers, 64 wide.

On HANNA's stories (the LLM stories with their human reference; ``--n-stories`` of them,
all 576 by default on a GPU) it times and compares:

- BERTScore: storyeval (``score()``, truncate and chunk modes, float32 and bfloat16) beside
  ``bert_score.BERTScorer.score`` on the same model folder, layer and pairs (each including
  its model load, as a user runs them, and the scoring alone); F1 deviations from
  ``BERTScorer.score(..., batch_size=1)`` on the first ``--n-exact`` pairs;
- BARTScore: storyeval's four plain directions in float32 and bfloat16, and a plain loop in
  the style of the reference ``BARTScorer.score`` (batches of 4 in input order, the model's
  own loss) for ref->story;
- Min-K% / Min-K%++: ``score_texts`` in float32 and bfloat16 beside a plain transformers
  loop (one text at a time, ``log_softmax``, results to the host per text).

It prints stories per second and deviations and writes every number to ``--out`` (JSON).
Random weights are enough for speed; deviations between precisions on random weights are an
indication, not a property of trained models.

Run (CPU, a few minutes): ``python benchmarks/bench_gpu.py --out bench_gpu.json``.
GPU machine (offline): install the carried bert-score wheel first, e.g.
``pip install --no-deps benchmarks/wheels/bert_score-0.3.13-py3-none-any.whl``, then
``PYTHONPATH=. python benchmarks/bench_gpu.py --out $OUT/bench_gpu.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import types
import warnings
from pathlib import Path

for _var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE",
             "HF_EVALUATE_OFFLINE", "STORYEVAL_NO_PROGRESS"):
    os.environ.setdefault(_var, "1")

SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
SHAPES = {
    "large": {"layers": 24, "width": 1024, "heads": 16, "ffn": 4096, "bart_layers": 12,
              "vocab": 50265, "bert_layer": 17},
    "tiny": {"layers": 2, "width": 64, "heads": 2, "ffn": 128, "bart_layers": 2,
             "vocab": 50265, "bert_layer": 2},
}


def _stub_matplotlib() -> None:
    """bert-score imports matplotlib at module level for its plotting helper only; on a
    machine without matplotlib, empty stand-ins let it import (nothing here plots)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        for name in ("matplotlib", "matplotlib.pyplot", "mpl_toolkits",
                     "mpl_toolkits.axes_grid1"):
            mod = types.ModuleType(name)
            mod.make_axes_locatable = None
            sys.modules[name] = mod


def _clock(torch, device: str) -> float:
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return time.perf_counter()


def _safe_tmpdir() -> Path:
    """A temporary folder whose path has no "t5" in it (bert-score loads any model whose
    name contains "t5" as a T5 encoder)."""
    while True:
        path = Path(tempfile.mkdtemp(prefix="storyeval-gpu-"))
        if "t5" not in str(path).lower():
            return path


def build_models(root: Path, texts: list[str], size: str, device: str) -> dict[str, Path]:
    """Tokenizer + three random models saved under ``root``; returns their folders."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import (
        BartConfig,
        BartForConditionalGeneration,
        BartTokenizer,
        GPT2Config,
        GPT2LMHeadModel,
        GPT2Tokenizer,
        RobertaConfig,
        RobertaModel,
        RobertaTokenizer,
    )

    shape = SHAPES[size]
    bpe_dir = root / "bpe"
    bpe_dir.mkdir()
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(texts, vocab_size=16000 if size == "large" else 4000,
                            min_frequency=2, special_tokens=SPECIALS, show_progress=False)
    bpe.save_model(str(bpe_dir))
    vocab, merges = str(bpe_dir / "vocab.json"), str(bpe_dir / "merges.txt")
    folders = {k: root / k for k in ("roberta-type-encoder", "bart-type-seq2seq",
                                     "gpt2-type-lm")}
    torch.manual_seed(0)
    w, h, f = shape["width"], shape["heads"], shape["ffn"]
    with torch.device(device):
        enc = RobertaModel(RobertaConfig(
            vocab_size=shape["vocab"], hidden_size=w, num_hidden_layers=shape["layers"],
            num_attention_heads=h, intermediate_size=f, max_position_embeddings=514,
            type_vocab_size=1, pad_token_id=1, bos_token_id=0, eos_token_id=2))
        RobertaTokenizer(vocab, merges, model_max_length=512).save_pretrained(
            folders["roberta-type-encoder"])
        enc.save_pretrained(folders["roberta-type-encoder"])
        del enc
        s2s = BartForConditionalGeneration(BartConfig(
            vocab_size=shape["vocab"], d_model=w, encoder_layers=shape["bart_layers"],
            decoder_layers=shape["bart_layers"], encoder_attention_heads=h,
            decoder_attention_heads=h, encoder_ffn_dim=f, decoder_ffn_dim=f,
            max_position_embeddings=1024, pad_token_id=1, bos_token_id=0, eos_token_id=2,
            decoder_start_token_id=2, forced_eos_token_id=None))
        BartTokenizer(vocab, merges, model_max_length=1024).save_pretrained(
            folders["bart-type-seq2seq"])
        s2s.save_pretrained(folders["bart-type-seq2seq"])
        del s2s
        lm = GPT2LMHeadModel(GPT2Config(
            vocab_size=shape["vocab"] - 8, n_embd=w, n_layer=shape["layers"], n_head=h,
            n_positions=1024, bos_token_id=0, eos_token_id=2))
        GPT2Tokenizer(vocab, merges, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                      pad_token="<pad>", model_max_length=1024).save_pretrained(
            folders["gpt2-type-lm"])
        lm.save_pretrained(folders["gpt2-type-lm"])
        del lm
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return folders


def _deviation(a, b) -> dict[str, float]:
    import numpy as np

    d = np.abs(np.asarray(a, dtype=float) - np.asarray(b, dtype=float))
    return {"max_abs": float(np.nanmax(d)), "median_abs": float(np.nanmedian(d))}


def bench_bertscore(folder: Path, layer: int, cands: list[str], refs: list[str], device: str,
                    n_exact: int, batch_size: int) -> dict:
    import pandas as pd
    import torch

    _stub_matplotlib()
    import bert_score

    from storyeval.metrics import bertscore as bs_mod
    from storyeval.metrics import score

    out: dict = {"pairs": len(cands), "layer": layer}
    df = pd.DataFrame({"story_id": [f"s{i}" for i in range(len(cands))], "story": cands,
                       "reference": refs})

    t0 = _clock(torch, device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scorer = bert_score.BERTScorer(model_type=str(folder), num_layers=layer,
                                       device=device)
    t1 = _clock(torch, device)
    f_ref = scorer.score(cands, refs, batch_size=64)[2]
    t2 = _clock(torch, device)
    out["bert_score"] = {"load_s": t1 - t0, "score_s": t2 - t1, "total_s": t2 - t0,
                         "stories_per_s": len(cands) / (t2 - t0)}
    exact = scorer.score(cands[:n_exact], refs[:n_exact], batch_size=1)[2].numpy()
    del scorer
    if device.startswith("cuda"):
        torch.cuda.empty_cache()

    values = {}
    for mode, dtype in (("truncate", None), ("chunk", None), ("truncate", "bfloat16")):
        bs_mod._MODELS.clear()  # count the model load, as a user's run does
        opts = {"model": str(folder), "num_layers": layer, "long_texts": mode,
                "device": device, "batch_size": batch_size}
        if dtype:
            opts["dtype"] = dtype
        t0 = _clock(torch, device)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = score(df, "bertscore", options={"bertscore": opts},
                          batch_size=batch_size, show_progress=False)
        t1 = _clock(torch, device)
        f1 = table[table["measure"].str.startswith("BERTScore F1")]
        f1 = f1.set_index("story_id").loc[df["story_id"], "value"].to_numpy()
        key = f"storyeval_{mode}_{dtype or 'float32'}"
        values[key] = f1
        out[key] = {"total_s": t1 - t0, "stories_per_s": len(cands) / (t1 - t0)}
    # the scoring alone, model loaded (second call on a fresh metric: no cached embeddings)
    m = bs_mod.BertScoreMetric(model=str(folder), num_layers=layer, long_texts="truncate",
                               device=device, batch_size=batch_size)
    t0 = _clock(torch, device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.score_pairs(cands, refs)
    t1 = _clock(torch, device)
    out["storyeval_truncate_float32"]["score_s"] = t1 - t0
    truncated = values["storyeval_truncate_float32"]
    out["deviation_f1"] = {
        "storyeval_truncate_vs_bert_score_batch1": _deviation(truncated[:n_exact], exact),
        "n_exact_pairs": n_exact,
        "storyeval_truncate_vs_bert_score_batch64": _deviation(truncated, f_ref.numpy()),
        "bert_score_batch64_vs_batch1": _deviation(f_ref.numpy()[:n_exact], exact),
        "bfloat16_vs_float32": _deviation(values["storyeval_truncate_bfloat16"], truncated),
        "chunk_vs_truncate": _deviation(values["storyeval_chunk_float32"], truncated),
    }
    out["speedup_vs_bert_score_total"] = (out["bert_score"]["total_s"]
                                          / out["storyeval_truncate_float32"]["total_s"])
    del m
    bs_mod._MODELS.clear()
    return out


def _reference_style_bartscore(folder: Path, src: list[str], tgt: list[str], device: str,
                               batch_size: int = 4):
    """The loop of the reference BARTScorer.score: batches in input order, tokenised per
    batch, the model's own mean cross-entropy per pair (negated)."""
    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSeq2SeqLM.from_pretrained(folder).to(device).eval()
    loss_fn = torch.nn.NLLLoss(reduction="none", ignore_index=model.config.pad_token_id)
    out = []
    with torch.no_grad():
        for b in range(0, len(src), batch_size):
            enc = tok(src[b:b + batch_size], max_length=1024, truncation=True, padding=True,
                      return_tensors="pt").to(device)
            dec = tok(tgt[b:b + batch_size], max_length=1024, truncation=True, padding=True,
                      return_tensors="pt").to(device)
            logits = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                           labels=dec["input_ids"]).logits
            lp = torch.log_softmax(logits.float(), dim=-1)
            loss = loss_fn(lp.view(-1, lp.shape[-1]), dec["input_ids"].view(-1))
            loss = loss.view(dec["input_ids"].shape[0], -1).sum(dim=1)
            out += (-(loss / dec["attention_mask"].sum(dim=1))).tolist()
    return out


def bench_bartscore(folder: Path, df, device: str, batch_size: int) -> dict:
    import torch

    from storyeval.metrics import bartscore as bart_mod
    from storyeval.metrics import score

    out: dict = {"stories": len(df), "directions": 4}
    values = {}
    for dtype in (None, "bfloat16"):
        bart_mod._LOADED.clear()
        opts = {"model": str(folder), "device": device, "batch_size": batch_size,
                "directions": ["ref->story", "story->ref", "prompt->story", "story->prompt"]}
        if dtype:
            opts["dtype"] = dtype
        t0 = _clock(torch, device)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = score(df, "bartscore", options={"bartscore": opts},
                          batch_size=batch_size, show_progress=False)
        t1 = _clock(torch, device)
        key = f"storyeval_{dtype or 'float32'}"
        values[key] = table.sort_values(["story_id", "measure"])["value"].to_numpy()
        out[key] = {"total_s": t1 - t0, "stories_per_s": len(df) / (t1 - t0)}
    bart_mod._LOADED.clear()
    out["deviation_bfloat16_vs_float32"] = _deviation(values["storyeval_bfloat16"],
                                                      values["storyeval_float32"])
    # the reference-style loop, one direction (ref->story), model load included
    src, tgt = df["reference"].tolist(), df["story"].tolist()
    t0 = _clock(torch, device)
    ref_vals = _reference_style_bartscore(folder, src, tgt, device)
    t1 = _clock(torch, device)
    out["reference_style_loop_ref_to_story"] = {"total_s": t1 - t0,
                                                "stories_per_s": len(df) / (t1 - t0)}
    m = bart_mod.BartScoreMetric(model=str(folder), device=device, batch_size=batch_size)
    t0 = _clock(torch, device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mine = m.loglik(src, tgt)
    t1 = _clock(torch, device)
    out["storyeval_loglik_ref_to_story"] = {"total_s": t1 - t0,
                                            "stories_per_s": len(df) / (t1 - t0)}
    out["deviation_storyeval_vs_reference_style"] = _deviation(mine, ref_vals)
    bart_mod._LOADED.clear()
    return out


def _plain_mink(folder: Path, texts: list[str], device: str, k: float = 0.2):
    """Min-K% by a plain transformers loop: one text at a time, the whole text in one window
    (cut to the context), log_softmax, the lowest k fraction averaged on the host."""
    import numpy as np
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder).to(device).eval()
    ctx = model.config.n_positions
    out = []
    with torch.no_grad():
        for text in texts:
            ids = torch.tensor([tok.encode(text)[:ctx]], device=device)
            logp = torch.log_softmax(model(ids).logits[0, :-1].float(), dim=-1)
            lp = logp.gather(-1, ids[0, 1:, None])[:, 0].cpu().numpy()
            m = int(len(lp) * k)
            out.append(float(np.sort(lp)[:m].mean()) if m else float("nan"))
    return out


def _forward_only(model, tok, texts: list[str], device: str, batch_size: int) -> float:
    """Seconds of the causal LM's forward passes over the texts (cut to 1,024 tokens),
    sorted by length and batched as storyeval does, nothing else."""
    import torch

    from storyeval.contamination._lm import _encode

    ids = sorted((_encode(t, tok, "reference")[0][:1024] for t in texts), key=len,
                 reverse=True)
    t0 = _clock(torch, device)
    with torch.inference_mode():
        for b in range(0, len(ids), batch_size):
            chunk = ids[b:b + batch_size]
            x = torch.zeros((len(chunk), len(chunk[0])), dtype=torch.long)
            mask = torch.zeros_like(x)
            for r, row in enumerate(chunk):
                x[r, :len(row)] = torch.tensor(row)
                mask[r, :len(row)] = 1
            model(input_ids=x.to(device), attention_mask=mask.to(device))
    return _clock(torch, device) - t0


def bench_mink(folder: Path, texts: list[str], device: str, batch_size: int) -> dict:
    import numpy as np
    import torch

    from storyeval.contamination import load_causal_lm, score_texts

    out: dict = {"texts": len(texts)}
    tables = {}
    for dtype in ("float32", "bfloat16"):
        t0 = _clock(torch, device)
        model, tok = load_causal_lm(folder, device=device, dtype=dtype)
        t1 = _clock(torch, device)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tables[dtype] = score_texts(texts, model, tok, batch_size=batch_size,
                                        show_progress=False)
        t2 = _clock(torch, device)
        out[f"storyeval_{dtype}"] = {"load_s": t1 - t0, "score_s": t2 - t1,
                                     "stories_per_s": len(texts) / (t2 - t1)}
        # the forward passes alone, same batches: what the model itself costs
        out[f"storyeval_{dtype}"]["forward_only_s"] = _forward_only(model, tok, texts,
                                                                   device, batch_size)
        del model
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
    out["speedup_bfloat16_vs_float32"] = (out["storyeval_float32"]["score_s"]
                                          / out["storyeval_bfloat16"]["score_s"])
    for col in ("min_k", "min_k_pp"):
        out[f"deviation_{col}_bfloat16_vs_float32"] = _deviation(
            tables["bfloat16"][col], tables["float32"][col])
    t0 = _clock(torch, device)
    plain = _plain_mink(folder, texts, device)
    t1 = _clock(torch, device)
    out["plain_loop_float32"] = {"total_s": t1 - t0, "stories_per_s": len(texts) / (t1 - t0)}
    # texts within the context: one window in both (n_tokens scored = length - 1)
    fits = np.asarray(tables["float32"]["n_tokens"]) + 1 <= 1024
    out["texts_within_context"] = int(fits.sum())
    out["deviation_min_k_storyeval_vs_plain_loop"] = _deviation(
        np.asarray(tables["float32"]["min_k"])[fits], np.asarray(plain)[fits])
    out["note"] = ("plain loop cuts texts to the context; storyeval slides windows over "
                   "longer ones, so a text over 1,024 tokens differs by design")
    return out


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="JSON file of the results")
    parser.add_argument("--device", default="auto", help="auto (cuda if available), cpu, cuda")
    parser.add_argument("--size", choices=sorted(SHAPES), help="model sizes (default: large "
                        "on a GPU, tiny on a CPU)")
    parser.add_argument("--n-stories", type=int, help="LLM stories used (default: 576 on a "
                        "GPU, 24 on a CPU)")
    parser.add_argument("--n-exact", type=int, default=64,
                        help="pairs compared with bert_score at batch_size=1 (default 64)")
    parser.add_argument("--batch-size", type=int, default=32,
                        help="storyeval batch size of every metric (default 32)")
    parser.add_argument("--skip", nargs="*", default=[],
                        choices=["bertscore", "bartscore", "mink"])
    args = parser.parse_args(argv)

    import torch
    import transformers

    from storyeval.metrics.scoring import hanna_stories

    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" \
        else args.device
    gpu = device.startswith("cuda")
    size = args.size or ("large" if gpu else "tiny")
    n = args.n_stories or (576 if gpu else 24)
    stories = hanna_stories()
    llm = stories[stories["reference"].notna()].head(n).reset_index(drop=True)
    info = {"device": device, "device_name": (torch.cuda.get_device_name(0) if gpu
                                             else platform.processor() or "cpu"),
            "torch": torch.__version__, "transformers": transformers.__version__,
            "python": platform.python_version(), "size": size, "n_stories": len(llm),
            "batch_size": args.batch_size, "cpu_threads": torch.get_num_threads(),
            "note": ("random-initialised models; CPU numbers on a shared machine are noisy"
                     if not gpu else "random-initialised models")}
    print(json.dumps(info), flush=True)
    results: dict = {"info": info}
    root = _safe_tmpdir()
    t0 = time.perf_counter()
    folders = build_models(root, stories["story"].tolist(), size, device)
    results["build_models_s"] = time.perf_counter() - t0
    print(f"models built in {results['build_models_s']:.1f} s under {root}", flush=True)
    for dt in (torch.float32, torch.bfloat16):  # library initialisation, outside the timings
        (torch.ones((256, 256), device=device, dtype=dt) @ torch.ones(
            (256, 256), device=device, dtype=dt)).sum().item()

    def report(name: str, value: dict) -> None:
        results[name] = value
        print(f"\n== {name}\n{json.dumps(value, indent=1)}", flush=True)
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            tmp = args.out.with_suffix(".tmp")
            tmp.write_text(json.dumps(results, indent=1), encoding="utf-8")
            tmp.replace(args.out)

    if "bertscore" not in args.skip:
        report("bertscore", bench_bertscore(
            folders["roberta-type-encoder"], SHAPES[size]["bert_layer"], llm["story"].tolist(),
            llm["reference"].tolist(), device, min(args.n_exact, len(llm)), args.batch_size))
    if "mink" not in args.skip:
        report("mink", bench_mink(folders["gpt2-type-lm"], llm["story"].tolist(), device,
                                  args.batch_size))
    if "bartscore" not in args.skip:
        report("bartscore", bench_bartscore(folders["bart-type-seq2seq"], llm, device,
                                            args.batch_size))
    print("\nsummary (stories/s):", flush=True)
    for name, keys in (("bertscore", ("bert_score", "storyeval_truncate_float32",
                                      "storyeval_chunk_float32",
                                      "storyeval_truncate_bfloat16")),
                       ("mink", ("plain_loop_float32", "storyeval_float32",
                                 "storyeval_bfloat16")),
                       ("bartscore", ("reference_style_loop_ref_to_story",
                                      "storyeval_loglik_ref_to_story", "storyeval_float32",
                                      "storyeval_bfloat16"))):
        if name in results:
            print(f"  {name}: " + ", ".join(f"{k} {results[name][k]['stories_per_s']:.1f}"
                                            for k in keys), flush=True)
    return results


if __name__ == "__main__":
    main()
