"""The package is release-shaped: one version everywhere, supported Pythons stated once and
consistently, no project URL that points at nothing, a docs-hosting configuration that builds
the site as CI does."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import storyeval

ROOT = Path(__file__).resolve().parents[1]


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_version_changelog_and_citation_agree():
    version = storyeval.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", version), version
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    first = re.search(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?", changelog, re.MULTILINE)
    assert first and first.group(1) == version, (first and first.group(0), version)
    citation = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    assert re.search(rf"^version: {re.escape(version)}$", citation, re.MULTILINE)
    released = re.search(r'^date-released: "?(\d{4}-\d{2}-\d{2})"?$', citation, re.MULTILINE)
    assert released and released.group(1) == first.group(2)


def test_citation_cites_the_software_and_the_paper_as_a_reference():
    citation = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    assert re.search(r"^type: software$", citation, re.MULTILINE)
    assert "preferred-citation" not in citation  # the software is what is cited
    references = citation.split("references:", 1)[1]
    assert "Do Language Models Enjoy Their Own Stories?" in references


def test_supported_pythons_agree():
    project = _pyproject()["project"]
    floor = re.fullmatch(r">=3\.(\d+)", project["requires-python"])
    assert floor, project["requires-python"]
    minors = sorted(int(m) for c in project["classifiers"]
                    for m in re.findall(r"^Programming Language :: Python :: 3\.(\d+)$", c))
    assert minors and minors[0] == int(floor.group(1))
    assert minors == list(range(minors[0], minors[-1] + 1)), minors
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"Python 3.{minors[0]} to 3.{minors[-1]}" in readme
    assert _pyproject()["tool"]["mypy"]["python_version"] == f"3.{minors[0]}"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert f'versions/3.{minors[0]}.*/bin/python' in ci  # the oldest-versions job


def test_no_project_url_points_at_nothing():
    # nothing is hosted yet (docs/release.md says which URLs to add when something is)
    assert "urls" not in _pyproject()["project"]


def test_docs_hosting_builds_like_ci():
    rtd = (ROOT / ".readthedocs.yaml").read_text(encoding="utf-8")
    assert "configuration: mkdocs.yml" in rtd and "fail_on_warning: true" in rtd
    assert re.search(r"extra_requirements:\s*\n\s*- docs", rtd)
    assert "strict: true" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
