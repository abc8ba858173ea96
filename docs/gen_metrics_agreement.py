"""The generated parts of docs/metrics.md: storyeval's surface measures vs HANNA's released
values on the 96 human-written stories (rank correlations and mean values), and the output of the
end-to-end example (surface measures meta-evaluated against the human ratings).

Usage: python docs/gen_metrics_agreement.py            # print both blocks
       python docs/gen_metrics_agreement.py --write    # rewrite them in docs/metrics.md
tests/test_docs_metrics.py fails when the page is stale.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

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


#: the measures of the end-to-end example on the page (its `storyeval meta --metrics`)
END_TO_END_MEASURES = ("Length (tokens),Distinct-1,Novelty-1 (vs prompt),Repetition-1,"
                       "Coverage (vs prompt),Sentences starting with a pronoun")
PAGE = Path(__file__).resolve().parent / "metrics.md"


def end_to_end_output(tmp_dir: Path) -> str:
    """The page's two commands, run through the real CLI, and the Markdown table they print."""
    import contextlib
    import io

    from storyeval.cli import main

    scores = tmp_dir / "human_surface.csv"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(["score", "--dataset", "hanna", "--subset", "human", "--metrics", "surface",
                     "--out", str(scores), "--no-progress"])
    if code != 0:
        raise RuntimeError(f"storyeval score exited with {code}")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["meta", "--scores", str(scores), "--include-human-stories", "--levels",
                     "overall", "--reference", "none", "--format", "md", "--digits", "2",
                     "--metrics", END_TO_END_MEASURES])
    if code != 0:
        raise RuntimeError(f"storyeval meta exited with {code}")
    text = out.getvalue()
    return text[text.index("| measure"):].strip()  # the table, without the settings lines


def blocks() -> dict[str, str]:
    """Marker name -> generated Markdown."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        return {"gen_metrics_agreement.py": to_markdown(agreement_table()),
                "end_to_end": end_to_end_output(Path(tmp))}


def render_page(page: str, generated: dict[str, str]) -> str:
    """``page`` with the text between each ``<!-- BEGIN name -->``/``<!-- END name -->`` pair
    replaced by the generated block."""
    for name, body in generated.items():
        begin, end = f"<!-- BEGIN {name} -->", f"<!-- END {name} -->"
        head, rest = page.split(begin)
        _, tail = rest.split(end)
        page = f"{head}{begin}\n{body}\n{end}{tail}"
    return page


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
    generated = blocks()
    if "--write" in sys.argv[1:]:
        PAGE.write_text(render_page(PAGE.read_text(encoding="utf-8"), generated),
                        encoding="utf-8")
    else:
        sys.stdout.write("\n\n".join(generated.values()) + "\n")
