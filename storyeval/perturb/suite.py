"""A suite of perturbed stories: variants of each story, a manifest, both as tables."""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence

import numpy as np
import pandas as pd

from storyeval.exceptions import InputError
from storyeval.perturb.kinds import KINDS, perturb_text

__all__ = ["perturb_stories"]

#: Separator between a story id / system and the perturbation kind in the variants' ids.
SEP = "~"


def perturb_stories(stories: pd.DataFrame, kinds: Sequence[str], *, seed: int = 0,
                    include_originals: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
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
    order = list(KINDS)
    rows, manifest = [], []
    for rec in stories.to_dict("records"):
        sid = str(rec["story_id"])
        for kind in kinds:
            rng = np.random.default_rng([seed, zlib.crc32(sid.encode("utf-8")),
                                         order.index(kind)])
            text, params = perturb_text(str(rec["story"]), kind, rng)
            new_id = f"{sid}{SEP}{kind}"
            rows.append({**rec, "story_id": new_id, "system": f"{rec['system']}{SEP}{kind}",
                         "story": text})
            manifest.append({"story_id": new_id, "original_id": sid, "kind": kind,
                             "parameters": json.dumps(params, sort_keys=True), "seed": seed,
                             "changed": text != str(rec["story"])})
    out = pd.DataFrame(rows, columns=list(stories.columns))
    if include_originals:
        out = pd.concat([stories, out], ignore_index=True)
    return out, pd.DataFrame(manifest)
