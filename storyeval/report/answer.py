"""The answer of a meta-evaluation report: `storyeval.meta.answer` (it moved down a layer so
that the result's notebook view opens with it too); these names are the same objects."""

from storyeval.meta.answer import (  # noqa: F401
    ANSWER_COLUMNS,
    TEST_LABELS,
    answer_lines,
    answer_notes,
    answer_table,
)

__all__ = ["ANSWER_COLUMNS", "TEST_LABELS", "answer_lines", "answer_notes", "answer_table"]
