"""Significance clusters (storyeval.compare.clusters): the WMT rank-assignment rule."""

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from storyeval.compare.clusters import (
    assign_clusters,
    average_ranks,
    clusters_from_comparisons,
    significance_clusters,
)
from storyeval.exceptions import InputError
from storyeval.report.figures import cluster_figure

REFERENCE = json.loads((Path(__file__).parent / "data" / "mteval_reference.json")
                       .read_text(encoding="utf-8"))["assign_ranks"]


def test_hand_worked_example_equals_wmt_assign_ranks():
    # Six measures sorted best first; p[j, i] = p-value of "j better than i".
    # m0: rank 1.  m1: p(m0>m1)=.30 -> joins cluster 1.
    # m2: p(m0>m2)=.01 <= .05 -> new cluster 2 starting at m2.
    # m3: compared with the cluster {m2} only: p=.50 -> rank 2 (m1's .04 is ignored: m1 is
    #     in an earlier cluster).  m4: p(m2)=.30, p(m3)=.60 -> rank 2.
    # m5: p(m2>m5)=.02 -> new cluster 3.
    sig = np.array(REFERENCE["sig_matrix"])
    assert assign_clusters(sig, 0.05).tolist() == [1, 1, 2, 2, 2, 3]
    assert REFERENCE["ranks"] == [1, 1, 2, 2, 2, 3]  # mt-metrics-eval's data.AssignRanks


def test_any_member_of_the_cluster_splits_not_only_the_top():
    # m2 is not significantly worse than the top m0 (p=.5) but is worse than m1 (p=.01)
    p = np.array([[0, .2, .5], [0, 0, .01], [0, 0, 0]])
    assert assign_clusters(p).tolist() == [1, 1, 2]
    # p exactly at alpha is significant (WMT: p <= alpha); NaN never is
    assert assign_clusters(np.array([[0, .05], [0, 0]])).tolist() == [1, 2]
    assert assign_clusters(np.array([[0, np.nan], [0, 0]])).tolist() == [1, 1]


def test_errors():
    with pytest.raises(InputError, match="square"):
        assign_clusters(np.zeros((2, 3)))
    with pytest.raises(InputError, match="alpha"):
        assign_clusters(np.zeros((2, 2)), alpha=0)


@pytest.fixture(scope="module")
def separated():
    """Two good measures (human + small noise) and a bad one (noise) on 8 systems x 40."""
    rng = np.random.default_rng(11)
    S, P = 8, 40
    idx = pd.MultiIndex.from_product([[f"s{k}" for k in range(S)], range(P)],
                                     names=["system", "prompt_id"])
    quality = np.repeat(np.linspace(0, 3, S), P)
    h = quality + rng.normal(0, 1, S * P)
    return pd.DataFrame({"h": h, "good1": h + rng.normal(0, 0.3, S * P),
                         "good2": h + rng.normal(0, 0.3, S * P),
                         "bad": rng.normal(0, 1, S * P)}, index=idx)


def test_clusters_on_separated_measures(separated):
    table = significance_clusters(separated, ["bad", "good1", "good2"], ["h"],
                                  levels=["overall"])
    ranks = dict(zip(table["measure"], table["rank"]))
    assert ranks["good1"] == ranks["good2"] == 1 and ranks["bad"] == 2
    assert table["value"].is_monotonic_decreasing
    assert set(table["test"]) == {"ustat"}
    assert np.isnan(table["p_vs_cluster_top"].iloc[0])
    assert table.loc[table.measure == "bad", "cluster_size"].item() == 1


def test_average_ranks_weighted():
    clusters = pd.DataFrame({
        "measure": ["a", "b", "c", "a", "b", "c"], "criterion": ["X"] * 3 + ["Y"] * 3,
        "level": "overall", "rank": [1, 2, 2, 2, 1, 3]})
    avg = average_ranks(clusters)
    assert avg["average_rank"].tolist() == [1.5, 1.5, 2.5]
    weighted = average_ranks(clusters, {"X": 3, "Y": 1})
    got = dict(zip(weighted["measure"], weighted["average_rank"]))
    assert got == pytest.approx({"a": 1.25, "b": 1.75, "c": 2.25})
    with pytest.raises(InputError, match="weights"):
        average_ranks(clusters, {"X": 0, "Y": 0})


def test_cluster_figure(tmp_path, separated):
    table = significance_clusters(separated, ["bad", "good1", "good2"], ["h"],
                                  levels=["overall"])
    paths = cluster_figure(average_ranks(table), "overall", tmp_path / "clusters_overall")
    assert [p.name for p in paths] == ["clusters_overall.png"] and paths[0].stat().st_size > 0


# ---- one run, one set of p-values: the clusters of `storyeval meta` read its own table ----

