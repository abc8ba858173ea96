"""Compile the numba kernels in the background after a command that ran without them.

A process decides per kernel whether numba pays (`storyeval.correlation.kendall_sorted.
numba_load_seconds`): loading cached machine code costs under a second, compiling it several
seconds, so a first run after installing the ``fast`` extra uses the NumPy engines. Nothing
would ever fill the cache for a user whose runs are all of middle size (where a cached kernel
pays but compiling it does not: e.g. the system-level test from about 20 systems), and every
run would stay on the slower engines. So when a command found a kernel module without cached code
(`kendall_sorted.COLD_MODULES`), the command line (`storyeval.cli.entry`, after the
command's output) starts one detached, low-priority process (``python -m
storyeval.cli.warmup``) that runs small meta-evaluations with every compiled path
switched on; numba writes their machine code where the next runs look for it
(``NUMBA_CACHE_DIR`` or ``__pycache__`` beside the sources). Library calls never start it.

Off with ``STORYEVAL_BACKGROUND_COMPILE=0`` (and under pytest); one warm-up at a time per
cache location (a lock file in the temporary folder, stale after 15 minutes); its output is
discarded and a failure changes nothing but the next run's speed.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["background_enabled", "lock_path", "main", "schedule"]

OFF_ENV = "STORYEVAL_BACKGROUND_COMPILE"
LOCK_ENV = "STORYEVAL_WARMUP_LOCK"
STALE_SECONDS = 15 * 60


def background_enabled() -> bool:
    """Whether a command may start the warm-up (not switched off, not inside a test run)."""
    if os.environ.get(OFF_ENV, "").strip().lower() in ("0", "no", "false", "off"):
        return False
    return "PYTEST_CURRENT_TEST" not in os.environ


def lock_path() -> Path:
    """The lock of the cache this process writes to (``NUMBA_CACHE_DIR`` or the package)."""
    where = os.environ.get("NUMBA_CACHE_DIR") or str(Path(__file__).resolve().parent)
    key = hashlib.sha256(f"{where}|{sys.executable}".encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"storyeval-numba-warmup-{key}.lock"


def _take_lock(path: Path) -> bool:
    for _ in range(2):
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            return True
        except FileExistsError:
            try:
                if time.time() - path.stat().st_mtime < STALE_SECONDS:
                    return False
                path.unlink()  # a warm-up that died: take over
            except OSError:
                return False
        except OSError:
            return False
    return False


def schedule() -> bool:
    """Start the background warm-up if this process met a cold kernel module; returns whether
    it started one."""
    from storyeval.correlation.kendall_sorted import COLD_MODULES, engine

    if not COLD_MODULES or not background_enabled() or engine() != "numba":
        return False
    lock = lock_path()
    if not _take_lock(lock):
        return False
    env = {**os.environ, "STORYEVAL_NUMBA_WARMUP": "1", "STORYEVAL_NO_PROGRESS": "1",
           LOCK_ENV: str(lock)}
    try:
        subprocess.Popen([sys.executable, "-m", "storyeval.cli.warmup"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True, env=env)
    except OSError:
        lock.unlink(missing_ok=True)
        return False
    return True


def _study():
    """A small synthetic study whose meta-evaluation runs every compiled path of the default
    `meta` (overall, system and within levels; more stories than the direct kernels take)."""
    import numpy as np
    import pandas as pd

    from storyeval.data import read_dataset

    g = np.random.default_rng(0)
    systems, prompts = 6, 40
    rows = []
    for s in range(systems):
        for p in range(prompts):
            q = s / systems + g.normal()
            for c in ("c1", "c2"):
                rows.append({"system": f"s{s}", "prompt_id": p, "criterion": c,
                             "value": float(np.clip(np.rint(3 + q + g.normal()), 1, 5))})
    ratings = pd.DataFrame(rows)
    scores = pd.DataFrame([{"system": r["system"], "prompt_id": r["prompt_id"],
                            "measure": f"m{k}", "value": g.normal() + k * 0.1}
                           for r in rows[::2] for k in range(3)])
    return read_dataset(ratings, scores=scores)


def main() -> int:
    """The warm-up process: low priority, every compiled path on, output discarded."""
    import warnings

    try:
        os.nice(10)
    except OSError:
        pass
    try:
        from storyeval.meta.answer import answer_table
        from storyeval.meta.pipeline import meta_evaluate

        warnings.simplefilter("ignore")
        study = _study()
        for method in ("kendall_b", "kendall_c"):
            result = meta_evaluate(study, reference="all", method=method,
                                   levels=("overall", "system", "within"), n_resamples=50,
                                   n_permutations=99)
            answer_table(result)
    finally:
        lock = os.environ.get(LOCK_ENV)
        if lock:
            Path(lock).unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
