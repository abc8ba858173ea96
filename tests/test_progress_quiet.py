"""Nothing silent for long on a terminal, nothing added when piped (issue 49, item 4).

`storyeval._progress`: stage lines and bars redraw every `TICK_S` seconds while one block of
work runs, stop when closed and are off off a terminal or when disabled. Each command given
stage lines or bars in 0.4.1 says what runs on a terminal, adds nothing to standard error when
piped or with ``--no-progress``, and prints byte-identical results either way. One real process
runs with standard error on a pseudo-terminal (benchmarks/silent_gap.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _bench import load_bench

import storyeval._progress as progress
from storyeval.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def terminal(monkeypatch):
    """Standard error (pytest's capture) claims to be a terminal; progress not disabled."""
    monkeypatch.delenv("STORYEVAL_NO_PROGRESS", raising=False)
    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)


def _threads(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == name]


# ------------------------------------------------------------------------------------------------
# the module
def test_a_long_stage_shows_its_elapsed_seconds_and_ends_with_its_time(capsys, monkeypatch):
    monkeypatch.setattr(progress, "TICK_S", 0.02)
    stages = progress.Stages(show=True)
    stages.start("fitting")
    time.sleep(0.2)
    stages.done("3 items")
    err = capsys.readouterr().err
    assert err.startswith("fitting ...\rfitting ... 0 s"), err
    assert err.count("\rfitting ... ") >= 4  # redrawn while the step ran
    assert re.search(r"\rfitting \.\.\. 0\.[2-9] s \(3 items\)\n$", err), err
    assert not _threads("storyeval-stage")


def test_a_short_stage_is_one_plain_line(capsys):
    stages = progress.Stages(show=True)
    stages.start("reading")
    stages.done("5 rows")
    assert re.fullmatch(r"reading \.\.\. 0\.0 s \(5 rows\)\n", capsys.readouterr().err)


def test_a_bar_redraws_during_a_long_block_and_stops_when_closed(capsys, monkeypatch):
    monkeypatch.setattr(progress, "TICK_S", 0.02)
    bar = progress.progress_bar(total=4, desc="blocks", unit="block", show=True)
    bar.update(1)
    before = capsys.readouterr().err.count("\r")
    time.sleep(0.25)  # one long block: the bar's elapsed time still moves
    during = capsys.readouterr().err
    assert during.count("\r") >= 4 and "1/4" in during, (before, during)
    bar.update(3)
    bar.close()
    capsys.readouterr()
    time.sleep(0.1)
    assert capsys.readouterr().err == ""  # no redraw after the close
    assert not _threads("storyeval-bar")


def test_a_bar_left_open_stops_redrawing_when_dropped(capsys, monkeypatch):
    import gc

    monkeypatch.setattr(progress, "TICK_S", 0.02)
    for _ in progress.progress(range(10), total=10, desc="loop", show=True):
        break  # the iterator is dropped unfinished
    gc.collect()
    time.sleep(0.1)
    capsys.readouterr()
    time.sleep(0.1)
    assert capsys.readouterr().err == ""
    assert not _threads("storyeval-bar")


def test_a_stage_with_bars_ticks_only_between_its_bars(capsys, monkeypatch):
    monkeypatch.setattr(progress, "TICK_S", 0.02)
    stages = progress.Stages(show=True)
    stages.start("bootstrap", bars=True)
    time.sleep(0.15)  # before the first bar (a compile, a setup): the stage line ticks
    head = capsys.readouterr().err
    assert head.startswith("bootstrap ...\n\rbootstrap ... 0 s"), head
    with progress.progress_bar(total=2, desc="resamples", show=True) as bar:
        capsys.readouterr()
        time.sleep(0.15)  # while a bar is drawn, only the bar redraws
        during = capsys.readouterr().err
        bar.update(2)
    assert "resamples" in during and "bootstrap ..." not in during, during
    stages.done()
    assert re.search(r"\rbootstrap: done in 0\.\d s\n$", capsys.readouterr().err)
    assert not _threads("storyeval-stage")


