"""The meta-evaluation pipeline behind ``storyeval meta``.

One call computes, for a [`Dataset`][]:

1. the correlation of every selected measure with every human criterion, per level;
2. the human baseline (upper bound and leave-one-out) when annotator columns exist;
3. tests of a reference rater against every other measure (or of all pairs), with p-values
   adjusted for multiple comparisons over a stated family and the difference of the two
   correlations with a confidence interval beside every p-value. The test is named
   (`storyeval.compare.procedures`): the calibrated default on user data, the paper's Williams
   convention on the embedded HANNA data (the reproduction).

Every setting that changes a number is recorded in `MetaResult.settings` and written next
to the tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from storyeval.compare.multitest import adjust_frame, family_sizes, warn_single_test_families
from storyeval.compare.procedures import (
    CALIBRATED_LEVEL,
    FEW_SYSTEMS,
    MIN_SYSTEMS,
    MIN_SYSTEMS_REASON,
    PAPER_LEVEL,
    TEST_DESCRIPTIONS,
    TEST_PERMUTATIONS,
    compare_rows,
    effect_sizes,
    few_systems_note,
    resolve_sign_convention,
    resolve_tests,
)
from storyeval.compare.williams import WILLIAMS_NOTE, williams_test
from storyeval.correlation.kernel import resolve_method
from storyeval.correlation.levels import (
    ALL_LEVELS,
    TIE_RTOL,
    CorrelationGrid,
    correlation_grid,
    positions,
)
from storyeval.correlation.ties import TIE_RULE
from storyeval.data import Dataset, load_hanna
from storyeval.data.level_names import canonical_level
from storyeval.data.selection import (
    criterion_pairs,
    resolve_rater,
    select_criteria,
    select_measures,
)
from storyeval.exceptions import InputError, user_stacklevel
from storyeval.meta.baseline import human_baseline

COEFFICIENT_DESCRIPTIONS = {
    "kendall_b": "Kendall tau-b (tie-corrected; scipy.stats.kendalltau default)",
    "kendall_c": "Kendall tau-c (Stuart; scipy.stats.kendalltau variant='c')",
    "pearson": "Pearson r",
    "spearman": "Spearman rho (Pearson r of average ranks)",
}
WILLIAMS_LEVELS = ("overall", "system", "prompt", "within")
FAMILIES = ("auto", "paper", "criterion", "level", "all")
WILLIAMS_COLUMNS = [
    "level", "criterion", "measure_a", "measure_b", "r_a", "r_b", "r_ab", "n", "t", "p",
    "p_adjusted", "family", "rater_a", "rater_b", "coefficient", "alternative", "hypothesis",
    "swapped",
    "reason", "note", "test", "sided", "convention", "statistic_kind", "delta", "ci_low",
    "ci_high", "ci_method", "sign_a", "sign_b",
]
#: The columns of `MetaResult.comparisons` (``WILLIAMS_COLUMNS`` is the old name).
COMPARISON_COLUMNS = WILLIAMS_COLUMNS
# alternative and direction of each test unless given: the paper's one-sided test in the
# direction of the larger |r|, every other test two-sided with the direction fixed (a vs b)
TEST_DEFAULTS = {"paper": ("greater", "larger")}
OTHER_DEFAULTS = ("two-sided", "fixed")


@dataclass
class MetaResult:
    """Tables of one meta-evaluation, with the settings that produced them.

    Attributes
    ----------
    correlations : DataFrame
        ``measure, criterion, level, coefficient, value, n`` plus ``display_name, kind, rater,
        n_groups, reason``.
    baseline : DataFrame
        Human baseline per ``criterion, level, variant`` (empty without annotator columns).
    comparisons : DataFrame
        One row per comparison test, the columns of `COMPARISON_COLUMNS`; the ``test`` column
        names the test that ran (``ustat``, ``jackknife``, ``permutation-random``, ``paper``
        (Williams' t), ...). ``williams`` is its old name (deprecated, removed in 0.3).
        ``r_a``, ``r_b`` are the correlations as measured; ``sign_a``, ``sign_b`` (+-1) the
        orientation they enter the difference with: ``delta = sign_a r_a - sign_b r_b`` (the
        sign convention, or a measure declared lower-is-better).
    settings : dict
        Dataset, systems, stories, coefficient, levels, reference, test and family conventions.
    dataset : Dataset
        The stories that were correlated (after the Human and system selection).
    chance : DataFrame
        Chance baselines per criterion and level, when requested
        (`storyeval.meta.resampling.add_chance`).
    """

    correlations: pd.DataFrame
    baseline: pd.DataFrame
    comparisons: pd.DataFrame
    settings: dict = field(default_factory=dict)
    dataset: Dataset | None = field(default=None, repr=False)
    chance: pd.DataFrame = field(default_factory=pd.DataFrame)
    # a report renders one result several times: warn once, count the families once
    _families_checked: bool = field(default=False, init=False, repr=False, compare=False)
    _family_sizes: tuple | None = field(default=None, init=False, repr=False, compare=False)
    _test_groups: tuple | None = field(default=None, init=False, repr=False, compare=False)
    _labels: tuple | None = field(default=None, init=False, repr=False, compare=False)
    # answer tables already made (storyeval.meta.answer.answer_table), by their options
    _answers: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    # the answer's own intervals and best-against-next tests (storyeval.meta.answer_extras),
    # computed once per result however often it is rendered
    _answer_extras: object | None = field(default=None, init=False, repr=False,
                                          compare=False)

    def comparison_rows(self, level: str, criterion: str | None = None) -> pd.DataFrame:
        """The comparison tests of ``level`` (and ``criterion``), grouped and taken once per
        table (a report takes a level's rows many times)."""
        frame = self.comparisons
        if self._test_groups is None or self._test_groups[0] is not frame:
            groups: dict = {}
            if not frame.empty and "level" in frame:
                keys = pd.MultiIndex.from_arrays([frame["level"].to_numpy(object),
                                                  frame["criterion"].to_numpy(object)])
                codes, uniques = pd.factorize(keys)
                for k, key in enumerate(uniques):
                    groups[key] = np.flatnonzero(codes == k)
            self._test_groups = (frame, groups, {})
        groups, made = self._test_groups[1], self._test_groups[2]
        if (level, criterion) not in made:  # taking rows of Arrow text columns costs ms
            if criterion is not None:
                take = groups.get((level, criterion), np.zeros(0, dtype=np.int64))
            else:
                parts = [v for (lev, _), v in groups.items() if lev == level]
                take = np.sort(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
            made[(level, criterion)] = frame.iloc[take]
        # a copy (cheap: Arrow text is shared, immutable): a caller's change never reaches
        # the cache, with or without pandas' copy-on-write
        return made[(level, criterion)].copy()

    def __repr__(self) -> str:
        from storyeval.meta.result_views import result_repr

        return result_repr(self)

    def summary(self, *, alpha: float = 0.05) -> str:
        """A few lines: data, settings and, per level and criterion, the best measure, the
        human baseline and how many comparison tests are significant at ``alpha`` after
        adjustment."""
        from storyeval.meta.result_views import result_summary

        return result_summary(self, alpha=alpha)

    def to_frame(self) -> pd.DataFrame:
        """Every number of the result in one tidy table, one number per row (columns
        ``table, level, criterion, measure, other, quantity, value, n, reason, measure_name,
        other_name``: identifiers in ``measure``/``other``, display names in ``*_name``; see
        `storyeval.meta.result_views.tidy_frame`)."""
        from storyeval.meta.result_views import tidy_frame

        return tidy_frame(self)

    def compare_pair(self, best: str, other: str, *, level: str, criterion: str,
                     n_resamples: int = 1000, random_state: int | None = 0) -> pd.DataFrame:
        """The comparison test of ``best`` against ``other`` for ``criterion`` at ``level``,
        as this run would have run it (its test, coefficient, sign convention, alternative,
        direction and seed) but on these two measures alone: a family of one, its p-value
        unadjusted. The rows of `meta_evaluate`'s ``comparisons`` table."""
        return self._compare_measures([best, other], level=level, criteria=[criterion],
                                      reference=best, n_resamples=n_resamples,
                                      random_state=random_state)

    def _compare_measures(self, measures: list[str], *, level: str, criteria: list[str],
                          reference: str | None, n_resamples: int = 1000,
                          random_state: int | None = 0) -> pd.DataFrame:
        """`compare_pair` for several measures and criteria at once: every measure against
        ``reference``, or every pair when it is None (the rows of each pair are those
        `compare_pair` gives: a row's test never depends on the other measures of a run)."""
        import warnings

        s = self.settings
        chosen = s.get("comparisons", {})

        def per_level(value):
            return value.get(level) if isinstance(value, dict) else value

        if self.dataset is None:
            raise InputError("this result keeps no dataset: nothing to compare")
        from storyeval._progress import no_progress

        # inside another step (a report's answer): no bars of its own; the run warned already
        with warnings.catch_warnings(), no_progress():
            warnings.simplefilter("ignore")
            one = meta_evaluate(
                self.dataset, measures=list(measures), criteria=list(criteria), levels=[level],
                method=s["coefficient"],
                reference=reference if reference is not None else "all",
                include_human_stories=True,
                llm_criteria=s.get("llm_criteria", "matched"),
                nan_policy=s.get("nan_policy", "raise"), tie_rtol=s.get("tie_rtol", TIE_RTOL),
                adjust="none", alternative=per_level(chosen.get("alternative")),
                direction=per_level(chosen.get("direction")),
                sign_convention=chosen.get("sign_convention", "raw"),
                lower_is_better=[m for m in chosen.get("lower_is_better") or ()
                                 if m in measures],
                test={level: per_level(chosen.get("test", {}))}, n_resamples=n_resamples,
                n_permutations=chosen.get("n_permutations", TEST_PERMUTATIONS),
                resample_by=chosen.get("effect_size", {}).get("resample_by", "prompts"),
                permutation_unit=chosen.get("permutation_unit", "prompt"),
                random_state=random_state)
        return one.comparisons

    def _repr_html_(self) -> str:
        from storyeval.meta.result_views import result_html

        return result_html(self)

    def _row_keys(self, rows: pd.DataFrame) -> pd.Series:
        """One key per grid row: the rater group when LLM ratings are criterion-matched (the
        paper's layout), else the measure itself."""
        if self.settings.get("llm_criteria", "matched") == "matched":
            return rows["rater"]
        return rows["measure"]

    def catalogue_labels(self) -> dict[str, str]:
        """Unique short labels of the grid rows: the display name of a metric, the rater group of
        an LLM rating; where two keys would share a label, their identifiers are used."""
        # a report asks for them once per table: made once per correlation table
        frame = self.correlations
        mode = self.settings.get("llm_criteria", "matched")
        if self._labels is not None and self._labels[0] is frame and self._labels[1] == mode:
            return dict(self._labels[2])
        labels = self._make_labels()
        self._labels = (frame, mode, labels)
        return dict(labels)

    def _make_labels(self) -> dict[str, str]:
        rows = self.correlations.drop_duplicates("measure")
        keys = self._row_keys(rows)
        short = rows["rater"].where(rows["kind"] == "llm_rater", rows["display_name"])
        if self.settings.get("llm_criteria", "matched") != "matched":
            short = rows["display_name"]
        labels = dict(zip(keys, short))
        clashes = pd.Series(labels).duplicated(keep=False)
        return {key: (key if clashes[key] else label) for key, label in labels.items()}

    def correlation_grid(self, level: str) -> pd.DataFrame:
        """Correlations at ``level`` as a grid: one row per rater (LLM ratings grouped over their
        criterion-matched measures, as in the paper's figures), one column per criterion. The
        index holds unique labels ([`catalogue_labels`][]); ``grid.attrs["ids"]`` the keys."""
        rows = self.correlations[self.correlations["level"] == level]
        grid = rows.assign(_key=self._row_keys(rows)).pivot(
            index="_key", columns="criterion", values="value")
        grid = grid.reindex(index=list(dict.fromkeys(self._row_keys(rows))),
                            columns=[c for c in self.settings["criteria"] if c in set(rows["criterion"])])
        return self._labelled(grid, "measure")

    def comparison_grid(self, level: str, *, column: str = "p_adjusted") -> pd.DataFrame:
        """Adjusted p-values of the comparison tests (or another ``column``) at ``level``:
        rows compared raters, columns criteria. Only for tests against one reference rater;
        all-pairs tests are laid out by [`comparison_matrix`][]."""
        if self.comparisons_all_pairs():
            raise InputError(
                "comparison_grid lays out tests against one reference rater, but these "
                "tests compare all pairs of raters (no reference); use "
                "comparison_matrix(level, criterion) for one measure x measure matrix per "
                "criterion")
        rows = self.comparisons[self.comparisons["level"] == level]
        key = self._pair_keys()[1]
        grid = rows.pivot(index=key, columns="criterion", values=column)
        grid = grid.reindex(index=list(dict.fromkeys(rows[key])),
                            columns=[c for c in self.settings["criteria"] if c in set(rows["criterion"])])
        return self._labelled(grid, "compared with")

    def comparisons_all_pairs(self) -> bool:
        """Whether the comparison tests compare all pairs of raters (no reference rater)."""
        return (not self.comparisons.empty
                and self.settings.get("comparisons", {}).get("reference") is None)

    def comparison_matrix(self, level: str, criterion: str, *,
                          column: str = "p_adjusted") -> pd.DataFrame:
        """The comparison tests of one ``criterion`` at ``level`` as a measure x measure matrix of
        adjusted p-values (or another numeric ``column``).

        Cell (row, column) holds the test of the row measure (``measure_a``) against the column
        measure (``measure_b``); each pair is tested once, so with all pairs the upper triangle
        is filled and the lower triangle and the diagonal are NaN. Rows and columns are in order
        of first appearance in the tests, labelled with [`catalogue_labels`][]
        (``matrix.attrs["ids"]`` holds the keys).
        """
        rows = self.comparison_rows(level, criterion)
        if rows.empty:
            tested = self.comparisons.loc[self.comparisons["level"] == level, "criterion"].unique()
            raise InputError(f"no comparison tests of criterion {criterion!r} at the {level} "
                             f"level; tested criteria there: {list(tested)}")
        if column not in rows.columns or not pd.api.types.is_numeric_dtype(rows[column]):
            raise InputError(f"comparison_matrix: column {column!r} is not a numeric column "
                             "of the comparison table (e.g. 'p_adjusted', 'p', 't', 'swapped')")
        key_a, key_b = self._pair_keys()
        a, b = rows[key_a].to_numpy(dtype=object), rows[key_b].to_numpy(dtype=object)
        # interleaving (a, b) in test order puts a before b for tests run as pairs i < j
        order = pd.unique(np.column_stack([a, b]).ravel())
        where = pd.Index(order)
        matrix = np.full((len(order), len(order)), np.nan)
        matrix[where.get_indexer(a), where.get_indexer(b)] = rows[column].to_numpy(dtype=float)
        labels = self.catalogue_labels()
        names = [labels.get(k, k) for k in order]
        grid = pd.DataFrame(matrix, index=pd.Index(names, name="measure"), columns=names)
        grid.attrs["ids"] = list(order)
        return grid

    def family_sizes(self) -> dict[str, dict[str, int]]:
        """Per tested level, the number of adjustment families and their smallest and largest
        size ``m`` (`storyeval.compare.multitest.family_sizes`)."""
        if self._family_sizes is None or self._family_sizes[0] is not self.comparisons:
            self._family_sizes = (self.comparisons, family_sizes(self.comparisons))
        return self._family_sizes[1]

    def warn_single_test_families(self) -> bool:
        """Warn once per result
        ([`SingleTestFamilyWarning`][storyeval.compare.multitest.SingleTestFamilyWarning]) when
        every family of the comparisons' adjustment holds a single test, so that adjusting changed
        nothing; return whether it warned."""
        if self._families_checked:
            return False
        self._families_checked = True
        chosen = self.settings.get("comparisons", {})
        if chosen.get("family_requested") == "auto" and chosen.get("family") == "criterion":
            return False  # the default family on user data: one comparison per criterion
        method = self.settings.get("comparisons", {}).get("adjustment", "bh")
        return warn_single_test_families(self.comparisons, method, sizes=self.family_sizes())

    def _pair_keys(self) -> tuple[str, str]:
        """The comparison table's columns naming a grid row: the rater groups when LLM ratings are
        criterion-matched (as `_row_keys`), else the measures."""
        if self.settings.get("llm_criteria", "matched") == "matched":
            return "rater_a", "rater_b"
        return "measure_a", "measure_b"

    def _labelled(self, grid: pd.DataFrame, name: str) -> pd.DataFrame:
        labels = self.catalogue_labels()
        ids = list(grid.index)
        grid.index = pd.Index([labels.get(k, k) for k in ids], name=name)
        grid.columns.name = None
        grid.attrs["ids"] = ids
        return grid


def meta_evaluate(
    dataset: Dataset | None = None,
    *,
    measures: str | Sequence[str] = "all",
    criteria: str | Sequence[str] = "all",
    levels: str | Sequence[str] = ("overall", "system"),
    method: str = "kendall_b",
    reference: str | None = "auto",
    include_human_stories: bool = False,
    systems: Sequence[str] | None = None,
    llm_criteria: str = "matched",
    nan_policy: str = "raise",
    tie_rtol: float = TIE_RTOL,
    adjust: str = "bh",
    family: str | Sequence[str] = "auto",
    alternative: str | None = None,
    direction: str | None = None,
    sign_convention: str = "auto",
    lower_is_better: str | Sequence[str] = (),
    test: str | dict[str, str] = "auto",
    confidence_level: float = 0.95,
    n_resamples: int = 1000,
    n_permutations: int = TEST_PERMUTATIONS,
    resample_by: str = "prompts",
    permutation_unit: str = "prompt",
    random_state: int | None = 0,
) -> MetaResult:
    """Correlate measures with human criteria, compare them pairwise (the named test of each
    level), adjust p-values.

    Parameters
    ----------
    dataset : Dataset or DataFrame, optional
        The scores; the embedded HANNA data when omitted. A DataFrame is read as
        [`storyeval.data.read_dataset`][] reads a file (long ratings, a long score table or a
        wide table); use ``read_dataset`` for its column mapping options.
    measures : str or sequence of str, default "all"
        Measure specification (see `storyeval.data.selection`): ``"all"``, ``"llm"``,
        ``"non-llm"``, a taxonomy family, names, rater groups or glob patterns.
    criteria : str or sequence of str, default "all"
        Human criteria of the dataset (names or codes).
    levels : str or sequence of {"overall", "system", "prompt", "within"}, default ("overall", "system")
        Correlation levels, as a sequence or a comma-separated string (``"overall,system"``,
        as the command line spells them) (see [`storyeval.correlation.levels.correlate`][]); comparison tests are run
        at every level (the prompt level: a paired t over prompts, ``"prompt-t"``; the
        within-system level: the delete-one-prompt jackknife t, ``"prompt-jackknife"``,
        `storyeval.compare.within`).
    method : {"kendall_b", "kendall_c", "pearson", "spearman"}, default "kendall_b"
        Correlation coefficient (aliases such as ``"kendall"`` are accepted).
    reference : str or None, default "auto"
        The rater the comparison tests compare every other measure against (a measure, or an LLM
        rater group such as ``"gpt-4o 1"``, resolved per criterion to its matched rating).
        ``"auto"``: the dataset's ``default_reference`` when it has one (HANNA: the paper's
        ``"Beluga-13B 1"``), else all pairs.
        ``"all"`` or None: all pairs of selected raters. ``"none"``: no comparison tests.
    include_human_stories : bool, default False
        Keep the stories of the dataset's ``reference_system`` (HANNA: the human-written
        stories, which the paper leaves out because they are the references of the
        reference-based metrics). No effect on data without one.
    systems : sequence of str, optional
        Restrict to these systems (after the reference-system rule above).
    llm_criteria : {"matched", "all"}, default "matched"
        Correlate a criterion-specific LLM rating only with its own criterion (paper), or with all.
    nan_policy : {"raise", "omit", "propagate"}, default "raise"
        What a missing score does to a correlation: an error, pairwise deletion, or NaN.
    tie_rtol : float, default 1e-12
        System means agreeing within this relative tolerance are ties (means equal in exact
        arithmetic stay tied whatever the floating-point summation order); 0 keeps raw means.
    adjust : {"bh", "by", "bonferroni", "holm", "none"}, default "bh"
        Multiple-comparison adjustment of the comparison p-values.
    family : {"auto", "paper", "criterion", "level", "all"} or sequence of column names, default "auto"
        Family of the adjustment. ``"paper"``: for each compared pair of raters, its criteria,
        per level (the HANNA figure). ``"criterion"``: all comparisons of a criterion at a
        level. ``"auto"``: ``"paper"`` on a dataset whose default test is the paper's (the
        embedded HANNA data), else ``"criterion"`` (its measured family-wise error under a
        global null is in the docs page "Which test?"). Written into the ``family`` column.
    alternative : {"greater", "less", "two-sided"}, optional
        Alternative hypothesis. Default: the test's (``"paper"``: one-sided ``"greater"``;
        every other test ``"two-sided"``).
    direction : {"larger", "fixed"}, optional
        ``"larger"`` (the paper's): each test runs in the direction of the larger ``|r|``,
        chosen after seeing the data (with a one-sided p this doubles the level);
        ``"fixed"``: the reference (or the first rater of a pair) against the other. Default:
        the test's (``"paper"``: ``"larger"``, others ``"fixed"``; only the Williams tests
        accept ``"larger"``).
    sign_convention : {"auto", "paper", "raw"}, default "auto"
        ``"paper"``: absolute correlations (each measure oriented by the sign of its *sample*
        correlation, chosen after seeing the data), so that a lower-is-better measure is
        compared by the strength of its association; ``"raw"``: signed correlations, a measure
        reversed only when declared in ``lower_is_better``. ``"auto"``: ``"paper"`` on a
        dataset whose default test is the paper's (the HANNA reproduction), else ``"raw"``
        (orienting after seeing the data makes the calibrated tests conservative: docs page
        "Which test?").
    lower_is_better : str or sequence of str, default ()
        Measures (specifications as ``measures``) where a lower score is better, declared in
        advance: under the ``"raw"`` convention their scores are negated before every
        comparison (``delta = -r(h, a) - r(h, b)`` when a is one). Correlation tables keep the
        signed values.
    test : str or dict, default "auto"
        The comparison test (`storyeval.compare.procedures.TESTS`), or one per level
        (``{"overall": "ustat", "system": "permutation-random"}``). ``"auto"``: on the embedded
        HANNA data ``"paper"`` (Williams, one-sided, direction of the larger |r|: the
        reproduction); on any other data the calibrated default
        (`storyeval.compare.procedures.calibrated_test`), two-sided, whose measured type-I error
        lies within [0.039, 0.061] at nominal 0.05 in every simulated cell for tau-b and Pearson
        (docs page "Which test?").
    confidence_level : float, default 0.95
        Of the interval of every difference of correlations (``ci_low``, ``ci_high``).
    n_resamples : int, default 1000
        Bootstrap resamples (test ``"bootstrap"``, the intervals of tests without one of their
        own, e.g. ``"permutation"`` at the system level, and the bootstrap spread that widens
        ``"permutation-midp"``'s interval).
    n_permutations : int, default 2000
        Permutations of the permutation tests (``"permutation-random"``'s interval comes from
        the same permutations; the default is
        `storyeval.compare.procedures.TEST_PERMUTATIONS`). At 2,000 the seed changes the decision at 0.05 for about 0.5%
        of null data sets (docs "Which test?", "Seeds and names").
    resample_by : {"prompts", "systems", "both"}, default "prompts"
        What the bootstrap resamples: ``"prompts"`` holds the systems fixed (the difference
        for these systems); ``"systems"`` or ``"both"`` treat the systems as a sample (the
        difference in a population of systems; docs page "Which test?").
    permutation_unit : {"prompt", "system", "story"}, default "prompt"
        What test ``"permutation"`` swaps.
    random_state : int, optional, default 0
        Seed of the resampling tests and intervals.

    Returns
    -------
    MetaResult

    Examples
    --------
    >>> from storyeval.meta import meta_evaluate
    >>> res = meta_evaluate(measures="Beluga-13B 1,BLEU", levels="system")
    >>> float(round(res.correlation_grid("system").loc["Beluga-13B 1"].mean(), 3))
    0.694
    """
    _check_numbers(confidence_level, n_resamples, n_permutations, tie_rtol)
    dataset = load_hanna() if dataset is None else _check_dataset(dataset)
    method = resolve_method(method)
    levels = _check_levels(levels)
    dataset = _select_stories(dataset, include_human_stories, systems)
    levels, skipped = _levels_with_systems(levels, len(dataset.systems))
    catalogue = dataset.catalogue
    crits = select_criteria(dataset, criteria)
    chosen = select_measures(catalogue, measures, presets=dataset.presets)
    pairs = criterion_pairs(catalogue, chosen, crits, llm_criteria=llm_criteria)
    ref_rater = _resolve_reference(dataset, reference)
    refs = ({c: resolve_rater(catalogue, ref_rater, c) for c in crits}
            if ref_rater is not None else {})
    wide = dataset.wide()
    info = catalogue.set_index("measure")
    convention = resolve_sign_convention(sign_convention, dataset.default_test)
    lower = _lower_is_better(catalogue, lower_is_better, dataset, convention)
    requested_family = family if isinstance(family, str) else list(family)
    family = _resolve_family(family, dataset.default_test)

    corr_frames, tests = [], []
    xs = list(dict.fromkeys([*pairs["measure"], *refs.values()]))
    for level in levels:
        tested = level in WILLIAMS_LEVELS and reference != "none"
        # One kernel call per level: measures x (criteria + what the comparison tests need).
        partners = (list(refs.values()) if refs else xs) if tested else []
        ys = list(dict.fromkeys([*crits, *partners]))
        grid = correlation_grid(wide, xs, ys, level=level, method=method,
                                nan_policy=nan_policy, tie_rtol=tie_rtol)
        if level == "system":
            grid = _require_systems(grid)
        corr_frames.append(_level_correlations(grid, pairs))
        if tested:
            tests.append(_williams_level(grid, pairs, refs))
    correlations = _tidy_correlations(pd.concat(corr_frames, ignore_index=True), info)
    tested_levels = [lev for lev in levels if lev in WILLIAMS_LEVELS]
    options = _TestOptions(
        tests=resolve_tests(test, tested_levels, method, dataset.default_test), method=method,
        alternative=alternative, direction=direction, sign_convention=convention,
        lower_is_better=lower, confidence_level=confidence_level, n_resamples=n_resamples,
        n_permutations=n_permutations, resample_by=resample_by,
        permutation_unit=permutation_unit, random_state=random_state, nan_policy=nan_policy,
        tie_rtol=tie_rtol)
    comparisons = _finish_williams(tests, info, wide, options, adjust, family)
    baseline = _baseline(dataset, crits, levels, method, nan_policy, tie_rtol)
    settings = _settings(dataset, chosen, crits, levels, method, ref_rater, reference,
                         include_human_stories, llm_criteria, nan_policy, adjust, family,
                         options)
    settings["tie_rtol"] = tie_rtol
    settings["skipped_levels"] = skipped
    settings["comparisons"]["lower_is_better"] = sorted(lower)
    settings["comparisons"]["family_requested"] = requested_family
    return MetaResult(correlations, baseline, comparisons, settings, dataset=dataset)


def _levels_with_systems(levels: list[str], n_systems: int) -> tuple[list[str], dict]:
    """The levels that correlate across systems (system, prompt) need `MIN_SYSTEMS` systems:
    with fewer they are skipped with one warning line (not printed as empty tables);
    ``{level: reason}`` of the skipped ones. Only skipped levels left: an InputError."""
    import warnings

    from storyeval.exceptions import UndefinedStatisticWarning

    if n_systems >= MIN_SYSTEMS:
        return levels, {}
    reason = (f"the data hold {n_systems} system{'s' if n_systems != 1 else ''}; a correlation "
              f"across systems needs at least {MIN_SYSTEMS}")
    skipped = {lev: reason for lev in levels if lev in ("system", "prompt")}
    kept = [lev for lev in levels if lev not in skipped]
    if not kept:
        raise InputError(f"levels {', '.join(skipped)}: {reason}; use the overall level "
                         "(--levels overall)")
    if skipped:
        warnings.warn(f"{' and '.join(skipped)} level skipped: {reason}",
                      UndefinedStatisticWarning, stacklevel=user_stacklevel())
    return kept, skipped


def _resolve_family(family: str | Sequence[str], default_test: str | None,
                    ) -> str | Sequence[str]:
    """``"auto"``: the paper's family for its reproduction, else all comparisons of a criterion
    at a level (on user data all pairs are compared, and the paper's family, one pair's
    criteria, leaves the pairs unadjusted: 39% family-wise error with 6 metrics and one
    criterion, docs page "Which test?")."""
    if isinstance(family, str) and family == "auto":
        return "paper" if default_test == "paper" else "criterion"
    return family


def _lower_is_better(catalogue: pd.DataFrame, spec: str | Sequence[str], dataset: Dataset,
                     convention: str) -> frozenset[str]:
    """The measures declared lower-is-better (resolved like ``measures``)."""
    if isinstance(spec, str):
        spec = [s for s in spec.split(",") if s.strip()] if spec else []
    if not spec:
        return frozenset()
    if convention == "paper":
        raise InputError("lower_is_better (--lower-is-better) orients measures under the 'raw' "
                         "sign convention; the 'paper' convention orients every measure by the "
                         "sign of its sample correlation")
    return frozenset(select_measures(catalogue, list(spec), presets=dataset.presets))


def _require_systems(grid: CorrelationGrid) -> CorrelationGrid:
    """System-level coefficients of fewer than `MIN_SYSTEMS` systems are NaN with a reason."""
    few = grid.n < MIN_SYSTEMS
    if not few.any():
        return grid
    from dataclasses import replace

    reason = np.where(few, MIN_SYSTEMS_REASON, grid.reason)
    return replace(grid, value=np.where(few, np.nan, grid.value), reason=reason)


def _check_dataset(dataset: object) -> Dataset:
    """``dataset`` if it is a Dataset, a DataFrame read as `read_dataset` reads a file; else
    an error saying how to make one."""
    if isinstance(dataset, Dataset):
        return dataset
    if isinstance(dataset, pd.DataFrame):
        from storyeval.data.load import read_dataset

        return read_dataset(dataset)
    raise InputError(
        f"meta_evaluate: dataset must be a storyeval Dataset or a DataFrame, got {type(dataset).__name__}; "
        "wrap a table in a Dataset with a reader of storyeval.data: read_dataset(path), "
        "scores_to_dataset(long_scores), ratings_to_dataset(ratings) or "
        "wide_to_dataset(table, id=..., criteria=...)")


def _check_numbers(confidence_level: float, n_resamples: int, n_permutations: int,
                   tie_rtol: float) -> None:
    """Numeric arguments out of range are an error before any work (a level of 95 is a
    percent; intervals need a level strictly between 0 and 1)."""
    from storyeval.resample._common import check_confidence, check_positive_int

    if isinstance(confidence_level, (int, float)) and 1 < confidence_level < 100:
        raise InputError(f"confidence_level must be in (0, 1), got {confidence_level!r}; "
                         f"for {confidence_level}% give {confidence_level / 100:g}")
    check_confidence(confidence_level)
    check_positive_int(n_resamples, "n_resamples")
    check_positive_int(n_permutations, "n_permutations")
    if not (isinstance(tie_rtol, (int, float)) and 0 <= tie_rtol < float("inf")):
        raise InputError(f"tie_rtol must be a finite number >= 0, got {tie_rtol!r}")


def _check_levels(levels: str | Sequence[str]) -> list[str]:
    # the command line's spelling "overall,system" works here too
    levels = [p.strip() for p in levels.split(",") if p.strip()] if isinstance(levels, str) \
        else list(levels)
    levels = [canonical_level(lev) for lev in levels]  # aliases: storyeval.data.level_names
    bad = [lev for lev in levels if lev not in ALL_LEVELS]
    if bad or not levels:
        raise InputError(f"levels must be among {list(ALL_LEVELS)}; got {levels}")
    return list(dict.fromkeys(levels))


def _select_stories(dataset: Dataset, include_human: bool,
                    systems: Sequence[str] | None) -> Dataset:
    ref = dataset.reference_system
    exclude = [] if include_human or ref not in dataset.systems else [ref]
    if systems is None and not exclude:
        return dataset
    if exclude and set(dataset.systems) == {ref}:
        raise InputError(
            f"dataset {dataset.name!r} holds only the stories of {ref!r}, which are left out by "
            "default (they are the references of reference-based metrics); pass "
            "include_human_stories=True (--include-human-stories) to evaluate them")
    return dataset.select_systems(systems, exclude=exclude)


def _resolve_reference(dataset: Dataset, reference: str | None) -> str | None:
    catalogue = dataset.catalogue
    if reference is None or reference in ("all", "none"):
        return None
    if reference == "auto":
        default = dataset.default_reference
        has_default = default is not None and (catalogue["rater"] == default).any()
        return default if has_default else None
    rows = catalogue[(catalogue["rater"] == reference) | (catalogue["measure"] == reference)
                     | (catalogue["display_name"] == reference)]
    if rows.empty:  # an unknown name: resolve_rater's error names close matches
        resolve_rater(catalogue, reference, str(catalogue["criterion"].iloc[0]))
    return str(rows["rater"].iloc[0])


def _level_correlations(grid: CorrelationGrid, pairs: pd.DataFrame) -> pd.DataFrame:
    """The (measure, criterion) entries of one level's grid, in grid order (x-major)."""
    rows, cols = grid.positions(pairs["measure"], pairs["criterion"])
    order = np.lexsort((cols, rows))
    rows, cols = rows[order], cols[order]
    return pd.DataFrame({
        "measure": np.asarray(grid.x, dtype=object)[rows],
        "criterion": np.asarray(grid.y, dtype=object)[cols],
        "level": grid.level,
        "coefficient": grid.method,
        "value": grid.value[rows, cols].astype(float),
        "n": grid.n[rows, cols].astype(int),
        "n_groups": grid.n_groups[rows, cols].astype(int),
        "reason": grid.reason[rows, cols],
    })


def _tidy_correlations(table: pd.DataFrame, info: pd.DataFrame) -> pd.DataFrame:
    at = positions(info.index, table["measure"], "the catalogue's")
    out = table.loc[:, ["measure", "criterion", "level", "coefficient", "value", "n",
                        "n_groups"]]
    for col in ("display_name", "kind", "rater"):
        out[col] = info[col].to_numpy()[at]
    out["reason"] = table["reason"].to_numpy()
    return out.reset_index(drop=True)


def _williams_level(grid: CorrelationGrid, pairs: pd.DataFrame,
                    refs: dict[str, str]) -> dict[str, np.ndarray]:
    """The (a, b, criterion) comparisons of one level with their three correlations, looked
    up in the level's grid (measures x (criteria + partners)), as columns of arrays (one
    DataFrame is built at the end: pandas string columns are costly to convert back and
    forth)."""
    if refs:
        ref_raters = set(pairs.loc[pairs["measure"].isin(refs.values()), "rater"])
        ref_raters |= set(refs.values())
        rows = [(c, refs[c], b) for b, c, rb in pairs.itertuples(index=False)
                if rb not in ref_raters and b != refs[c]]
        crit, a, b = np.array(rows, dtype=object).reshape(-1, 3).T
    else:
        crit, a, b = _all_pairs(pairs)
    with_a, with_b, a_b = grid.take(a, crit), grid.take(b, crit), grid.take(b, a)
    return {
        "level": _constant(grid.level, len(a)),
        "criterion": crit, "measure_a": a, "measure_b": b,
        "r_a": with_a["value"], "r_b": with_b["value"], "r_ab": a_b["value"],
        "n": np.minimum.reduce([with_a["n"], with_b["n"], a_b["n"]]),
    }


def _all_pairs(pairs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(criterion, a, b) for every pair (a, b), a before b, of the measures correlated with
    each criterion."""
    crit, first, second = [], [], []
    for criterion, group in pairs.groupby("criterion", sort=False):
        names = group["measure"].to_numpy(dtype=object)
        i, j = np.triu_indices(len(names), k=1)
        crit.append(_constant(criterion, len(i)))
        first.append(names[i])
        second.append(names[j])
    if not crit:
        return (np.array([], dtype=object),) * 3
    return np.concatenate(crit), np.concatenate(first), np.concatenate(second)


def _constant(value: object, size: int) -> np.ndarray:
    """An object array repeating ``value`` (np.full is slow for object arrays)."""
    out = np.empty(size, dtype=object)
    out.fill(value)
    return out


@dataclass(frozen=True)
class _TestOptions:
    """The comparison test of each level and the options every test shares."""

    tests: dict[str, str]
    method: str
    alternative: str | None
    direction: str | None
    sign_convention: str
    lower_is_better: frozenset[str]
    confidence_level: float
    n_resamples: int
    n_permutations: int
    resample_by: str
    permutation_unit: str
    random_state: int | None
    nan_policy: str
    tie_rtol: float

    def alternative_for(self, level: str) -> str:
        default = TEST_DEFAULTS.get(self.tests[level], OTHER_DEFAULTS)[0]
        return self.alternative or default

    def direction_for(self, level: str) -> str:
        test = self.tests[level]
        direction = self.direction or TEST_DEFAULTS.get(test, OTHER_DEFAULTS)[1]
        if direction == "larger" and test not in ("paper", "williams"):
            raise InputError(f"direction 'larger' (the direction of the larger |r|, chosen after "
                             f"seeing the data) is a convention of the Williams tests; test "
                             f"{test!r} runs in a fixed direction (a vs b)")
        return direction

    def convention(self, level: str) -> str:
        """The convention in words, e.g. "fixed direction (a vs b), two-sided"."""
        direction, _ = self.direction_for(level), self.alternative_for(level)
        text = ("direction of the larger |r| (chosen after seeing the data)"
                if direction == "larger" else "fixed direction (a vs b)")
        return f"{text}, sign convention {self.sign_convention!r}"


def _finish_williams(tests: list[dict[str, np.ndarray]], info: pd.DataFrame, wide: pd.DataFrame,
                     options: _TestOptions, adjust: str,
                     family: str | Sequence[str]) -> pd.DataFrame:
    frames = [_test_level(comp, info, wide, options) for comp in tests if len(comp["level"])]
    if not frames:
        return pd.DataFrame(columns=WILLIAMS_COLUMNS)
    comp = {key: np.concatenate([f[key] for f in frames]) for key in frames[0]}
    # Named families ("paper" groups LLM ratings by rater, so a rater's six criteria form one
    # family) are defined in storyeval.compare.multitest.adjust_frame.
    by = family if isinstance(family, str) else list(family)
    frame = adjust_frame(pd.DataFrame(comp), by=by, p_col="p", method=adjust)
    return frame.loc[:, WILLIAMS_COLUMNS]


def _test_level(comp: dict[str, np.ndarray], info: pd.DataFrame, wide: pd.DataFrame,
                options: _TestOptions) -> dict[str, np.ndarray]:
    """The rows of one level: the level's test, its p-values and the effect sizes."""
    level = str(comp["level"][0])
    test, method = options.tests[level], options.method
    alternative, direction = options.alternative_for(level), options.direction_for(level)
    size = len(comp["level"])
    shared = dict(level=level, method=method, sign_convention=options.sign_convention,
                  lower_is_better=options.lower_is_better,
                  confidence_level=options.confidence_level, n_resamples=options.n_resamples,
                  resample_by=options.resample_by, random_state=options.random_state,
                  nan_policy=options.nan_policy, tie_rtol=options.tie_rtol)
    if test in ("paper", "williams"):
        sa, sb = _declared_signs(comp, options)
        result = williams_test(sa * comp["r_a"], sb * comp["r_b"], sa * sb * comp["r_ab"],
                               comp["n"], alternative=alternative, direction=direction,
                               sign_convention=options.sign_convention)
        out = dict(t=np.asarray(result.statistic, dtype=float),
                   p=np.asarray(result.pvalue, dtype=float),
                   hypothesis=np.broadcast_to(np.asarray(result.hypothesis, dtype=object), size),
                   swapped=np.broadcast_to(np.asarray(result.swapped, dtype=bool), size),
                   reason=np.broadcast_to(np.asarray(result.reason, dtype=object), size),
                   statistic_kind=_constant("t(n-3)", size),
                   note=_constant(WILLIAMS_NOTE if method != "pearson" else "", size))
        # the Williams test with a fixed direction has a one-sided interval when it is
        # one-sided; the paper's direction is chosen per row after seeing the data, so its
        # interval stays two-sided (rows where the two disagree are marked in the reports)
        out.update(effect_sizes(wide, comp, test=test, **shared,
                                alternative=alternative if test == "williams" else "two-sided"))
        out["ci_method"] = np.char.add(
            np.asarray(out["ci_method"]).astype(str),
            "; not the Williams test's inversion: it may disagree with p").astype(object)
    else:
        res = compare_rows(wide, comp, test=test, alternative=alternative,
                           n_permutations=options.n_permutations,
                           permutation_unit=options.permutation_unit, **shared)
        prefix = "|r(h,{})|" if options.sign_convention == "paper" else "r(h,{})"
        op = {"greater": " > ", "less": " < ", "two-sided": " != "}[alternative]
        out = dict(t=res["t"], p=res["p"], statistic_kind=res["statistic_kind"],
                   hypothesis=_constant(prefix.format("a") + op + prefix.format("b"), size),
                   swapped=np.zeros(size, dtype=bool), reason=res["test_reason"],
                   note=res.get("note", _constant("", size)), delta=res["delta"],
                   ci_low=res["ci_low"],
                   ci_high=res["ci_high"], ci_method=res["ci_method"],
                   ci_reason=res["ci_reason"])
    if level == "system":
        _drop_few_systems(out, comp)
    # an undefined interval says why in the row's reason (after the test's own reason)
    reason = np.asarray(out.pop("reason"), dtype=object).astype(str)
    extra = np.asarray(out.pop("ci_reason"), dtype=object).astype(str)
    joined = np.where((reason != "") & (extra != ""), np.char.add(np.char.add(reason, "; "), extra),
                      np.where(reason != "", reason, extra))
    out["reason"] = _undefined_reasons(joined.astype(object), out["p"], comp)
    rater = info["rater"].to_numpy(dtype=object)
    from storyeval.compare.procedures import orientation

    # the orientation each correlation entered delta with: delta = sign_a r_a - sign_b r_b
    # (r_a, r_b stay the signed correlations as measured)
    out["sign_a"] = orientation(comp["r_a"], options.sign_convention, comp["measure_a"],
                                options.lower_is_better)
    out["sign_b"] = orientation(comp["r_b"], options.sign_convention, comp["measure_b"],
                                options.lower_is_better)
    return {
        **comp, **out,
        "rater_a": rater[positions(info.index, comp["measure_a"], "the catalogue's")],
        "rater_b": rater[positions(info.index, comp["measure_b"], "the catalogue's")],
        "coefficient": _constant(method, size),
        "alternative": _constant(alternative, size),
        "test": _constant(test, size),
        "sided": _constant("two-sided" if alternative == "two-sided" else "one-sided", size),
        "convention": _constant(options.convention(level), size),
    }


#: The reason of a comparison whose p-value is undefined because a correlation is.
UNDEFINED_COMPARISON = ("correlation undefined ({which}: constant input or too few "
                        "observations): not tested; left out of the adjustment family and the "
                        "clusters")


def _undefined_reasons(reason: np.ndarray, p: np.ndarray, comp: dict[str, np.ndarray],
                       ) -> np.ndarray:
    """A row with an undefined p-value and no reason yet says why: which correlation is
    undefined (r(h,a), r(h,b) or r(a,b)), and that the row is in no family nor cluster."""
    p = np.asarray(p, dtype=float)
    out = reason.copy()
    generic = ("", "coefficient undefined (constant input)")  # the tests' own words
    for k in np.flatnonzero(np.isnan(p)):
        which = [name for name, key in (("r(h,a)", "r_a"), ("r(h,b)", "r_b"), ("r(a,b)", "r_ab"))
                 if key in comp and not np.isfinite(comp[key][k])]
        if which and reason[k] in generic:
            out[k] = UNDEFINED_COMPARISON.format(which=", ".join(which))
        elif reason[k] == "":
            out[k] = ("p-value undefined: not tested; left out of the adjustment family and "
                      "the clusters")
    return out


def _declared_signs(comp: dict[str, np.ndarray], options: _TestOptions,
                    ) -> tuple[np.ndarray, np.ndarray]:
    """+-1 of a and b under the 'raw' convention (declared lower-is-better measures reversed);
    ones under 'paper' (the Williams test orients by the sample sign itself)."""
    from storyeval.compare.procedures import orientation

    if options.sign_convention == "paper":
        one = np.ones(len(comp["r_a"]))
        return one, one
    return (orientation(comp["r_a"], "raw", comp["measure_a"], options.lower_is_better),
            orientation(comp["r_b"], "raw", comp["measure_b"], options.lower_is_better))


def _drop_few_systems(out: dict[str, np.ndarray], comp: dict[str, np.ndarray]) -> None:
    """Rows of fewer than `MIN_SYSTEMS` systems: no statistic, p-value or interval, and the
    reason (the test and interval reasons are replaced)."""
    few = np.asarray(comp["n"]) < MIN_SYSTEMS
    if not few.any():
        return
    for key in ("t", "p", "delta", "ci_low", "ci_high"):
        out[key] = np.where(few, np.nan, np.asarray(out[key], dtype=float))
    out["reason"] = np.where(few, MIN_SYSTEMS_REASON,
                             np.asarray(out["reason"], dtype=object)).astype(object)
    out["ci_reason"] = np.where(few, "", np.asarray(out["ci_reason"], dtype=object)
                                ).astype(object)


def measured_level_text(test: str, method: str, level: str,
                        n_systems: int | None = None) -> str:
    """"measured type-I error 0.010-0.015 at nominal 0.05 (30-5,000 stories; ...)" for the
    paper's convention and the calibrated defaults (`storyeval.compare.procedures.PAPER_LEVEL`,
    ``CALIBRATED_LEVEL``: benchmarks/bench_calibration.py), else "". With ``n_systems`` below
    `FEW_SYSTEMS` at the system level, the level measured with that few systems
    (`few_systems_note`), not the one of larger studies."""
    if (level == "system" and n_systems is not None and n_systems < FEW_SYSTEMS
            and test == calibrated_name(level, method)):
        return few_systems_note(method)
    if test == "paper":
        table = PAPER_LEVEL
    elif test == calibrated_name(level, method):
        table = CALIBRATED_LEVEL
    else:
        return ""
    if level not in table.get(method, {}):  # not measured for this coefficient and level
        return ""
    low, high, where = table[method][level]
    return (f"measured type-I error {low:.3f}-{high:.3f} at nominal 0.05 ({where}, simulated "
            "null; docs: Which test?)")


def calibrated_name(level: str, method: str) -> str:
    from storyeval.compare.procedures import calibrated_test

    return calibrated_test(level, method)


def annotator_columns(catalogue: pd.DataFrame, crits: Sequence[str],
                      ) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Per criterion, the individual annotators' measures (two or more, in catalogue order)
    and, when the data has one per annotator, their leave-one-out means."""
    human = catalogue[catalogue["kind"].isin(["annotator", "annotator_loo"])]
    by_kind = {kind: dict(list(rows.groupby("criterion", sort=False)["measure"]))
               for kind, rows in human.groupby("kind", sort=False)}
    annotators, loo = {}, {}
    for crit in crits:
        ann = by_kind.get("annotator", {}).get(crit)
        if ann is not None and len(ann) >= 2:
            annotators[crit] = ann.tolist()
            own = by_kind.get("annotator_loo", {}).get(crit)
            if own is not None and len(own) == len(ann):
                loo[crit] = own.tolist()
    return annotators, loo


def _baseline(dataset: Dataset, crits: list[str], levels: list[str], method: str,
              nan_policy: str, tie_rtol: float) -> pd.DataFrame:
    annotators, loo = annotator_columns(dataset.catalogue, crits)
    if not annotators:
        return pd.DataFrame(columns=["criterion", "level", "coefficient", "variant", "value",
                                     "n", "n_groups", "n_annotators", "reason"])
    return human_baseline(dataset.wide(), annotators,
                          loo_columns=loo if len(loo) == len(annotators) else None,
                          mean_columns={c: c for c in annotators}, levels=levels,
                          method=method, nan_policy=baseline_nan_policy(dataset, annotators,
                                                                        nan_policy),
                          tie_rtol=tie_rtol)


def baseline_nan_policy(dataset: Dataset, annotators: dict[str, list[str]],
                        nan_policy: str) -> str:
    """Ragged annotators (not every annotator rated every story) leave gaps by design: the
    baseline then uses each annotator's rated stories (pairwise deletion, ``"omit"``)."""
    if nan_policy != "raise":
        return nan_policy
    cols = [c for cols in annotators.values() for c in cols]
    return "omit" if dataset.table[cols].isna().to_numpy().any() else nan_policy


def _settings(dataset: Dataset, chosen: list[str], crits: list[str], levels: list[str],
              method: str, ref_rater: str | None, reference: str | None, include_human: bool,
              llm_criteria: str, nan_policy: str, adjust: str, family,
              options: _TestOptions) -> dict:
    williams_levels = [lev for lev in levels if lev in WILLIAMS_LEVELS]
    if reference == "none":
        comparison = "none"
    elif ref_rater is None:
        comparison = "all pairs of selected raters"
    else:
        comparison = f"reference {ref_rater!r} against every other selected rater"
    annotators, _ = annotator_columns(dataset.catalogue, crits)
    return {
        "dataset": dataset.name,
        "dataset_notes": list(dataset.notes),
        "reference_system": dataset.reference_system,
        "baseline_nan_policy": (baseline_nan_policy(dataset, annotators, nan_policy)
                                if annotators else None),
        "systems": dataset.systems,
        "n_systems": len(dataset.systems),
        "n_stories": len(dataset.table),
        "include_human_stories": include_human,
        "measures": len(chosen),
        "llm_ratings": int(dataset.catalogue.set_index("measure").loc[chosen, "kind"]
                           .eq("llm_rater").sum()) if chosen else 0,
        "criteria": crits,
        "levels": levels,
        "coefficient": method,
        "coefficient_description": COEFFICIENT_DESCRIPTIONS[method],
        "llm_criteria": llm_criteria,
        "nan_policy": nan_policy,
        "tie_rule": TIE_RULE,
        "comparisons": {
            "levels": williams_levels,
            "comparison": comparison,
            "reference": ref_rater,
            "test": dict(options.tests),
            "test_description": {lev: TEST_DESCRIPTIONS[t] for lev, t in options.tests.items()},
            "measured_level": {lev: measured_level_text(t, method, lev,
                                                        len(dataset.systems))
                               for lev, t in options.tests.items()},
            "alternative": _one(options.alternative_for, williams_levels),
            "p_value": _one(lambda lev: _p_value_text(options.tests[lev],
                                                      options.alternative_for(lev)),
                            williams_levels),
            "direction": _one(options.direction_for, williams_levels),
            "sign_convention": options.sign_convention,
            "note": (WILLIAMS_NOTE if method != "pearson" and any(
                t in ("paper", "williams") for t in options.tests.values()) else ""),
            "effect_size": {"statistic": "delta = r(h,a) - r(h,b) after the sign convention",
                            "confidence_level": options.confidence_level,
                            "n_resamples": options.n_resamples,
                            "resample_by": options.resample_by,
                            "random_state": options.random_state},
            "n_permutations": options.n_permutations,
            "permutation_unit": options.permutation_unit,
            "adjustment": adjust,
            "family": family if isinstance(family, str) else list(family),
            "prompt_level": ("paired t over prompts of the within-prompt differences"
                             if options.tests.get("prompt") == "prompt-t" else
                             options.tests.get("prompt", "")),
            "within_level": ("delete-one-prompt jackknife t of the within-system difference"
                             if options.tests.get("within") == "prompt-jackknife" else
                             options.tests.get("within", "")),
        },
    }


def _one(value, levels: list[str]):
    """The value when every level has the same, else one per level (settings stay short)."""
    values = {lev: value(lev) for lev in levels}
    distinct = set(map(str, values.values()))
    if len(distinct) == 1:
        return next(iter(values.values()))
    return values


def _p_value_text(test: str, alternative: str) -> str:
    if test in ("paper", "williams"):
        return {"greater": "one-sided, P(T_{n-3} > t)", "less": "one-sided, P(T_{n-3} < t)",
                "two-sided": "two-sided, 2 P(T_{n-3} > |t|)"}[alternative]
    if test in ("ustat", "jackknife"):
        return {"greater": "one-sided, P(Z > z)", "less": "one-sided, P(Z < z)",
                "two-sided": "two-sided, 2 P(Z > |z|)"}[alternative]
    return "two-sided" if alternative == "two-sided" else f"one-sided ({alternative})"
