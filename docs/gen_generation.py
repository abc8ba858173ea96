"""Generate the command outputs shown in docs/generation.md.

Usage (from the repository root)::

    python docs/gen_generation.py              # writes docs/generated/generation/
    python docs/gen_generation.py --out DIR    # somewhere else (the stale check in tests/)

From the embedded HANNA stories: the LLM stories' distinct-n and novelty-n against the 96 human
stories (`storyeval diversity --corpus-group Human`), keyness of one system against the others,
and a perturbation suite of the stories of prompts 0-15 (`storyeval perturb`, seed 0) scored by
the fast lexical metrics (`storyeval score --metrics fast`), summarised by `storyeval
robustness`. Each command's output is one Markdown snippet ``docs/generated/generation/NAME.md``;
``tests/test_docs_generation.py`` regenerates them and compares them with the committed ones.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from gen_common import (
    generator_main,
    remove_stale,
    run_cli,
    shell,
    snippet_writer,
    working_directory,
)

DOCS = Path(__file__).resolve().parent
DEFAULT_OUT = DOCS / "generated" / "generation"

COMMANDS: dict[str, list[str]] = {
    "novelty": ["diversity", "--stories", "hanna", "--group", "system", "--corpus-group", "Human",
                "--orders", "1,2", "--out", "div"],
    "keyness": ["head", "-n", "8", "div/keyness.csv"],
    "perturb": ["perturb", "--stories", "subset.csv", "--seed", "0", "--out", "suite"],
    "manifest": ["head", "-n", "7", "suite/manifest.csv"],
    "score": ["score", "--input", "suite/stories.csv", "--metrics", "fast", "--out",
              "scores.csv"],
    "robustness": ["robustness", "--scores", "scores.csv", "--manifest", "suite/manifest.csv",
                   "--out", "rob"],
}
EXPECTED_EXIT: dict[str, int] = {}


def write_subset(folder: Path) -> None:
    """subset.csv: the 112 HANNA stories (96 LLM, 16 human) of prompts 0-15."""
    from storyeval.data.hanna import load_hanna_stories

    st = load_hanna_stories()
    st[st.prompt_id < 16].to_csv(folder / "subset.csv", index=False)


def generate(out_dir: str | Path = DEFAULT_OUT) -> list[Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    write = snippet_writer(out, written)
    with tempfile.TemporaryDirectory() as tmp, working_directory(Path(tmp)):
        write_subset(Path(tmp))
        for name, argv in COMMANDS.items():
            output = run_cli(argv, expect=EXPECTED_EXIT.get(name, 0)).rstrip()
            text = f"```bash\n{shell(argv)}\n```\n"
            if output:  # `storyeval score` reports on standard error only
                text += f"\n```text\n{output}\n```\n"
            write(name, text)
    remove_stale(out, written)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    return generator_main(generate, DEFAULT_OUT, __doc__.split("\n")[0], argv)


if __name__ == "__main__":
    raise SystemExit(main())
