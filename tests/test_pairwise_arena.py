"""The batched bootstrap refits of `storyeval.pairwise.arena`: every resample's batched fit
equals its own single fit (`fit_counts`, and choix where the model is choix's), refits that do not
converge are reported, and the strengths do not depend on how battles are ordered, which side
a battle lists first, or how the systems are labelled (hypothesis)."""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_pairwise_leaderboard import _battles  # Davidson battles

from storyeval.exceptions import UndefinedStatisticWarning
from storyeval.pairwise import arena
from storyeval.pairwise.arena import (
    NO_MLE,
    NOT_CONVERGED,
    bootstrap_counts,
    bootstrap_fits,
    count_battles,
    fit_counts,
)
from storyeval.pairwise.leaderboard import leaderboard, leaderboard_from_counts

lb = importlib.import_module("storyeval.pairwise.leaderboard")  # the package exports a
# function of the same name
SETTINGS = settings(max_examples=25, deadline=None, database=None)




def _record_chunks(monkeypatch):
    """Wrap the chunk refit to keep each chunk's resampled pair counts and its results."""
    seen = []
    original = arena._fit_chunk

    def spy(flat, layout, *args):
        out, status = original(flat, layout, *args)
        seen.append((flat.copy(), layout, out, status))
        return out, status

    monkeypatch.setattr(arena, "_fit_chunk", spy)
    return seen


def _matrices(flat_row, layout):
    """One resample's (3 P) pair counts -> S x S wins and symmetric ties."""
    s, i, j, npair = layout.s, layout.i, layout.j, len(layout.i)
    wins, ties = np.zeros((s, s)), np.zeros((s, s))
    wins[i, j], wins[j, i] = flat_row[:npair], flat_row[npair:2 * npair]
    ties[i, j] = ties[j, i] = flat_row[2 * npair:]
    return wins, ties


@pytest.mark.parametrize(("ties", "reg", "n_prompts", "n"), [
    ("davidson", 0.0, 30, 500), ("half", 0.0, None, 500), ("drop", 0.0, 30, 500),
    ("davidson", 0.3, None, 400), ("davidson", 0.0, 25, 60)])
def test_batched_refits_equal_one_fit_per_resample(monkeypatch, ties, reg, n_prompts, n):
    # reference: each resample's counts fitted alone by fit_counts (Newton from zero, with its
    # own connectivity check); the last design is sparse, so some resamples have no MLE
    a, b, out, prompts = _battles(n, 6, seed=3, n_prompts=n_prompts)
    c = count_battles(a, b, out, 6, cluster=prompts)
    theta, nu, *_ = fit_counts(c.wins, c.ties, ties_model=ties, regularization=reg)
    seen = _record_chunks(monkeypatch)
    fits = bootstrap_fits(c, n_resamples=40, ties_model=ties, regularization=reg,
                          start=(theta, nu), random_state=5)
    assert sum(len(f[0]) for f in seen) == 40
    n_rows = 0
    for flat, layout, got, status in seen:
        for row in range(len(flat)):
            w, t = _matrices(flat[row], layout)
            ref, _, _, conv, reason = fit_counts(w, t, ties_model=ties, regularization=reg)
            if status[row] == NO_MLE:
                assert reason and np.isnan(ref).all() and np.isnan(got[row]).all()
            else:
                assert status[row] == 0 and conv
                np.testing.assert_allclose(got[row], ref, atol=1e-7)
            n_rows += 1
    assert n_rows == 40
    assert np.sum(fits.status == NO_MLE) == np.isnan(fits.samples).all(axis=1).sum()
    if n < 100:
        assert 0 < fits.n_valid < 40
        assert "the MLE does not exist in" in fits.problem()
    else:
        assert fits.n_valid == 40 and fits.problem() == ""


def test_batched_refits_equal_choix_per_resample(monkeypatch):
    # ties counted half: choix's Bradley-Terry MLE on 2 W + T (each tie one win each way,
    # halved), resample by resample
    choix = pytest.importorskip("choix")
    a, b, out, prompts = _battles(1500, 8, seed=11, n_prompts=50)
    c = count_battles(a, b, out, 8, cluster=prompts)
    theta, *_ = fit_counts(c.wins, c.ties, ties_model="half")
    seen = _record_chunks(monkeypatch)
    bootstrap_counts(c, n_resamples=12, ties_model="half", start=(theta, 0.0), random_state=2)
    for flat, layout, got, _ in seen:
        for row in range(len(flat)):
            w, t = _matrices(flat[row], layout)
            ref = choix.ilsr_pairwise_dense(2 * w + t, alpha=0.0, tol=1e-14, max_iter=100_000)
            np.testing.assert_allclose(got[row], ref - ref.mean(), atol=1e-6)


def test_refits_that_do_not_converge_are_reported(monkeypatch):
    # one chord step and one Newton step cannot reach 1e-9: every refit is reported as not
    # converged (a NaN row, a warning with the count, the count in the settings), never kept
    a, b, out, prompts = _battles(2000, 6, seed=4, n_prompts=40)
    c = count_battles(a, b, out, 6, cluster=prompts)
    point = fit_counts(c.wins, c.ties)  # the full-sample fit converges; only the refits fail
    monkeypatch.setattr(lb, "fit_counts", lambda *x, **k: point)
    chord, newton = arena._chord, arena._newton
    monkeypatch.setattr(arena, "_chord", lambda *x, **k: chord(*x, **{**k, "max_iter": 1}))
    monkeypatch.setattr(arena, "_newton", lambda *x, **k: newton(*x, **{**k, "max_iter": 1}))
    with pytest.warns(UndefinedStatisticWarning,
                      match=r"Newton's method did not converge in 20 of 20 resamples"):
        board = leaderboard_from_counts(c, list("abcdef"), n_resamples=20, random_state=0)
    assert board.settings["n_resamples_not_converged"] == 20
    assert board.settings["n_resamples_no_mle"] == 0
    assert (board.table["n_resamples_valid"] == 0).all()
    assert np.isnan(board.samples).all()
    monkeypatch.undo()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UndefinedStatisticWarning)  # converged: no warning
        board = leaderboard_from_counts(c, list("abcdef"), n_resamples=20, random_state=0)
    assert board.settings["n_resamples_not_converged"] == 0
    assert (board.table["n_resamples_valid"] == 20).all()