def _wide_data(seed: int, systems: int = 8, prompts: int = 30) -> pd.DataFrame:
    """A criterion h; good (h + noise); ppl = -(h + noise), lower is better; mid (h + more
    noise); bleu (weak); const (one value: undefined correlation)."""
    rng = np.random.default_rng(seed)
    n = systems * prompts
    quality = np.repeat(np.linspace(0, 2, systems), prompts)
    h = quality + rng.normal(0, 1, n)
    return pd.DataFrame({
        "system": np.repeat([f"s{k}" for k in range(systems)], prompts),
        "prompt_id": np.tile(np.arange(prompts), systems),
        "h": h, "good": h + rng.normal(0, 0.5, n), "ppl": -(h + rng.normal(0, 0.5, n)),
        "mid": h + rng.normal(0, 1.5, n), "bleu": 0.2 * h + rng.normal(0, 1.5, n),
        "const": np.ones(n)})


def _naive_ranks(sorted_names, oriented, p_of, alpha):
    """WMT's AssignRanks written out pair by pair (test reference): tied oriented values
    excepted, i starts a new cluster when a member of the current one beats it."""
    ranks, start = [1], 0
    for i in range(1, len(sorted_names)):
        if np.isclose(oriented[i], oriented[i - 1], rtol=1e-12, atol=1e-15):
            ranks.append(ranks[-1])
            continue
        beaten = any(p_of(sorted_names[j], sorted_names[i]) <= alpha
                     and oriented[j] > oriented[i] for j in range(start, i))
        if beaten:
            start = i
        ranks.append(ranks[-1] + beaten)
    return ranks


def _check_against_table(clusters: pd.DataFrame, table: pd.DataFrame, alpha: float,
                         column: str = "p_adjusted") -> None:
    """Every cluster decision equals the one the comparison table's own p-values give (the
    adjusted p that meta's matrices print and its answer reads)."""
    p = {}
    for row in table.itertuples():
        p[(row.level, row.criterion, row.measure_a, row.measure_b)] = getattr(row, column)
        p[(row.level, row.criterion, row.measure_b, row.measure_a)] = getattr(row, column)
    for (level, crit), part in clusters.groupby(["level", "criterion"]):
        ranked = part[part["rank"].notna()]
        names, oriented = list(ranked["measure"]), ranked["oriented"].to_numpy()
        assert np.all(np.diff(oriented) <= 1e-12)
        got = ranked["rank"].astype(int).tolist()
        want = _naive_ranks(names, oriented,
                            lambda a, b: np.nan_to_num(p[(level, crit, a, b)], nan=1.0), alpha)
        assert got == want, (level, crit)
        tops = [names[got.index(r)] for r in got]
        for name, top, pv in zip(names, tops, ranked["p_vs_cluster_top"]):
            if name != top:
                assert pv == p[(level, crit, top, name)]


@pytest.mark.filterwarnings("ignore::storyeval.exceptions.UndefinedStatisticWarning")
def test_meta_clusters_follow_lower_is_better_and_the_runs_table(tmp_path, capsys):
    from storyeval.cli import main

    data = tmp_path / "wide.csv"
    _wide_data(3).to_csv(data, index=False)
    out = tmp_path / "res"
    assert main(["meta", "--data", str(data), "--id", "system=system,prompt_id=prompt_id",
                 "--criteria", "h", "--metrics", "good,ppl,mid,bleu,const",
                 "--lower-is-better", "ppl", "--clusters", "--no-figures",
                 "--nan-policy", "propagate", "--out", str(out)]) == 0
    clusters = pd.read_csv(out / "clusters.csv")
    table = pd.read_csv(out / "comparisons.csv")
    _check_against_table(clusters, table, 0.05)
    overall = clusters[clusters["level"] == "overall"].set_index("measure")
    # ppl is oriented (negated): as good as 'good', above mid and bleu, not at the bottom
    assert overall.loc["ppl", "oriented"] > 0 > overall.loc["ppl", "value"]
    assert overall.loc["ppl", "rank"] == overall.loc["good", "rank"] == 1
    assert overall.loc["bleu", "rank"] > overall.loc["ppl", "rank"]
    # the constant measure: not ranked, listed with the reason
    assert np.isnan(overall.loc["const", "rank"])
    assert "undefined" in overall.loc["const", "reason"]
    text = re.sub(r"\n  (?=\S)", " ", capsys.readouterr().out)  # titles wrapped at 120 columns
    assert "BH-adjusted (family 'criterion') p-values of this run's comparison table" in text


