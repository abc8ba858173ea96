"""Figure workers die with the process that started them, whatever kills it (issue 28):
a real SIGKILL/SIGTERM of the parent, then every helper process (forkserver, workers) must be
gone within a few seconds. Linux's parent-death signal and the portable watchdog thread are
tested apart."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

ROOT = Path(__file__).resolve().parents[1]

START_WORKERS = textwrap.dedent("""
    import os, sys, time
    from multiprocessing import forkserver
    from storyeval.report.figures import FigureWorkers

    if __name__ == "__main__":
        w = FigureWorkers(2)
        w._starting.join()
        pids = {f.result() for f in [w._pool.submit(os.getpid) for _ in range(6)]}
        pids |= set(w._pool._processes) | {forkserver._forkserver._forkserver_pid}
        print(" ".join(map(str, sorted(pids))), flush=True)
        time.sleep(120)
""")

# a child armed with the watchdog thread only (the fallback of platforms without prctl)
WATCHDOG_ONLY = textwrap.dedent("""
    import subprocess, sys, time
    if __name__ == "__main__":
        child = subprocess.Popen([sys.executable, "-c",
            "import time\\nfrom storyeval.report._lifeline import arm\\n"
            "arm(death_signal=False)\\nprint('armed', flush=True)\\ntime.sleep(120)"],
            stdout=subprocess.PIPE, text=True)
        child.stdout.readline()
        print(child.pid, flush=True)
        time.sleep(120)
""")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return True


def survivors(script: str, sig: int, tmp_path: Path) -> tuple[list[int], list[int]]:
    path = tmp_path / "main.py"
    path.write_text(script)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    proc = subprocess.Popen([sys.executable, str(path)], stdout=subprocess.PIPE, text=True,
                            env=env, cwd=tmp_path)
    try:
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert pids and all(alive(p) for p in pids)
    finally:
        proc.send_signal(sig)
        proc.wait(10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    left = [p for p in pids if alive(p)]
    for p in left:  # do not leave them behind if the test fails
        os.kill(p, signal.SIGKILL)
    return pids, left


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_figure_workers_die_with_their_parent(tmp_path, sig):
    pids, left = survivors(START_WORKERS, sig, tmp_path)
    assert len(pids) >= 3  # the forkserver and two workers
    assert left == []


def test_watchdog_alone_ends_an_orphan(tmp_path):
    pids, left = survivors(WATCHDOG_ONLY, signal.SIGKILL, tmp_path)
    assert len(pids) == 1 and left == []


def descendants(root: int) -> set[int]:
    """Every process below ``root`` (Linux /proc)."""
    parent = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                parent[int(d.name)] = int((d / "stat").read_bytes().rsplit(b")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = set(), {root}
    while frontier:
        frontier = {p for p, pp in parent.items() if pp in frontier} - found
        found |= frontier
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_kill_9_of_meta_out_leaves_no_process(tmp_path):
    """The audit's case: `storyeval meta --out D` killed with SIGKILL while its figure workers
    run; 10 s later none of its processes is left."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg",
           "STORYEVAL_FIGURE_WORKERS": "2", "STORYEVAL_NO_PROGRESS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "storyeval", "meta", "--metrics", "all",
                             "--out", str(tmp_path / "out")], env=env, cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen: set[int] = set()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        seen |= descendants(proc.pid)
        if len(seen) >= 3:  # the forkserver and two workers
            break
        time.sleep(0.05)
    if proc.poll() is not None:
        pytest.skip("the command finished before its workers were seen")
    seen |= descendants(proc.pid)
    proc.kill()
    proc.wait(10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(alive(p) for p in seen):
        time.sleep(0.05)
    left = [p for p in seen if alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    assert len(seen) >= 3 and left == []


def test_importing_the_forkserver_guard_elsewhere_arms_nothing():
    """pytest's --doctest-modules imports every module: the guard must not start its watchdog
    thread (or ask for the parent-death signal) in a process that is not the forkserver."""
    code = ("import threading, storyeval.report._forkserver_guard\n"
            "print(sorted(t.name for t in threading.enumerate()))")
    env = {k: v for k, v in os.environ.items() if k != "STORYEVAL_FORKSERVER_PARENT"}
    env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True).stdout
    assert "storyeval-lifeline" not in out and "MainThread" in out
    env["STORYEVAL_FORKSERVER_PARENT"] = str(os.getpid())  # the parent that asked: armed
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True).stdout
    assert "storyeval-lifeline" in out
