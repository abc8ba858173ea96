"""Print the agreement table of docs/metrics.md: storyeval's surface measures vs HANNA's released
values on the 96 human-written stories (rank correlations and mean values).

Usage: python docs/gen_metrics_agreement.py > agreement.md   (deterministic output)
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pandas as pd
from scipy import stats

from storyeval.data.hanna import hanna_path
from storyeval.metrics import hanna_stories, score

#: HANNA column -> storyeval measure
PAIRS = [
    ("Text length ¤§", "Length (tokens)"),
    ("Novelty-1 ¤§", "Novelty-1 (vs prompt)"),
    ("Novelty-2 ¤§", "Novelty-2 (vs prompt)"),
    ("Novelty-3 ¤§", "Novelty-3 (vs prompt)"),
    ("Repetition-1 ¤§", "Repetition-1"),
    ("Repetition-2 ¤§", "Repetition-2"),
    ("Repetition-3 ¤§", "Repetition-3"),
    ("Coverage ¤§", "Coverage (vs prompt)"),
    ("Density ¤§", "Density (vs prompt)"),
    ("Compression ¤§", "Compression (prompt/story)"),
]


def released_human_values() -> pd.DataFrame:
    """HANNA's released per-prompt values of the Human system (96 rows, prompt order)."""
    raw = pd.read_csv(hanna_path("hanna_metric_scores_llm.csv"))
    row = raw[raw["Model"] == "Human"].iloc[0]
    return pd.DataFrame({col: json.loads(row[col]) for col, _ in PAIRS})


def agreement_table() -> pd.DataFrame:
    """One row per measure: Spearman rho, Kendall tau-b, means (released, storyeval), n."""
    stories = hanna_stories(include="human")
    ours = score(stories, "surface", show_progress=False)
    wide = ours.pivot(index="prompt_id", columns="measure", values="value").sort_index()
    released = released_human_values()
    rows = []
    for col, measure in PAIRS:
        x = released[col].to_numpy(dtype=float)
        y = wide[measure].to_numpy(dtype=float)
        ok = ~(np.isnan(x) | np.isnan(y))
        rows.append({
            "HANNA column": col.replace(" ¤§", ""),
            "storyeval measure": measure,
            "Spearman": stats.spearmanr(x[ok], y[ok]).statistic,
            "Kendall tau-b": stats.kendalltau(x[ok], y[ok]).statistic,
            "mean (HANNA)": x[ok].mean(),
            "mean (storyeval)": y[ok].mean(),
            "n": int(ok.sum()),
        })
    return pd.DataFrame(rows)


def to_markdown(table: pd.DataFrame) -> str:
    head = "| " + " | ".join(table.columns) + " |"
    sep = "| " + " | ".join("---" if c in ("HANNA column", "storyeval measure") else "---:"
                            for c in table.columns) + " |"
    lines = [head, sep]
    for _, r in table.iterrows():
        cells = []
        for c in table.columns:
            v = r[c]
            if c == "n" or isinstance(v, str):
                cells.append(str(v))
            else:
                cells.append(f"{v:.3f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(to_markdown(agreement_table()) + "\n")
