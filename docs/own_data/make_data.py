"""Write the synthetic dataset of the "Your own data" tutorial (docs/own-data.md).

Six story generators x 40 prompts (ids like ``p07``), two human criteria with custom names
(``Fluency`` and ``Plot twist``) rated 1-5 by a pool of 12 crowd workers, three to five per
story (ragged), one rating left empty; three automatic metrics in two score files; and the
same data as one wide table for the column-mapping example. Deterministic (seeded).

Usage: python docs/own_data/make_data.py OUT_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

SYSTEMS = ["quill-7b", "fablenet", "plotter-xl", "tinytales", "muse-2", "baseline-lm"]
PROMPTS = [f"p{i:02d}" for i in range(40)]
CRITERIA = ["Fluency", "Plot twist"]
WORKERS = [f"w{i:02d}" for i in range(12)]


def make(seed: int = 7) -> dict[str, pd.DataFrame]:
    """The tutorial's tables: ``ratings``, ``metrics``, ``mine`` and ``wide``."""
    rng = np.random.default_rng(seed)
    skill = dict(zip(SYSTEMS, np.linspace(-1.0, 1.0, len(SYSTEMS))))
    stories = pd.DataFrame([(s, p) for s in SYSTEMS for p in PROMPTS],
                           columns=["system", "prompt_id"])
    quality = stories["system"].map(skill).to_numpy() + rng.normal(0, 0.8, len(stories))
    twist = 0.5 * quality + rng.normal(0, 0.9, len(stories))
    latent = {"Fluency": quality, "Plot twist": twist}
    rows = []
    for i, (system, prompt) in enumerate(stories.itertuples(index=False)):
        k = int(rng.integers(3, 6))  # 3 to 5 workers rate this story
        for worker in rng.choice(WORKERS, size=k, replace=False):
            bias = (int(worker[1:]) - 5.5) / 12
            for crit in CRITERIA:
                value = np.clip(np.rint(3 + latent[crit][i] + bias + rng.normal(0, 0.7)), 1, 5)
                rows.append((system, prompt, crit, worker, value))
    ratings = pd.DataFrame(rows, columns=["system", "prompt_id", "criterion", "annotator",
                                          "value"])
    ratings.loc[5, "value"] = np.nan  # one rating left empty: reported, never imputed
    story_id = stories["system"] + "/" + stories["prompt_id"]
    human = (quality + twist) / 2
    metrics = pd.concat([
        pd.DataFrame({"story_id": story_id, "measure": "overlap-f1",
                      "value": 0.3 + 0.05 * human + rng.normal(0, 0.08, len(stories))}),
        pd.DataFrame({"story_id": story_id, "measure": "length",
                      "value": np.rint(300 + 40 * quality + rng.normal(0, 60, len(stories)))}),
    ], ignore_index=True)
    mine = pd.DataFrame({"story_id": story_id, "measure": "my-metric",
                         "value": 0.6 * human + rng.normal(0, 0.6, len(stories))})
    return {"ratings": ratings, "metrics": metrics, "mine": mine,
            "wide": _wide(stories, ratings, metrics, mine)}


def _wide(stories: pd.DataFrame, ratings: pd.DataFrame, metrics: pd.DataFrame,
          mine: pd.DataFrame) -> pd.DataFrame:
    """One row per story: generator, item, ``flu_1..flu_5`` and ``twist_1..twist_5`` (the
    k-th rating of the story), the metrics and the story text."""
    slot = ratings.groupby(["system", "prompt_id", "criterion"], sort=False).cumcount() + 1
    short = ratings["criterion"].map({"Fluency": "flu", "Plot twist": "twist"})
    cells = ratings.assign(column=short + "_" + slot.astype(str)).pivot(
        index=["system", "prompt_id"], columns="column", values="value")
    cells = cells.reindex(columns=[f"{c}_{k}" for c in ("flu", "twist") for k in range(1, 6)])
    scores = pd.concat([metrics, mine]).pivot(index="story_id", columns="measure",
                                              values="value")
    wide = stories.rename(columns={"system": "generator", "prompt_id": "item"})
    keys = list(zip(stories["system"], stories["prompt_id"]))
    wide[cells.columns] = cells.reindex(keys).to_numpy()
    ids = stories["system"] + "/" + stories["prompt_id"]
    wide[scores.columns] = scores.reindex(ids).to_numpy()
    wide["text"] = "Once upon a time, story " + ids
    return wide


def write(out: Path) -> list[Path]:
    """Write ratings.csv, metrics.csv, mine.csv and wide.csv to ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, frame in make().items():
        path = out / f"{name}.csv"
        frame.to_csv(path, index=False)
        paths.append(path)
    return paths


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    for written in write(Path(sys.argv[1])):
        print(written)
