"""The sdist holds what the README's test command needs (.ci/run runs the command in the
unpacked sdist; this checks the file list, fast)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NEEDED = ("README.md", "LICENSE", "CHANGELOG.md", "CITATION.cff", "mkdocs.yml", ".readthedocs.yaml",
          "pyproject.toml", "constraints/oldest.txt", "constraints/cpu-torch.txt",
          "tests/conftest.py", "tests/test_sdist.py", "docs/gen_pages.py", "docs/index.md",
          "docs/vendor/katex/katex.min.js", "benchmarks/bench_calibration.py",
          "storyeval/py.typed", "storyeval/data/hanna/hanna_llm_stories.csv")


@pytest.mark.slow
def test_sdist_holds_tests_docs_constraints_and_benchmarks(tmp_path):
    if not (ROOT / "MANIFEST.in").is_file():
        pytest.skip("not a source checkout")
    pytest.importorskip("build")
    pytest.importorskip("setuptools")
    # a copy: building writes storyeval.egg-info next to the sources
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".git", "__pycache__", "site", "artifacts", "*.egg-info", "build", "dist"))
    subprocess.run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir",
                    str(tmp_path / "dist"), str(src)], check=True, capture_output=True)
    (archive,) = (tmp_path / "dist").glob("storyeval-*.tar.gz")
    with tarfile.open(archive) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    missing = [n for n in NEEDED if n not in names]
    assert not missing, missing
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
