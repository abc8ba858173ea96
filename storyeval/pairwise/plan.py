"""Assignment plans for a human side-by-side study, and the check of a returned study.

A plan gives each (pair of stories, replicate) to an annotator so that

* no annotator sees a prompt twice (a cyclic Latin-square assignment: the judgments of one
  prompt go to consecutive, hence distinct, annotators of a seeded random cyclic order, and
  the loads differ by at most one),
* each annotator's items come in sittings of at most ``per_sitting`` (Agents' Room: five),
* presentation orders are randomised and balanced: each pair's replicates alternate AB / BA
  from a random start (when a pair is judged more than once), and each annotator's items are
  half AB, half BA (within one) when a pair is judged once.

The plan is a verdict table (`storyeval.pairwise.verdicts`) with an empty ``verdict`` column,
one row per assignment and dimension, plus ``sitting`` and ``position``: annotators fill
``verdict`` (A = ``story_a`` is better, whatever the order shown), and the returned file reads
back with `read_verdicts`, ``storyeval pairwise ...`` and ``storyeval agreement --verdicts``.
`check_plan` names the missing, extra and altered assignments of a returned study.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from storyeval.exceptions import InputError

__all__ = ["PLAN_COLUMNS", "PlanCheck", "assignment_plan", "check_plan"]

#: Columns of an assignment plan, in order (``verdict`` empty until the study returns).
PLAN_COLUMNS: tuple[str, ...] = ("judge", "sitting", "position", "prompt_id", "story_a",
                                 "story_b", "system_a", "system_b", "dimension", "order",
                                 "verdict")
_KEY = ["judge", "prompt_id", "dimension", "lo", "hi"]


def _pairs_frame(pairs: pd.DataFrame) -> pd.DataFrame:
    need = ["prompt_id", "story_a", "story_b"]
    missing = [c for c in need if c not in pairs.columns]
    if missing:
        raise InputError(f"pairs: missing column(s) {missing}; need {need}")
    out = pairs.reset_index(drop=True).copy()
    for side in ("a", "b"):
        if f"system_{side}" not in out.columns:
            out[f"system_{side}"] = [s.rsplit("/", 1)[0] if "/" in s else ""
                                     for s in out[f"story_{side}"].astype(str)]
    same = (out["story_a"] == out["story_b"]).to_numpy()
    if same.any():
        raise InputError(f"pairs: row {int(np.argmax(same))} compares a story with itself")
    return out[["prompt_id", "story_a", "story_b", "system_a", "system_b"]]


def assignment_plan(
    pairs: pd.DataFrame,
    annotators: int | Sequence[str],
    *,
    judgments_per_pair: int = 1,
    per_sitting: int = 5,
    dimensions: Sequence[str] = ("Overall",),
    seed: int = 0,
) -> pd.DataFrame:
    """A balanced, seeded assignment of story pairs to annotators, as a verdict-table template.

    Parameters
    ----------
    pairs : DataFrame
        One row per pair to judge: ``prompt_id, story_a, story_b`` (``system_a``/``system_b``
        optional, else taken from ``"system/prompt"`` ids), e.g. from
        [`make_pairs`][storyeval.pairwise.judge.make_pairs].
    annotators : int or sequence of str
        How many annotators (named ``"annotator_1"``, ...) or their ids.
    judgments_per_pair : int, default 1
        Annotators per pair (>= 2 lets ``storyeval agreement`` measure their agreement).
    per_sitting : int, default 5
        Most items (pairs) one annotator judges in one sitting.
    dimensions : sequence of str, default ("Overall",)
        Judged on every item; one row per item and dimension.
    seed : int, default 0
        Seeds the order of prompts, of pairs within a prompt, of annotators and the
        presentation orders.

    Returns
    -------
    DataFrame
        Columns `PLAN_COLUMNS`, sorted by judge, sitting, position, dimension.

    Raises
    ------
    InputError
        A prompt needs more judgments (pairs x judgments_per_pair) than there are annotators,
        or bad sizes.

    Notes
    -----
    Assignments are listed prompt by prompt (prompts in a seeded random order); the t-th
    assignment overall goes to annotator ``perm[t mod A]``. A prompt's ``t_j <= A``
    assignments are consecutive, so they fall on distinct annotators; every annotator gets
    ``floor(T / A)`` or ``ceil(T / A)`` items. Each annotator's items are then shuffled and cut
    into sittings of ``per_sitting``.

    Validated by its invariants (tests/test_pairwise_plan.py): every pair judged exactly
    ``judgments_per_pair`` times by distinct annotators, no annotator sees a prompt twice,
    sittings of at most ``per_sitting``, loads within one, orders balanced, and the filled-in
    plan read back by `read_verdicts`.

    Examples
    --------
    >>> import pandas as pd
    >>> pairs = pd.DataFrame({"prompt_id": [0, 0, 1], "story_a": ["X/0", "X/0", "X/1"],
    ...                       "story_b": ["Y/0", "Z/0", "Y/1"]})
    >>> plan = assignment_plan(pairs, 2, judgments_per_pair=1, per_sitting=1)
    >>> sorted(plan.groupby("judge").size().tolist())
    [1, 2]
    """
    if isinstance(annotators, (int, np.integer)):
        if annotators < 1:
            raise InputError(f"annotators must be >= 1, got {annotators}")
        names = [f"annotator_{i + 1}" for i in range(int(annotators))]
    else:
        names = [str(a) for a in annotators]
        if not names or len(set(names)) != len(names):
            raise InputError("annotators: give at least one id, each once")
    if judgments_per_pair < 1 or per_sitting < 1:
        raise InputError("judgments_per_pair and per_sitting must be >= 1")
    dims = [str(d) for d in dimensions]
    if not dims or len(set(dims)) != len(dims):
        raise InputError("dimensions: give at least one, each once")
    table = _pairs_frame(pairs)
    if table.empty:
        raise InputError("pairs: no pair to assign")
    rng = np.random.default_rng(seed)
    n_ann = len(names)
    per_prompt = table.groupby("prompt_id", sort=False).size() * judgments_per_pair
    if int(per_prompt.max()) > n_ann:
        prompt = per_prompt.idxmax()
        prompt = prompt.item() if isinstance(prompt, np.generic) else prompt  # 0, not np.int64(0)
        raise InputError(f"prompt {prompt!r} needs {int(per_prompt.max())} judgments "
                         f"(pairs x judgments_per_pair) but there are only {n_ann} annotators; "
                         "no annotator may see a prompt twice")
    prompts = per_prompt.index.to_numpy()[rng.permutation(per_prompt.size)]
    rank = pd.Series(np.arange(prompts.size), index=prompts)
    # assignments: pairs in (random prompt order, random order within prompt), replicated
    order_key = rank.loc[table["prompt_id"]].to_numpy() * len(table) + rng.permutation(len(table))
    pair_idx = np.repeat(np.argsort(order_key, kind="stable"), judgments_per_pair)
    replicate = np.tile(np.arange(judgments_per_pair), len(table))
    perm = rng.permutation(n_ann)
    judge_idx = perm[np.arange(pair_idx.size) % n_ann]
    start = rng.integers(0, 2, len(table))  # per pair: the first replicate's order
    ab = (start[pair_idx] + replicate) % 2 == 0
    plan = table.iloc[pair_idx].reset_index(drop=True)
    plan.insert(0, "judge", np.asarray(names, dtype=object)[judge_idx])
    # sittings and (for single judgments) per-annotator order balance
    shuffle = rng.permutation(len(plan))
    plan = plan.iloc[shuffle].reset_index(drop=True)
    ab = ab[shuffle]
    within = plan.groupby("judge", sort=False).cumcount().to_numpy()
    if judgments_per_pair == 1:
        flip = rng.integers(0, 2, n_ann)
        ab = (within + flip[pd.Index(names).get_indexer(plan["judge"])]) % 2 == 0
    plan["sitting"] = within // per_sitting + 1
    plan["position"] = within % per_sitting + 1
    plan["order"] = np.where(ab, "AB", "BA")
    plan = plan.loc[plan.index.repeat(len(dims))].reset_index(drop=True)
    plan["dimension"] = np.tile(dims, len(plan) // len(dims))
    plan["verdict"] = ""
    plan = plan[list(PLAN_COLUMNS)]
    return plan.sort_values(["judge", "sitting", "position", "dimension"],
                            key=lambda c: c.map(_natural) if c.name == "judge" else c,
                            kind="stable").reset_index(drop=True)


def _natural(name: str) -> tuple:
    head, _, tail = str(name).rpartition("_")
    return (head, int(tail)) if tail.isdigit() else (str(name), -1)


@dataclass(frozen=True)
class PlanCheck:
    """What a returned study changed relative to its plan.

    Attributes
    ----------
    missing : DataFrame
        Planned (judge, prompt, dimension, pair) rows absent from the return or without a
        verdict.
    extra : DataFrame
        Returned rows that the plan does not hold.
    altered : DataFrame
        Rows of a planned assignment whose ``order`` or ``story_a``/``story_b`` assignment
        differs (``planned_*`` and ``returned_*`` columns).
    """

    missing: pd.DataFrame
    extra: pd.DataFrame
    altered: pd.DataFrame

    @property
    def ok(self) -> bool:
        """True when the return matches the plan exactly."""
        return self.missing.empty and self.extra.empty and self.altered.empty

    def lines(self, limit: int = 10) -> list[str]:
        """One line per problem (at most `limit` per kind), naming judge, prompt and stories."""
        out = []
        for kind, frame in (("missing", self.missing), ("extra", self.extra),
                            ("altered", self.altered)):
            for row in frame.head(limit).itertuples(index=False):
                what = (f"{kind}: judge {row.judge!r}, prompt {row.prompt_id!r}, dimension "
                        f"{row.dimension!r}, {row.lo!r} vs {row.hi!r}")
                if kind == "altered":
                    what += (f" (planned {row.planned_story_a!r} as A, order "
                             f"{row.planned_order}; returned {row.returned_story_a!r} as A, "
                             f"order {row.returned_order})")
                out.append(what)
            if len(frame) > limit:
                out.append(f"{kind}: ... and {len(frame) - limit} more")
        return out


def _keyed(frame: pd.DataFrame, source: str) -> pd.DataFrame:
    need = ["judge", "prompt_id", "story_a", "story_b", "dimension", "order"]
    missing = [c for c in need if c not in frame.columns]
    if missing:
        raise InputError(f"{source}: missing column(s) {missing}")
    out = frame.reset_index(drop=True).copy()
    for col in ("judge", "story_a", "story_b", "dimension"):
        out[col] = out[col].astype(str)
    out["prompt_id"] = out["prompt_id"].astype(str)
    out["order"] = out["order"].astype(str).str.strip().str.upper()
    a, b = out["story_a"], out["story_b"]
    out["lo"] = np.where(a <= b, a, b)
    out["hi"] = np.where(a <= b, b, a)
    dup = out.duplicated(_KEY).to_numpy()
    if dup.any():
        raise InputError(f"{source}: row {int(np.argmax(dup))} repeats an assignment (judge, "
                         "prompt, dimension, pair)")
    return out


def check_plan(returned: pd.DataFrame, plan: pd.DataFrame) -> PlanCheck:
    """Compare a returned study with its plan: missing, extra and altered assignments.

    Parameters
    ----------
    returned : DataFrame
        The filled-in plan (raw, as read from its CSV, or validated by `validate_verdicts`).
        A row with an empty ``verdict`` counts as missing.
    plan : DataFrame
        The plan of `assignment_plan`.

    Returns
    -------
    PlanCheck

    Notes
    -----
    An assignment is identified by (judge, prompt, dimension, unordered pair); it is altered
    when its ``order`` or which story is ``story_a`` differs from the plan (the verdict's
    meaning would flip).

    Validated by hand-made returns with one missing, one extra and one altered row
    (tests/test_pairwise_plan.py).
    """
    p = _keyed(plan, "plan")
    r = _keyed(returned, "returned study")
    if "verdict" in r.columns:
        verdict = r["verdict"]
        done = verdict.notna() & (verdict.astype(str).str.strip() != "")
    else:
        done = pd.Series(True, index=r.index)
    both = p.merge(r, on=_KEY, how="outer", suffixes=("_p", "_r"), indicator=True)
    cols = [*_KEY]
    missing_rows = both["_merge"] == "left_only"
    undone_keys = r.loc[~done, _KEY]
    undone = both.set_index(_KEY).index.isin(pd.MultiIndex.from_frame(undone_keys)) \
        if len(undone_keys) else np.zeros(len(both), dtype=bool)
    missing = both.loc[missing_rows | (undone & (both["_merge"] == "both")), cols]
    extra = both.loc[both["_merge"] == "right_only", cols]
    matched = both[(both["_merge"] == "both") & ~undone]
    changed = ((matched["order_p"] != matched["order_r"])
               | (matched["story_a_p"] != matched["story_a_r"]))
    altered = matched.loc[changed, cols].assign(
        planned_story_a=matched.loc[changed, "story_a_p"],
        planned_order=matched.loc[changed, "order_p"],
        returned_story_a=matched.loc[changed, "story_a_r"],
        returned_order=matched.loc[changed, "order_r"])
    return PlanCheck(missing.reset_index(drop=True), extra.reset_index(drop=True),
                     altered.reset_index(drop=True))
