"""index.html of `meta --out` and `agreement --out`: one self-contained page with the header
facts, the tables, every figure and the warnings, opened in headless Chromium."""

from __future__ import annotations

import io
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


# ---- the page opens with the answer, shows intervals, prints p-values as a journal would ----

def _answer_data(folder: Path) -> Path:
    """8 systems x 30 prompts: good (h + noise), ppl = -(h + noise) declared lower is better,
    bleu (weak)."""
    rng = np.random.default_rng(3)
    n = 240
    h = np.repeat(np.linspace(0, 2, 8), 30) + rng.normal(0, 1, n)
    frame = pd.DataFrame({"system": np.repeat([f"s{k}" for k in range(8)], 30),
                          "prompt_id": np.tile(np.arange(30), 8), "h": h,
                          "good": h + rng.normal(0, 0.5, n),
                          "ppl": -(h + rng.normal(0, 0.5, n)),
                          "bleu": 0.2 * h + rng.normal(0, 1.5, n)})
    frame.to_csv(folder / "wide.csv", index=False)
    return folder / "wide.csv"


@pytest.fixture(scope="module")
def answer_reports(tmp_path_factory):
    root = tmp_path_factory.mktemp("answer")
    data = _answer_data(root)
    base = ["meta", "--data", str(data), "--id", "system=system,prompt_id=prompt_id",
            "--criteria", "h", "--metrics", "good,ppl,bleu", "--lower-is-better", "ppl",
            "--no-figures"]
    assert main([*base, "--out", str(root / "plain")]) == 0
    assert main([*base, "--ci", "bootstrap", "--resamples", "200",
                 "--out", str(root / "ci")]) == 0
    return root


def test_the_page_opens_with_the_answer(answer_reports):
    page = (answer_reports / "ci" / "index.html").read_text(encoding="utf-8")
    assert "<meta name='viewport' content='width=device-width, initial-scale=1'>" in page
    # the answer comes right after the title, before the facts
    assert page.index("<section class='answer'") < page.index("<dl class='facts'>")
    table = pd.read_html(io.StringIO(page[page.index("<section"):page.index("</section>")]))[0]
    assert list(table["level"]) == ["overall", "system"]
    overall = table[table["level"] == "overall"].iloc[0]
    # ppl is lower-is-better: oriented, it is the best or tied with good, never last
    assert overall["best measure"] in ("ppl (lower is better)", "good")
    assert overall["test"] == "ustat (U-statistic z-test)"
    # the oriented value and interval; a lower-is-better best shows its raw r beside it
    assert re.match(r"0\.\d{3} \[-?0\.\d{3}, -?0\.\d{3}\]( \(r = -0\.\d{3}; lower is "
                    r"better\))?$", overall["correlation"]), overall["correlation"]
    assert "measured type-I error" in page[:page.index("</section>")]


def test_intervals_shown_when_computed(answer_reports):
    plain = (answer_reports / "plain" / "index.html").read_text(encoding="utf-8")
    ci = (answer_reports / "ci" / "index.html").read_text(encoding="utf-8")
    cell = re.compile(r"<td>-?\d\.\d{3} \[-?\d\.\d{3}, -?\d\.\d{3}\]</td>")

    def grids(page: str) -> str:  # the correlation grids (the effect sizes have intervals)
        return "".join(part for part in page.split("<p class='caption'>")
                       if part.startswith("Kendall tau-b with human criteria"))

    assert grids(plain) and not cell.search(grids(plain))
    # the answer has its own interval (issue 53); the grids have none
    assert "the grids have none (--ci bootstrap adds them to every correlation)" in plain
    # every defined correlation of the grids carries its interval, and so does the answer
    assert len(cell.findall(grids(ci))) >= 2 * 3
    cells = re.findall(r"<td data-label='correlation'>([^<]*)</td>", ci)
    assert len(cells) == 2 and all(re.search(r"\d\.\d{3} \[-?\d\.\d{3}, ", c)
                                   for c in cells), cells


def test_pvalues_are_printed_as_a_journal_would(answer_reports):
    from storyeval.report.html_report import table_html
    from storyeval.report.tables import journal_p

    assert [journal_p(p) for p in (0.0498, 0.0004, 0.5, 1.0, 0.00100, np.nan)] == \
        ["0.0498", "< 0.001", "0.500", "1.00", "0.00100", ""]
    html_table = table_html(pd.DataFrame({"p_adjusted": [0.0498, 1e-9], "r": [0.12, 0.5]}), 3)
    assert "0.0498" in html_table and "&lt; 0.001" in html_table and "0.120" in html_table
    page = (answer_reports / "plain" / "index.html").read_text(encoding="utf-8")
    assert ">0.000<" not in page and ">0.050<" not in page


