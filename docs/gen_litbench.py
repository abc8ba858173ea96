"""Generate the outputs shown in docs/litbench.md.

Usage (from the repository root)::

    python docs/gen_litbench.py              # writes docs/generated/litbench/
    python docs/gen_litbench.py --out DIR    # somewhere else (the stale check in tests/)

Every input is synthetic, drawn with seeded NumPy generators in a temporary folder: upvoted
stories for `storyeval pairwise prepare` (the more-upvoted story tends to be longer, as on
r/WritingPrompts), a RewardBench 2-style file of one chosen and three rejected texts per set
with scores of two made-up scorers, the votes of an online study (10-13 votes per pair) with
explanation texts, and the verdicts of five judging templates. The commands run in-process; the
Python calls run here; each output is one Markdown snippet ``docs/generated/litbench/NAME.md``.
``tests/test_docs_litbench.py`` regenerates them and compares them with the committed ones.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from gen_common import (
    generator_main,
    md,
    remove_stale,
    run_cli,
    shell,
    snippet_writer,
    working_directory,
)

DOCS = Path(__file__).resolve().parent
DEFAULT_OUT = DOCS / "generated" / "litbench"

COMMANDS: dict[str, list[str]] = {
    "prepare": ["pairwise", "prepare", "--stories", "stories.csv", "--out", "pairs.csv",
                "--report", "curation.csv", "--max-tokens", "none"],
    "prepare_off": ["pairwise", "prepare", "--stories", "stories.csv", "--out",
                    "pairs_biased.csv", "--max-tokens", "none", "--no-length-debias"],
    "score_pairs": ["score", "--input", "pairs_biased.csv", "--metrics", "surface",
                    "--surface-tokenizer", "regex", "--out", "len_biased.csv"],
    "length_biased": ["pairwise", "pointwise", "--preferences", "pairs_biased.csv", "--scores",
                      "len_biased.csv", "--metrics", "Length (tokens) [regex tokens]"],
    "score_debiased": ["score", "--input", "pairs.csv", "--metrics", "surface",
                       "--surface-tokenizer", "regex", "--out", "len_debiased.csv"],
    "length_debiased": ["pairwise", "pointwise", "--preferences", "pairs.csv", "--scores",
                        "len_debiased.csv", "--metrics", "Length (tokens) [regex tokens]"],
    "best_of_n": ["pairwise", "pointwise", "--preferences", "rb2.jsonl", "--scores",
                  "rb2_scores.csv"],
}


def _words(rng: np.random.Generator, n: int) -> str:
    vocab = ["the", "night", "ship", "door", "light", "she", "he", "said", "old", "storm",
             "letter", "river", "and", "then", "quiet", "a", "was", "of"]
    return " ".join(rng.choice(vocab, int(n)))


def write_stories(folder: Path, n_prompts: int = 300, seed: int = 0) -> None:
    """stories.csv: 2-5 stories per prompt; upvotes grow with length (a length bias)."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(n_prompts):
        for k in range(int(rng.integers(2, 6))):
            words = int(np.clip(rng.lognormal(6.0, 0.5), 20, 3000))
            up = int(np.round(np.exp(rng.normal(2.5, 1.0) + 0.6 * (np.log(words) - 6.0))))
            rows.append({"story_id": f"s{p}-{k}", "prompt_id": f"p{p}",
                         "prompt": f"Writing prompt number {p}.", "story": _words(rng, words),
                         "upvotes": up, "timestamp": int(rng.integers(0, 10 ** 6))})
    pd.DataFrame(rows).to_csv(folder / "stories.csv", index=False)


def write_best_of_n(folder: Path, n_sets: int = 240, seed: int = 1) -> None:
    """rb2.jsonl (RewardBench 2's columns) and scores of two scorers for its stories."""
    from storyeval.pairwise.best_of_n import best_of_n_stories, validate_best_of_n

    rng = np.random.default_rng(seed)
    sets = pd.DataFrame({
        "id": [f"rb{i}" for i in range(n_sets)],
        "prompt": [f"Prompt {i}" for i in range(n_sets)],
        "chosen": [[f"chosen text {i}"] for i in range(n_sets)],
        "rejected": [[f"rejected text {i}.{k}" for k in range(3)] for i in range(n_sets)],
        "subset": np.where(np.arange(n_sets) % 2, "Focus", "Precise IF"),
        "num_correct": 1, "num_incorrect": 3, "total_completions": 4})
    with open(folder / "rb2.jsonl", "w", encoding="utf-8") as fh:
        for rec in sets.to_dict("records"):
            fh.write(json.dumps(rec) + "\n")
    stories = best_of_n_stories(validate_best_of_n(sets))
    good = stories["system"].str.startswith("chosen").to_numpy()
    scores = pd.concat([
        pd.DataFrame({"story_id": stories["story_id"], "measure": "RM (strong)",
                      "value": rng.normal(size=len(stories)) + 1.2 * good}),
        pd.DataFrame({"story_id": stories["story_id"], "measure": "RM (weak)",
                      "value": rng.normal(size=len(stories)) + 0.3 * good})])
    scores.to_csv(folder / "rb2_scores.csv", index=False)


