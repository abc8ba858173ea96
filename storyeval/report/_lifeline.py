"""Helper processes that die with the process they serve, on any signal including SIGKILL.

A process killed with SIGKILL runs no cleanup, so its helpers must notice on their own:

* on Linux, ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` asks the kernel to kill a process the moment
  its parent exits (set through ctypes; checked once more after setting it, as the parent may
  already be gone);
* everywhere, a daemon thread polls, every ``POLL_S`` seconds, that the parent is still the
  same process (an orphan is re-parented, so its parent id changes) and, for a figure worker,
  that the main process still exists.

`guard_worker` is the initializer of the figure workers (both mechanisms); the module
``storyeval.report._forkserver_guard``, in the forkserver's preload list, arms the forkserver
with the watchdog thread (it is started from a short-lived thread; see `arm`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time

#: Seconds between two checks of the watchdog thread.
POLL_S = 0.2

_PR_SET_PDEATHSIG = 1


def _set_parent_death_signal() -> bool:
    """Ask Linux to SIGKILL this process when its parent exits; False where unavailable."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _exists(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie waiting to be reaped."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError, IndexError), open(f"/proc/{pid}/stat", "rb") as f:
        return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"  # "pid (name) STATE ..."
    return True


def _watch(parent: int, main: int | None) -> None:
    while True:
        time.sleep(POLL_S)
        if os.getppid() != parent or (main is not None and not _exists(main)):
            os._exit(1)


def arm(main_pid: int | None = None, *, death_signal: bool = True) -> None:
    """Make this process die with its parent (and with ``main_pid``, when given).

    ``death_signal=False`` relies on the watchdog thread alone: Linux sends the parent-death
    signal when the *thread* that started this process ends, so a process started from a
    short-lived thread (the forkserver is) must not ask for it."""
    parent = os.getppid()
    if death_signal:
        _set_parent_death_signal()
    if os.getppid() != parent or parent == 1 or (main_pid is not None and not _exists(main_pid)):
        os._exit(1)  # the parent died before the guard was in place
    threading.Thread(target=_watch, args=(parent, main_pid), daemon=True,
                     name="storyeval-lifeline").start()


def guard_worker(main_pid: int) -> None:
    """Initializer of a figure worker: die with the forkserver that forked it and with the
    main process."""
    arm(main_pid)