def test_a_warning_during_a_stage_gets_a_line_of_its_own(capsys, monkeypatch):
    import warnings

    from storyeval.cli import _short_warnings
    from storyeval.exceptions import StoryevalWarning

    monkeypatch.setattr(progress, "TICK_S", 0.02)
    monkeypatch.setattr(warnings, "showwarning", _short_warnings("meta"))
    stages = progress.Stages(show=True)
    stages.start("fitting")
    time.sleep(0.05)
    warnings.warn("few clusters", StoryevalWarning, stacklevel=1)
    stages.done()
    lines = capsys.readouterr().err.split("\n")
    assert lines[1] == "storyeval meta: warning: few clusters", lines
    assert re.fullmatch(r"(\rfitting \.\.\. \d+ s)*\rfitting \.\.\. 0\.\d s", lines[2]), lines


def test_an_error_ends_the_open_stage_line_before_the_message(capsys, monkeypatch):
    monkeypatch.setattr(progress, "TICK_S", 0.02)
    with pytest.raises(RuntimeError), progress.stages_stop_on_exit():
        progress.Stages(show=True).start("reading")
        time.sleep(0.05)
        raise RuntimeError("bad row")
    err = capsys.readouterr().err
    assert err.startswith("reading ...") and err.endswith("\n")
    assert not _threads("storyeval-stage")


def test_a_stage_left_by_an_exception_stops_and_ends_its_line(capsys, monkeypatch):
    """A library call that raises between `start` and `done` (no CLI around it): the stage
    stops ticking once its function is off the stack."""
    monkeypatch.setattr(progress, "TICK_S", 0.02)

    def compute() -> None:
        progress.Stages(show=True).start("fitting")
        time.sleep(0.05)
        raise ValueError("singular")

    with pytest.raises(ValueError):
        compute()
    time.sleep(0.1)
    err = capsys.readouterr().err
    assert err.startswith("fitting ...") and err.endswith("\n"), err
    time.sleep(0.1)
    assert capsys.readouterr().err == ""
    assert not _threads("storyeval-stage")


def test_a_step_is_start_and_done_and_an_error_ends_its_line(capsys):
    stages = progress.Stages(show=True)
    with stages.step("reading", detail="3 rows"):
        pass
    assert re.fullmatch(r"reading \.\.\. 0\.0 s \(3 rows\)\n", capsys.readouterr().err)
    with pytest.raises(ValueError), stages.step("parsing"):
        raise ValueError("row 2")
    assert capsys.readouterr().err == "parsing ...\n"
    assert not _threads("storyeval-stage")


def test_off_a_terminal_or_disabled_nothing_is_drawn_and_no_thread_starts(capsys, monkeypatch):
    monkeypatch.setattr(progress, "TICK_S", 0.01)
    for env, tty in (("1", True), ("0", False)):
        monkeypatch.setenv("STORYEVAL_NO_PROGRESS", env)
        monkeypatch.setattr("sys.stderr.isatty", lambda tty=tty: tty, raising=False)
        stages = progress.Stages()
        stages.start("reading")
        with progress.progress_bar(total=2, desc="bar") as bar:
            bar.update(2)
            time.sleep(0.05)
        stages.done()
        assert not stages.on and capsys.readouterr().err == ""
        assert not _threads("storyeval-bar") and not _threads("storyeval-stage")


# ------------------------------------------------------------------------------------------------
# the commands
def _ratings(folder: Path) -> Path:
    rng = np.random.default_rng(0)
    quality = rng.normal(size=(4, 15))
    rows = [{"system": f"S{s}", "prompt_id": p,
             **{f"r{k}": float(np.clip(np.round(3 + quality[s, p] + rng.normal()), 1, 5))
                for k in range(3)},
             "judge": float(3 + quality[s, p] + rng.normal(scale=0.7))}
            for s in range(4) for p in range(15)]
    path = folder / "ratings.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _stories(folder: Path) -> Path:
    words = "the a night sea king old ran saw light dark river house".split()
    rng = np.random.default_rng(1)
    rows = [{"story_id": f"m{s}/p{p}", "system": f"m{s}", "prompt_id": f"p{p}",
             "prompt": f"Write about {p}.", "story": " ".join(rng.choice(words, 30)) + ".",
             "reference": " ".join(rng.choice(words, 30)) + "."}
            for s in range(3) for p in range(8)]
    path = folder / "stories.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _embeddings(folder: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(2)
    centres = np.eye(4)[:3] * 3
    x = np.repeat(centres, 6, axis=0) + rng.normal(scale=0.05, size=(18, 4))
    ids = [f"t{i}" for i in range(18)]
    pd.DataFrame({"id": ids, "text": [f"text {i}" for i in ids]}).to_csv(
        folder / "texts.csv", index=False)
    pd.DataFrame(x, columns=[f"e{j}" for j in range(4)]).assign(id=ids).to_csv(
        folder / "emb.csv", index=False)
    return folder / "texts.csv", folder / "emb.csv"


