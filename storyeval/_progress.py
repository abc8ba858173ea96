"""Progress bars for long work (tqdm), quiet when output is not a terminal or when disabled."""

from __future__ import annotations

import contextlib
import contextvars
import os
import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


_QUIET: contextvars.ContextVar[bool] = contextvars.ContextVar("storyeval_quiet", default=False)


@contextlib.contextmanager
def no_progress() -> Iterator[None]:
    """Within the block, bars and stages that were not asked for explicitly stay hidden (a
    computation inside another one's step, such as the answer's own test of a report)."""
    token = _QUIET.set(True)
    try:
        yield
    finally:
        _QUIET.reset(token)


def progress_enabled(show: bool | None = None) -> bool:
    """Whether to draw a bar: ``show`` if given, else only on a TTY and not under
    ``STORYEVAL_NO_PROGRESS=1`` or inside `no_progress`."""
    if show is not None:
        return show
    if _QUIET.get() or os.environ.get("STORYEVAL_NO_PROGRESS") == "1":
        return False
    return sys.stderr.isatty()


def _tqdm_class():
    """tqdm's notebook widget (``tqdm.auto``) where ipywidgets is installed, else the plain text
    bar: without ipywidgets, ``tqdm.auto`` in a notebook warns "IProgress not found" on the
    first bar."""
    import importlib.util

    if importlib.util.find_spec("ipywidgets") is not None:
        from tqdm.auto import tqdm
    else:
        from tqdm import tqdm
    return tqdm


def progress(
    iterable: Iterable[T],
    *,
    total: int | None = None,
    desc: str | None = None,
    unit: str = "it",
    show: bool | None = None,
) -> Iterator[T]:
    """Wrap ``iterable`` in a tqdm bar on standard error (see `progress_enabled`)."""
    tqdm = _tqdm_class()
    return iter(
        tqdm(iterable, total=total, desc=desc, unit=unit, disable=not progress_enabled(show),
             file=sys.stderr, dynamic_ncols=True)
    )


def progress_bar(*, total: int | None, desc: str | None = None, unit: str = "it",
                 show: bool | None = None):
    """A manual tqdm bar (call ``.update(n)``; use as a context manager)."""
    tqdm = _tqdm_class()
    return tqdm(total=total, desc=desc, unit=unit, disable=not progress_enabled(show),
                file=sys.stderr, dynamic_ncols=True)


class Stages:
    """The steps of a command on standard error, each with its time, on a terminal only:
    ``reading the data ... 9.8 s (1,000,000 stories)``. For steps without a natural count (a
    bar needs one); steps that have one draw their own bar inside."""

    def __init__(self, show: bool | None = None) -> None:
        self.on = progress_enabled(show)
        self._start = 0.0
        self._what = ""

    def start(self, what: str, *, bars: bool = False) -> None:
        """Say that ``what`` runs; ``bars``: it draws its own progress bars (the time then
        comes on a line of its own)."""
        import time

        self._start = time.perf_counter()
        self._what = what if bars else ""
        if self.on:
            print(f"{what} ...", end="\n" if bars else "", file=sys.stderr, flush=True)

    def done(self, detail: str = "") -> None:
        import time

        if self.on:
            seconds = time.perf_counter() - self._start
            head = f"{self._what}: done in" if self._what else ""
            print(f"{head} {seconds:.1f} s" + (f" ({detail})" if detail else ""),
                  file=sys.stderr, flush=True)
