"""The documentation site: generated pages are current, the site builds offline with
``mkdocs build --strict``, and the reproduction page renders in headless Chromium with its tables
and figures and without console errors.

The browser is driven through the Chrome DevTools protocol over a pipe
(``--remote-debugging-pipe``: JSON messages separated by NUL bytes on file descriptors 3 and 4),
so the test needs nothing beyond the standard library and the Debian ``chromium`` package. The
screenshot of the page is kept as an artefact: ``$STORYEVAL_ARTIFACTS`` if set, else
``tests/artifacts/`` (git-ignored by a ``.gitignore`` written there); the test prints its path.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
from _docs_compare import describe, read_markdown, stale_files
from _docs_scripts import load_docs_script

from storyeval.exceptions import DroppedStoriesWarning

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
GENERATED = DOCS / "generated"
ARTIFACTS = Path(os.environ.get("STORYEVAL_ARTIFACTS", ROOT / "tests" / "artifacts"))


def _load_generator():
    return load_docs_script("gen_pages")


@pytest.fixture(scope="module")
def gen():
    return _load_generator()


@pytest.fixture(scope="module")
def regenerated(gen, tmp_path_factory):
    """The generator's output in a temporary folder (Markdown and figures)."""
    out = tmp_path_factory.mktemp("generated")
    with warnings.catch_warnings():
        # the tutorial joins scores of the 96 human stories only: the join warns that it drops
        # the other stories (expected there; printed on the standard error the pages leave out)
        warnings.simplefilter("ignore", DroppedStoriesWarning)
        paths = gen.generate(out, figures=True)
    return out, paths


# ------------------------------------------------------------------------- stale check
def test_generated_pages_are_current(regenerated):
    # Exact: these pages hold no torch-derived number (numpy / scipy in float64 on the embedded
    # HANNA data, Kendall counts in exact integer arithmetic), and they regenerate to the same
    # bytes on every host tried. tests/_docs_compare.py only names what differs.
    out, _ = regenerated
    fresh, committed = read_markdown(out), read_markdown(GENERATED)
    assert fresh, "the generator wrote no Markdown"
    report = stale_files(fresh, committed)
    assert not (report["missing"] or report["extra"] or report["changed"]), (
        f"docs/generated is stale:\n{describe(report)}\n"
        f"run `python docs/gen_pages.py` and commit docs/generated/")


def test_figures_exist_and_are_png(gen, regenerated):
    out, paths = regenerated
    for folder in (out, GENERATED):
        for name in gen.FIGURES:
            data = (folder / f"{name}.png").read_bytes()
            assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{folder / name}.png is not a PNG"
            width, height = struct.unpack(">II", data[16:24])
            assert width > 300 and height > 200, (name, width, height)
    assert {p.name for p in paths if p.suffix == ".png"} == {f"{n}.png" for n in gen.FIGURES}


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def _markdown_rows(name: str) -> list[dict[str, str]]:
    """The rows of the Markdown table in docs/generated/NAME.md, as header -> cell."""
    text = (GENERATED / f"{name}.md").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if line.startswith("|")]
    header = _cells(lines[0])
    return [dict(zip(header, _cells(line))) for line in lines[2:]]


def test_reproduction_tables_compare_with_the_paper():
    # Every comparison table has the paper, storyeval and difference columns, and its
    # difference is storyeval minus the paper (recomputed from the displayed values).
    for name in ("compare_overall", "compare_system", "compare_williams"):
        rows = _markdown_rows(name)
        assert rows and list(rows[0])[1:4] == ["paper", "storyeval", "difference"], name
        for row in rows:
            paper, ours = float(row["paper"]), float(row["storyeval"])
            assert abs((ours - paper) - float(row["difference"])) <= 6e-4, row
    # The paper's overall means of the four LLM raters (TACL 2024, Section ASE1) agree.
    overall = {r["quantity"]: r for r in _markdown_rows("compare_overall")}
    for rater, paper in (("Beluga-13B 1", "0.25"), ("Llama-13B 1", "0.16"),
                         ("Mistral-7B 1", "0.20"), ("ChatGPT 1", "0.18")):
        row = overall[f"{rater} overall mean"]
        assert (row["paper"], row["agrees at 2 decimals"]) == (paper, "yes"), row