def _pilot(folder: Path) -> Path:
    rng = np.random.default_rng(3)
    human = rng.normal(size=400)
    judge = human + rng.normal(size=400)
    human[120:] = np.nan
    path = folder / "pilot.csv"
    pd.DataFrame({"h": human, "j": judge}).to_csv(path, index=False)
    return path


def _verdicts(folder: Path) -> Path:
    """Two judges' verdicts on every pair of 4 systems on 30 prompts (and a human file)."""
    rng = np.random.default_rng(4)
    rows = [{"prompt_id": f"p{p}", "story_a": f"s{a}/p{p}", "story_b": f"s{b}/p{p}",
             "system_a": f"s{a}", "system_b": f"s{b}", "dimension": "Overall", "order": "AB",
             "judge": judge, "verdict": rng.choice(["A", "B", "same"], p=[0.5, 0.4, 0.1])}
            for p in range(30) for a in range(4) for b in range(a + 1, 4)
            for judge in ("j0", "j1")]
    path = folder / "verdicts.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _cases(folder: Path, verdicts: Path) -> dict[str, tuple[list[str], str]]:
    """command -> (arguments, text its progress shows on a terminal)."""
    ratings, stories = _ratings(folder), _stories(folder)
    judged = [str(verdicts), "--reference", str(verdicts)]
    texts, emb = _embeddings(folder)
    wide = ["--data", str(ratings), "--annotators", "Overall=r*"]
    return {
        "power": (["power", "--r-human", "0.5,0.4", "--r-between", "0.6", "--coef", "pearson",
                   "--n", "50", "--replications", "20"], "simulating n=50"),
        "plan budget": (["plan", "budget", "--pilot", str(_pilot(folder)), "--human", "h",
                         "--judge", "j", "--cost-human", "1", "--cost-judge", "0.01",
                         "--width", "0.4", "--simulate", "50"], "simulating studies"),
        "agreement": (["agreement", *wide, "--format", "csv"],
                      "agreement coefficients and intervals ..."),
        "bias": (["bias", *wide, "--metrics", "judge", "--criteria", "Overall", "--format",
                  "csv"], "bias tests ..."),
        "judge-report": (["judge-report", *wide, "--measures", "judge", "--judges", "judge",
                          "--criteria", "Overall", "--n-resamples", "20", "--ppi-labels", "20",
                          "--json"],
                         "judge report: alt-test"),
        "dedup": (["dedup", "--stories", str(texts), "--id", "id", "--text", "text",
                   "--embeddings", str(emb), "--out", str(folder / "dedup"), "--overwrite"],
                  "comparing embeddings ..."),
        "cluster": (["cluster", "--stories", str(texts), "--id", "id", "--text", "text",
                     "--embeddings", str(emb), "--k", "2-4", "--reduce", "none", "--out",
                     str(folder / "cluster"), "--overwrite"], "reducing and clustering ..."),
        "perturb": (["perturb", "--stories", str(stories), "--kinds", "shuffle,truncate",
                     "--out", str(folder / "perturb"), "--overwrite"], "perturbing"),
        "pairwise accuracy": (["pairwise", "accuracy", *judged, "--resamples", "50"],
                              "judge accuracy, auto intervals and tests ..."),
        "pairwise compare": (["pairwise", "compare", *judged, "--resamples", "50"],
                             "comparing judges, 50 resamples ..."),
        "pairwise ranking": (["pairwise", "ranking", *judged, "--judge", "j0", "--resamples",
                              "50"], "ranking agreement, 50 resamples ..."),
        "score": (["score", "--input", str(stories), "--metrics", "bleu,chrf", "--out",
                   str(folder / "scores.csv")], "reading the stories ..."),
        "meta": (["meta", "--metrics", "BLEU,Beluga-13B 1", "--criteria", "RE", "--reference",
                  "none", "--format", "csv", "--chance", "20"], "chance baselines ..."),
        "diversity": (["diversity", "--stories", str(stories), "--permutations", "19",
                       "--out", str(folder / "diversity"), "--overwrite"],
                      "reading the stories ..."),
    }


