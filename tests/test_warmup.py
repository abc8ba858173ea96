"""The background compile of numba kernels after a command that met them cold
(`storyeval.cli.warmup`): when it starts, that it starts once, and what it runs."""

from __future__ import annotations

import os
import time

import pytest

import storyeval.correlation.kendall_sorted as ks
from storyeval.cli import warmup


@pytest.fixture
def outside_pytest(monkeypatch, tmp_path):
    """As a command line run: locks in a private temporary folder, a cold module noted,
    numba's engine on, and Popen recorded instead of run (the tests drop PYTEST_CURRENT_TEST
    themselves: pytest sets it again for the test's call)."""
    monkeypatch.delenv(warmup.OFF_ENV, raising=False)
    monkeypatch.setattr(warmup.tempfile, "gettempdir", lambda: str(tmp_path))
    monkeypatch.setattr(ks, "COLD_MODULES", {"storyeval.correlation._permutation_numba"})
    monkeypatch.setattr(ks, "engine", lambda: "numba")
    calls = []
    monkeypatch.setattr(warmup.subprocess, "Popen", lambda cmd, **kw: calls.append((cmd, kw)))
    return calls


def test_a_cold_module_starts_one_detached_warm_up(outside_pytest, monkeypatch):
    monkeypatch.delenv("PYTEST_CURRENT_TEST", raising=False)
    calls = outside_pytest
    assert warmup.schedule()
    (cmd, kw), = calls
    assert cmd[1:] == ["-m", "storyeval.cli.warmup"]
    assert kw["start_new_session"] and kw["stdout"] is warmup.subprocess.DEVNULL
    assert kw["env"][ks.WARMUP_ENV] == "1" and kw["env"][warmup.LOCK_ENV] == str(
        warmup.lock_path())
    assert warmup.lock_path().exists()
    assert not warmup.schedule() and len(calls) == 1  # one at a time: the lock is held


def test_a_stale_lock_is_taken_over(outside_pytest, monkeypatch):
    monkeypatch.delenv("PYTEST_CURRENT_TEST", raising=False)
    lock = warmup.lock_path()
    lock.write_text("")
    old = time.time() - warmup.STALE_SECONDS - 5
    os.utime(lock, (old, old))
    assert warmup.schedule() and len(outside_pytest) == 1


@pytest.mark.parametrize("off", ["0", "off", "no"])
def test_switched_off(outside_pytest, monkeypatch, off):
    monkeypatch.delenv("PYTEST_CURRENT_TEST", raising=False)
    monkeypatch.setenv(warmup.OFF_ENV, off)
    assert not warmup.schedule() and not outside_pytest


def test_nothing_cold_or_under_pytest_starts_nothing(outside_pytest, monkeypatch):
    monkeypatch.delenv("PYTEST_CURRENT_TEST", raising=False)
    monkeypatch.setattr(ks, "COLD_MODULES", set())
    assert not warmup.schedule()
    monkeypatch.setattr(ks, "COLD_MODULES", {"x"})
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "t")
    assert not warmup.schedule() and not outside_pytest


def test_load_seconds_note_cold_modules_and_the_warm_up_runs_everything(monkeypatch,
                                                                         tmp_path):
    import sys

    module = "storyeval.correlation._kendall_rows_numba"
    monkeypatch.delitem(sys.modules, module, raising=False)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(ks, "COLD_MODULES", set())
    assert ks.numba_load_seconds(module) == ks.NUMBA_COLD_SECONDS
    assert ks.COLD_MODULES == {module}
    monkeypatch.setenv(ks.WARMUP_ENV, "1")
    assert ks.numba_load_seconds(module) == 0.0


def test_the_warm_up_process_runs_and_frees_its_lock(monkeypatch, tmp_path):
    lock = tmp_path / "w.lock"
    lock.write_text("")
    monkeypatch.setenv(warmup.LOCK_ENV, str(lock))
    monkeypatch.setenv(ks.WARMUP_ENV, "1")
    monkeypatch.setattr(warmup.os, "nice", lambda n: 0)
    assert warmup.main() == 0
    assert not lock.exists()
