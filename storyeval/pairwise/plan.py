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

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from storyeval.exceptions import InputError

__all__ = ["PLAN_COLUMNS", "PlanCheck", "PlanSummary", "assignment_plan", "check_plan",
           "write_assignment_plan"]

#: Columns of an assignment plan, in order (``verdict`` empty until the study returns).
PLAN_COLUMNS: tuple[str, ...] = ("judge", "sitting", "position", "prompt_id", "story_a",
                                 "story_b", "system_a", "system_b", "dimension", "order",
                                 "verdict")
_KEY = ["judge", "prompt_id", "dimension", "lo", "hi"]


def _pairs_frame(pairs: pd.DataFrame, source: str = "pairs") -> pd.DataFrame:
    need = ["prompt_id", "story_a", "story_b"]
    missing = [c for c in need if c not in pairs.columns]
    if missing:
        raise InputError(f"{source}: missing column(s) {missing}; need {need}")
    out = pairs.reset_index(drop=True).copy()
    for col in ("prompt_id", "story_a", "story_b"):
        empty = (out[col].isna() | (out[col].astype(str).str.strip() == "")).to_numpy()
        if empty.any():
            raise InputError(f"{source}: row {int(np.argmax(empty))}: column {col!r} is empty")
    for side in ("a", "b"):
        if f"system_{side}" not in out.columns:
            out[f"system_{side}"] = [s.rsplit("/", 1)[0] if "/" in s else ""
                                     for s in out[f"story_{side}"].astype(str)]
    same = (out["story_a"].astype(str) == out["story_b"].astype(str)).to_numpy()
    if same.any():
        raise InputError(f"{source}: row {int(np.argmax(same))} compares a story with itself")
    a, b = out["story_a"].astype(str), out["story_b"].astype(str)
    key = pd.DataFrame({"p": out["prompt_id"].astype(str), "lo": np.where(a <= b, a, b),
                        "hi": np.where(a <= b, b, a)})
    dup = key.duplicated().to_numpy()
    if dup.any():
        i = int(np.argmax(dup))
        raise InputError(f"{source}: row {i} repeats the pair {a.iloc[i]!r} / {b.iloc[i]!r} of "
                         f"prompt {out['prompt_id'].iloc[i]!r} (it would be judged twice as "
                         "often); give each pair once and use judgments_per_pair")
    return out[["prompt_id", "story_a", "story_b", "system_a", "system_b"]]


class _Pairs:
    """The pairs to assign: their prompt codes and, for a slice of pair indices, their
    columns. A table of pairs, or every pair of some systems on prompts 0..P-1 (never held as
    strings: the columns are made for the rows being written)."""

    def __init__(self, table: pd.DataFrame | None = None, *,
                 systems: Sequence[str] = (), prompts: int = 0) -> None:
        self.table = table
        self.combos = list(itertools.combinations(systems, 2))
        self.size = len(table) if table is not None else prompts * len(self.combos)

    def prompt_codes(self) -> tuple[np.ndarray, np.ndarray]:
        """Each pair's prompt as a code (in order of first appearance) and the prompt ids."""
        if self.table is not None:
            codes, uniques = pd.factorize(self.table["prompt_id"])
            return codes.astype(np.int64), np.asarray(uniques, dtype=object)
        m = len(self.combos)
        return np.arange(self.size, dtype=np.int64) // m, np.arange(self.size // m)

    def columns(self, idx: np.ndarray) -> dict[str, np.ndarray]:
        """``prompt_id, story_a, story_b, system_a, system_b`` of the pairs ``idx``."""
        if self.table is not None:
            return {c: self.table[c].to_numpy()[idx] for c in self.table.columns}
        m = len(self.combos)
        prompt = idx // m
        text = prompt.astype(str).astype(object)
        first = np.array([f"{a}/" for a, _ in self.combos], dtype=object)[idx % m]
        second = np.array([f"{b}/" for _, b in self.combos], dtype=object)[idx % m]
        return {"prompt_id": prompt, "story_a": first + text, "story_b": second + text,
                "system_a": np.array([a for a, _ in self.combos], dtype=object)[idx % m],
                "system_b": np.array([b for _, b in self.combos], dtype=object)[idx % m]}