@pytest.fixture(scope="module")
def silent_gap():
    yield from load_bench("silent_gap")


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    folder = tmp_path_factory.mktemp("quiet")
    return _cases(folder, _verdicts(folder))


def _timeless(err: str) -> str:
    """Standard error without its timings (`score`'s summary line: "in 4.3 s")."""
    return re.sub(r"\d+\.\d s\b", "T s", err)


def _run(argv: list[str], capsys) -> tuple[str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    return out, err


@pytest.mark.parametrize("command", ["power", "plan budget", "agreement", "bias", "judge-report",
                                     "dedup", "cluster", "perturb", "pairwise accuracy",
                                     "pairwise compare", "pairwise ranking", "score", "meta",
                                     "diversity"])
def test_progress_on_a_terminal_only_and_the_results_unchanged(command, cases, capsys,
                                                               monkeypatch):
    argv, shown = cases[command]
    monkeypatch.delenv("STORYEVAL_NO_PROGRESS", raising=False)
    piped_out, piped_err = _run(argv, capsys)  # pytest's capture is not a terminal
    assert shown not in piped_err
    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    tty_out, tty_err = _run(argv, capsys)
    assert shown in tty_err, tty_err
    assert tty_out == piped_out  # the results, byte for byte
    quiet_out, quiet_err = _run([*argv, "--no-progress"], capsys)
    assert _timeless(quiet_err) == _timeless(piped_err) and quiet_out == piped_out


# ------------------------------------------------------------------------------------------------
# a real process on a pseudo-terminal
def test_longest_silence_counts_start_and_exit(silent_gap):
    run = silent_gap.Run(["x"], 0, 5.0, b"", [(1.5, b"a"), (2.0, b"b"), (4.0, b"c")])
    assert run.longest_silence == 2.0 and run.first_write == 1.5 and run.stderr == "abc"
    assert silent_gap.Run(["x"], 0, 3.0, b"").longest_silence == 3.0


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_a_process_on_a_terminal_draws_and_a_piped_one_prints_the_same_results(silent_gap):
    argv = silent_gap.storyeval_argv(["power", "--r-human", "0.5,0.4", "--r-between", "0.6",
                                      "--coef", "pearson", "--n", "50", "--replications", "40"])
    env = {k: v for k, v in os.environ.items() if k != "STORYEVAL_NO_PROGRESS"}
    env["PYTHONPATH"] = str(ROOT)
    shown = silent_gap.run_on_terminal(argv, env=env, timeout=120)
    assert shown.rc == 0 and "simulating n=50" in shown.stderr, shown.stderr
    assert shown.writes and shown.longest_silence <= shown.seconds
    piped = subprocess.run(argv, env=env, capture_output=True, timeout=120)
    assert piped.returncode == 0 and piped.stderr == b""
    assert shown.stdout == piped.stdout  # (--no-progress on a terminal: the in-process tests)


def test_power_tests_a_chunk_in_slices_without_changing_the_result(monkeypatch):
    """The bar moves after each slice of a chunk; the draws are the chunk's, so the powers are
    those of one call on the chunk (tested against a slice of 10 replications)."""
    import storyeval.power.planner as planner

    kwargs = {"n": [40, 120], "replications": 300, "seed": 3, "show_progress": False}
    whole = {test: planner.simulate_power(0.4, 0.25, 0.5, test=test, **kwargs)
             for test in ("auto", "ustat")}
    monkeypatch.setattr(planner, "_SLICE", 400)  # 10 replications of 40 stories per slice
    for test, expected in whole.items():
        sliced = planner.simulate_power(0.4, 0.25, 0.5, test=test, **kwargs)
        pd.testing.assert_frame_equal(sliced, expected)
