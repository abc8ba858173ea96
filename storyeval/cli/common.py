"""Options and helpers shared by several sub-commands."""

from __future__ import annotations

import argparse
from pathlib import Path

from storyeval.report.tables import FORMATS


def add_format_option(parser: argparse.ArgumentParser, default: str = "table") -> None:
    parser.add_argument("--format", choices=FORMATS, default=default,
                        help=f"output format on standard output (default: {default})")


def add_out_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--out", metavar="DIR", type=Path, help=f"write {what} to DIR")


def load_dataset_arg(data: Path | None, scores: Path | None, *, allow_unbalanced: bool = False):
    """The dataset named by ``--data`` (default: embedded HANNA) joined with ``--scores``."""
    from storyeval.data import load_hanna, read_hanna_wide, read_score_table, read_scores

    if data is None:
        dataset = load_hanna()
    elif _looks_like_hanna_wide(data):
        dataset = read_hanna_wide(data)
    else:
        dataset = read_scores(data, require_same_prompts=not allow_unbalanced)
    if scores is not None:
        dataset = dataset.with_scores(read_score_table(scores))
    return dataset


def _looks_like_hanna_wide(path: Path) -> bool:
    if path.suffix.lower() != ".csv" or not path.exists():
        return False
    with path.open(encoding="utf-8") as handle:
        header = handle.readline()
    return header.startswith("Model,") and "measure" not in header.split(",")
