"""Generate the snippets of the page "Poetic form, near-duplicates and prompt clusters"
(docs/texts.md).

Usage (from the repository root)::

    python docs/gen_texts.py            # writes docs/generated/texts/
    python docs/gen_texts.py --out DIR  # somewhere else (the stale check in tests/)

Every snippet is the output of a storyeval command run in-process: ``storyeval poetry`` on
the committed poems (docs/texts/poems.csv: public-domain poems whose form is known),
``storyeval dedup`` and ``storyeval cluster`` on HANNA's 96 story-prompts embedded with the
offline MiniLM. The Markdown holds no dates, paths or timings.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from gen_common import remove_stale, run_cli, shell, snippet_writer

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
DEFAULT_OUT = DOCS / "generated" / "texts"
POEMS = DOCS / "texts" / "poems.csv"


def transcript(argv: Sequence[str], cwd: Path, shown: Sequence[str] | None = None) -> str:
    """The command as a reader types it, then its output."""
    output = run_cli(argv, cwd=cwd, warning_action="default")
    return f"```text\n$ {shell(shown or argv, wrap=96)}\n{output.rstrip()}\n```\n"


def hanna_prompts(folder: Path) -> Path:
    from storyeval.llm import load_stories

    stories = load_stories("hanna")
    prompts = (stories.drop_duplicates("prompt_id").sort_values("prompt_id")
               [["prompt_id", "prompt"]])
    path = folder / "prompts.csv"
    prompts.to_csv(path, index=False)
    return path


def generate(out_dir: str | Path = DEFAULT_OUT) -> list[Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    write = snippet_writer(out, written)
    known = pd.read_csv(POEMS)[["title", "source", "known_form"]]
    from storyeval.report.tables import format_table

    write("poems", format_table(known, "md"))
    write("poetry", transcript(["poetry", "--stories", str(POEMS), "--text", "poem", "--id",
                                "title"], cwd=ROOT,
                               shown=["poetry", "--stories", "docs/texts/poems.csv", "--text",
                                      "poem", "--id", "title"]))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        hanna_prompts(folder)
        # the embeddings once, shared by both commands (as a user would keep them)
        from storyeval.explain.embed import embed_texts

        prompts = pd.read_csv(folder / "prompts.csv")
        emb = embed_texts(prompts["prompt"].tolist())
        table = pd.DataFrame(emb, columns=[f"e{j}" for j in range(emb.shape[1])])
        table.insert(0, "prompt_id", prompts["prompt_id"])
        table.round(6).to_csv(folder / "embeddings.csv", index=False)
        for threshold in ("0.7", "0.5"):
            write(f"dedup_{threshold.replace('.', '')}", transcript(
                ["dedup", "--stories", "prompts.csv", "--text", "prompt", "--id", "prompt_id",
                 "--embeddings", "embeddings.csv", "--threshold", threshold, "--out",
                 f"dedup-{threshold}"], cwd=folder))
            if threshold != "0.5":
                continue  # 0.7 removes none of HANNA's prompts (the snippet says so)
            removed = pd.read_csv(folder / f"dedup-{threshold}" / "removed.csv")
            text = prompts.set_index("prompt_id")["prompt"].str.slice(0, 70)
            shown = removed.assign(prompt=removed["prompt_id"].map(text),
                                   duplicate=removed["duplicate_of"].map(text))
            write(f"dedup_{threshold.replace('.', '')}_pairs",
                  format_table(shown.head(5), "md", digits=3))
        write("cluster", transcript(
            ["cluster", "--stories", "prompts.csv", "--embeddings", "embeddings.csv", "--k",
             "2-15", "--reduce", "none", "--per-cluster", "2"], cwd=folder))
    remove_stale(out, written)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    os.environ.setdefault("STORYEVAL_NO_PROGRESS", "1")
    for path in generate(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
