"""The table of docs/metric-fidelity.md: how closely each metric wrapper reproduces its reference
implementation, measured by running both.

* Surface measures: storyeval's default (HANNA-compatible) variant against the values HANNA
  released for its 96 human stories (``hanna_metric_scores_llm.csv``, row ``Human``).
* BERTScore: storyeval against ``bert_score`` itself (same offline MiniLM encoder and layer),
  idf off and on, rescaled with a baseline file, and long texts in truncate mode.
* BERTScore on byte-level BPE (RoBERTa-type) encoders: tiny random RobertaModels with
  seeded NumPy weights and tokenizers trained here, with and without CLS/SEP tokens, and a
  folder given by the name "roberta-large" (bert-score's name-keyed layer and baseline).
* Reduced precision: the deviation of bfloat16 / float16 from float32 (CPU) for BERTScore,
  BARTScore and Min-K% (a second table).
* BARTScore: storyeval's batched scorer against the formula of Yuan et al. (2021) evaluated pair
  by pair in float64 from the logits of a tiny random BART built here (no download).

Usage: python docs/gen_metric_fidelity.py            # print the table
       python docs/gen_metric_fidelity.py --write    # rewrite it in docs/metric-fidelity.md
tests/test_docs_metric_fidelity.py fails when the page is stale.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from storyeval.data.hanna import hanna_path
from storyeval.metrics import hanna_stories, score

PAGE = Path(__file__).resolve().parent / "metric-fidelity.md"
MARKER = "gen_metric_fidelity.py"
COLUMNS = ["measure", "reference implementation", "variant", "compared on", "tolerance",
           "max difference", "result"]
#: exact agreement for the surface measures: relative difference below this
SURFACE_RTOL = 1e-6
#: agreement required of the torch metrics (absolute difference)
TORCH_ATOL = 1e-6

#: HANNA column -> storyeval measure (default variant)
SURFACE_PAIRS = [
    ("Text length", "Length (tokens)"),
    ("Novelty-1", "Novelty-1 (vs prompt)"),
    ("Novelty-2", "Novelty-2 (vs prompt)"),
    ("Novelty-3", "Novelty-3 (vs prompt)"),
    ("Repetition-1", "Repetition-1"),
    ("Repetition-2", "Repetition-2"),
    ("Repetition-3", "Repetition-3"),
    ("Coverage", "Coverage (vs prompt)"),
    ("Density", "Density (vs prompt)"),
    ("Compression", "Compression (prompt/story)"),
]


# -- surface ------------------------------------------------------------------------------------
def released_surface() -> pd.DataFrame:
    """HANNA's released surface values of the Human system: 96 rows in prompt order."""
    raw = pd.read_csv(hanna_path("hanna_metric_scores_llm.csv"))
    human = raw[raw["Model"] == "Human"]
    if len(human) != 1:
        raise ValueError("hanna_metric_scores_llm.csv: expected one row with Model == 'Human'")
    row = human.iloc[0]
    return pd.DataFrame({col: json.loads(row[f"{col} ¤§"]) for col, _ in SURFACE_PAIRS})


def surface_comparison() -> pd.DataFrame:
    """Per HANNA column: stories compared, stories reproduced exactly, max relative difference,
    Spearman rho (storyeval's default variant vs the released values)."""
    ours = score(hanna_stories(include="human"), "surface", show_progress=False)
    wide = ours.pivot(index="prompt_id", columns="measure", values="value").sort_index()
    released = released_surface()
    rows = []
    for col, measure in SURFACE_PAIRS:
        x = released[col].to_numpy(dtype=float)
        y = wide[measure].to_numpy(dtype=float)
        rel = np.abs(x - y) / np.maximum(np.abs(x), np.finfo(float).tiny)
        rows.append({"column": col, "measure": measure, "n": len(x),
                     "exact": int((rel < SURFACE_RTOL).sum()), "max_rel": float(rel.max()),
                     "spearman": float(stats.spearmanr(x, y).statistic)})
    return pd.DataFrame(rows)


def surface_rows() -> list[dict]:
    out = []
    for r in surface_comparison().itertuples():
        out.append({
            "measure": r.measure,
            "reference implementation": f"HANNA's released '{r.column}' "
                                        "(SummEval DataStatsMetric, spaCy tokens)",
            "variant": "default (tokenizer='spacy')",
            "compared on": f"{r.n} human stories",
            "tolerance": f"{SURFACE_RTOL:.0e} relative",
            "max difference": _sci(r.max_rel),
            "result": f"exact on {r.exact}/{r.n}, Spearman {r.spearman:.3f}",
        })
    return out