def test_heatmap_scale_follows_the_measures_not_the_baseline():
    from storyeval.report.meta_files import fitted_limits, measure_rows

    grid = pd.DataFrame({"h": [0.8, 0.7, 0.1, -0.08]},
                        index=["Human (upper bound)", "Human (leave-one-out)", "m1", "m2"])
    grid.attrs["ids"] = ["human_baseline:upper_bound", "human_baseline:loo", "m1", "m2"]
    assert fitted_limits(measure_rows(grid)) == (-0.1, 0.1)


@pytest.mark.parametrize("width", [400, 1400])
def test_report_is_readable_at_phone_and_desktop_widths(answer_reports, reports,
                                                        report_browser, width):
    browser = _need(report_browser)
    tools = browser.tools
    tools.send("Emulation.setDeviceMetricsOverride",
               {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600},
               browser.session)
    probe = """(() => JSON.stringify({
      page: document.documentElement.scrollWidth, view: window.innerWidth,
      font: parseFloat(getComputedStyle(document.body).fontSize),
      answer: (() => { const a = document.querySelector("section.answer");
                       return a ? a.getBoundingClientRect().top : -1; })(),
      wide: [...document.querySelectorAll("dl.facts, p, li, h1, h2")].filter(
        e => e.getBoundingClientRect().right > window.innerWidth + 1).length,
    }))()"""
    try:
        for path in (answer_reports / "ci" / "index.html", reports["user"] / "index.html"):
            got = _evaluate_on(browser, path, probe)
            # laid out at the device's width (the viewport tag; without it a phone lays the
            # page out at 980 px and shrinks it) and no sideways scrolling of the page (wide
            # tables scroll inside their box)
            assert got["view"] == width, got
            assert got["page"] <= got["view"] + 1, (path, got)
            assert got["wide"] == 0 and got["font"] >= 14, got
            if path.parent.name == "ci":
                assert 0 <= got["answer"] < 300, got  # the answer is on the first screen
    finally:
        tools.send("Emulation.setDeviceMetricsOverride",
                   {"width": 1280, "height": 1000, "deviceScaleFactor": 1, "mobile": False},
                   browser.session)


def _evaluate_on(browser, path, expression: str) -> dict:
    """Open ``path`` (no console errors) and return the JSON its ``expression`` evaluates to."""
    _, errors = _open(browser, path)
    assert not errors, errors
    return json.loads(browser.tools.send("Runtime.evaluate",
                                         {"expression": expression, "returnByValue": True},
                                         browser.session)["result"]["value"])


WORDS_PROBE = """(() => {
  const ctx = document.createElement("canvas").getContext("2d");
  const broken = [];
  for (const cell of document.querySelectorAll("td, th")) {
    if (!cell.getClientRects().length) continue;  // not shown (a stacked table's header)
    const st = getComputedStyle(cell);
    ctx.font = st.font;
    const room = cell.clientWidth - parseFloat(st.paddingLeft) - parseFloat(st.paddingRight);
    for (const word of cell.textContent.split(/\\s+/)) {
      if (word && ctx.measureText(word).width > room + 0.5) broken.push(word);
    }
  }
  const rows = [...document.querySelectorAll("section.answer tbody tr")];
  return JSON.stringify({broken: broken.slice(0, 10), n: rows.length,
    stacked: rows.filter(r => getComputedStyle(r).display === "block").length,
    labelled: [...document.querySelectorAll("section.answer td")].every(
      td => td.dataset.label && getComputedStyle(td, "::before").content.includes(
        td.dataset.label))});
})()"""


@pytest.mark.parametrize("width", [400, 1400])
def test_answer_table_words_never_break_and_rows_stack_on_a_phone(answer_reports, reports,
                                                                  report_browser, width):
    """No cell of any table breaks a word ("overal/l", "criteri/on": the page once did, at both
    widths); below 600 px each answer row stacks into labelled lines (column: value)."""
    browser = _need(report_browser)
    tools = browser.tools
    tools.send("Emulation.setDeviceMetricsOverride",
               {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600},
               browser.session)
    try:
        for path in (answer_reports / "ci" / "index.html", reports["user"] / "index.html"):
            got = _evaluate_on(browser, path, WORDS_PROBE)
            assert got["broken"] == [], (path.parent.name, width, got)
            assert got["n"] >= 1
            assert got["stacked"] == (got["n"] if width < 600 else 0), got
            if width < 600:
                assert got["labelled"], got
    finally:
        tools.send("Emulation.setDeviceMetricsOverride",
                   {"width": 1280, "height": 1000, "deviceScaleFactor": 1, "mobile": False},
                   browser.session)


