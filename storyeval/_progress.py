"""Progress bars for long work (tqdm), quiet when output is not a terminal or when disabled."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


def progress_enabled(show: bool | None = None) -> bool:
    """Whether to draw a bar: ``show`` if given, else only on a TTY and not under
    ``STORYEVAL_NO_PROGRESS=1``."""
    if show is not None:
        return show
    if os.environ.get("STORYEVAL_NO_PROGRESS") == "1":
        return False
    return sys.stderr.isatty()


def progress(
    iterable: Iterable[T],
    *,
    total: int | None = None,
    desc: str | None = None,
    unit: str = "it",
    show: bool | None = None,
) -> Iterator[T]:
    """Wrap ``iterable`` in a tqdm bar on standard error (see `progress_enabled`)."""
    from tqdm.auto import tqdm

    return iter(
        tqdm(iterable, total=total, desc=desc, unit=unit, disable=not progress_enabled(show),
             file=sys.stderr, dynamic_ncols=True)
    )


def progress_bar(*, total: int | None, desc: str | None = None, unit: str = "it",
                 show: bool | None = None):
    """A manual tqdm bar (call ``.update(n)``; use as a context manager)."""
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, disable=not progress_enabled(show),
                file=sys.stderr, dynamic_ncols=True)
