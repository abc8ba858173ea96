"""The README leads with the two set-up commands, and CI and the docs use the same test command."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _test_command() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- test-command -->\s*```bash\n(.+?)\n```\s*<!-- /test-command -->",
                      readme, re.DOTALL)
    assert block, "README.md must mark its test command with <!-- test-command --> markers"
    return block.group(1).strip()


def test_readme_leads_with_install_and_test_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"```bash\n(.+?)\n```", readme, re.DOTALL)
    assert commands[0].strip() == "pip install . && storyeval meta --metrics all"
    assert commands[1].strip() == _test_command()
    assert "pytest" in _test_command()


def test_ci_runs_the_readme_command_and_docs_show_it():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "test-command" in ci  # .ci/run extracts the command between the README markers
    assert _test_command() in (ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8")