def human_study(seed: int = 2) -> tuple[str, str]:
    """The pooled per-vote accuracy and the explanation features of a synthetic study."""
    from storyeval.pairwise.human_study import (
        explanation_features,
        keyword_indicators,
        pooled_vote_accuracy,
    )

    rng = np.random.default_rng(seed)
    n_pairs = 60
    m = rng.integers(10, 14, n_pairs)
    pair = np.repeat(np.arange(n_pairs), m)
    plot = rng.random(len(pair)) < 0.4
    p = np.clip(0.55 + rng.normal(0, 0.15, n_pairs)[pair] + 0.15 * plot, 0.02, 0.98)
    correct = (rng.random(len(pair)) < p).astype(float)
    phrases = np.array(["the writing is vivid", "I liked the ending", "more original",
                        "the characters feel real"])
    texts = np.where(plot, "the plot holds together; ", "") + phrases[
        rng.integers(0, len(phrases), len(pair))]
    res = pooled_vote_accuracy(correct, pair)
    pooled = pd.DataFrame([{"votes": res.n, "pairs": res.n_clusters, "accuracy": res.statistic,
                            "ci_low": res.ci_low, "ci_high": res.ci_high,
                            "pvalue": res.pvalue, "test": res.test}])
    feats = keyword_indicators(texts, {"discusses plot": ["plot", "storyline"],
                                       "characters": ["characters", "character"],
                                       "ending": ["ending", "twist"],
                                       "style": ["writing", "prose", "vivid"]})
    table = explanation_features(correct, feats, pair)
    cols = ["feature", "n_with", "accuracy_with", "accuracy_without", "effect", "ci_low",
            "ci_high", "pvalue", "p_adjusted"]
    return md(pooled), md(table[cols])


def selection(seed: int = 3) -> tuple[str, str]:
    """The simulation that chose the default, and the call on synthetic template verdicts."""
    from storyeval.pairwise.selection import selected_accuracy, simulate_selection

    sim = simulate_selection(n_templates=5, n_clusters=40, per_cluster=4, n_sims=200,
                             n_resamples=200, seed=seed)
    rng = np.random.default_rng(seed)
    clusters = np.repeat(np.arange(50), 4)
    correct = (rng.random((200, 5)) < np.array([0.6, 0.62, 0.58, 0.64, 0.61])).astype(float)
    names = [f"template {k}" for k in "ABCDE"]
    rows = [selected_accuracy(correct, clusters, names=names, method=m, random_state=0)
            .query("selected") for m in ("naive", "max-t", "split")]
    chosen = pd.concat(rows)[["method", "template", "accuracy", "ci_low", "ci_high", "pvalue",
                              "critical_value", "n_clusters"]]
    return (md(sim[["method", "coverage", "mean_width", "bias", "n_templates", "n_clusters",
                    "n_sims"]]), md(chosen))


def generate(out_dir: str | Path = DEFAULT_OUT) -> list[Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    write = snippet_writer(out, written)
    with tempfile.TemporaryDirectory() as tmp, working_directory(Path(tmp)):
        write_stories(Path(tmp))
        write_best_of_n(Path(tmp))
        for name, argv in COMMANDS.items():
            output = run_cli(argv).rstrip()
            text = f"```bash\n{shell(argv)}\n```\n"
            if output:  # `storyeval score` reports on standard error only
                text += f"\n```text\n{output}\n```\n"
            write(name, text)
    pooled, features = human_study()
    write("pooled_votes", pooled)
    write("features", features)
    sim, chosen = selection()
    write("selection_simulation", sim)
    write("selection_example", chosen)
    remove_stale(out, written)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    return generator_main(generate, DEFAULT_OUT, __doc__.split("\n")[0], argv)


if __name__ == "__main__":
    raise SystemExit(main())