@dataclass
class _Plan:
    """An assignment plan as integer arrays, rows in the plan's order (one per assignment;
    each is written once per dimension)."""

    pairs: _Pairs
    names: list[str]
    dims: list[str]
    pair: np.ndarray
    judge: np.ndarray
    within: np.ndarray
    ab: np.ndarray
    per_sitting: int

    def frame(self, lo: int = 0, hi: int | None = None) -> pd.DataFrame:
        """Rows ``lo:hi`` of assignments as plan rows (`PLAN_COLUMNS`, one per dimension)."""
        sl = slice(lo, hi)
        k = len(self.dims)
        rep = np.repeat(np.arange(len(self.pair[sl])), k)
        within = self.within[sl][rep]
        cols = self.pairs.columns(self.pair[sl][rep])
        out = pd.DataFrame({
            "judge": np.asarray(self.names, dtype=object)[self.judge[sl][rep]],
            "sitting": within // self.per_sitting + 1, "position": within % self.per_sitting + 1,
            **cols, "dimension": np.tile(np.asarray(self.dims, dtype=object), len(rep) // k),
            "order": np.where(self.ab[sl][rep], "AB", "BA"), "verdict": ""})
        return out[list(PLAN_COLUMNS)]


def _annotator_names(annotators: int | Sequence[str]) -> list[str]:
    if isinstance(annotators, (int, np.integer)):
        if annotators < 1:
            raise InputError(f"annotators must be >= 1, got {annotators}")
        return [f"annotator_{i + 1}" for i in range(int(annotators))]
    names = [str(a) for a in annotators]
    if not names or len(set(names)) != len(names):
        raise InputError("annotators: give at least one id, each once")
    return names


def _make_plan(pairs: _Pairs, annotators: int | Sequence[str], *, judgments_per_pair: int,
               per_sitting: int, dimensions: Sequence[str], seed: int) -> _Plan:
    """`assignment_plan`'s draws and order on integer arrays (see its Notes)."""
    names = _annotator_names(annotators)
    if judgments_per_pair < 1 or per_sitting < 1:
        raise InputError("judgments_per_pair and per_sitting must be >= 1")
    dims = [str(d) for d in dimensions]
    if not dims or len(set(dims)) != len(dims):
        raise InputError("dimensions: give at least one, each once")
    if pairs.size == 0:
        raise InputError("pairs: no pair to assign")
    rng = np.random.default_rng(seed)
    n_ann, n_pairs = len(names), pairs.size
    prompt_code, prompt_ids = pairs.prompt_codes()
    per_prompt = np.bincount(prompt_code) * judgments_per_pair
    if int(per_prompt.max()) > n_ann:
        prompt = prompt_ids[int(per_prompt.argmax())]
        prompt = prompt.item() if isinstance(prompt, np.generic) else prompt  # 0, not np.int64(0)
        raise InputError(f"prompt {prompt!r} needs {int(per_prompt.max())} judgments "
                         f"(pairs x judgments_per_pair) but there are only {n_ann} annotators; "
                         "no annotator may see a prompt twice")
    rank = np.empty(per_prompt.size, dtype=np.int64)
    rank[rng.permutation(per_prompt.size)] = np.arange(per_prompt.size)
    # assignments: pairs in (random prompt order, random order within prompt), replicated
    order_key = rank[prompt_code] * n_pairs + rng.permutation(n_pairs)
    del prompt_code
    pair = np.repeat(np.argsort(order_key, kind="stable"), judgments_per_pair)
    del order_key
    total = pair.size
    perm = rng.permutation(n_ann)
    start = rng.integers(0, 2, n_pairs)  # per pair: the first replicate's order
    replicate = np.tile(np.arange(judgments_per_pair, dtype=np.int8), n_pairs)
    ab = (start[pair] + replicate) % 2 == 0
    del replicate, start
    # sittings and (for single judgments) per-annotator order balance, after a shuffle
    shuffle = rng.permutation(total)
    pair, ab = pair[shuffle], ab[shuffle]
    judge = perm[shuffle % n_ann].astype(np.int32)
    del shuffle
    by_judge = np.argsort(judge, kind="stable")
    counts = np.bincount(judge, minlength=n_ann)
    within = np.empty(total, dtype=np.int64)
    within[by_judge] = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    if judgments_per_pair == 1:
        flip = rng.integers(0, 2, n_ann)
        ab = (within + flip[judge]) % 2 == 0
    # the plan's order: judges in natural order of their names, then sitting and position
    natural = np.empty(n_ann, dtype=np.int64)
    natural[sorted(range(n_ann), key=lambda j: _natural(names[j]))] = np.arange(n_ann)
    rows = np.argsort(natural[judge], kind="stable")
    return _Plan(pairs, names, sorted(dims), pair[rows], judge[rows], within[rows], ab[rows],
                 per_sitting)


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
        [`make_pairs`][storyeval.pairwise.judge.make_pairs]. A pair given twice (in either
        order) for one prompt, or a story paired with itself, is an error.
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
    into sittings of ``per_sitting``. Computed on integer arrays (about 70 bytes per
    assignment at the peak); `write_assignment_plan` writes a plan of any size in chunks.

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
    return _make_plan(_Pairs(_pairs_frame(pairs)), annotators,
                      judgments_per_pair=judgments_per_pair, per_sitting=per_sitting,
                      dimensions=dimensions, seed=seed).frame()


@dataclass(frozen=True)
class PlanSummary:
    """What `write_assignment_plan` wrote: ``rows`` (one per assignment and dimension),
    ``judgments`` (assignments), ``pairs``, the least and most pairs (``load_min``,
    ``load_max``) and sittings (``sittings_min``, ``sittings_max``) of an annotator, and the
    assignments shown ``ab`` and ``ba``."""

    rows: int
    judgments: int
    pairs: int
    load_min: int
    load_max: int
    sittings_min: int
    sittings_max: int
    ab: int
    ba: int


def write_assignment_plan(path, *, pairs: pd.DataFrame | None = None,
                          systems: Sequence[str] = (), prompts: int = 0,
                          annotators: int | Sequence[str], judgments_per_pair: int = 1,
                          per_sitting: int = 5, dimensions: Sequence[str] = ("Overall",),
                          seed: int = 0, chunk: int = 500_000, show_progress: bool | None = False,
                          source: str = "pairs") -> PlanSummary:
    """`assignment_plan` of ``pairs`` (a table) or of every pair of ``systems`` on prompts
    ``0..prompts-1`` (story ids ``system/prompt``), written as CSV to ``path`` (atomically) in
    chunks of ``chunk`` assignments, with a progress bar on a terminal when ``show_progress``
    is None. The same seed gives the same plan as `assignment_plan`. Memory: about 70 bytes per
    assignment at the peak plus one chunk of rows; never the whole CSV."""
    from storyeval._atomic import atomic_path
    from storyeval._csv import write_csv
    from storyeval._progress import Stages, progress_bar

    if pairs is not None:
        source_pairs = _Pairs(_pairs_frame(pairs, source))
    else:
        systems = [str(s) for s in systems]
        if len(systems) < 2 or len(set(systems)) != len(systems):
            raise InputError("systems: give at least two distinct systems")
        if prompts < 1:
            raise InputError(f"prompts must be >= 1, got {prompts}")
        source_pairs = _Pairs(systems=systems, prompts=int(prompts))
    stage = Stages(show_progress)
    stage.start("assigning the pairs")
    plan = _make_plan(source_pairs, annotators, judgments_per_pair=judgments_per_pair,
                      per_sitting=per_sitting, dimensions=dimensions, seed=seed)
    total = plan.pair.size
    stage.done(f"{total:,} assignments")
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline="") as handle, \
            progress_bar(total=total, desc="writing the plan", unit="assignments",
                         show=show_progress) as bar:
        for lo in range(0, max(total, 1), chunk):
            write_csv(plan.frame(lo, lo + chunk), handle, header=lo == 0, lineterminator="\n")
            bar.update(min(chunk, total - lo))
    loads = np.bincount(plan.judge, minlength=len(plan.names))
    sittings = np.zeros(len(plan.names), dtype=np.int64)
    np.maximum.at(sittings, plan.judge, plan.within // per_sitting + 1)
    ab = int(plan.ab.sum())
    return PlanSummary(rows=total * len(plan.dims), judgments=total, pairs=source_pairs.size,
                       load_min=int(loads.min()), load_max=int(loads.max()),
                       sittings_min=int(sittings.min()), sittings_max=int(sittings.max()),
                       ab=ab, ba=total - ab)


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


def check_plan(returned: pd.DataFrame, plan: pd.DataFrame, *,
               sources: tuple[str, str] = ("returned study", "plan")) -> PlanCheck:
    """Compare a returned study with its plan: missing, extra and altered assignments.

    Parameters
    ----------
    returned : DataFrame
        The filled-in plan (raw, as read from its CSV, or validated by `validate_verdicts`).
        A row with an empty ``verdict`` counts as missing.
    plan : DataFrame
        The plan of `assignment_plan`.
    sources : (str, str)
        Names of the two tables in messages (e.g. their files).

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
    if plan.empty:
        raise InputError(f"{sources[1]}: no rows (a header only); give the plan that "
                         "storyeval plan assign wrote")
    p = _keyed(plan, sources[1])
    r = _keyed(returned, sources[0])
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
