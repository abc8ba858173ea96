"""The built documentation site, opened from disk (``file://``) in headless Chromium.

Every page of the site built by ``mkdocs build --strict`` (one build per test session, shared
with tests/test_docs.py) is loaded from disk, as a reader who unpacked the site would, and
fails the test when it shows:

- reStructuredText that was not converted: a Sphinx role (``:func:`` ...) or a ``.. [1]`` /
  ``.. math::`` block;
- an untypeset formula: an ``arithmatex`` element without KaTeX output, a KaTeX parse error, or
  literal ``$$``, ``\\(`` or ``\\[`` in the prose;
- a table wider than the text column that does not scroll sideways (its computed overflow and
  ``scrollWidth`` are read in the page);
- a link that lands on a folder (a folder listing from disk) or on a missing file;
- a console error, or a request that leaves ``file://`` (no CDN).

The Python API page is also checked for the defaults of ``meta_evaluate`` (each parameter its own
entry), full signatures that fit their box (formatted one parameter a line), references rendered
as lists and resolved cross-references; search is checked to answer from disk. The probes are
checked on pages with deliberately broken content first, so that a probe that sees nothing
cannot pass unnoticed. The browser helpers come from tests/test_docs.py.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from _docs_scripts import load_docs_script
from test_docs import DOCS, Browser, DevTools, _chromium_binary, _need, build_site

pytestmark = pytest.mark.slow

RAW_MARKUP = re.compile(r":(?:py:)?(?:func|mod|class|data|attr|meth|obj|exc|math|ref):`?\w"
                        r"|^\s*\.\. \[\w*\]|\.\. math::", re.MULTILINE)
LITERAL_MATH = ("$$", "\\(", "\\)", "\\[", "\\]")

# Everything a page check needs, read in the page once its formulas are typeset.
PAGE_PROBE = r"""(() => {
  const article = document.querySelector("article") || document.body;
  const prose = article.cloneNode(true);
  prose.querySelectorAll("pre, code, .katex, .arithmatex").forEach(e => e.remove());
  const column = article.getBoundingClientRect();
  const tables = [...article.querySelectorAll("table")].map((table, i) => {
    const box = table.getBoundingClientRect();
    const wide = table.scrollWidth > article.clientWidth + 1 || box.right > column.right + 1
      || table.scrollWidth > table.clientWidth + 1;
    // The element that scrolls the table sideways: the table itself or an ancestor inside the
    // article with overflow-x auto/scroll whose content is wider than its box, not cut by the
    // column, and that really moves when scrolled.
    let scroller = null;
    for (let el = table; el && el !== article.parentElement; el = el.parentElement) {
      const style = getComputedStyle(el);
      if (["auto", "scroll"].includes(style.overflowX) && el.scrollWidth > el.clientWidth + 1) {
        const before = el.scrollLeft;
        el.scrollLeft = el.scrollWidth;
        const moved = el.scrollLeft > before;
        el.scrollLeft = before;
        const rect = el.getBoundingClientRect();
        if (moved && rect.right <= column.right + 24) {
          scroller = el.className || el.tagName;
        }
        break;
      }
      if (["hidden", "clip"].includes(style.overflowX) && el !== table) {
        break;
      }
    }
    const header = [...table.querySelectorAll("thead th")].map(th => th.textContent.trim());
    return {index: i, header: header.slice(0, 4), columns: header.length,
            width: Math.round(table.scrollWidth), column: Math.round(article.clientWidth),
            wide, scroller};
  });
  const arithmatex = [...article.querySelectorAll(".arithmatex")];
  return JSON.stringify({
    title: document.title,
    h1: (article.querySelector("h1") || {}).textContent || "",
    text: article.innerText,
    prose: prose.innerText,
    math: arithmatex.length,
    katex: article.querySelectorAll(".katex").length,
    untypeset: arithmatex.filter(e => !e.querySelector(".katex")).map(e => e.textContent.trim()
                                                                              .slice(0, 80)),
    katexErrors: [...article.querySelectorAll(".katex-error")].map(e => e.textContent.slice(0, 80)),
    tables,
    links: [...document.querySelectorAll("a[href]")].map(a => a.href),
    resources: performance.getEntriesByType("resource").map(r => r.name),
    listing: document.title.startsWith("Index of ") || !!document.getElementById("parentDirLinkBox"),
  });
})()"""

API_PROBE = r"""(() => {
  const section = id => document.getElementById(id).closest(".doc-object");
  const params = {};
  const table = section("storyeval.meta.pipeline.meta_evaluate").querySelector(".doc-contents table");
  for (const row of table.querySelectorAll("tbody tr")) {
    const cells = [...row.querySelectorAll("td")].map(td => td.innerText.trim());
    params[cells[0]] = cells[cells.length - 1];
  }
  const signatures = [...document.querySelectorAll(".doc-signature pre")].map(pre => ({
    text: pre.innerText, fits: pre.scrollWidth <= pre.clientWidth + 1,
    width: pre.scrollWidth, box: pre.clientWidth}));
  const references = [...document.querySelectorAll("details.references")].map(d => ({
    items: d.querySelectorAll("ol > li").length, text: d.innerText.slice(0, 200)}));
  const williams = section("storyeval.compare.williams.williams_test");
  return JSON.stringify({
    params, signatures, references,
    williamsFormula: williams.querySelectorAll(".katex-display").length,
    crossrefs: [...document.querySelectorAll("article a.autorefs-internal")].length,
  });
})()"""


def _evaluate(browser: Browser, expression: str):
    result = browser.tools.send("Runtime.evaluate",
                                {"expression": expression, "returnByValue": True},
                                browser.session)
    if "exceptionDetails" in result:
        raise AssertionError(f"probe failed: {result['exceptionDetails']}")
    return result["result"].get("value")


def _open(browser: Browser, url: str) -> tuple[dict, list[str]]:
    """Load ``url``, wait until its formulas are typeset; return the probe and console errors."""
    browser.tools.events.clear()
    browser.tools.send("Page.navigate", {"url": url}, browser.session)
    browser.tools.wait_event("Page.loadEventFired")
    deadline = time.monotonic() + 10
    pending = "document.querySelectorAll('.arithmatex:not([data-typeset])').length"
    while _evaluate(browser, pending) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.3)  # late errors (fonts, search worker)
    page = json.loads(_evaluate(browser, PAGE_PROBE))
    return page, DevTools.describe_errors(browser.tools.events)


def _bad_links(site: Path, links: list[str]) -> list[str]:
    """The ``file://`` links among ``links`` that do not land on a page of ``site``."""
    bad = []
    for link in links:
        parts = urlsplit(link)
        if parts.scheme != "file":
            continue
        target = Path(unquote(parts.path))
        if parts.path.endswith("/") or target.is_dir():
            bad.append(f"{link} (a folder: opened from disk, a directory listing)")
        elif not target.is_file():
            bad.append(f"{link} (missing)")
        elif site.resolve() not in target.resolve().parents:
            bad.append(f"{link} (outside the site)")
    return bad