# -- BERTScore ----------------------------------------------------------------------------------
SHORT_CANDS = ["The cat sat on the mat.", "A man walked his dog in the park at night.",
               "Nobody came to the party, so she ate the cake alone."]
SHORT_REFS = ["A cat was sitting on a mat.", "At night, the dog was walked by a man.",
              "She had a party; no one came and she ate all the cake."]


def bertscore_pairs(n_fit: int = 3, n_long: int = 2) -> tuple[list, list, list, list]:
    """(stories, references) that fit in one encoder window (short sentences and the first
    ``n_fit`` HANNA LLM stories whose story and reference fit), and ``n_long`` longer pairs."""
    from storyeval.metrics.bertscore import BertScoreMetric

    tokenizer, _ = BertScoreMetric()._load()
    llm = hanna_stories(include="llm")

    def pieces(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False, verbose=False))

    fit, long = [], []
    for s, r in zip(llm["story"], llm["reference"]):
        small = pieces(s) <= 510 and pieces(r) <= 510
        if small and len(fit) < n_fit:
            fit.append((s, r))
        elif not small and len(long) < n_long:
            long.append((s, r))
        if len(fit) == n_fit and len(long) == n_long:
            break
    cands = SHORT_CANDS + [s for s, _ in fit]
    refs = SHORT_REFS + [r for _, r in fit]
    return cands, refs, [s for s, _ in long], [r for _, r in long]


def _prf(triple) -> np.ndarray:
    return np.column_stack([t.numpy() for t in triple])