def test_meta_clusters_do_not_move_with_the_seed_beyond_monte_carlo_error():
    from storyeval.data.load import read_dataset
    from storyeval.meta import meta_evaluate
    from storyeval.meta.wmt import cluster_tables

    data = read_dataset(_wide_data(5, systems=5, prompts=40).drop(columns="const"),
                        id="system=system,prompt_id=prompt_id", criteria=["h"])
    runs = {}
    for seed in range(4):
        res = meta_evaluate(data, criteria=["h"],
                            measures=["good", "ppl", "mid", "bleu"], lower_is_better=["ppl"],
                            random_state=seed, n_permutations=400)
        clusters, _ = cluster_tables(res)
        _check_against_table(clusters, res.comparisons, 0.05)
        runs[seed] = (clusters, res.comparisons)
    # a pair whose p lies within 4 Monte Carlo standard errors of alpha may flip; no other may
    se = np.sqrt(0.05 * 0.95 / 400)
    for level in ("overall", "system"):
        near = any(((t["level"] == level) & ((t["p_adjusted"] - 0.05).abs() < 4 * se)).any()
                   for _, t in runs.values())
        ranks = [c[c["level"] == level].set_index("measure")["rank"].sort_index().tolist()
                 for c, _ in runs.values()]
        if not near:
            assert all(r == ranks[0] for r in ranks[1:]), (level, ranks)
    assert not any(((t["level"] == "overall")
                    & ((t["p_adjusted"] - 0.05).abs() < 4 * se)).any()
                   for _, t in runs.values())  # the overall level is checked for real
    # the clusters table says where the seed may matter: Monte Carlo p-values (system level,
    # permutation-random) within 3 s.e. of alpha; the overall level's ustat has none
    for clusters, table in runs.values():
        system = table[table["level"] == "system"]
        want = int(((system["p_adjusted"] - 0.05).abs() < 3 * se).sum())
        got = clusters.loc[clusters["level"] == "system", "pairs_near_alpha"]
        assert (got == want).all()
        assert (clusters.loc[clusters["level"] == "overall", "pairs_near_alpha"] == 0).all()


def test_ties_are_ranked_as_one_block_whatever_the_names():
    # A = .5 beats B (p .01) but not C (p .30); B and C tie at .3. Sorted by name, the old
    # rule put whichever of B, C came first alphabetically in a different cluster.
    def run(b, c):
        corr = pd.DataFrame({"measure": ["A", b, c], "criterion": "h", "level": "overall",
                             "value": [0.5, 0.3, 0.3]})
        comp = pd.DataFrame({"level": "overall", "criterion": "h",
                             "measure_a": ["A", "A", b], "measure_b": [b, c, c],
                             "p": [0.01, 0.30, 1.0], "alternative": "two-sided",
                             "test": "ustat"})
        table = clusters_from_comparisons(corr, comp)
        return dict(zip(table["measure"], table["rank"]))

    assert run("B", "C") == {"A": 1, "B": 2, "C": 2}
    assert run("C", "B") == {"A": 1, "C": 2, "B": 2}  # the names swapped: same ranks


def test_one_sided_rows_count_only_in_the_direction_they_tested():
    corr = pd.DataFrame({"measure": ["A", "B"], "criterion": "h", "level": "overall",
                         "value": [0.5, 0.3]})

    def ranks(alternative, swapped=False):
        comp = pd.DataFrame({"level": "overall", "criterion": "h", "measure_a": ["B"],
                             "measure_b": ["A"], "p": [0.01], "alternative": alternative,
                             "swapped": swapped, "test": "paper"})
        return clusters_from_comparisons(corr, comp)["rank"].tolist()

    assert ranks("two-sided") == [1, 2]
    assert ranks("less") == [1, 2]        # tested B < A: A better, significant
    assert ranks("greater") == [1, 1]     # tested B > A: says nothing about A better
    assert ranks("greater", swapped=True) == [1, 2]  # the paper's rule ran A > B


def test_missing_pair_and_undefined_measure():
    corr = pd.DataFrame({"measure": ["A", "B", "K"], "criterion": "h", "level": "overall",
                         "value": [0.5, 0.3, np.nan]})
    comp = pd.DataFrame({"level": "overall", "criterion": "h", "measure_a": ["A"],
                         "measure_b": ["K"], "p": [np.nan]})
    with pytest.raises(InputError, match="no test of 'A' against 'B'"):
        clusters_from_comparisons(corr, comp)
    comp = pd.DataFrame({"level": "overall", "criterion": "h", "measure_a": ["A"],
                         "measure_b": ["B"], "p": [0.2]})
    table = clusters_from_comparisons(corr, comp)
    assert table["measure"].tolist() == ["A", "B", "K"]
    assert table["rank"].tolist()[:2] == [1, 1] and pd.isna(table["rank"].iloc[2])
    assert table["reason"].iloc[2].startswith("correlation undefined")


@pytest.mark.filterwarnings("ignore::storyeval.exceptions.UndefinedStatisticWarning")
def test_significance_clusters_lower_is_better_and_constant(separated):
    data = separated.assign(ppl=-separated["good1"], flat=1.0)
    table = significance_clusters(data, ["bad", "ppl", "good2", "flat"], ["h"],
                                  levels=["overall"], lower_is_better=["ppl"])
    ranks = dict(zip(table["measure"], table["rank"]))
    assert ranks["ppl"] == ranks["good2"] == 1 and ranks["bad"] == 2
    assert pd.isna(ranks["flat"])