def _page_problems(site: Path, path: str, page: dict, errors: list[str]) -> list[str]:
    """Everything wrong with one loaded page, as readable lines."""
    problems = [f"console: {e}" for e in errors]
    if page["listing"]:
        problems.append("a directory listing, not a page")
    for match in RAW_MARKUP.finditer(page["text"]):
        line = page["text"][max(0, match.start() - 40):match.end() + 40].replace("\n", " ")
        problems.append(f"raw reStructuredText: ...{line}...")
    for literal in LITERAL_MATH:
        if literal in page["prose"]:
            at = page["prose"].index(literal)
            problems.append(f"untypeset formula, literal {literal!r}: "
                            f"...{page['prose'][max(0, at - 40):at + 40]}...")
    problems += [f"formula not typeset: {t}" for t in page["untypeset"]]
    problems += [f"KaTeX could not parse: {t}" for t in page["katexErrors"]]
    if page["math"] and not page["katex"]:
        problems.append(f"{page['math']} formulas and no KaTeX output")
    for table in page["tables"]:
        if table["wide"] and not table["scroller"]:
            problems.append(f"table {table['index']} {table['header']} is {table['width']} px "
                            f"wide in a {table['column']} px column and does not scroll")
    problems += [f"link: {b}" for b in _bad_links(site, page["links"])]
    problems += [f"request off the disk: {r}" for r in page["resources"]
                 if not r.startswith("file:")]
    return [f"{path}: {p}" for p in problems]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return build_site(tmp_path_factory)


