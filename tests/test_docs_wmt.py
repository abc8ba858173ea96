"""The page "WMT meta-metrics and length" (docs/wmt.md): its generated snippets are current,
the page includes all of them, and what its prose says about them holds.

``docs/gen_wmt.py`` runs ``storyeval meta`` in-process on the embedded HANNA data and the
library on synthetic pairs (numpy only, fixed seeds). The stale check regenerates the snippets
into a temporary folder and compares them with the committed ones (``tests/_docs_compare.py``):
text exactly, decimals within one unit of their last printed digit (float64 sums may differ in
the last bits between BLAS builds).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _docs_compare import describe, read_markdown, stale_files
from _docs_scripts import load_docs_script

pytestmark = pytest.mark.slow  # about ten seconds of storyeval commands

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "wmt.md"
WMT = ROOT / "docs" / "generated" / "wmt"
SNIPPET = re.compile(r'^--8<-- "generated/wmt/([^"]+\.md)"\s*$', re.MULTILINE)


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
    out = tmp_path_factory.mktemp("wmt")
    load_docs_script("gen_wmt").generate(out)
    return out


def test_snippets_are_current(regenerated):
    report = stale_files(read_markdown(regenerated), read_markdown(WMT), last_digit_units=1,
                         min_decimals=1)
    assert not (report["missing"] or report["extra"] or report["changed"]), (
        "docs/generated/wmt/ is stale; run `python docs/gen_wmt.py`\n" + describe(report))


def test_page_includes_every_snippet():
    included = set(SNIPPET.findall(PAGE.read_text(encoding="utf-8")))
    assert included == {p.name for p in WMT.glob("*.md")}


def test_prose_claims_hold():
    reference = (WMT / "reference.md").read_text(encoding="utf-8")
    assert reference.count("all within 1e-9") == 2 and "NOT" not in reference
    assert "epsilon identical in 45 of 48; in the other 3 (per-system grouping only)" in reference
    synthetic = (WMT / "length_synthetic.md").read_text(encoding="utf-8")
    always = next(line for line in synthetic.splitlines() if line.startswith("| always"))
    cells = [c.strip() for c in always.strip("|").split("|")]
    assert cells[1] == "1.000" and cells[3] == "0.500"
    copies = next(line for line in synthetic.splitlines() if line.startswith("| copies"))
    assert [c.strip() for c in copies.strip("|").split("|")][2:4] == ["1.000", "1.000"]
    example = (WMT / "clusters_example.md").read_text(encoding="utf-8")
    for line in example.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[-1] == cells[-2]  # storyeval's rank = mt-metrics-eval's


def test_python_block_runs_as_shown(monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)
    text = PAGE.read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)
    assert len(blocks) == 1
    namespace: dict = {}
    exec(compile(blocks[0], "wmt.md", "exec"), namespace)  # noqa: S102
    assert namespace["r"].value == 1.0
    assert namespace["r"].epsilon == pytest.approx(0.01)
    assert namespace["r"].value_no_calibration == pytest.approx(5 / 6)
