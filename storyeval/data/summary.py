"""What storyeval understood of a dataset, before anything is computed (``storyeval describe``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from storyeval.data.dataset import Dataset

__all__ = ["describe_dataset", "format_summary"]


def _preview(names: list, limit: int = 8) -> str:
    shown = ", ".join(map(str, names[:limit]))
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")


def describe_dataset(dataset: Dataset) -> dict:
    """Systems, prompts, balance, criteria and their annotators, measures by kind, missing
    cells and the reader's notes, as a JSON-ready dict.

    Examples
    --------
    >>> from storyeval.data import load_hanna
    >>> s = describe_dataset(load_hanna())
    >>> s["n_systems"], s["n_prompts"], s["balanced"], s["criteria"]["Relevance"]["annotators"]
    (11, 96, True, 3)
    """
    table, cat = dataset.table, dataset.catalogue
    systems = dataset.systems
    per_system = table.groupby(level="system", sort=False).size()
    prompt_sets = table.reset_index().groupby("system", sort=False)["prompt_id"].agg(frozenset)
    shared = frozenset.intersection(*prompt_sets) if len(prompt_sets) else frozenset()
    missing = table.isna().sum()
    annotators = dataset.annotators()
    kinds = cat.groupby("kind", sort=False)["measure"].agg(list).to_dict()
    return {
        "name": dataset.name,
        "n_stories": len(table),
        "n_systems": len(systems),
        "systems": systems,
        "n_prompts": len(dataset.prompts),
        "stories_per_system": [int(per_system.min()), int(per_system.max())],
        "prompts_shared_by_all_systems": len(shared),
        "balanced": bool(per_system.nunique() == 1 and len(shared) == per_system.iloc[0]),
        "reference_system": dataset.reference_system,
        "default_reference": dataset.default_reference,
        "criteria": {crit: {"annotators": len(annotators.get(crit, [])),
                            "missing": int(missing[crit]),
                            "min": _finite(table[crit].min()), "max": _finite(table[crit].max())}
                     for crit in dataset.criteria},
        "measures": {kind: len(names) for kind, names in kinds.items()
                     if kind not in ("human_criterion",)},
        "automatic_measures": [m for k in ("metric", "llm_rater") for m in kinds.get(k, [])],
        "missing_cells": {m: int(v) for m, v in missing.items() if v},
        "out_of_scale": _out_of_scale(dataset),
        "notes": list(dataset.notes),
    }


def _out_of_scale(dataset: Dataset) -> dict | None:
    """Per rater, the LLM ratings outside the dataset's declared rater scale (None: no scale
    declared)."""
    from storyeval.data.scales import out_of_scale_per_rater, rater_out_of_scale

    if dataset.rater_scale is None:
        return None
    counts = rater_out_of_scale(dataset.table, dataset.catalogue, dataset.rater_scale)
    return {"scale": list(dataset.rater_scale),
            "total": int(counts["n_below"].sum() + counts["n_above"].sum()),
            "per_rater": out_of_scale_per_rater(counts)}


def _finite(value: float) -> float | None:
    return None if pd.isna(value) else float(value)


def format_summary(summary: dict) -> str:
    """The summary as lines of text."""
    s = summary
    lines = [
        f"dataset {s['name']!r}: {s['n_stories']} stories, {s['n_systems']} systems, "
        f"{s['n_prompts']} prompts",
        f"systems: {_preview(s['systems'])}",
        "balance: " + ("every system has the same prompts" if s["balanced"] else
                       f"UNBALANCED: {s['stories_per_system'][0]}-{s['stories_per_system'][1]} "
                       f"stories per system, {s['prompts_shared_by_all_systems']} prompts "
                       "shared by all systems"),
    ]
    if s["reference_system"]:
        lines.append(f"reference system: {s['reference_system']!r} (its stories are the "
                     "references; left out of meta-evaluation unless asked)")
    if not s["criteria"]:
        lines.append("human criteria: NONE (declare them: long ratings, or --criteria / "
                     "--annotators for a wide or long score table)")
    for crit, info in s["criteria"].items():
        who = (f"{info['annotators']} annotator columns" if info["annotators"]
               else "no individual annotators (no human baseline or ICC)")
        lines.append(f"criterion {crit!r}: {who}; per-story scores {_num(info['min'])} to "
                     f"{_num(info['max'])}; {info['missing']} stories without a score")
    kinds = ", ".join(f"{n} {k}" for k, n in s["measures"].items()) or "none"
    lines.append(f"columns by role: {kinds}")
    lines.append(f"automatic measures: {_preview(s['automatic_measures']) or 'NONE'}")
    if s["missing_cells"]:
        worst = sorted(s["missing_cells"].items(), key=lambda kv: -kv[1])
        lines.append("missing cells: " + _preview([f"{m} ({n})" for m, n in worst], 6))
    else:
        lines.append("missing cells: none")
    if s.get("out_of_scale"):
        oos = s["out_of_scale"]
        lo, hi = oos["scale"]
        per = [f"{rater} ({n})" for rater, n in oos["per_rater"].items()]
        lines.append(f"LLM ratings outside the {lo:g}-{hi:g} scale: {oos['total']}"
                     + (f"; per rater: {_preview(per, 6)}" if per else ""))
    if s["default_reference"]:
        lines.append(f"default reference of the comparison tests (meta --reference): "
                     f"{s['default_reference']!r}")
    lines += [f"note: {note}" for note in s["notes"]]
    return "\n".join(lines) + "\n"


def _num(value: float | None) -> str:
    return "-" if value is None or not np.isfinite(value) else f"{value:g}"
