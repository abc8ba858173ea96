"""Generate the command outputs shown in the inference sections of docs/pairwise.md.

Usage (from the repository root)::

    python docs/gen_pairwise.py              # writes docs/generated/pairwise/
    python docs/gen_pairwise.py --out DIR    # somewhere else (the stale check in tests/)

The example files are built from the embedded HANNA data in a temporary folder: the three
annotators' ratings and four LLM raters' ratings (Eval-Prompt 1) of Relevance, Coherence and
Surprise, turned into side-by-side verdicts on every pair of the ten generation systems within
each prompt (`storyeval.pairwise.verdicts_from_scores`); a one-pair-per-prompt subset for the
independent design; and a small preference-only dataset drawn with a seeded NumPy generator.
The page's commands run in-process in that folder; each output is one Markdown snippet
``docs/generated/pairwise/NAME.md``. ``calibration.md`` in the same folder is written by
``benchmarks/bench_pairwise_calibration.py`` and left alone here. ``tests/test_docs_pairwise.py``
regenerates the snippets and compares them with the committed ones.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from gen_common import (
    generator_main,
    remove_stale,
    run_cli,
    shell,
    snippet_writer,
    working_directory,
)

DOCS = Path(__file__).resolve().parent
DEFAULT_OUT = DOCS / "generated" / "pairwise"
#: Snippets written by the benchmark, not by this script.
FOREIGN = {"calibration.md", "inversion.md"}

CRITERIA = {"Relevance": "RE", "Coherence": "CH", "Surprise": "SU"}
LLMS = ("Beluga-13B", "Mistral-7B", "Llama-13B", "ChatGPT")

COMMANDS: dict[str, list[str]] = {
    "counts": ["pairwise", "counts", "201/301", "1053/1959"],
    "accuracy": ["pairwise", "accuracy", "judges.csv", "--reference", "humans.csv",
                 "--dimension", "Relevance", "--seed", "0"],
    "compare": ["pairwise", "compare", "judges.csv", "--reference", "humans.csv",
                "--dimension", "Relevance", "--seed", "0"],
    "compare_independent": ["pairwise", "compare", "independent_judges.csv", "--reference",
                            "independent_humans.csv", "--dimension", "Relevance"],
    "agreement_annotators": ["agreement", "--verdicts", "humans.csv", "--seed", "0"],
    "agreement_judges": ["agreement", "--verdicts", "judges.csv", "--judges",
                         "Beluga-13B,Mistral-7B", "--seed", "0"],
    "ranking": ["pairwise", "ranking", "judges.csv", "--reference", "humans.csv", "--judge",
                "Beluga-13B", "--seed", "0"],
    "preferences_only": ["pairwise", "pointwise", "--preferences", "prefs.csv", "--scores",
                         "scores.csv", "--interval", "auto"],
}


def write_data(folder: Path) -> None:
    """The example files of the page (see the module docstring)."""
    from storyeval.data import load_hanna
    from storyeval.pairwise.from_scores import verdicts_from_scores

    wide = load_hanna().select_systems(exclude=["Human"]).wide()
    humans = pd.concat([verdicts_from_scores(wide, f"Human {i} {code}", judge=f"annotator {i}",
                                             dimension=crit)
                        for crit, code in CRITERIA.items() for i in (1, 2, 3)])
    judges = pd.concat([verdicts_from_scores(wide, f"{m} {code} 1", judge=m, dimension=crit)
                        for crit, code in CRITERIA.items() for m in LLMS])
    humans.to_csv(folder / "humans.csv", index=False)
    judges.to_csv(folder / "judges.csv", index=False)
    # independent pairs: one pair per prompt (prompt k gets the k-th pair of systems, cycling)
    pairs = humans[["prompt_id", "system_a", "system_b"]].drop_duplicates()
    pairs = pairs.assign(k=pairs.groupby("prompt_id").cumcount())
    prompt_rank = pairs["prompt_id"].rank(method="dense").astype(int) - 1
    keep = pairs[pairs["k"] == prompt_rank % 45][["prompt_id", "system_a", "system_b"]]
    for name, table in (("independent_humans", humans), ("independent_judges", judges)):
        table.merge(keep, on=["prompt_id", "system_a", "system_b"]).to_csv(
            folder / f"{name}.csv", index=False)
    prefs, scores = preference_data()
    prefs.to_csv(folder / "prefs.csv", index=False)
    scores.to_csv(folder / "scores.csv", index=False)


def preference_data(n_pairs: int = 300) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A LitBench-like preference-only dataset: pairs of stories for one post each, one to
    three annotators per pair, a latent quality deciding the preferences, and three measures:
    two reward models (quality + noise) and the story length."""
    rng = np.random.default_rng(24)
    quality = rng.normal(0, 1, (n_pairs, 2))
    ids = np.array([[f"post{p:03d}-{s}" for s in "xy"] for p in range(n_pairs)])
    rows = []
    for p in range(n_pairs):
        for annotator in range(rng.integers(1, 4)):
            d = quality[p, 0] - quality[p, 1] + rng.normal(0, 1)
            rows.append({"prompt_id": f"post{p:03d}", "story_a": ids[p, 0],
                         "story_b": ids[p, 1], "winner": "a" if d > 0 else "b",
                         "annotator": f"rater{annotator}"})
    length = np.round(400 + 60 * quality + rng.normal(0, 80, quality.shape))
    measures = {"rm-large": quality + rng.normal(0, 0.8, quality.shape),
                "rm-small": quality + rng.normal(0, 1.6, quality.shape), "length": length}
    scores = pd.concat([pd.DataFrame({"story_id": ids.ravel(), "measure": name,
                                      "value": np.round(v.ravel(), 4)})
                        for name, v in measures.items()], ignore_index=True)
    return pd.DataFrame(rows), scores


def generate(out_dir: str | Path = DEFAULT_OUT) -> list[Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    write = snippet_writer(out, written)
    with tempfile.TemporaryDirectory() as tmp:
        write_data(Path(tmp))
        with working_directory(Path(tmp)):
            for name, argv in COMMANDS.items():
                write(name, f"```bash\n{shell(argv)}\n```\n\n```text\n"
                            f"{run_cli(argv).rstrip()}\n```\n")
    remove_stale(out, written, keep=FOREIGN)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    return generator_main(generate, DEFAULT_OUT, __doc__.split("\n")[0], argv)


if __name__ == "__main__":
    raise SystemExit(main())
