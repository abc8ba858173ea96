"""Other names of storyeval's levels, as used by WMT (mt-metrics-eval), summarization and judge
evaluation; `resolve_level` accepts them wherever a level is named (the docs print the table,
`storyeval.data.mteval.level_vocabulary`)."""

from __future__ import annotations

import re
from typing import Any

from storyeval.exceptions import InputError

__all__ = ["LEVEL_ALIASES", "canonical_level", "resolve_level"]

#: Other names of storyeval's levels (lower case; ``-``, ``_`` and spaces are equivalent).
LEVEL_ALIASES: dict[str, str] = {
    "overall": "overall", "global": "overall",
    "segment": "overall", "seg": "overall", "segment-level": "overall",
    "flattened": "overall", "no-grouping": "overall",
    "system": "system", "sys": "system", "system-level": "system",
    "prompt": "prompt", "item": "prompt", "input": "prompt", "summary-level": "prompt",
    "item-level": "prompt", "input-level": "prompt", "group-by-item": "prompt",
    "prompt-level": "prompt",
    "within": "within", "within-system": "within", "average-by-sys": "within",
}


def canonical_level(name: Any) -> Any:
    """``name`` resolved when it is a known alias, else unchanged (the caller's check reports
    an unknown level in its own words)."""
    if isinstance(name, str):
        key = re.sub(r"[\s_]+", "-", name.strip().lower())
        return LEVEL_ALIASES.get(key, name)
    return name


def resolve_level(name: str) -> str:
    """storyeval's level (``overall``, ``system``, ``prompt``, ``within``) for a level name or
    alias.

    Examples
    --------
    >>> resolve_level("global"), resolve_level("Summary-level"), resolve_level("sys")
    ('overall', 'prompt', 'system')
    """
    if not isinstance(name, str):
        raise InputError(f"a level must be a string, got {type(name).__name__}")
    key = re.sub(r"[\s_]+", "-", name.strip().lower())
    if key not in LEVEL_ALIASES:
        raise InputError(f"unknown level {name!r}; levels are overall, system, prompt, within (aliases: "
                         f"{', '.join(sorted(k for k in LEVEL_ALIASES if k != LEVEL_ALIASES[k]))})")
    return LEVEL_ALIASES[key]