def bertscore_differences(baseline_file: Path) -> dict[str, float]:
    """Variant -> max |storyeval - bert_score| over P, R, F1 and the pairs of
    `bertscore_pairs`."""
    import bert_score

    from storyeval.metrics.bertscore import BertScoreMetric, default_model_path, write_baseline

    path = default_model_path()
    cands, refs, long_c, long_r = bertscore_pairs()
    write_baseline(baseline_file, [0.30, 0.35, 0.32], num_layers=6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # bert-score and transformers warnings
        plain = bert_score.BERTScorer(model_type=path, num_layers=6, lang="en")
        idf = bert_score.BERTScorer(model_type=path, num_layers=6, lang="en", idf=True,
                                    idf_sents=refs)
        rescaled = bert_score.BERTScorer(model_type=path, num_layers=6, lang="en",
                                         rescale_with_baseline=True,
                                         baseline_path=str(baseline_file))
        want = {"no idf": _prf(plain.score(cands, refs)),
                "idf": _prf(idf.score(cands, refs)),
                "rescaled": _prf(rescaled.score(cands, refs)),
                "truncate": _prf(plain.score(long_c, long_r))}
    got = {"no idf": BertScoreMetric().score_pairs(cands, refs),
           "idf": BertScoreMetric(idf=True, idf_sents=refs).score_pairs(cands, refs)}
    b = np.array([0.30, 0.35, 0.32])
    got["rescaled"] = (got["no idf"] - b) / (1 - b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TruncationWarning is the point here
        got["truncate"] = BertScoreMetric(long_texts="truncate").score_pairs(long_c, long_r)
    return {k: float(np.abs(got[k] - want[k]).max()) for k in want}


def bertscore_rows(tmp_dir: Path) -> list[dict]:
    diffs = bertscore_differences(tmp_dir / "baseline.csv")
    n = len(SHORT_CANDS) + 3
    described = {
        "no idf": ("no idf, chunk (default)", f"{n} pairs within one window"),
        "idf": ("idf=True, idf_sents = the references", f"{n} pairs within one window"),
        "rescaled": ("rescaled with a baseline file", f"{n} pairs within one window"),
        "truncate": ("long_texts='truncate'", "2 pairs longer than the window"),
    }
    return [{
        "measure": "BERTScore P, R, F1 (all-MiniLM-L6-v2 L6)",
        "reference implementation": "bert_score.BERTScorer.score",
        "variant": described[k][0],
        "compared on": described[k][1],
        "tolerance": f"{TORCH_ATOL:.0e} absolute",
        "max difference": _sci(v),
        "result": "within tolerance" if v < TORCH_ATOL else "OUT OF TOLERANCE",
    } for k, v in diffs.items()]


# -- BERTScore on byte-level BPE (RoBERTa-type) encoders ----------------------------------------
def _bert_score_prf(model_type: str, cands, refs, **kw) -> np.ndarray:
    import bert_score

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scorer = bert_score.BERTScorer(model_type=model_type, **kw)
        return _prf(scorer.score(cands, refs, batch_size=1))


def bpe_bertscore_differences(tmp_dir: Path) -> dict[str, float]:
    """Case -> max |storyeval - bert_score(batch_size=1)| over P, R, F1 on tiny random
    RoBERTa-type encoders (seeded NumPy weights, byte-level BPE trained here)."""
    import os

    from storyeval.metrics.bertscore import BertScoreMetric

    tm = _tiny_models()
    folders = {"roberta": tm.save_tiny_roberta(tmp_dir / "encoder-a"),
               "bare": tm.save_tiny_roberta(tmp_dir / "encoder-b", tokenizer="bare"),
               "named": tm.save_tiny_roberta(tmp_dir / "named" / "roberta-large", layers=18,
                                             hidden=16)}
    cands, refs = list(tm.CORPUS[:5]), list(tm.CORPUS[5:])
    long_c, long_r = [" ".join(tm.CORPUS)], [tm.CORPUS[0]]
    out = {}
    for kind in ("roberta", "bare"):
        path = str(folders[kind])
        for idf in (False, True):
            kw = {"idf": True, "idf_sents": refs} if idf else {}
            want = _bert_score_prf(path, cands, refs, num_layers=2, **kw)
            got = BertScoreMetric(model=path, num_layers=2, **kw).score_pairs(cands, refs)
            out[f"{kind} {'idf' if idf else 'no idf'}"] = float(np.abs(got - want).max())
    path = str(folders["roberta"])
    want = _bert_score_prf(path, long_c, long_r, num_layers=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TruncationWarning is the point here
        got = BertScoreMetric(model=path, num_layers=2, long_texts="truncate").score_pairs(
            long_c, long_r)
    out["roberta truncate"] = float(np.abs(got - want).max())
    here = os.getcwd()
    os.chdir(folders["named"].parent)  # the folder given by the name "roberta-large"
    try:
        # raw scores (layer 17 by the name) and the baseline (the shipped file by the name);
        # the rescaled values (x - b) / (1 - b) follow, their difference scaled by 1 / (1 - b)
        want = _bert_score_prf("roberta-large", cands, refs, lang="en")
        import bert_score

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            b_want = bert_score.BERTScorer(model_type="roberta-large", lang="en",
                                           rescale_with_baseline=True).baseline_vals.numpy()
        m = BertScoreMetric(model="roberta-large", rescale=True)
        got = m.score_pairs(cands, refs)
        out["named rescaled"] = max(float(np.abs(got - want).max()),
                                    float(np.abs(m.baseline(cands, refs) - b_want).max()))
    finally:
        os.chdir(here)
    return out


def bpe_bertscore_rows(tmp_dir: Path) -> list[dict]:
    described = {
        "roberta no idf": ("RobertaTokenizer (CLS/SEP = <s>/</s>), no idf", "5 pairs"),
        "roberta idf": ("RobertaTokenizer, idf=True", "5 pairs"),
        "roberta truncate": ("RobertaTokenizer, long_texts='truncate'",
                             "1 pair longer than the 64-token window"),
        "bare no idf": ("BPE naming no CLS/SEP (<s>, </s> weigh 1), no idf", "5 pairs"),
        "bare idf": ("BPE naming no CLS/SEP, idf=True", "5 pairs"),
        "named rescaled": (("folder given as 'roberta-large': layer 17 and the shipped "
                            "baseline (raw scores and baseline values)"), "5 pairs"),
    }
    return [{
        "measure": "BERTScore P, R, F1 (tiny random RoBERTa-type encoder)",
        "reference implementation": "bert_score.BERTScorer.score(batch_size=1)",
        "variant": described[k][0],
        "compared on": described[k][1],
        "tolerance": f"{TORCH_ATOL:.0e} absolute",
        "max difference": _sci(v),
        "result": "within tolerance" if v < TORCH_ATOL else "OUT OF TOLERANCE",
    } for k, v in bpe_bertscore_differences(tmp_dir).items()]


# -- reduced precision --------------------------------------------------------------------------
DTYPE_MARKER = "gen_metric_fidelity.py dtype"
DTYPE_COLUMNS = ["metric", "model", "compared on", "bfloat16 vs float32", "float16 vs float32"]


def dtype_deviations() -> list[dict]:
    """Max |value in bfloat16 / float16 - value in float32| per metric, on the CPU."""
    import torch

    from storyeval.contamination import score_texts, train_tiny_causal_lm
    from storyeval.metrics.bartscore import BartScoreMetric
    from storyeval.metrics.bertscore import BertScoreMetric

    tm = _tiny_models()
    llm = hanna_stories(include="llm")
    cands, refs = SHORT_CANDS + llm["story"][:3].tolist(), SHORT_REFS + llm["reference"][
        :3].tolist()
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = BertScoreMetric().score_pairs(cands, refs)[:, 2]
        dev = {dt: float(np.abs(BertScoreMetric(dtype=dt).score_pairs(cands, refs)[:, 2]
                                - base).max()) for dt in ("bfloat16", "float16")}
    rows.append({"metric": "BERTScore F1", "model": "all-MiniLM-L6-v2 L6",
                 "compared on": f"{len(cands)} pairs (3 HANNA stories)", **dev})
    tok = tm.train_tokenizer()
    model = tm.train_copy(tm.tiny_bart(tok, seed=3), tok, steps=10, seed=3)
    src, tgt = list(tm.CORPUS), list(tm.CORPUS[3:] + tm.CORPUS[:3])
    base = BartScoreMetric.from_model(model, tok, label="tiny").loglik(src, tgt)
    dev = {}
    for dt in ("bfloat16", "float16"):
        low = BartScoreMetric.from_model(model.to(getattr(torch, dt)), tok, label="tiny")
        dev[dt] = float(np.abs(low.loglik(src, tgt) - base).max())
    model.float()
    rows.append({"metric": "BARTScore", "model": "tiny BART (1 layer, 32 wide), copy-trained",
                 "compared on": "10 pairs", **dev})
    human = hanna_stories(include="human")["story"].tolist()
    texts = [" ".join(t.split()[:60]) for t in human[:24]]
    lm, lm_tok = train_tiny_causal_lm(texts[:12], steps=60, context=64, vocab_size=300,
                                      random_state=0, show_progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = score_texts(texts, lm, lm_tok, show_progress=False)
        low = {dt: score_texts(texts, lm.to(getattr(torch, dt)), lm_tok, show_progress=False)
               for dt in ("bfloat16", "float16")}
    for col, name in (("min_k", "Min-K% (k=0.2)"), ("min_k_pp", "Min-K%++ (k=0.2)")):
        rows.append({"metric": name, "model": "tiny GPT-2 (2 layers, 64 wide), trained",
                     "compared on": f"{len(texts)} HANNA story openings",
                     **{dt: float(np.abs(low[dt][col] - base[col]).max())
                        for dt in ("bfloat16", "float16")}})
    return [{"metric": r["metric"], "model": r["model"], "compared on": r["compared on"],
             "bfloat16 vs float32": f"{r['bfloat16']:.1e}",
             "float16 vs float32": f"{r['float16']:.1e}"} for r in rows]


def dtype_markdown(rows: list[dict]) -> str:
    lines = ["| " + " | ".join(DTYPE_COLUMNS) + " |",
             "| " + " | ".join("---:" if "vs" in c else "---" for c in DTYPE_COLUMNS) + " |"]
    lines += ["| " + " | ".join(str(r[c]) for c in DTYPE_COLUMNS) + " |" for r in rows]
    return "\n".join(lines)


# -- BARTScore ----------------------------------------------------------------------------------
def _tiny_models():
    tests = Path(__file__).resolve().parents[1] / "tests"
    if str(tests) not in sys.path:
        sys.path.insert(0, str(tests))
    import _tiny_models

    return _tiny_models


def reference_bartscore(model, tokenizer, source: str, target: str) -> float:
    """Yuan et al.'s BARTScore of one pair, unbatched, in float64: the mean over the target's
    tokens y_t (with the tokenizer's special tokens) of log p(y_t | y_<t, source), teacher
    forcing with the decoder input = target shifted right after the decoder start token."""
    import torch

    x = tokenizer(source, return_tensors="pt")
    y = tokenizer(target, return_tensors="pt")["input_ids"]
    start = torch.tensor([[model.config.decoder_start_token_id]])
    with torch.no_grad():
        logits = model(input_ids=x["input_ids"], attention_mask=x["attention_mask"],
                       decoder_input_ids=torch.cat([start, y[:, :-1]], dim=1)).logits[0]
    logp = torch.log_softmax(logits.double(), dim=-1).numpy()
    ids = y[0].numpy()
    return float(logp[np.arange(len(ids)), ids].mean())


def bartscore_differences() -> dict[str, float]:
    """Direction -> max |storyeval - reference| over pairs of the tiny model's corpus scored
    in batches of 4 (padding on both sides)."""
    from storyeval.metrics.bartscore import BartScoreMetric

    tm = _tiny_models()
    tok = tm.train_tokenizer()
    model = tm.train_copy(tm.tiny_bart(tok, seed=3), tok, steps=10, seed=3)
    refs = list(tm.CORPUS)
    stories = refs[3:] + refs[:3]  # each story paired with another text of the corpus
    stories[0] = "A short one."     # lengths differ within a batch: padding is exercised
    metric = BartScoreMetric.from_model(model, tok, label="tiny", batch_size=4)
    got = {"ref->story": metric.loglik(refs, stories), "story->ref": metric.loglik(stories, refs)}
    want = {"ref->story": [reference_bartscore(model, tok, r, s) for r, s in zip(refs, stories)],
            "story->ref": [reference_bartscore(model, tok, s, r) for r, s in zip(refs, stories)]}
    df = pd.DataFrame({"story_id": [str(i) for i in range(len(refs))], "story": stories,
                       "reference": refs})
    table = score(df, [BartScoreMetric.from_model(model, tok, label="tiny", batch_size=4,
                                                  directions=["ref<->story"])],
                  show_progress=False)
    f_got = table.set_index("story_id").loc[df["story_id"], "value"].to_numpy()
    f_want = (np.asarray(want["ref->story"]) + np.asarray(want["story->ref"])) / 2
    out = {k: float(np.abs(np.asarray(got[k]) - np.asarray(want[k])).max()) for k in got}
    out["ref<->story"] = float(np.abs(f_got - f_want).max())
    return out


def bartscore_rows() -> list[dict]:
    what = {"ref->story": "precision direction r -> h",
            "story->ref": "recall direction h -> r",
            "ref<->story": "F = mean of both directions"}
    return [{
        "measure": f"BARTScore {k}",
        "reference implementation": "formula of Yuan et al. (2021), pair by pair in float64",
        "variant": what[k],
        "compared on": "10 pairs, tiny random BART, batches of 4",
        "tolerance": f"{TORCH_ATOL:.0e} absolute",
        "max difference": _sci(v),
        "result": "within tolerance" if v < TORCH_ATOL else "OUT OF TOLERANCE",
    } for k, v in bartscore_differences().items()]


# -- page ---------------------------------------------------------------------------------------
def _sci(x: float) -> str:
    return "0" if x == 0 else f"{x:.1e}"


def table_rows() -> list[dict]:
    """All rows of the page's table."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        return (surface_rows() + bertscore_rows(Path(tmp)) + bpe_bertscore_rows(Path(tmp))
                + bartscore_rows())


def to_markdown(rows: list[dict]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |",
             "| " + " | ".join("---:" if c == "max difference" else "---" for c in COLUMNS)
             + " |"]
    lines += ["| " + " | ".join(str(r[c]) for c in COLUMNS) + " |" for r in rows]
    return "\n".join(lines)


def render_page(page: str, body: str, marker: str = MARKER) -> str:
    """``page`` with the block between the generator's markers replaced by ``body``."""
    begin, end = f"<!-- BEGIN {marker} -->", f"<!-- END {marker} -->"
    if begin not in page or end not in page:
        raise ValueError(f"{PAGE.name}: markers {begin} / {end} not found")
    head, rest = page.split(begin)
    _, tail = rest.split(end)
    return f"{head}{begin}\n{body}\n{end}{tail}"


if __name__ == "__main__":
    markdown = to_markdown(table_rows())
    precision = dtype_markdown(dtype_deviations())
    if "--write" in sys.argv[1:]:
        page = render_page(PAGE.read_text(encoding="utf-8"), markdown)
        PAGE.write_text(render_page(page, precision, DTYPE_MARKER), encoding="utf-8")
    else:
        sys.stdout.write(markdown + "\n\n" + precision + "\n")