@pytest.fixture(scope="module")
def pairwise_reports(tmp_path_factory):
    """--out reports of pairwise accuracy / compare / ranking / pointwise and
    agreement --labels."""
    from test_reproducible_outputs import _verdicts

    root = tmp_path_factory.mktemp("pairwise-out")
    human = _verdicts("human", 1.0, None, 1)
    judges = pd.concat([_verdicts("good", 0.85, human, 2), _verdicts("fair", 0.6, human, 3)])
    human.to_csv(root / "humans.csv", index=False)
    judges.to_csv(root / "judges.csv", index=False)
    judges[judges["judge"] == "good"].to_csv(root / "good.csv", index=False)
    labels = pd.DataFrame({"item": np.repeat(np.arange(30), 3),
                           "rater": np.tile(["u", "v", "w"], 30),
                           "label": np.random.default_rng(4).choice(["Yes", "No"], 90)})
    labels.to_csv(root / "labels.csv", index=False)
    runs = {"accuracy": ["pairwise", "accuracy", str(root / "judges.csv"), "--reference",
                         str(root / "humans.csv")],
            "compare": ["pairwise", "compare", str(root / "judges.csv"), "--reference",
                        str(root / "humans.csv")],
            "ranking": ["pairwise", "ranking", str(root / "good.csv"), "--reference",
                        str(root / "humans.csv"), "--resamples", "200"],
            "pointwise": ["pairwise", "pointwise", "--metrics", "BLEU,Beluga-13B 1",
                          "--criteria", "RE", "--interval", "auto", "--resamples", "200"],
            "labels": ["agreement", "--labels", str(root / "labels.csv")]}
    for name, argv in runs.items():
        assert main([*argv, "--out", str(root / name)]) == 0, name
    return {name: root / name for name in runs}


def test_pairwise_and_agreement_reports_open_with_the_answer(pairwise_reports, capsys):
    capsys.readouterr()
    for name, folder in pairwise_reports.items():
        page = (folder / "index.html").read_text(encoding="utf-8")
        assert "<meta name='viewport'" in page
        assert page.index("<section class='answer'") < page.index("<dl class='facts'>"), name
        others = {p.name for p in folder.iterdir()
                  if p.name != "index.html" and not p.name.startswith(".")}
        assert others and all(f"href='{o}'" in page for o in others), name
    answer = pd.read_html(io.StringIO(
        (pairwise_reports["accuracy"] / "index.html").read_text(encoding="utf-8")))[0]
    assert list(answer["judge"]) == ["good"]
    groups = pd.read_html(io.StringIO(
        (pairwise_reports["compare"] / "index.html").read_text(encoding="utf-8")))[0]
    assert list(groups["judge"]) == ["good"] and set(groups["group"]) == {"top"}


@pytest.mark.parametrize("width", [400, 1400])
def test_pairwise_reports_are_readable(pairwise_reports, report_browser, width):
    browser = _need(report_browser)
    tools = browser.tools
    tools.send("Emulation.setDeviceMetricsOverride",
               {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600},
               browser.session)
    probe = """(() => JSON.stringify({page: document.documentElement.scrollWidth,
                                      view: window.innerWidth}))()"""
    try:
        for folder in pairwise_reports.values():
            _, errors = _open(browser, folder / "index.html")
            assert not errors, errors
            got = json.loads(tools.send("Runtime.evaluate",
                                        {"expression": probe, "returnByValue": True},
                                        browser.session)["result"]["value"])
            assert got["view"] == width and got["page"] <= width + 1, (folder.name, got)
    finally:
        tools.send("Emulation.setDeviceMetricsOverride",
                   {"width": 1280, "height": 1000, "deviceScaleFactor": 1, "mobile": False},
                   browser.session)


def test_heatmap_without_a_path_returns_the_figure_and_writes_nothing(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    from storyeval.report.figures import heatmap

    monkeypatch.chdir(tmp_path)
    grid = pd.DataFrame({"RE": [0.1, -0.05], "CH": [0.08, np.nan]}, index=["m1", "m2"])
    fig = heatmap(grid, title="a notebook figure", vmin=-0.1, vmax=0.1)
    assert isinstance(fig, Figure)
    assert fig._repr_png_().startswith(b"\x89PNG")  # what a notebook displays
    assert list(tmp_path.iterdir()) == []
    paths = heatmap(grid, tmp_path / "grid", title="to a file")
    assert [p.name for p in paths] == ["grid.png"]