def test_status_codes_and_problem_sentence():
    fits = arena.BootstrapFits(np.zeros((4, 2)), np.array([0, NO_MLE, NOT_CONVERGED, NO_MLE],
                                                          dtype=np.int8))
    assert fits.n_valid == 1
    assert fits.problem("prompt ") == (
        "the MLE does not exist in 2 of 4 prompt resamples; Newton's method did not converge "
        "in 1 of 4 prompt resamples (left out)")


# ------------------------------------------------------------------ invariance properties


@st.composite
def _designs(draw):
    s = draw(st.integers(3, 6))
    n = draw(st.integers(40 * s, 80 * s))
    seed = draw(st.integers(0, 10_000))
    n_prompts = draw(st.sampled_from([None, 15]))
    ties = draw(st.sampled_from(["davidson", "half"]))
    return s, n, seed, n_prompts, ties


def _boot(a, b, out, prompts, s, ties):
    c = count_battles(a, b, out, s, cluster=prompts)
    theta, nu, *_ = fit_counts(c.wins, c.ties, ties_model=ties)
    if not np.isfinite(theta).all():
        return theta, None
    fits = bootstrap_fits(c, n_resamples=15, ties_model=ties, start=(theta, nu),
                          random_state=7)
    return theta, fits.samples


@SETTINGS
@given(_designs(), st.randoms(use_true_random=False))
def test_order_and_sides_of_battles_change_nothing(design, rnd):
    # reordering battles and listing a battle's sides the other way round (its outcome
    # mirrored) leave the counts, the draws and so the strengths and bootstrap draws unchanged
    s, n, seed, n_prompts, ties = design
    a, b, out, prompts = _battles(n, s, seed, n_prompts=n_prompts)
    theta, boot = _boot(a, b, out, prompts, s, ties)
    perm = np.array(rnd.sample(range(n), n))
    flip = np.array([rnd.random() < 0.5 for _ in range(n)])
    a2, b2 = np.where(flip, b, a)[perm], np.where(flip, a, b)[perm]
    out2 = np.where(flip & (out < 2), 1 - out, out)[perm]
    theta2, boot2 = _boot(a2, b2, out2, None if prompts is None else prompts[perm], s, ties)
    np.testing.assert_allclose(theta2, theta, atol=1e-9)
    if boot is not None:
        np.testing.assert_allclose(boot2, boot, atol=1e-9)


@SETTINGS
@given(_designs(), st.randoms(use_true_random=False))
def test_relabelling_systems_permutes_the_strengths(design, rnd):
    # system k renamed pi[k]: its strength moves to column pi[k]; the prompt bootstrap draws
    # prompts, not systems, so every bootstrap draw moves the same way
    s, n, seed, n_prompts, ties = design
    a, b, out, prompts = _battles(n, s, seed, n_prompts=n_prompts)
    pi = np.array(rnd.sample(range(s), s))
    theta, boot = _boot(a, b, out, prompts, s, ties)
    theta2, boot2 = _boot(pi[a], pi[b], out, prompts, s, ties)
    np.testing.assert_allclose(theta2[pi], theta, atol=1e-9)
    if boot is not None and prompts is not None:
        np.testing.assert_allclose(boot2[:, pi], boot, atol=1e-8)


@settings(max_examples=10, deadline=None, database=None)
@given(st.integers(0, 10_000), st.randoms(use_true_random=False))
def test_leaderboard_rows_follow_renamed_systems(seed, rnd):
    # the leaderboard of a verdict table with its systems renamed (new names sort in another
    # order) holds the same rows under the new names
    a, b, out, prompts = _battles(600, 5, seed, n_prompts=20)
    names = np.array([f"s{k}" for k in range(5)])
    new = np.array(rnd.sample(["zeta", "alpha", "mid", "beta", "omega"], 5))

    def table(nm):
        v = pd.DataFrame({"prompt_id": prompts,
                          "story_a": [f"{x}/{p}" for x, p in zip(nm[a], prompts, strict=True)],
                          "story_b": [f"{x}/{p}" for x, p in zip(nm[b], prompts, strict=True)],
                          "dimension": "Overall", "verdict": np.array(["A", "B", "same"])[out],
                          "order": "AB", "judge": [f"j{k}" for k in range(len(a))]})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedStatisticWarning)
            return leaderboard(v, n_resamples=30, random_state=3).table.set_index("item")

    old, renamed = table(names), table(new)
    renamed.index = pd.Index([names[list(new).index(x)] for x in renamed.index], name="item")
    cols = ["log_strength", "ci_low", "ci_high", "rank_ci_low", "rank_ci_high",
            "rank_ci_aware", "wins", "losses", "ties"]
    pd.testing.assert_frame_equal(renamed.loc[old.index, cols], old[cols], atol=1e-8,
                                  check_dtype=False)