def test_tie_handling_explains_the_system_level_differences():
    # docs/reproduction/correlations.md says: per-system np.mean float means reproduce every
    # system-level figure of the paper at two decimals, and with the ties kept exactly two
    # figures differ (Beluga-13B's mean, the paper's 0.70, and ChatGPT's highest criterion).
    rows = _markdown_rows("compare_ties")
    assert all(r["agrees (np.mean)"] == "yes" for r in rows), rows
    differ = {r["quantity"] for r in rows if r["agrees (ties kept)"] == "no"}
    assert differ == {"Beluga-13B 1 system-level mean", "ChatGPT 1, highest criterion"}
    beluga = next(r for r in rows if r["quantity"] == "Beluga-13B 1 system-level mean")
    assert beluga["paper"] == "0.70"
    assert (beluga["ties kept"], beluga["np.mean"]) == ("0.694", "0.699")


@pytest.mark.parametrize("page", ["tutorial-own-metric.md", "quickstart.md"])
def test_python_examples_on_the_pages_run(gen, page, tmp_path, monkeypatch):
    # The code shown on the page runs as shown, block after block in one namespace.
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    blocks = gen.python_blocks(page)
    assert blocks, page
    for block in blocks:
        exec(compile(block, page, "exec"), namespace)  # noqa: S102
    if page == "tutorial-own-metric.md":
        grid = namespace["correlation_grid"](namespace["result"], "overall")
        assert (grid.loc["type-token ratio"] < 0).all()  # "negative with every criterion"
        assert (namespace["result"].comparisons["p_adjusted"] > 0.05).all()


def test_cli_reference_lists_every_subcommand():
    from storyeval.cli import build_parser

    text = (GENERATED / "cli.md").read_text(encoding="utf-8")
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, subparser in sub.choices.items():
        assert f"## storyeval {name}" in text
        for action in subparser._actions:
            for option in action.option_strings:
                assert f"`{option}" in text or f", {option}" in text, (name, option)


# ---------------------------------------------------------------------------- mkdocs
_BUILT_SITE: list[Path] = []


