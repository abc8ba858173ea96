"""Significance clusters (storyeval.compare.clusters): the WMT rank-assignment rule."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from storyeval.compare.clusters import assign_clusters, average_ranks, significance_clusters
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
