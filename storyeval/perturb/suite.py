"""A suite of perturbed stories: variants of each story, a manifest, both as tables."""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence

import numpy as np
import pandas as pd

from storyeval._progress import progress_bar
from storyeval.exceptions import InputError
from storyeval.perturb.kinds import KINDS, RANDOM_KINDS, perturb_text

__all__ = ["perturb_stories"]

#: Separator between a story id / system and the perturbation kind in the variants' ids.
SEP = "~"


def perturb_stories(stories: pd.DataFrame, kinds: Sequence[str], *, seed: int = 0,
                    include_originals: bool = True, show_progress: bool | None = False
                    ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Seeded variants of every story for each kind.

    Parameters
    ----------
    stories : DataFrame
        A stories table (``story_id, system, prompt_id, prompt, story`` and optionally
        ``reference``), as `storyeval score`, `rate` and `pairwise judge` read.
    kinds : sequence of str
        Names from `storyeval.perturb.kinds.KINDS`.
    seed : int
        The seed (default 0). Each (story, kind) draws from
        ``numpy.random.default_rng([seed, crc32(story_id), kind position in KINDS])``, so a
        variant does not depend on the other stories or kinds of the run.
    include_originals : bool
        Keep the original stories in the output table (default True).
    show_progress : bool or None
        A progress bar (None: on a terminal; default False).

    Returns
    -------
    (stories, manifest)
        The stories table: variants have ``story_id`` = ``"{id}~{kind}"`` and ``system`` =
        ``"{system}~{kind}"`` (same prompt, prompt text and reference, so a pairwise judge pairs
        them with the original). The manifest: ``story_id, original_id, kind, parameters`` (JSON),
        ``seed``, ``changed`` (whether the text differs).
    """
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        raise InputError(f"kinds: unknown {unknown or 'empty list'}; expected some of "
                         f"{list(KINDS)}")
    twice = [k for i, k in enumerate(kinds) if k in kinds[:i]]
    if twice:
        raise InputError(f"kinds: {twice[0]!r} given twice; each kind once")
    order = list(KINDS)
    ids = stories["story_id"].astype(str).to_numpy(dtype=object)
    texts = stories["story"].astype(str).to_numpy(dtype=object)
    n, k = len(stories), len(kinds)
    new_texts = np.empty((n, k), dtype=object)
    params = np.empty((n, k), dtype=object)
    with progress_bar(total=n, desc="perturbing", unit="stories", show=show_progress) as bar:
        for i, (sid, text) in enumerate(zip(ids, texts)):
            crc = zlib.crc32(sid.encode("utf-8"))
            for j, kind in enumerate(kinds):
                # each (story, kind) its own generator: a variant does not depend on the
                # other stories or kinds of the run (kinds that draw nothing get none)
                rng = (np.random.default_rng([seed, crc, order.index(kind)])
                       if kind in RANDOM_KINDS else None)
                new_texts[i, j], p = perturb_text(text, kind, rng)
                params[i, j] = json.dumps(p, sort_keys=True)
            if i % 1000 == 999:
                bar.update(1000)
        bar.update(n % 1000)
    # variants in the order story by story, kind by kind (row i * k + j)
    rows = np.repeat(np.arange(n), k)
    suffix = np.tile(np.array([f"{SEP}{kind}" for kind in kinds], dtype=object), n)
    out = stories.iloc[rows].reset_index(drop=True)
    new_ids = ids[rows] + suffix
    out["story_id"] = new_ids
    out["system"] = stories["system"].astype(str).to_numpy(dtype=object)[rows] + suffix
    out["story"] = new_texts.ravel()
    manifest = pd.DataFrame({"story_id": new_ids, "original_id": ids[rows],
                             "kind": np.tile(np.array(kinds, dtype=object), n),
                             "parameters": params.ravel(), "seed": seed,
                             "changed": new_texts.ravel() != texts[rows]})
    if include_originals:
        out = pd.concat([stories, out], ignore_index=True)
    return out, manifest
