"""Progress bars for long work (tqdm), quiet when output is not a terminal or when disabled."""

from __future__ import annotations

import contextlib
import contextvars
import os
import sys
import threading
import weakref
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


#: Seconds between the redraws of a running bar or stage line (on a terminal): a step whose
#: blocks of work are long still writes at least this often.
TICK_S = 1.0

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
    return iter(_ticking(
        tqdm(iterable, total=total, desc=desc, unit=unit, disable=not progress_enabled(show),
             file=sys.stderr, dynamic_ncols=True)
    ))


def progress_bar(*, total: int | None, desc: str | None = None, unit: str = "it",
                 show: bool | None = None):
    """A manual tqdm bar (call ``.update(n)``; use as a context manager)."""
    tqdm = _tqdm_class()
    return _ticking(tqdm(total=total, desc=desc, unit=unit, disable=not progress_enabled(show),
                         file=sys.stderr, dynamic_ncols=True))


#: The bars drawn now (a closed bar is disabled; a dropped one leaves the set).
_OPEN_BARS: weakref.WeakSet = weakref.WeakSet()


def _bar_drawn() -> bool:
    try:
        return any(not bar.disable for bar in list(_OPEN_BARS))
    except RuntimeError:  # a bar added while the set was copied: one is drawn
        return True


def _ticking(bar):
    """``bar``, redrawn every `TICK_S` seconds by a daemon thread until it is closed or dropped:
    its elapsed time moves even while one block of vectorised work runs, so the computation
    reports at block boundaries only (no callback in its loops) and is never silent for long."""
    if bar.disable:
        return bar
    ref, lock, sleep = weakref.ref(bar), type(bar).get_lock(), threading.Event()
    _OPEN_BARS.add(bar)

    def tick() -> None:
        while not sleep.wait(TICK_S):
            with lock:  # tqdm's own lock: no redraw during an update or the close
                live = ref()  # a weak reference: a bar left unclosed stops when collected
                if live is None or live.disable:  # tqdm disables a bar on close
                    return
                try:
                    live.refresh(nolock=True)
                except (OSError, ValueError):  # standard error closed under us
                    return
                del live

    threading.Thread(target=tick, name="storyeval-bar", daemon=True).start()
    return bar


_TICKERS: set[_Ticker] = set()


def _caller_frame():
    """The first frame outside this module and contextlib: the code that started the stage."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") in (__name__, "contextlib"):
        frame = frame.f_back
    return frame
_LINE_LOCK = threading.Lock()  # a tick and a line ended for a warning do not interleave


def end_stage_line() -> None:
    """End the open line of a running stage (before a warning is printed on standard error)."""
    for ticker in list(_TICKERS):
        ticker.end_line()


class _Ticker:
    """Rewrites ``what ... N s`` on standard error every `TICK_S` seconds while a stage runs,
    from a daemon thread that sleeps in between (no work in the computation's own loops).
    ``bars``: the stage draws bars of its own; it writes only while none is drawn (the bars
    redraw themselves), so the stretches between its bars are not silent either. It stops by
    itself, ending its line, once the function that started the stage has left the starting
    thread's stack (an exception that skipped `Stages.done`, in a library call)."""

    def __init__(self, what: str, start: float, bars: bool = False) -> None:
        self.what, self.start, self.ticks, self.bars = what, start, 0, bars
        self.owner = threading.get_ident()
        self.origin = _caller_frame()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="storyeval-stage", daemon=True)
        _TICKERS.add(self)
        self._thread.start()

    def _run(self) -> None:
        import time

        while not self._stop.wait(TICK_S):
            if not self._origin_running():
                with _LINE_LOCK:
                    if self.ticks or not self.bars:  # the line is open
                        print(file=sys.stderr, flush=True)
                    self.ticks = 0  # nothing for stop() to end
                _TICKERS.discard(self)
                return
            if self.bars and _bar_drawn():
                continue
            with _LINE_LOCK:
                self.ticks += 1
                seconds = time.perf_counter() - self.start
                try:
                    print(f"\r{self.what} ... {seconds:.0f} s", end="", file=sys.stderr,
                          flush=True)
                except (OSError, ValueError):  # standard error closed under us: stop quietly
                    return

    def _origin_running(self) -> bool:
        """Whether the frame that started the stage is still on its thread's stack."""
        frame = sys._current_frames().get(self.owner)
        while frame is not None:
            if frame is self.origin:
                return True
            frame = frame.f_back
        return False

    def end_line(self) -> None:
        """End the stage's open line (something else is printed); ticks and the finished
        line then write the whole line anew below."""
        with _LINE_LOCK:
            if not self.bars or self.ticks:
                print(file=sys.stderr, flush=True)
            self.ticks += 1  # the finished line is written whole

    def stop(self) -> bool:
        """Stop ticking; whether a tick was written (then the line needs rewriting)."""
        self._stop.set()
        self._thread.join()
        _TICKERS.discard(self)
        return self.ticks > 0


@contextlib.contextmanager
def stages_stop_on_exit() -> Iterator[None]:
    """Around a command: a stage still ticking when the command ends (an error, an interrupt)
    stops, and its line is ended, before the error message is printed."""
    try:
        yield
    finally:
        for ticker in list(_TICKERS):  # a ticking stage's line is open (no newline yet)
            if ticker.stop() or not ticker.bars:
                print(file=sys.stderr, flush=True)


class Stages:
    """The steps of a command on standard error, each with its time, on a terminal only:
    ``reading the data ... 9.8 s (1,000,000 stories)``. For steps without a natural count (a
    bar needs one); steps that have one draw their own bar inside. A step that runs longer than
    `TICK_S` shows its elapsed seconds on its line, updated every `TICK_S`, so that nothing is
    silent for long; the updates rewrite the line (a carriage return), the last one is the
    finished line."""

    def __init__(self, show: bool | None = None) -> None:
        self.on = progress_enabled(show)
        self._start = 0.0
        self._what = ""
        self._line = ""
        self._ticker: _Ticker | None = None

    def start(self, what: str, *, bars: bool = False, tick: bool = True) -> None:
        """Say that ``what`` runs; ``bars``: it draws its own progress bars (the time then
        comes on a line of its own); ``tick=False``: no elapsed-time redraws (a step whose bars
        another library draws, which this module cannot see)."""
        import time

        self._stop_ticker()
        self._start = time.perf_counter()
        self._what = what if bars else ""
        self._line = what
        if self.on:
            print(f"{what} ...", end="\n" if bars else "", file=sys.stderr, flush=True)
            if tick:
                self._ticker = _Ticker(what, self._start, bars)

    def _stop_ticker(self) -> bool:
        ticker, self._ticker = self._ticker, None
        return ticker.stop() if ticker is not None else False

    def done(self, detail: str = "") -> None:
        import time

        ticked = self._stop_ticker()
        if self.on:
            seconds = time.perf_counter() - self._start
            head = f"{self._what}: done in" if self._what else ""
            if ticked:  # the line may hold "what ... N s": write it anew
                head = f"\r{head}" if self._what else f"\r{self._line} ..."
            print(f"{head} {seconds:.1f} s" + (f" ({detail})" if detail else ""),
                  file=sys.stderr, flush=True)

    @contextlib.contextmanager
    def step(self, what: str, *, detail: str = "") -> Iterator[None]:
        """``with stages.step("fitting"):`` = `start` and `done`; an error ends the line."""
        self.start(what)
        try:
            yield
        except BaseException:
            ticked = self._stop_ticker()
            if self.on and (ticked or not self._what):  # the line is open
                print(file=sys.stderr, flush=True)
            raise
        self.done(detail)
