"""The notebook-style tutorial page (docs/notebook.md): its cells, run in order in one
namespace, each followed by the output it prints.

    python docs/gen_notebook.py          # rewrite docs/notebook.md from CELLS
    python docs/gen_notebook.py --check  # exit 1 when the page is not what running gives

tests/test_notebook_page.py runs the cells of the committed page and compares every printed
output with the page, so the page cannot drift from the code.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
import warnings
from pathlib import Path

PAGE = Path(__file__).resolve().parent / "notebook.md"

INTRO = """\
# Notebook: the Python API on DataFrames

Everything the command line does, a notebook can do on pandas DataFrames: read ratings and
scores from memory, meta-evaluate, look at the result, and take every number out as one tidy
table. Each cell below is followed by what it prints; the test suite runs the cells of this page
in order and checks every output (`docs/gen_notebook.py` writes them).

The data are made up in the first cell (deterministic arithmetic, no random numbers): five
systems, twelve prompts each, three annotators rating one criterion, and two automatic
measures.
"""

# (markdown before the cell, code of the cell)
CELLS: list[tuple[str, str]] = [
    ("## 1. Ratings and scores as DataFrames", '''\
import pandas as pd

import storyeval
from storyeval.data import read_dataset

systems = ["alpha", "beta", "gamma", "delta", "epsilon"]
ratings = pd.DataFrame([
    {"story_id": f"{system}/item-{p}", "annotator": f"w{a}", "criterion": "Quality",
     "value": 1 + (2 * s + p // 3 + (a * p) % 2) % 5}
    for s, system in enumerate(systems) for p in range(12) for a in range(3)])
scores = pd.DataFrame([
    {"story_id": f"{system}/item-{p}", "measure": measure,
     "value": (2 * s + p // 3) * weight + (p * 7 % 5) / 10}
    for s, system in enumerate(systems) for p in range(12)
    for measure, weight in (("length", 1.0), ("repetition", -0.5))])
print(ratings.head(3).to_string(index=False))'''),
    ("`read_dataset` takes DataFrames as it takes files (long ratings here; a long score table "
     "or a wide table work the same way), and `scores` joins automatic scores on the story "
     "ids. Prompt ids may be text (`item-7`). The layout-specific readers take DataFrames "
     "too: `ratings_to_dataset(ratings)`, `scores_to_dataset(long_scores, criteria=[...])` "
     "and `wide_to_dataset(table, id=..., criteria=...)` in `storyeval.data`.", '''\
dataset = read_dataset(ratings, scores=scores)
print(dataset)'''),
    ("## 2. Meta-evaluate\n\nThe keyword arguments take the command line's spellings too "
     "(`levels=\"overall,system\"`). A result prints as one line, not as its tables:", '''\
result = storyeval.meta_evaluate(dataset, levels="overall,system")
print(result)'''),
    ("`summary()` gives the facts and, per level and criterion, the measure with the largest "
     "|r|, the human baseline and the comparison tests significant after adjustment:", '''\
print(result.summary())'''),
    ("In Jupyter, the result's last-line display (`_repr_html_`) opens with the answer, as "
     "`index.html` does: per level and criterion the best measure with its interval and its "
     "test against the next one; the correlation grids with the human baseline row follow, "
     "folded.\n\n"
     "## 3. Every number as one tidy table\n\n`to_frame()` has one number per row: "
     "correlations, the human baseline and the comparison tests, ready for `query`, `pivot` or "
     "plotting (`measure` and `other` hold the identifiers as in the data, `measure_name` and "
     "`other_name` the display names that tables and figures print):", '''\
tidy = result.to_frame()
print(tidy.groupby("table").size().to_string())
print(tidy.query("table == 'correlation' and level == 'system'")
      [["measure", "quantity", "value", "n"]].round(3).to_string(index=False))'''),
    ("## 4. Correlate directly\n\n`storyeval.correlate` takes the dataset too: without "
     "measures, its automatic measures against its human criteria:", '''\
table = storyeval.correlate(dataset, level="system")
print(table[["measure_x", "measure_y", "value", "n"]].round(3).to_string(index=False))'''),
    ("A wrong call says what to do instead:", '''\
try:
    storyeval.correlate([1, 2, 3])
except storyeval.exceptions.InputError as error:
    print(error)'''),
]

OUTRO = """
Next: [Your own data](own-data.md) for files and the command line, [Concepts](concepts.md)
for what the numbers mean, and the [API reference](api.md).
"""


def run_cells(cells: list[str]) -> list[str]:
    """The standard output of each cell, the cells run in order in one namespace."""
    namespace: dict[str, object] = {"__name__": "__notebook__"}
    outputs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # warnings go to stderr in a notebook, not to cells
        for code in cells:
            buffer = io.StringIO()
            with contextlib.redirect_stdout(buffer):
                exec(compile(code, "<notebook cell>", "exec"), namespace)  # noqa: S102
            outputs.append(buffer.getvalue().rstrip())
    return outputs


def render() -> str:
    import storyeval.exceptions  # noqa: F401  (the last cell uses storyeval.exceptions)

    outputs = run_cells([code for _, code in CELLS])
    parts = [INTRO]
    for (text, code), out in zip(CELLS, outputs):
        parts.append(f"{text}\n\n```python\n{code}\n```\n")
        if out:
            parts.append(f"```text\n{out}\n```\n")
    parts.append(OUTRO)
    return "\n".join(parts)


def page_cells(text: str) -> list[tuple[str, str]]:
    """(code, printed output or "") of each python cell of a rendered page."""
    pattern = re.compile(r"```python\n(.*?)\n```\n(?:\n?```text\n(.*?)\n```\n)?", re.S)
    return [(m.group(1), m.group(2) or "") for m in pattern.finditer(text)]


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        return 0 if PAGE.read_text(encoding="utf-8") == text else 1
    PAGE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