@pytest.fixture(scope="module")
def disk_browser(site, tmp_path_factory):
    """A headless Chromium tab on the built site opened from disk; None without Chromium."""
    binary = _chromium_binary()
    if binary is None:
        yield None
        return
    tools = DevTools(binary, tmp_path_factory.mktemp("chromium-file") / "profile")
    try:
        yield Browser(tools, site.as_uri())
    finally:
        tools.close()


@pytest.fixture(scope="module")
def pages(site, disk_browser):
    """Every page of the site, loaded from disk: path -> (probe, console errors)."""
    browser = _need(disk_browser)
    paths = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html")
                   if p.name != "404.html")
    return {path: _open(browser, f"{browser.base_url}/{path}") for path in paths}


# ------------------------------------------------------------------------- the probes
def test_probes_catch_broken_pages(site, disk_browser):
    # A wide table in a box that clips it, a formula left as TeX, a raw role and a folder link
    # are injected into a real page: the probe must report each, and nothing for the same table
    # in a box that scrolls.
    browser = _need(disk_browser)
    _open(browser, f"{browser.base_url}/concepts.html")
    wide_row = "".join(f"<td>column {i} with a long cell</td>" for i in range(12))
    plain = 'style="display: table; overflow: visible; white-space: nowrap"'  # no scroll of its own
    _evaluate(browser, f"""(() => {{
      const article = document.querySelector("article");
      article.insertAdjacentHTML("beforeend",
        '<div id="clipped" style="overflow-x: hidden"><table {plain}><tr>{wide_row}</tr></table></div>'
        + '<div id="scrolls" style="overflow-x: auto"><table {plain}><tr>{wide_row}</tr></table></div>'
        + '<p><span class="arithmatex">\\\\(x^2\\\\)</span> see :func:`storyeval.meta` and</p>'
        + '<a href="reproduction/">a folder</a>');
    }})()""")
    page = json.loads(_evaluate(browser, PAGE_PROBE))
    problems = "\n".join(_page_problems(site, "concepts.html", page, []))
    clipped, scrolls = page["tables"][-2:]  # the two injected ones, in that order
    assert clipped["wide"] and clipped["scroller"] is None, clipped
    assert scrolls["wide"] and scrolls["scroller"], scrolls
    assert "does not scroll" in problems and "formula not typeset: \\(x^2\\)" in problems
    assert "raw reStructuredText" in problems and "a directory listing" in problems, problems
    assert _bad_links(site, [(site / "reproduction").as_uri() + "/"])


# ------------------------------------------------------------------------- every page
def test_every_page_renders_from_disk(site, pages):
    assert "api.html" in pages and "reproduction/correlations.html" in pages, sorted(pages)
    problems = [p for path, (page, errors) in pages.items()
                for p in _page_problems(site, path, page, errors)]
    assert not problems, "\n".join(problems)


def test_pages_with_formulas_are_typeset(pages):
    # The pages that hold formulas (docstrings on the API page, the definitions on Concepts and
    # the guides) show them as KaTeX, and no page is left with TeX source.
    with_math = {path: page["katex"] for path, (page, _) in pages.items() if page["math"]}
    for path in ("api.html", "concepts.html", "resampling.html", "pairwise.html"):
        assert with_math.get(path, 0) > 0, (path, with_math)
    assert with_math["concepts.html"] >= 20, with_math


def test_wide_tables_scroll(pages):
    # The 7- and 8-column grids of the reproduction pages are wider than the text column at
    # 1280 px: they must be the ones that scroll (and the probe must have seen them).
    page, _ = pages["reproduction/correlations.html"]
    wide = [t for t in page["tables"] if t["wide"]]
    assert wide and all(t["scroller"] for t in wide), page["tables"]
    assert any(t["columns"] >= 7 for t in wide), page["tables"]


