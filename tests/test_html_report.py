"""index.html of `meta --out` and `agreement --out`: one self-contained page with the header
facts, the tables, every figure and the warnings, opened in headless Chromium."""

from __future__ import annotations

import json
import re
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_docs import Browser, DevTools, _chromium_binary, _need

from storyeval.cli import main
from storyeval.compare.multitest import SingleTestFamilyWarning

PROBE = """(() => JSON.stringify({
  h1: document.querySelector("h1").textContent,
  facts: [...document.querySelectorAll("dl.facts dt")].map(d => d.textContent),
  tables: document.querySelectorAll("table").length,
  warnings: [...document.querySelectorAll("ul.warnings li")].map(li => li.textContent),
  images: [...document.querySelectorAll("img")].map(i => ({src: i.getAttribute("src"),
    complete: i.complete, width: i.naturalWidth, height: i.naturalHeight})),
  clipped: [...document.querySelectorAll("div.scroll")].filter(
    d => d.scrollWidth > d.clientWidth && getComputedStyle(d).overflowX !== "auto").length,
}))()"""


def _user_data(folder: Path) -> tuple[Path, Path]:
    """A small user data set with string prompt ids (one criterion: with ``--family paper``,
    single-test families, which meta warns about)."""
    rng = np.random.default_rng(5)
    ids = [f"{s}/item-{p}" for s in ("alpha", "beta", "gamma", "delta") for p in range(10)]
    ratings = pd.DataFrame([{"story_id": i, "annotator": f"w{a}", "criterion": "Quality",
                             "value": int(rng.integers(1, 6))} for i in ids for a in range(3)])
    scores = pd.DataFrame([{"story_id": i, "measure": m, "value": float(rng.normal())}
                           for i in ids for m in ("m1", "m2", "m3")])
    ratings.to_csv(folder / "ratings.csv", index=False)
    scores.to_csv(folder / "scores.csv", index=False)
    return folder / "ratings.csv", folder / "scores.csv"


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """index.html folders: meta on HANNA, meta on a user data set, agreement on HANNA."""
    root = tmp_path_factory.mktemp("reports")
    ratings, scores = _user_data(root)
    runs = {"hanna": ["meta", "--metrics", "paper", "--out", str(root / "hanna")],
            "user": ["meta", "--data", str(ratings), "--scores", str(scores), "--family",
                     "paper", "--out", str(root / "user")],
            "agreement": ["agreement", "--out", str(root / "agreement")]}
    with warnings.catch_warnings():
        # the user data's single-test families: shown (so collected for index.html), not raised
        warnings.simplefilter("default", SingleTestFamilyWarning)
        for argv in runs.values():
            assert main(argv) == 0
    return {name: root / name for name in runs}


def test_index_links_every_file_and_loads_nothing_from_the_network(reports):
    for name, folder in reports.items():
        page = (folder / "index.html").read_text(encoding="utf-8")
        others = sorted(p.name for p in folder.iterdir()
                        if p.is_file() and p.name != "index.html" and not p.name.startswith("."))
        links = re.findall(r"(?:href|src)='([^']+)'", page)
        assert not [u for u in links if re.match(r"[a-z]+:", u)], f"{name}: absolute URLs"
        assert "<script" not in page and "@import" not in page and "url(" not in page
        assert set(others) <= set(links), (name, set(others) - set(links))
        assert all((folder / u).is_file() for u in links), name


def test_meta_index_has_the_header_facts_tables_and_warnings(reports):
    page = (reports["hanna"] / "index.html").read_text(encoding="utf-8")
    for fact in ("data", "test", "family", "seed", "versions"):
        assert f"<dt>{fact}</dt>" in page, fact
    assert "hanna: 10 systems, 960 stories" in page and "storyeval " in page
    assert page.count("<table") >= 4  # grid and comparison per level
    user = (reports["user"] / "index.html").read_text(encoding="utf-8")
    assert "<h2 id='warnings'>" in user and "single test" in user


@pytest.fixture(scope="module")
def report_browser(tmp_path_factory):
    binary = _chromium_binary()
    if binary is None:
        yield None
        return
    tools = DevTools(binary, tmp_path_factory.mktemp("chromium-report") / "profile")
    try:
        yield Browser(tools, "file://")
    finally:
        tools.close()


def _open(browser: Browser, path: Path) -> tuple[dict, list[str]]:
    tools = browser.tools
    tools.events.clear()
    tools.send("Page.navigate", {"url": path.as_uri()}, browser.session)
    tools.wait_event("Page.loadEventFired")
    deadline = time.monotonic() + 20
    while True:
        value = tools.send("Runtime.evaluate", {"expression": PROBE, "returnByValue": True},
                           browser.session)["result"]["value"]
        page = json.loads(value)
        if all(i["complete"] for i in page["images"]) or time.monotonic() > deadline:
            return page, DevTools.describe_errors(tools.events)
        time.sleep(0.2)


@pytest.mark.parametrize("name", ["hanna", "user", "agreement"])
def test_index_renders_with_all_figures_in_chromium(reports, report_browser, name):
    browser = _need(report_browser)
    folder = reports[name]
    page, errors = _open(browser, folder / "index.html")
    assert not errors, errors
    pngs = sorted(p.name for p in folder.glob("*.png"))
    assert sorted(i["src"] for i in page["images"]) == pngs
    assert all(i["complete"] and i["width"] > 100 and i["height"] > 100
               for i in page["images"]), page["images"]
    assert page["tables"] >= 2 and page["clipped"] == 0, page
    assert "versions" in page["facts"]
    if name != "agreement":
        assert len(pngs) >= 2  # a heatmap per level at least


def test_heatmap_scale_is_fitted_and_titles_are_plain():
    from storyeval.report.meta_files import figure_title, fitted_limits

    grid = pd.DataFrame({"a": [0.43, -0.2], "b": [np.nan, 0.05]})
    assert fitted_limits(grid) == (-0.5, 0.5)  # symmetric about 0, up to a tenth above max |r|
    assert fitted_limits(pd.DataFrame({"a": [0.001]})) == (-0.1, 0.1)
    assert fitted_limits(pd.DataFrame({"a": [-0.97, 0.2]})) == (-1.0, 1.0)
    assert fitted_limits(pd.DataFrame({"a": [np.nan]})) == (-1.0, 1.0)
    assert figure_title("p (one-sided, P(T_{n-3} > t))") == "p (one-sided, P(T(n-3) > t))"