def build_site(tmp_path_factory) -> Path:
    """``mkdocs build --strict`` of the committed docs into a temporary folder, once per test
    session (tests/test_docs_site.py checks the same build)."""
    pytest.importorskip("mkdocs", reason="the docs extra (pip install '.[docs]') builds the site")
    if _BUILT_SITE:
        return _BUILT_SITE[0]
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--clean", "-f",
         str(ROOT / "mkdocs.yml"), "-d", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stderr[-4000:]}"
    _BUILT_SITE.append(out)
    return out


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The built site (see :func:`build_site`)."""
    return build_site(tmp_path_factory)


def test_mkdocs_build_strict(site):
    # use_directory_urls: false (mkdocs.yml): pages are NAME.html, so the site works from disk
    page = (site / "reproduction" / "correlations.html").read_text(encoding="utf-8")
    assert "kendall_overall.png" in page and "<table>" in page
    for name in ("index.html", "concepts.html", "cli.html", "api.html", "quickstart.html",
                 "tutorial-own-metric.html", "reproduction/index.html"):
        assert (site / name).is_file(), name
    api = (site / "api.html").read_text(encoding="utf-8")
    assert "meta_evaluate" in api and "williams_test" in api  # rendered by mkdocstrings
    assert not list(site.rglob("gen_*.py")), "generator scripts must not be published"


# --------------------------------------------------------------------------- Chromium
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--mute-audio", "--hide-scrollbars",
    "--remote-debugging-pipe",
]


CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
CHROMIUM_MISSING = (
    f"headless Chromium is not on PATH (looked for {', '.join(CHROMIUM_NAMES)}); the docs "
    f"browser tests need it. On Debian or Ubuntu: apt-get install chromium chromium-driver "
    f"fonts-liberation (what .ci/run does).")


def _chromium_binary() -> str | None:
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def _need(browser: Browser | None) -> Browser:
    """The browser; without Chromium a skip naming what to install, or a failure where the
    browser tests are required (``STORYEVAL_REQUIRE_BROWSER=1``, which .ci/run sets)."""
    if browser is None:
        if os.environ.get("STORYEVAL_REQUIRE_BROWSER") == "1":
            pytest.fail(CHROMIUM_MISSING, pytrace=False)
        pytest.skip(CHROMIUM_MISSING)
    return browser


class DevTools:
    """A minimal Chrome DevTools protocol client over ``--remote-debugging-pipe``."""

    def __init__(self, binary: str, user_data_dir: Path):
        to_chrome_r, to_chrome_w = os.pipe()
        from_chrome_r, from_chrome_w = os.pipe()
        # The child's ends are moved above 4 so that placing them on 3 and 4 cannot clobber one
        # with the other; posix_spawn (no fork + Python code in the child) wires them up.
        child_r = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD_CLOEXEC, 10)
        child_w = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD_CLOEXEC, 10)
        for fd in (to_chrome_r, from_chrome_w):
            os.close(fd)
        self.log_path = user_data_dir.with_name(user_data_dir.name + ".log")
        log = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
        argv = [binary, *CHROMIUM_FLAGS, f"--user-data-dir={user_data_dir}", "about:blank"]
        try:
            self.pid = os.posix_spawn(binary, argv, dict(os.environ), file_actions=[
                (os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, null, 1),
                (os.POSIX_SPAWN_DUP2, log, 2), (os.POSIX_SPAWN_DUP2, child_r, 3),
                (os.POSIX_SPAWN_DUP2, child_w, 4)])
        finally:
            for fd in (child_r, child_w, log, null):
                os.close(fd)
        self.write_fd, self.read_fd = to_chrome_w, from_chrome_r
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict] = []

    def send(self, method: str, params: dict | None = None, session: str | None = None,
             timeout: float = 30.0) -> dict:
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.write_fd, json.dumps(message).encode() + b"\0")
        reply = self._wait(lambda m: m.get("id") == self.next_id, timeout, method)
        if "error" in reply:
            raise RuntimeError(f"DevTools {method}: {reply['error']}")
        return reply.get("result", {})

    def wait_event(self, method: str, timeout: float = 30.0) -> dict:
        for event in self.events:
            if event.get("method") == method:
                return event
        return self._wait(lambda m: m.get("method") == method, timeout, method)

    def _wait(self, match, timeout: float, what: str) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self.buffer:
                raw, self.buffer = self.buffer.split(b"\0", 1)
                message = json.loads(raw)
                if "method" in message:
                    self.events.append(message)
                if match(message):
                    return message
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no DevTools answer for {what} within {timeout} s")
            ready, _, _ = select.select([self.read_fd], [], [], left)
            if ready:
                chunk = os.read(self.read_fd, 1 << 20)
                if not chunk:
                    log = self.log_path.read_text(encoding="utf-8", errors="replace")
                    raise RuntimeError(f"Chromium closed the DevTools pipe: {log[-2000:]}")
                self.buffer += chunk

    @staticmethod
    def describe_errors(events: list[dict]) -> list[str]:
        """Console errors, uncaught exceptions and failed loads among ``events``."""
        found = []
        for event in events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                found.append(f"exception: {details.get('exception', {}).get('description') or details.get('text')}")
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error",
                                                                                "assert"):
                found.append("console: " + " ".join(str(a.get("value", a.get("description")))
                                                    for a in params.get("args", [])))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                entry = params["entry"]
                found.append(f"log: {entry.get('text')} {entry.get('url', '')}".strip())
        return found

    def close(self) -> None:
        """Ask the browser to quit; kill it if it has not exited within 10 s."""
        with contextlib.suppress(OSError, RuntimeError, TimeoutError):
            self.send("Browser.close", timeout=5)
        deadline = time.monotonic() + 10
        while os.waitpid(self.pid, os.WNOHANG) == (0, 0):
            if time.monotonic() > deadline:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
                break
            time.sleep(0.05)
        for fd in (self.write_fd, self.read_fd):
            os.close(fd)


@pytest.fixture(scope="module")
def served_site(site):
    """``python -m http.server`` on 127.0.0.1 (a free port) serving the built site."""
    proc = subprocess.Popen(
        [sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1",
         "--directory", str(site)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = proc.stdout.readline()  # "Serving HTTP on 127.0.0.1 port 41234 (...) ..."
        match = re.search(r"port (\d+)", line)
        assert match, f"http.server did not start: {line!r}"
        yield f"http://127.0.0.1:{match.group(1)}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()


PAGE_PROBE = """(() => {
  const tables = [...document.querySelectorAll("article table")];
  const images = [...document.querySelectorAll("article img")];
  return JSON.stringify({
    title: document.title,
    h1: (document.querySelector("article h1") || {}).textContent || "",
    tables: tables.map(t => [...t.querySelectorAll("thead th")].map(th => th.textContent.trim())),
    rows: tables.map(t => t.querySelectorAll("tbody tr").length),
    images: images.map(i => ({src: i.getAttribute("src"), complete: i.complete,
                              width: i.naturalWidth, height: i.naturalHeight})),
    text: document.querySelector("article").innerText,
  });
})()"""


class Browser:
    """One headless Chromium tab: visit a page, wait for its images, probe it, screenshot it."""

    def __init__(self, tools: DevTools, base_url: str):
        self.tools, self.base_url = tools, base_url
        target = tools.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = tools.send("Target.attachToTarget",
                                  {"targetId": target, "flatten": True})["sessionId"]
        for method in ("Page.enable", "Runtime.enable", "Log.enable"):
            tools.send(method, session=self.session)
        tools.send("Emulation.setDeviceMetricsOverride",
                   {"width": 1280, "height": 1000, "deviceScaleFactor": 1, "mobile": False},
                   self.session)

    def probe(self) -> dict:
        result = self.tools.send("Runtime.evaluate",
                                 {"expression": PAGE_PROBE, "returnByValue": True},
                                 self.session)
        return json.loads(result["result"]["value"])

    def visit(self, path: str) -> tuple[dict, list[str], Path]:
        """Load ``path``; return the probe, the console errors it caused, and a screenshot."""
        url = f"{self.base_url}/{path}"
        self.tools.events.clear()  # what the previous page reported was checked with it
        self.tools.send("Page.navigate", {"url": url}, self.session)
        self.tools.wait_event("Page.loadEventFired")
        deadline = time.monotonic() + 15
        page = self.probe()
        while not all(i["complete"] for i in page["images"]) and time.monotonic() < deadline:
            time.sleep(0.2)
            page = self.probe()
        time.sleep(0.5)  # let late scripts (search worker, theme) report errors
        page = self.probe()
        metrics = self.tools.send("Page.getLayoutMetrics", session=self.session)
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        shot = self.tools.send("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": 1280, "height": min(size["height"], 8000),
                     "scale": 1}}, self.session)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        ignore = ARTIFACTS / ".gitignore"
        if ARTIFACTS == ROOT / "tests" / "artifacts" and not ignore.exists():
            ignore.write_text("# screenshots written by tests/test_docs.py\n*\n",
                              encoding="utf-8")
        name = re.sub(r"\.html$", "", path.strip("/")).replace("/", "_") or "index"
        screenshot = ARTIFACTS / f"docs_{name}.png"
        screenshot.write_bytes(base64.b64decode(shot["data"]))
        print(f"\nscreenshot of {url}: {screenshot}")
        errors = DevTools.describe_errors(self.tools.events)
        return page, errors, screenshot


@pytest.fixture(scope="module")
def browser(served_site, tmp_path_factory):
    """A headless Chromium tab on the built site; None without Chromium (see :func:`_need`: the
    tests then fail with what to install, instead of erroring in this fixture)."""
    binary = _chromium_binary()
    if binary is None:
        yield None
        return
    tools = DevTools(binary, tmp_path_factory.mktemp("chromium") / "profile")
    try:
        yield Browser(tools, served_site)
    finally:
        tools.close()


def _check_images(page: dict, names: tuple[str, ...]) -> None:
    sources = [i["src"] for i in page["images"]]
    for name in names:
        assert any(s.endswith(f"{name}.png") for s in sources), (name, sources)
    for image in page["images"]:  # decoded by the browser, not a broken-image icon
        assert image["complete"] and image["width"] > 300 and image["height"] > 200, image


def test_correlations_page_in_headless_chromium(browser):
    page, errors, screenshot = _need(browser).visit("reproduction/correlations.html")
    assert not errors, f"console errors: {errors}"
    assert page["h1"].startswith("Kendall correlations"), page["h1"]
    _check_images(page, ("kendall_overall", "kendall_system"))
    # The comparison tables (paper | storyeval | difference) and the grids of correlations.
    comparisons = [h for h in page["tables"] if h[1:4] == ["paper", "storyeval", "difference"]]
    assert len(comparisons) == 2, page["tables"]  # overall and system level
    assert any(h[:2] == ["quantity", "paper"] and "np.mean" in h
               for h in page["tables"]), page["tables"]  # the tie-handling comparison
    grids = [h for h in page["tables"] if h[:1] == ["measure"] and "Mean" in h]
    assert len(grids) == 2, page["tables"]
    assert all(n > 0 for n in page["rows"]), page["rows"]
    assert "Beluga-13B 1 system-level mean" in page["text"]
    assert screenshot.stat().st_size > 10_000


def test_williams_and_overview_pages_in_headless_chromium(browser):
    browser = _need(browser)
    page, errors, _ = browser.visit("reproduction/williams.html")
    assert not errors, f"console errors: {errors}"
    _check_images(page, ("williams_overall", "williams_system"))
    assert sum(h[1:4] == ["paper", "storyeval", "difference"] for h in page["tables"]) == 1
    assert sum(h[:1] == ["compared with"] for h in page["tables"]) == 2, page["tables"]

    page, errors, _ = browser.visit("reproduction/index.html")
    assert not errors, f"console errors: {errors}"
    assert sum(h[1:4] == ["paper", "storyeval", "difference"] for h in page["tables"]) == 3
    assert any("paper AC1" in h for h in page["tables"]), page["tables"]
