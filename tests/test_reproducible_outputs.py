"""Every random procedure is seeded by default (seed 0, as `storyeval meta`) and the seed is
printed: two runs of a command with no options print the same output, and the library
functions default to the seed of the command line (a notebook and the CLI agree)."""

from __future__ import annotations

import inspect
import io
import itertools

import numpy as np
import pandas as pd
import pytest

from storyeval.cli import main


def _verdicts(judge: str, accuracy: float, human: pd.DataFrame | None, seed: int,
              both_orders: bool = False) -> pd.DataFrame:
    """Verdicts on every pair of 4 systems within 24 prompts; a judge agrees with the
    humans with probability ``accuracy``."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(24):
        for i, j in itertools.combinations(range(4), 2):
            for order in (("AB", "BA") if both_orders else ("AB",)):
                rows.append((p, f"s{i}/{p}", f"s{j}/{p}", "Overall", order, f"s{i}", f"s{j}"))
    frame = pd.DataFrame(rows, columns=["prompt_id", "story_a", "story_b", "dimension",
                                        "order", "system_a", "system_b"])
    if human is None:
        verdict = rng.choice(["A", "B"], len(frame), p=[0.6, 0.4])
    else:
        keep = rng.random(len(frame)) < accuracy
        verdict = np.where(keep, human["verdict"], np.where(human["verdict"] == "A", "B", "A"))
    return frame.assign(verdict=verdict, judge=judge)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("verdicts")
    human = _verdicts("human", 1.0, None, 1)
    judges = pd.concat([_verdicts("good", 0.8, human, 2), _verdicts("fair", 0.65, human, 3)])
    human.to_csv(folder / "humans.csv", index=False)
    judges.to_csv(folder / "judges.csv", index=False)
    judges[judges["judge"] == "good"].to_csv(folder / "good.csv", index=False)
    labels = pd.DataFrame({"item": np.repeat(np.arange(30), 3),
                           "rater": np.tile(["u", "v", "w"], 30),
                           "label": np.random.default_rng(4).choice(["Yes", "No"], 90)})
    labels.to_csv(folder / "labels.csv", index=False)
    return folder


COMMANDS = {
    "accuracy": ["pairwise", "accuracy", "{f}/judges.csv", "--reference", "{f}/humans.csv"],
    "compare": ["pairwise", "compare", "{f}/judges.csv", "--reference", "{f}/humans.csv"],
    "ranking": ["pairwise", "ranking", "{f}/good.csv", "--reference", "{f}/humans.csv"],
    "verdicts": ["agreement", "--verdicts", "{f}/judges.csv"],
    "labels": ["agreement", "--labels", "{f}/labels.csv"],
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_two_runs_with_no_options_print_the_same_and_name_the_seed(name, files, capsys):
    argv = [a.format(f=files) for a in COMMANDS[name]]
    outputs = []
    for _ in range(2):
        assert main(argv) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]
    assert "random seed: 0" in outputs[0]
    assert main([*argv, "--seed", "7"]) == 0
    assert "random seed: 7" in capsys.readouterr().out
    # the machine-readable output carries the seed too
    assert main([*argv, "--format", "csv"]) == 0
    csv = capsys.readouterr().out
    assert "seed" in csv.splitlines()[0].split(",")


def test_pointwise_interval_is_seeded_by_default(capsys):
    argv = ["pairwise", "pointwise", "--metrics", "BLEU", "--criteria", "RE", "--interval",
            "auto", "--resamples", "200"]
    outputs = []
    for _ in range(2):
        assert main(argv) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and "random seed: 0" in outputs[0]


def _public_resampling_functions():
    import importlib

    names = ("storyeval.meta.resampling", "storyeval.resample.bootstrap",
             "storyeval.resample.chance", "storyeval.pairwise.inference",
             "storyeval.pairwise.accuracy", "storyeval.pairwise.ranking",
             "storyeval.pairwise.verdict_agreement", "storyeval.pairwise.bradley_terry",
             "storyeval.pairwise.arena", "storyeval.pairwise.leaderboard")
    for module in map(importlib.import_module, names):
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if name.startswith("_") or fn.__module__ != module.__name__:
                continue
            param = inspect.signature(fn).parameters.get("random_state")
            if param is not None:
                yield f"{module.__name__}.{name}", param.default


def test_library_functions_default_to_the_command_lines_seed():
    found = dict(_public_resampling_functions())
    assert "storyeval.meta.resampling.add_bootstrap_ci" in found
    assert "storyeval.pairwise.bradley_terry.bradley_terry" in found
    assert {name: d for name, d in found.items() if d != 0} == {}


def test_a_dependencys_runtime_warning_is_one_line_without_its_path(capsys):
    import io
    import sys

    from storyeval.cli import _short_warnings

    show = _short_warnings("meta")
    err = io.StringIO()
    show(RuntimeWarning("invalid value encountered in divide"), RuntimeWarning,
         "/usr/lib/python3/site-packages/numpy/_core/_methods.py", 120, file=err)
    text = err.getvalue()
    assert text == ("storyeval meta: warning: invalid value encountered in divide "
                    "(RuntimeWarning in numpy)\n")
    assert "site-packages" not in text and sys.stderr is not None


def test_agreement_reads_position_verdicts_when_told(files, tmp_path, capsys):
    """Two judges with a position bias (they say 'A', the story shown first, 80% of the time)
    on both orders of each pair: read as screen positions, 'A' in order BA is story_b."""
    from storyeval.pairwise.verdict_agreement import verdict_agreement
    from storyeval.pairwise.verdicts import read_verdicts

    rng = np.random.default_rng(9)
    base = pd.read_csv(files / "humans.csv").drop(columns=["judge", "verdict"])
    both = pd.concat([base.assign(order="AB"), base.assign(order="BA")], ignore_index=True)
    u = np.where(rng.random(len(both)) < 0.8, "A", "B")
    v = np.where(rng.random(len(both)) < 0.7, u, np.where(u == "A", "B", "A"))
    path = tmp_path / "position.csv"
    pd.concat([both.assign(judge="u", verdict=u), both.assign(judge="v", verdict=v)]
              ).to_csv(path, index=False)
    argv = ["agreement", "--verdicts", str(path), "--resamples", "0", "--format", "csv",
            "--item", "pair-order"]
    assert main([*argv, "--position-verdicts"]) == 0
    as_positions = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert main(argv) == 0
    as_stories = pd.read_csv(io.StringIO(capsys.readouterr().out))
    expected = verdict_agreement(read_verdicts(path, verdict_refers_to="position"),
                                 item="pair-order", n_resamples=0)
    assert as_positions["statistic"].to_numpy() == pytest.approx(
        expected["statistic"].to_numpy(), nan_ok=True)
    assert not np.allclose(as_positions["statistic"], as_stories["statistic"],
                           equal_nan=True)
    assert main(["agreement", "--labels", str(files / "labels.csv"),
                 "--position-verdicts"]) == 2
