"""The six HANNA criteria, their two-letter codes and definitions (Chhun et al., 2022)."""

from __future__ import annotations

CRITERIA: tuple[str, ...] = (
    "Relevance",
    "Coherence",
    "Empathy",
    "Surprise",
    "Engagement",
    "Complexity",
)

CRITERION_CODES: dict[str, str] = {
    "Relevance": "RE",
    "Coherence": "CH",
    "Empathy": "EM",
    "Surprise": "SU",
    "Engagement": "EG",
    "Complexity": "CX",
}

CODE_TO_CRITERION: dict[str, str] = {code: name for name, code in CRITERION_CODES.items()}

# Definitions as worded in the Eval-Prompts of the TACL 2024 paper.
CRITERION_DEFINITIONS: dict[str, str] = {
    "Relevance": "how well the story matches its prompt",
    "Coherence": "how much the story makes sense",
    "Empathy": "how well the reader understood the character's emotions",
    "Surprise": "how surprising the end of the story was",
    "Engagement": "how much the reader engaged with the story",
    "Complexity": "how elaborate the story is",
}


def resolve_criterion(name: str) -> str:
    """Full criterion name from a name or a code, case-insensitive (``"re"`` -> ``"Relevance"``).

    Raises
    ------
    InputError
        If ``name`` is neither a criterion nor a code; the message lists the valid ones.
    """
    from storyeval.exceptions import InputError

    key = name.strip()
    for crit in CRITERIA:
        if key.lower() in (crit.lower(), CRITERION_CODES[crit].lower()):
            return crit
    valid = ", ".join(f"{c} ({CRITERION_CODES[c]})" for c in CRITERIA)
    raise InputError(f"unknown criterion {name!r}; valid criteria: {valid}")
