"""Generate the numbers, tables and figures of the two demo pages: contamination and explanations.

Usage (from the repository root)::

    python docs/gen_demos.py                 # writes docs/generated/demos/ and docs/img/
    python docs/gen_demos.py --out DIR       # somewhere else (the stale check in tests/)
    python docs/gen_demos.py --no-figures    # Markdown only (no UMAP: about twice as fast)

``docs/contamination.md`` and ``docs/explanations.md`` carry the prose; every number they show
comes from a snippet written here and included with ``--8<-- "generated/demos/NAME.md"``.

*Contamination.* The page's own Python block (generated here, so the code shown is the code
run) trains the tiny GPT-2 and writes the CSV files in a temporary folder; then the page's two
``storyeval contamination`` commands run in-process in that folder and their ``summary.json``
files give the tables. This is done for every entry of :data:`TRAINING_STEPS`; the first one's
``roc.png`` is the page's figure.

The trained models are shipped in ``docs/demo_models/`` and, unless ``--retrain`` is given, the
block's ``train_tiny_causal_lm`` call is answered from there (after checking that its arguments
are the ones the shipped model was trained with, ``training.json``). Why: training amplifies
the last bits in which CPUs differ (torch's vectorised kernels: AVX2, AVX-512 or none; BLAS
builds; a transformers release), even in float64 and on one thread, so a model retrained on
another machine scores some texts differently in the third decimal, and a text near the
threshold is flagged or not. Inference of a fixed model in float64 (the commands'
``--dtype float64``) differs between machines only near 1e-13, so every number on the page is
the same on every machine.

*Explanations.* ``storyeval explain --user-study`` and the same with ``--mask-cues`` run
in-process; ``summary.json``, ``separation.csv``, ``keywords.csv``, ``explanations.csv`` and
``embeddings.npy`` give the tables, and ``projection.png`` the figures. Without figures the
commands get ``--projection pca``: the projection is only drawn, no number depends on it, and
UMAP's numba compilation (about 10 s) is skipped.

Determinism: torch runs on the CPU with one intra-op thread, deterministic algorithms and fixed
seeds (training, bootstrap, permutations, UMAP): two runs on one machine write identical bytes.
The Markdown has no dates, paths or timings, so ``tests/test_docs_demos.py`` regenerates it into
a temporary folder and compares it with the committed snippets token by token: the
contamination snippets exactly (shipped weights, float64 inference), the explanation snippets
exactly except their 3-decimal statistics, which may differ by 2 units of the last digit (the
sentence encoder runs in float32; see that test's docstring). The snippets live in
their own folder because ``docs/gen_pages.py`` owns (and prunes) the ``*.md`` files directly
under ``docs/generated/``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from gen_common import md, remove_stale, run_cli, shell, snippet_writer, working_directory

DOCS = Path(__file__).resolve().parent
DEFAULT_OUT = DOCS / "generated" / "demos"
DEFAULT_IMG = DOCS / "img"
#: The trained tiny GPT-2 of each entry of TRAINING_STEPS (``tiny-gpt2-STEPS/``), with the
#: arguments it was trained with (``training.json``): see the module docstring.
MODELS = DOCS / "demo_models"

# ------------------------------------------------------------------ contamination settings
#: Training lengths of the tiny GPT-2 shown on the page. 400 steps took about 25 s of training
#: on the 2-core CI machine, more than the rest of the generation together. After 120 steps the
#: AUC still depends strongly on the seed of the initial weights (0.73-0.95 over seeds 0-3);
#: after 200 steps members and non-members are separated almost perfectly for every seed tried
#: (0.96-1.00), so the page's prose does not hinge on one lucky draw.
TRAINING_STEPS = (50, 200)
N_WORDS = 100           # each story is cut to its first N_WORDS words
N_MEMBERS = 48          # the first N_MEMBERS human stories are trained on
N_CALIBRATION = 24      # non-members used to calibrate the threshold
N_UNLABELLED_MEMBERS = 24  # members among the unlabelled texts (with as many unseen texts)
#: (file name in docs/img, the CLI output copied there)
CONTAMINATION_FIGURE = ("contamination_tiny_gpt2_roc.png", "out/labelled/roc.png")
LABELLED_ARGS = ["contamination", "--model", "tiny-gpt2", "--dtype", "float64", "--texts",
                 "labelled.csv", "--labels", "member", "--id-column", "story_id",
                 "--out", "out/labelled"]
RATE_ARGS = ["contamination", "--model", "tiny-gpt2", "--dtype", "float64", "--texts",
             "unlabelled.csv", "--nonmembers", "nonmembers.csv", "--id-column", "story_id",
             "--out", "out/rate"]

# -------------------------------------------------------------------- explanation settings
EXPLAIN_ARGS = ["explain", "--user-study", "--out", "out/user-study"]
EXPLAIN_MASKED_ARGS = ["explain", "--user-study", "--mask-cues", "--out",
                       "out/user-study-masked"]
EXPLAIN_FIGURES = {"plain": "explanations_user_study_umap.png",
                   "masked": "explanations_user_study_umap_masked.png"}
KEYWORDS_SHOWN = 10


# ---------------------------------------------------------------------------------- helpers
def ci(value: float, low: float, high: float, digits: int = 3) -> str:
    """``0.788 [0.693, 0.872]`` (the interval as storyeval prints one)."""
    from storyeval.report.present import fixed, interval_text

    return f"{fixed(value, digits)} {interval_text(low, high, digits)}"


def minus(text: str) -> str:
    """A typographic minus sign in a formatted number."""
    return text.replace("-", "\u2212")


@contextlib.contextmanager
def deterministic_torch() -> Iterator[None]:
    """One CPU thread, deterministic algorithms, seed 0; the previous settings and random
    state are restored afterwards (the tests run this inside pytest's process)."""
    from storyeval._optional import import_optional

    torch = import_optional("torch", extra="contamination", purpose="the documentation demos")
    threads = torch.get_num_threads()
    was_deterministic = torch.are_deterministic_algorithms_enabled()
    rng_state = torch.get_rng_state()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(0)
    try:
        yield
    finally:
        torch.set_rng_state(rng_state)
        torch.use_deterministic_algorithms(was_deterministic)
        torch.set_num_threads(threads)


# ---------------------------------------------------------------------------- contamination
def contamination_code(steps: int) -> str:
    """The page's Python block: train the tiny GPT-2 and write the three CSV files."""
    m, c, u = N_MEMBERS, N_CALIBRATION, N_UNLABELLED_MEMBERS
    return f"""\
import pandas as pd
from storyeval.contamination import train_tiny_causal_lm
from storyeval.data import load_hanna_stories

human = load_hanna_stories().query("system == 'Human'")
texts = [" ".join(s.split()[:{N_WORDS}]) for s in human["story"]]
ids = human["story_id"].tolist()
train_tiny_causal_lm(texts[:{m}], steps={steps}, batch_size=16, context=128,
                     tokenizer_texts=texts, random_state=0, out_dir="tiny-gpt2")
member = [1] * {m} + [0] * (len(texts) - {m})
pd.DataFrame({{"story_id": ids, "text": texts, "member": member}}).to_csv("labelled.csv", index=False)
pd.DataFrame({{"story_id": ids[{m}:{m + c}], "text": texts[{m}:{m + c}]}}).to_csv(
    "nonmembers.csv", index=False)      # known unseen texts: calibrate the threshold
pd.DataFrame({{"story_id": ids[:{u}] + ids[{m + c}:{m + c + u}],
              "text": texts[:{u}] + texts[{m + c}:{m + c + u}]}}).to_csv(
    "unlabelled.csv", index=False)      # {u} members + {u} unseen texts: true rate 0.5
"""


def shipped_model(steps: int) -> Path:
    return MODELS / f"tiny-gpt2-{steps}"


def _call_record(texts, kwargs) -> dict:
    """What identifies a training call: its arguments, the texts by their number."""
    record = {key: value for key, value in kwargs.items() if key != "out_dir"}
    record["n_texts"] = len(texts)
    record["n_tokenizer_texts"] = len(record.pop("tokenizer_texts", texts))
    return dict(sorted(record.items()))


@contextlib.contextmanager
def tiny_lm_training(steps: int, *, retrain: bool) -> Iterator[None]:
    """The page's ``train_tiny_causal_lm`` call, answered from ``docs/demo_models`` (refused
    if its arguments differ from those the shipped model was trained with), or, with
    ``retrain``, run and its model shipped there with its arguments."""
    import storyeval.contamination as contamination

    original = contamination.train_tiny_causal_lm
    folder = shipped_model(steps)

    def from_shipped(texts, **kwargs):
        called = _call_record(texts, kwargs)
        recorded = json.loads((folder / "training.json").read_text(encoding="utf-8"))
        if called != recorded["arguments"]:
            raise RuntimeError(f"the page's code trains with {called}, the model in {folder} "
                               f"was trained with {recorded['arguments']}: run "
                               f"docs/gen_demos.py --retrain")
        shutil.copytree(folder, kwargs["out_dir"], ignore=shutil.ignore_patterns("training.json"))

    def train_and_ship(texts, **kwargs):
        result = original(texts, **kwargs)
        _ship(folder, Path(kwargs["out_dir"]), _call_record(texts, kwargs))
        return result

    contamination.train_tiny_causal_lm = train_and_ship if retrain else from_shipped
    try:
        yield
    finally:
        contamination.train_tiny_causal_lm = original


def _ship(target: Path, trained: Path, arguments: dict) -> None:
    import torch
    import transformers

    import storyeval

    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(trained, target)
    record = {"arguments": arguments,
              "trained with": {"storyeval": storyeval.__version__, "torch": torch.__version__,
                               "transformers": transformers.__version__,
                               "cpu capability": torch.backends.cpu.get_cpu_capability()}}
    (target / "training.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def run_contamination(steps: int, folder: Path, *, retrain: bool = False) -> dict:
    """Run the page's code and commands for ``steps`` training steps in ``folder``; the model
    comes from ``docs/demo_models/`` unless ``retrain`` (then it is trained and shipped)."""
    folder.mkdir(parents=True, exist_ok=True)
    with working_directory(folder):
        code = compile(contamination_code(steps), f"contamination demo, {steps} steps", "exec")
        with tiny_lm_training(steps, retrain=retrain):
            exec(code, {"__name__": "__demo__"})  # noqa: S102 - our own code, on the page
        run_cli(LABELLED_ARGS, warning_action=None)
        run_cli(RATE_ARGS, warning_action=None)
    labelled = json.loads((folder / "out/labelled/summary.json").read_text(encoding="utf-8"))
    rate = json.loads((folder / "out/rate/summary.json").read_text(encoding="utf-8"))
    members = pd.read_csv(folder / "labelled.csv")["member"]
    unlabelled = pd.read_csv(folder / "unlabelled.csv")
    config = json.loads((folder / "tiny-gpt2/config.json").read_text(encoding="utf-8"))
    n_params = _parameter_count(folder / "tiny-gpt2")
    return {"steps": steps, "labelled": labelled, "rate": rate, "config": config,
            "n_params": n_params, "n_members": int(members.sum()),
            "n_texts": int(members.size), "n_unlabelled": len(unlabelled)}


def _parameter_count(folder: Path) -> int:
    from storyeval.contamination import load_causal_lm

    model, _ = load_causal_lm(str(folder), device="cpu")
    return int(sum(p.numel() for p in model.parameters()))


def contamination_pages(write: Callable[[str, str], None], runs: list[dict]) -> None:
    first = runs[0]
    cfg = first["config"]
    evaluation = {e["score"]: e for e in first["labelled"]["evaluation"]}
    n_mem, n_non = first["n_members"], first["n_texts"] - first["n_members"]
    write("demo_contamination_setup", (
        f"No real LLM weights are available offline, so the example trains its own: a "
        f"{cfg['n_layer']}-layer GPT-2 ({first['n_params']:,} parameters, {cfg['n_embd']}-"
        f"dimensional, {cfg['n_positions']}-token context, byte-level BPE of "
        f"{cfg['vocab_size']} tokens trained on the fly) trained for {first['steps']} steps on "
        f"the first {N_WORDS} words of {n_mem} HANNA human stories (the members); the "
        f"{n_non} others are non-members. "
        f"`storyeval.contamination.train_tiny_causal_lm` does this in seconds on a CPU. "
        f"Training amplifies the last bits in which CPUs differ, so a model retrained on "
        f"another machine scores some texts slightly differently; the models these numbers "
        f"come from are shipped in `docs/demo_models/`, and the commands run them in float64 "
        f"(`--dtype float64`), which gives the same numbers on every machine.\n"))
    commands = (f"{shell(LABELLED_ARGS[:7])} \\\n    {' '.join(LABELLED_ARGS[7:])}\n"
                f"{shell(RATE_ARGS[:7])} \\\n    {' '.join(RATE_ARGS[7:])}\n")
    write("demo_contamination_code", f"```python\n{contamination_code(first['steps'])}```\n\n"
          f"```bash\n{commands}```\n")

    fprs = list(next(iter(evaluation.values()))["tpr"])
    rows = []
    for name, e in evaluation.items():
        row = {"score": name, "ROC AUC [95% CI]": ci(e["auc"], *e["auc_ci"])}
        for f in fprs:
            row[f"TPR at {float(f):.1%} FPR [95% CI]".replace(".0%", "%")] = ci(
                e["tpr"][f], *e["tpr_ci"][f])
        rows.append(row)
    text = (f"*After {first['steps']} training steps: {n_mem} members, {n_non} non-members, "
            f"{first['labelled']['n_resamples']} bootstrap resamples, seed "
            f"{first['labelled']['seed']} (`out/labelled/summary.json`).*\n\n"
            + md(pd.DataFrame(rows)))
    # FPR levels that allow no false positive among the non-members (the command's notes)
    coarse = [float(f) for f in fprs if float(f) * n_non < 1]
    if coarse:
        levels = " and ".join(f"{f:.1%}".replace(".0%", "%") for f in coarse)
        text += (f"\nWith {n_non} non-members, FPR {levels} {'is' if len(coarse) == 1 else 'are'}"
                 f" below the resolution 1/{n_non}: no false positive is allowed, so the TPR "
                 f"there is the TPR at 0% FPR (the command prints this as a note).\n")
    write("demo_contamination_auc", text)

    rows = []
    for run in runs:
        ev = {e["score"]: e for e in run["labelled"]["evaluation"]}
        rt = {r["score"]: r for r in run["rate"]["contamination_rate"]}
        row = {"training steps": run["steps"]}
        for name, e in ev.items():
            row[f"AUC {name}"] = f"{e['auc']:.3f}"
        for name, r in rt.items():
            row[f"rate {name} [95% CI]"] = ci(r["rate"], *r["ci"])
            row[f"flagged {name}"] = f"{r['n_flagged']} of {r['n_texts']}"
        rows.append(row)
    rate = first["rate"]["contamination_rate"][0]
    achieved = sorted({f"{r['calibration_fpr']:.3f}" for run in runs
                       for r in run["rate"]["contamination_rate"]})
    n_true = N_UNLABELLED_MEMBERS
    write("demo_contamination_steps", (
        f"*`unlabelled.csv`: {rate['n_texts']} texts, {n_true} of them members (true rate "
        f"{n_true / rate['n_texts']:.1f}); threshold calibrated on {rate['n_calibration']} "
        f"known non-members at target FPR {rate['target_fpr']:g}, achieved calibration FPR "
        f"{' / '.join(achieved)}; AUC from `labelled.csv`.*\n\n" + md(pd.DataFrame(rows))))


def contamination(write, folder: Path, *, figures: bool, img_dir: Path,
                  written: list[Path], retrain: bool = False) -> list[dict]:
    runs = [run_contamination(steps, folder / f"steps_{steps}", retrain=retrain)
            for steps in TRAINING_STEPS]
    contamination_pages(write, runs)
    if figures:
        name, source = CONTAMINATION_FIGURE
        shutil.copyfile(folder / f"steps_{TRAINING_STEPS[0]}" / source, img_dir / name)
        written.append(img_dir / name)
    return runs


# ----------------------------------------------------------------------------- explanations
def run_explain(args: Sequence[str], folder: Path, *, figures: bool) -> dict:
    argv = list(args) + ([] if figures else ["--projection", "pca"])
    with working_directory(folder):
        run_cli(argv, warning_action=None)
    out = folder / args[args.index("--out") + 1]
    return {
        "out": out,
        "summary": json.loads((out / "summary.json").read_text(encoding="utf-8")),
        "separation": pd.read_csv(out / "separation.csv"),
        "keywords": pd.read_csv(out / "keywords.csv", keep_default_na=False),
        "table": pd.read_csv(out / "explanations.csv", keep_default_na=False),
        "embeddings": np.load(out / "embeddings.npy"),
    }


def separation_table(run: dict) -> pd.DataFrame:
    """Per criterion and overall: n, silhouette, shuffled mean, p (``separation.csv``)."""
    sep = run["separation"]
    sil = run["summary"]["silhouette"]
    rows = []
    for row in sep.itertuples(index=False):
        shuffled = minus(f"{row.null_mean:.3f}")
        if row.criterion == "all":
            shuffled += f" (sd {sil['null_sd']:.3f})"
        rows.append({"criterion": row.criterion, "n": int(row.n),
                     "silhouette": minus(f"{row.silhouette:.3f}"),
                     "shuffled mean": shuffled, "p": f"{row.pvalue:.3f}"})
    return pd.DataFrame(rows)


def keyword_table(run: dict, criteria: Sequence[str]) -> pd.DataFrame:
    kw = run["keywords"]
    rows = []
    for crit in criteria:
        words = kw[kw["criterion"] == crit].sort_values("rank")["keyword"].head(KEYWORDS_SHOWN)
        rows.append({"criterion": crit,
                     "keywords": ", ".join(w.replace("|", "\\|") for w in words)})
    return pd.DataFrame(rows)


def nearest_criteria(run: dict) -> pd.DataFrame:
    """For each ``unknown`` explanation, the mean cosine distance of its embedding to each
    criterion's explanations, nearest first (embeddings are unit length)."""
    emb = run["embeddings"].astype(np.float64)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    crit = run["table"]["criterion"].to_numpy()
    unknown = np.flatnonzero(crit == "unknown")
    rows = []
    for i in unknown:
        dist = 1.0 - emb[crit != "unknown"] @ emb[i]
        means = pd.Series(dist).groupby(crit[crit != "unknown"]).mean().sort_values()
        rows.append({"explanation_id": int(run["table"]["explanation_id"].iloc[i]),
                     "nearest": means.index[0], "distance": means.iloc[0],
                     "second": means.index[1], "second_distance": means.iloc[1]})
    return pd.DataFrame(rows)


def explanation_pages(write: Callable[[str, str], None], plain: dict, masked: dict) -> None:
    from storyeval.data import load_user_study
    from storyeval.data.criteria import CRITERIA

    table = plain["table"]
    counts = plain["summary"]["criteria"]
    assigned = sorted(((c, n) for c, n in counts.items() if c != "unknown"),
                      key=lambda item: (-item[1], CRITERIA.index(item[0])
                                        if item[0] in CRITERIA else 99))
    n_unknown = counts.get("unknown", 0)
    study = load_user_study()
    lines = []
    near = nearest_criteria(plain).set_index("explanation_id")
    for row in table[table["criterion"] == "unknown"].itertuples(index=False):
        rows = np.flatnonzero(study["explanation_id"].to_numpy() == row.explanation_id)
        first, last = int(rows.min()) + 2, int(rows.max()) + 2   # line 1 is the header
        quote = " ".join(str(row.explanation).split())
        n = near.loc[row.explanation_id]
        lines.append(
            f"- explanation {row.explanation_id} (story {row.story_id}, lines {first}\u2013"
            f"{last} of the file), reason `{row.reason}`:\n\n    > {quote}\n\n"
            f"    In the embedding space it is nearest to the {n['nearest']} explanations "
            f"(mean cosine distance {n['distance']:.3f}; next {n['second']}, "
            f"{n['second_distance']:.3f}).\n")
    write("demo_explain_criteria", (
        f"**Result on the {sum(counts.values())} explanations**: "
        f"{sum(n for _, n in assigned)} assigned ("
        + ", ".join(f"{c} {n}" for c, n in assigned)
        + f") and **{n_unknown} unknown**:\n\n" + "\n".join(lines)))

    for name, run in (("demo_explain_separation", plain),
                      ("demo_explain_separation_masked", masked)):
        sil = run["summary"]["silhouette"]
        write(name, (f"*Silhouette (cosine) of {sil['n_items']} explanations, "
                     f"{sil['n_excluded']} `unknown` left out; {sil['n_permutations']} label "
                     f"shuffles, seed {sil['random_state']} (`separation.csv`).*\n\n"
                     + md(separation_table(run))))

    rows = []
    for label, run in (("as written", plain), ("criterion cues masked", masked)):
        sil = run["summary"]["silhouette"]
        rows.append({"explanations": label, "silhouette": minus(f"{sil['statistic']:.3f}"),
                     "shuffled mean": minus(f"{sil['null_mean']:.3f}"),
                     "shuffled 95th percentile": minus(f"{sil['null_quantile_95']:.3f}"),
                     "p": f"{sil['pvalue']:.3f}"})
    write("demo_explain_summary", md(pd.DataFrame(rows)))

    criteria = [c for c in CRITERIA if c in counts]
    top = int(plain["keywords"]["rank"].max())
    for name, run in (("demo_explain_keywords", plain),
                      ("demo_explain_keywords_masked", masked)):
        write(name, (f"*First {KEYWORDS_SHOWN} of {top} YAKE! keywords per criterion, most "
                     f"relevant first (`keywords.md` has all).*\n\n"
                     + md(keyword_table(run, criteria))))


def explanations(write, folder: Path, *, figures: bool, img_dir: Path,
                 written: list[Path]) -> tuple[dict, dict]:
    plain = run_explain(EXPLAIN_ARGS, folder, figures=figures)
    masked = run_explain(EXPLAIN_MASKED_ARGS, folder, figures=figures)
    explanation_pages(write, plain, masked)
    if figures:
        for key, run in (("plain", plain), ("masked", masked)):
            shutil.copyfile(run["out"] / "projection.png", img_dir / EXPLAIN_FIGURES[key])
            written.append(img_dir / EXPLAIN_FIGURES[key])
    return plain, masked


# ---------------------------------------------------------------------------------- driver
def generate(out_dir: str | Path = DEFAULT_OUT, *, figures: bool = True,
             img_dir: str | Path = DEFAULT_IMG, retrain: bool = False) -> list[Path]:
    """Write the demo snippets to ``out_dir`` (and, with ``figures``, the PNGs to ``img_dir``).

    ``retrain`` trains the tiny GPT-2s anew and replaces the shipped ones in ``docs/demo_models``.

    Returns the written paths. Markdown files are rewritten only when their text changes;
    Markdown files of ``out_dir`` that are no longer generated are removed (the folder is
    this generator's alone).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    img = Path(img_dir)
    if figures:
        img.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    write = snippet_writer(out, written)

    with tempfile.TemporaryDirectory() as tmp, deterministic_torch():
        contamination(write, Path(tmp) / "contamination", figures=figures, img_dir=img,
                      written=written, retrain=retrain)
        (Path(tmp) / "explain").mkdir()
        explanations(write, Path(tmp) / "explain", figures=figures, img_dir=img,
                     written=written)
    remove_stale(out, written)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"output folder of the snippets (default: {DEFAULT_OUT})")
    parser.add_argument("--img", type=Path, default=DEFAULT_IMG,
                        help=f"output folder of the figures (default: {DEFAULT_IMG})")
    parser.add_argument("--no-figures", action="store_true",
                        help="skip the PNG figures (and UMAP)")
    parser.add_argument("--retrain", action="store_true",
                        help=f"train the tiny GPT-2s anew and replace the shipped ones ({MODELS})")
    args = parser.parse_args(argv)
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ.setdefault(name, "1")  # everything is local: never ask a model hub
    start = time.perf_counter()
    paths = generate(args.out, figures=not args.no_figures, img_dir=args.img,
                     retrain=args.retrain)
    print(f"wrote {len(paths)} files in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
