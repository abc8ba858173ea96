"""Assignment plans: invariants, read-back as verdicts, and the check of a returned study."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from storyeval.exceptions import InputError
from storyeval.pairwise.plan import PLAN_COLUMNS, assignment_plan, check_plan
from storyeval.pairwise.verdict_agreement import verdict_agreement
from storyeval.pairwise.verdicts import read_verdicts


def _pairs(n_prompts=12, systems=("A", "B", "C", "D")):
    rows = [(p, f"{a}/{p}", f"{b}/{p}") for p in range(n_prompts)
            for a, b in itertools.combinations(systems, 2)]
    return pd.DataFrame(rows, columns=["prompt_id", "story_a", "story_b"])


@pytest.mark.parametrize("reps,annotators,k", [(1, 6, 5), (2, 12, 5), (3, 20, 4)])
def test_plan_invariants(reps, annotators, k):
    pairs = _pairs()
    plan = assignment_plan(pairs, annotators, judgments_per_pair=reps, per_sitting=k,
                           dimensions=("Plot", "Overall"), seed=3)
    assert list(plan.columns) == list(PLAN_COLUMNS)
    items = plan[plan.dimension == "Plot"]
    assert len(plan) == 2 * len(items) == 2 * reps * len(pairs)
    # every pair judged reps times, by distinct annotators
    per_pair = items.groupby(["story_a", "story_b"]).judge.agg(["size", "nunique"])
    assert (per_pair["size"] == reps).all() and (per_pair["nunique"] == reps).all()
    # no annotator sees a prompt twice
    assert not items.duplicated(["judge", "prompt_id"]).any()
    # sittings of at most k, positions 1..k, loads within one
    assert items.groupby(["judge", "sitting"]).size().max() <= k
    assert items.position.between(1, k).all()
    loads = items.groupby("judge").size()
    assert loads.max() - loads.min() <= 1 and len(loads) == annotators
    # orders balanced: per pair (reps > 1) or per annotator (reps == 1), within one
    by = ["story_a", "story_b"] if reps > 1 else ["judge"]
    ab = items.assign(ab=items.order == "AB").groupby(by).ab.agg(["sum", "size"])
    assert ((2 * ab["sum"] - ab["size"]).abs() <= 1).all()
    assert set(items.order) == {"AB", "BA"}


def test_plan_is_seeded():
    a = assignment_plan(_pairs(), 6, seed=0)
    b = assignment_plan(_pairs(), 6, seed=0)
    c = assignment_plan(_pairs(), 6, seed=1)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)


def test_too_few_annotators_named():
    with pytest.raises(InputError, match="prompt .* needs 12 judgments") as info:
        assignment_plan(_pairs(), 5, judgments_per_pair=2)
    assert "np." not in str(info.value)  # plain numbers in messages (prompt 0, not np.int64(0))


def test_filled_plan_reads_back_as_verdicts(tmp_path):
    plan = assignment_plan(_pairs(4), 12, judgments_per_pair=2, seed=0)
    rng = np.random.default_rng(0)
    plan["verdict"] = rng.choice(["A", "B", "same"], len(plan))
    path = tmp_path / "returned.csv"
    plan.to_csv(path, index=False)
    verdicts = read_verdicts(path)
    assert len(verdicts) == len(plan)
    assert set(verdicts.system_a) <= {"A", "B", "C"}
    result = verdict_agreement(verdicts)  # the agreement of the annotators on the same pairs
    assert result is not None


def test_check_plan_names_missing_extra_altered():
    plan = assignment_plan(_pairs(4), 6, seed=0)
    returned = plan.assign(verdict="A")
    assert check_plan(returned, plan).ok
    returned = returned.drop(index=0).reset_index(drop=True)  # missing
    returned.loc[1, "order"] = "BA" if returned.loc[1, "order"] == "AB" else "AB"  # altered
    swapped = returned.loc[2, ["story_a", "story_b"]].to_numpy()[::-1]
    returned.loc[2, ["story_a", "story_b"]] = swapped  # altered (story_a changed)
    returned.loc[3, "verdict"] = ""  # not done: missing
    extra = returned.iloc[[4]].assign(judge="intruder")
    returned = pd.concat([returned, extra], ignore_index=True)
    check = check_plan(returned, plan)
    assert not check.ok
    assert len(check.missing) == 2 and len(check.extra) == 1 and len(check.altered) == 2
    assert check.extra.judge.tolist() == ["intruder"]
    assert set(check.missing.judge) == {plan.loc[0, "judge"], returned.loc[3, "judge"]}
    lines = check.lines()
    assert any(line.startswith("extra: judge 'intruder'") for line in lines)
    assert sum(line.startswith("altered") for line in lines) == 2