# ------------------------------------------------------------------------- API page
def test_api_page(disk_browser):
    browser = _need(disk_browser)
    _, errors = _open(browser, f"{browser.base_url}/api.html")
    assert not errors, errors
    api = json.loads(_evaluate(browser, API_PROBE))
    # Each of alternative, direction and sign_convention is its own entry with its own default
    # (a combined numpydoc entry was rendered with the first one's default for all three).
    params = api["params"]
    assert params["alternative"] == '"greater"', params
    assert params["direction"] == '"larger"', params
    assert params["sign_convention"] == '"auto"', params
    assert params["levels"] == '("overall", "system")', params
    # Full signatures, one parameter a line (formatted by Ruff), fitting their box.
    meta = next(s for s in api["signatures"] if s["text"].startswith("meta_evaluate("))
    assert "\n    sign_convention: str = \"auto\"," in meta["text"], meta["text"]
    assert meta["text"].rstrip().endswith(") -> MetaResult"), meta["text"]
    too_wide = [(s["text"][:60], s["width"], s["box"]) for s in api["signatures"]
                if not s["fits"]]
    assert not too_wide, f"signatures cut off (is Ruff installed?): {too_wide}"
    # References as numbered lists, cross-references as links, Williams' formula typeset.
    assert api["references"] and all(r["items"] for r in api["references"]), api["references"]
    assert any(r["items"] == 4 and "Williams, E. J. (1959)" in r["text"]
               for r in api["references"]), api["references"]
    assert api["crossrefs"] >= 50, api["crossrefs"]
    assert api["williamsFormula"] >= 1


def test_api_page_screenshot(disk_browser):
    page, errors, screenshot = _need(disk_browser).visit("api.html")
    assert not errors, errors
    assert page["h1"].startswith("Python API")
    assert screenshot.stat().st_size > 10_000


# ------------------------------------------------------------------------- from disk
def test_navigation_from_disk_lands_on_pages(site, disk_browser):
    # Clicking through the navigation of a page in a sub-folder, as a reader of the unpacked
    # site does: every click lands on a page, never on a folder listing.
    browser = _need(disk_browser)
    _open(browser, f"{browser.base_url}/reproduction/williams.html")
    targets = _evaluate(browser, """JSON.stringify([...document.querySelectorAll(
        "nav.md-nav--primary a.md-nav__link[href], a.md-header__button.md-logo")]
        .map(a => a.href))""")
    # the page's own table of contents (same-document #anchors) is not a navigation
    targets = sorted({t.split("#", 1)[0] for t in json.loads(targets)})
    assert len(targets) >= 15, targets
    for target in targets:
        page, errors = _open(browser, target)
        assert not page["listing"], f"{target} is a folder listing"
        assert page["h1"], f"{target}: no page heading ({page['title']})"
        assert not errors, (target, errors)


def test_search_works_from_disk(site, disk_browser):
    # Material's search worker cannot start from file:// by itself; the vendored iframe-worker
    # shim and the offline plugin's search_index.js make it answer there.
    browser = _need(disk_browser)
    _open(browser, f"{browser.base_url}/index.html")
    _evaluate(browser, "document.querySelector('.md-search__input').focus()")
    browser.tools.send("Input.insertText", {"text": "williams"}, browser.session)
    _evaluate(browser, "document.querySelector('.md-search__input')"
                       ".dispatchEvent(new KeyboardEvent('keyup', {key: 's'}))")
    deadline, found = time.monotonic() + 15, []
    while not found and time.monotonic() < deadline:
        time.sleep(0.2)
        found = json.loads(_evaluate(browser, "JSON.stringify([...document.querySelectorAll("
                                              "'.md-search-result__item a')].map(a => a.href))"))
    meta = _evaluate(browser, "(document.querySelector('.md-search-result__meta') || {})"
                              ".textContent")
    assert found, f"no search results from disk: {meta!r}"
    assert any("williams" in url for url in found), found
    assert not _bad_links(site, found), found


# ------------------------------------------------------------------------- vendored assets
def test_vendored_assets_match_their_pins():
    # docs/vendor/ holds what docs/vendor_assets.py copies from the pinned npm packages: the
    # versions it records are the pinned ones, the KaTeX stylesheet names only fonts that are
    # there, and the whole stays small enough to commit.
    vendor = load_docs_script("vendor_assets")
    folder = DOCS / "vendor"
    assert json.loads((folder / "versions.json").read_text()) == vendor.PACKAGES
    for _, _, dest in vendor.FILES:
        assert (folder / dest).is_file(), dest
    css = (folder / "katex" / "katex.min.css").read_text(encoding="utf-8")
    fonts = set(re.findall(r"url\((fonts/[^)]+)\)", css))
    assert fonts and all(f.endswith(".woff2") for f in fonts), fonts
    assert {f"fonts/{p.name}" for p in (folder / "katex" / "fonts").iterdir()} == fonts
    katex_js = (folder / "katex" / "katex.min.js").read_text(encoding="utf-8")
    assert f'version:"{vendor.PACKAGES["katex"]}"' in katex_js
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    assert size < 1_000_000, size
